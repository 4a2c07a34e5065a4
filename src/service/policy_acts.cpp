#include "policy_acts.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

std::string brief(std::chrono::seconds duration) { return format_duration(duration, DurationStyle::brief); }

// "idle for 1h 5m", "running for 7h 50m": what the rule measured.
std::string measured(const PolicyAction& action) {
  return fmt::format("{} for {}", action.rule == PolicyAction::Rule::idle ? "idle" : "running", brief(action.elapsed));
}

std::string warning(const PolicyAction& action, const std::string& who, bool dry_run) {
  if (action.rule == PolicyAction::Rule::time_limit && action.stops_in.count() != 0)
    return fmt::format("{} has been running for {}, {} its time limit of {}; it is stopped in {}", who,
                       brief(action.elapsed), action.elapsed >= action.limit ? "past" : "near", brief(action.limit),
                       brief(action.stops_in));
  if (action.rule == PolicyAction::Rule::time_limit)
    return fmt::format("{} has been running for {}; its time limit of {} stops it in {}", who, brief(action.elapsed),
                       brief(action.limit), brief(action.limit - action.elapsed));
  // Only what the policy would stop is promised a stop: a process, a container out of its scope,
  // and anything under a dry run are told they are left running.
  if (action.limit.count() == 0 || dry_run)
    return fmt::format("{} has been idle for {}; it is left running{}", who, brief(action.elapsed),
                       dry_run && action.limit.count() != 0 ? " (the idle policy is a dry run)" : "");
  return fmt::format("{} has been idle for {}; it will be stopped when idle for {}", who, brief(action.elapsed),
                     brief(action.limit));
}

}  // namespace

ActResult carry_out(const PolicyAction& action, bool dry_run, ContainerEngine* engine) {
  const std::string rule = action.rule == PolicyAction::Rule::idle ? "idle policy" : "time limit";
  const std::string prefix = dry_run ? rule + " (dry run)" : rule;
  const std::string who =
      fmt::format("run {} ({}, user {}, GPU {})", action.run_id, text::printable(action.name),
                  action.user.empty() ? "unknown" : text::printable(action.user), fmt::join(action.gpus, ","));
  ActResult result;
  const auto said = [&](std::string text) {
    spdlog::warn("{}: {}", prefix, text);
    result.text = std::move(text);
    return result;
  };
  switch (action.kind) {
    case PolicyAction::Kind::warn:
      return said(warning(action, who, dry_run));
    case PolicyAction::Kind::report:
      return said(fmt::format("{} has been {}, and is left running: {}", who, measured(action),
                              action.container_id.empty() ? "a process is never killed"
                              : !action.listed_by_engine
                                  ? "a container seen only through its processes, not one the engine lists"
                                  : "not a container gpurun started (the policy's scope is \"gpurun\")"));
    case PolicyAction::Kind::stop:
      break;
  }
  if (dry_run) return said(fmt::format("would stop {}, {}", who, measured(action)));
  if (engine == nullptr) {
    spdlog::error("{}: cannot stop {}: no container engine is reachable", prefix, who);
    result.failed = true;
    return result;
  }
  // docker stop waits 10 s before it kills; a stop under way as gpurund stops still ends within
  // systemd's 30 s.
  constexpr std::chrono::seconds kStopLimit{20};
  const ProcessResult stop =
      run_process({.argv = engine->stop_argv(action.container_id, 10), .extra_env = {}, .input = {}}, kStopLimit);
  if (!stop.succeeded()) {
    spdlog::error("{}: could not stop {}: {} {} {}", prefix, who, engine->name(), describe_end(stop, kStopLimit),
                  text::printable(stop.err));
    result.failed = true;
    return result;
  }
  result.stopped = true;
  return said(fmt::format("stopped {}, {}", who, measured(action)));
}

}  // namespace gpurun
