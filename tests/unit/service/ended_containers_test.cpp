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
  EXPECT_THAT(ended_containers_due({running, paused, plain, from_image, traced}, kNow, 0s), ElementsAre());
}

// docker says year 1 for a container that never ran: it is timed from its making.
TEST(EndedContainersDue, OneThatNeverStartedIsTimedFromItsMaking) {
  GpuContainer created = launched("created", "created", "0001-01-01T00:00:00Z");
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 7 * 24h)), ElementsAre("created"));
  created.created_at = "2026-11-28T00:00:00Z";
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 7 * 24h)), ElementsAre());
  created.created_at = "yesterday";  // unreadable: kept
  EXPECT_THAT(names(ended_containers_due({created}, kNow, 0s)), ElementsAre());
}

TEST(EndedContainersDue, AnUnreadableEndKeepsIt) {
  EXPECT_THAT(
      ended_containers_due({launched("x", "exited", ""), launched("y", "exited", "0001-01-01T00:00:00Z")}, kNow, 0s),
      ElementsAre());
}

}  // namespace
}  // namespace gpurun
