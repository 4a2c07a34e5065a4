#include "gpurun/service/policy_action.hpp"

#include <algorithm>

#include "gpurun/service/metrics.hpp"

namespace gpurun {

std::string_view event_of(const PolicyAction& action, bool stopped) {
  const bool idle = action.rule == PolicyAction::Rule::idle;
  if (action.kind == PolicyAction::Kind::stop && stopped) return idle ? "idle_stopped" : "time_limit_stopped";
  return idle ? "idle_warning" : "time_warning";
}

PolicyAction warning_about(PolicyAction::Rule rule, const HolderSample& holder, const std::vector<RunRecord>& running,
                           std::chrono::seconds elapsed, std::chrono::seconds limit) {
  const auto run =
      std::find_if(running.begin(), running.end(), [&holder](const RunRecord& r) { return r.key == holder.key; });
  return {.rule = rule,
          .kind = PolicyAction::Kind::warn,
          .run_id = run != running.end() ? run->id : 0,
          .key = holder.key,
          .name = hpc_job_of(holder),  // a process by its program: the text goes to chats and mail
          .user = holder.user,
          .container_id = holder.container_id,
          .gpus = holder.gpus,
          .elapsed = elapsed,
          .limit = limit,
          .listed_by_engine = holder.listed_by_engine,
          .stops_in = std::chrono::seconds(0)};
}

std::set<std::string> kept_holders(std::set<std::string> present, const std::vector<RunRecord>& running) {
  for (const RunRecord& run : running) present.insert(run.key);
  return present;
}

}  // namespace gpurun
