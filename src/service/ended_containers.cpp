#include "ended_containers.hpp"

#include <spdlog/spdlog.h>

#include "gpurun/history/time_text.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

// When its job ended; for one that never ran (docker's FinishedAt is then year 1), when it was made.
std::optional<WallTime> ended_at(const GpuContainer& c) {
  if (const auto finished = parse_rfc3339(c.finished_at)) return finished;
  if (c.status == "created") return parse_rfc3339(c.created_at);
  return std::nullopt;
}

}  // namespace

std::vector<GpuContainer> ended_containers_due(const std::vector<GpuContainer>& all, WallTime now,
                                               std::chrono::seconds keep) {
  std::vector<GpuContainer> due;
  for (const GpuContainer& c : all) {
    if (!c.labelled_by_launch || c.from_processes || !has_ended(c)) continue;
    const auto ended = ended_at(c);
    if (ended && now - *ended >= keep) due.push_back(c);
  }
  return due;
}

void EndedContainerSweeper::sweep_if_due(ContainerEngine& engine, std::chrono::milliseconds timeout) {
  const auto now = std::chrono::steady_clock::now();
  if (swept_ && now - last_ < every_) return;
  swept_ = true;
  last_ = now;
  std::vector<GpuContainer> all;
  try {
    all = engine.gpu_holders(timeout, Listing::all);
  } catch (const Error& e) {
    spdlog::warn("ended containers not removed this time: {}", e.what());
    return;
  }
  for (const GpuContainer& c : ended_containers_due(all, clock_.now(), keep_)) {
    const ProcessResult removed = run_process({engine.remove_argv(c.id), {}}, timeout);
    if (removed.succeeded())
      spdlog::info("removed container {} (user {}): its job ended over {} ago", text::printable(c.name, 80),
                   c.user.empty() ? "unknown" : text::printable(c.user, 32),
                   format_duration(keep_, DurationStyle::brief));
    else
      spdlog::warn("could not remove the ended container {}: {} rm {}: {}", text::printable(c.name, 80), engine.name(),
                   describe_end(removed, timeout), text::printable(std::string(text::trim(removed.err)), 300));
  }
}

}  // namespace gpurun
