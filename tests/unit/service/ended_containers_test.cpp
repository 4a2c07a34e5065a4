// Unit tests for which ended containers the service removes (src/service/ended_containers.hpp):
// only a launch's, only ended ones, only once kept as long as the site says.
#include "ended_containers.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpurun/history/time_text.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

GpuContainer launched(std::string name, std::string status, std::string finished_at) {
  GpuContainer c;
  c.id = name + "-id";
  c.name = std::move(name);
  c.status = std::move(status);
  c.finished_at = std::move(finished_at);
  c.created_at = "2026-11-01T00:00:00Z";
  c.started_by_gpurun = true;
  c.labelled_by_launch = true;
  c.detached = true;
  return c;
}

std::vector<std::string> names(const std::vector<GpuContainer>& containers) {
  std::vector<std::string> out;
  for (const GpuContainer& c : containers) out.push_back(c.name);
  return out;
}

const WallTime kNow = *parse_rfc3339("2026-11-29T12:00:00Z");

TEST(EndedContainersDue, AnEndedLaunchIsRemovedOnceKeptForTheWholeTime) {
  const std::vector<GpuContainer> all{launched("old", "exited", "2026-11-22T11:59:59.5Z"),
                                      launched("recent", "exited", "2026-11-28T12:00:00Z"),
                                      launched("dead", "dead", "2026-11-01T00:00:00Z")};
  EXPECT_THAT(names(ended_containers_due(all, kNow, 7 * 24h)), ElementsAre("old", "dead"));
  EXPECT_THAT(names(ended_containers_due(all, kNow, 0s)), ElementsAre("old", "recent", "dead"));
}

TEST(EndedContainersDue, NeverARunningOneNorOneThatIsNoLaunchOfGpuruns) {
  GpuContainer running = launched("running", "running", "0001-01-01T00:00:00Z");
  GpuContainer paused = launched("paused", "paused", "2026-11-01T00:00:00Z");  // ran, was stopped, runs again
  GpuContainer plain = launched("plain", "exited", "2026-11-01T00:00:00Z");
  plain.started_by_gpurun = plain.labelled_by_launch = false;  // a plain `docker run`
  GpuContainer from_image = launched("image", "exited", "2026-11-01T00:00:00Z");
  from_image.labelled_by_launch = false;  // gpurun's labels from its image only
  GpuContainer traced = launched("traced", "exited", "2026-11-01T00:00:00Z");
  traced.from_processes = true;  // no engine listed it: nothing is asked of one by its id
  GpuContainer attached = launched("attached", "exited", "2026-11-01T00:00:00Z");
  attached.detached = false;  // an attached launch's, kept on purpose (--docker-opt --rm=false)
  GpuContainer restarting = launched("restarting", "restarting", "2026-11-01T00:00:00Z");
  EXPECT_THAT(ended_containers_due({running, paused, plain, from_image, traced, attached, restarting}, kNow, 0s),
              ElementsAre());
}

// docker says year 1 for a container that never ran: it is timed from its making.
TEST(EndedContainersDue, OneThatNeverStartedIsTimedFromItsMaking) {
  GpuContainer created = launched("created", "created", "0001-01-01T00:00:00Z");
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 7 * 24h)), ElementsAre("created"));
  created.created_at = "2026-11-28T00:00:00Z";
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 7 * 24h)), ElementsAre());
  // A launch's container is created until it starts (an image pull may take long): an hour at least.
  created.created_at = "2026-11-29T11:30:00Z";
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 0s)), ElementsAre());
  created.created_at = "2026-11-29T10:59:00Z";
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 0s)), ElementsAre("created"));
  created.created_at = "yesterday";  // unreadable: kept
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 0s)), ElementsAre());
}

// podman, restarted with the machine, says exited (or stopped) with no end: timed from its start,
// or its making; with none readable, kept.
TEST(EndedContainersDue, AnEndedOneWithoutItsEndIsTimedFromItsStartOrMaking) {
  GpuContainer started = launched("started", "exited", "0001-01-01T00:00:00Z");
  started.started_at = "2026-11-20T00:00:00Z";
  started.created_at = "";
  GpuContainer made = launched("made", "stopped", "");
  GpuContainer unknown = launched("unknown", "exited", "");
  unknown.created_at = "";
  EXPECT_THAT(names(ended_containers_due({started, made, unknown}, kNow, 7 * 24h)), ElementsAre("started", "made"));
  started.started_at = "2026-11-28T00:00:00Z";
  EXPECT_THAT(names(ended_containers_due({started}, kNow, 7 * 24h)), ElementsAre());
}

}  // namespace
}  // namespace gpurun
