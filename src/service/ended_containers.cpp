#include "ended_containers.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "gpurun/history/time_text.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

// When its job ended; for one that never ran (docker's FinishedAt is then year 1), when it was made.
// podman, restarted with the machine, says exited with no end: its start, or its making, then.
std::optional<WallTime> ended_at(const GpuContainer& c) {
  if (never_started(c)) return parse_rfc3339(c.created_at);
  if (const auto finished = parse_rfc3339(c.finished_at)) return finished;
  if (const auto started = parse_rfc3339(c.started_at)) return started;
  return parse_rfc3339(c.created_at);
}

// A launch's container is "created" from its making to its start, which an image pull can make
// long: one that never started is left an hour at least, whatever the site keeps ended ones for.
constexpr std::chrono::seconds kUnstartedAtLeast = std::chrono::hours(1);

}  // namespace

std::vector<GpuContainer> ended_containers_due(const std::vector<GpuContainer>& all, WallTime now,
                                               std::chrono::seconds keep) {
  std::vector<GpuContainer> due;
  for (const GpuContainer& c : all) {
    if (!c.labelled_by_launch || !c.detached || c.from_processes || !has_ended(c)) continue;
    const auto ended = ended_at(c);
    if (ended && now - *ended >= (never_started(c) ? std::max(keep, kUnstartedAtLeast) : keep)) due.push_back(c);
  }
  return due;
}

void EndedContainerSweeper::sweep_if_due(ContainerEngine& engine, std::chrono::milliseconds timeout,
                                         const std::function<bool()>& stopping) {
  const auto started = std::chrono::steady_clock::now();
  if (swept_ && !more_ && started - last_ < every_) return;
  swept_ = true;
  more_ = false;
  last_ = started;
  std::vector<GpuContainer> all;
  try {
    all = engine.gpu_holders(timeout, Listing::all);
  } catch (const Error& e) {
    spdlog::warn("ended containers not removed this time: {}", e.what());
    return;
  }
  // A large writable layer takes a while to remove; as `gpurun rm` allows.
  const auto remove_limit = std::chrono::minutes(1) + timeout;
  for (const GpuContainer& c : ended_containers_due(all, clock_.now(), keep_)) {
    // The sampling waits meanwhile: many due at once (after a long stop) go a few at each look.
    if ((stopping && stopping()) || std::chrono::steady_clock::now() - started > budget_) {
      more_ = true;
      return;
    }
    const ProcessResult removed = run_process({engine.remove_argv(c.id), {}}, remove_limit);
    if (removed.succeeded())
      spdlog::info("removed container {} (user {}): its job ended over {} ago", text::printable(c.name, 80),
                   c.user.empty() ? "unknown" : text::printable(c.user, 32),
                   format_duration(keep_, DurationStyle::brief));
    else
      spdlog::warn("could not remove the ended container {}: {} rm {}: {}", text::printable(c.name, 80), engine.name(),
                   describe_end(removed, remove_limit), text::printable(std::string(text::trim(removed.err)), 300));
  }
}

}  // namespace gpurun
