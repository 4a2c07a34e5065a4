#include "gpurun/history/usage.hpp"

#include <algorithm>

#include "gpurun/util/error.hpp"

namespace gpurun {

std::optional<double> UsageRow::efficiency() const {
  const double measured = gpu_hours - unmeasured_gpu_hours;
  if (measured <= 0) return std::nullopt;
  return 100.0 * busy_gpu_hours / measured;
}

namespace {

// The part of `run`'s life inside a window that starts at `since`: 1 for a run that began in it.
double share_inside(const RunRecord& run, std::optional<WallTime> since) {
  if (!since || run.start >= *since) return 1;
  const WallTime until = run.end.value_or(run.last_seen);
  if (until <= *since || until <= run.start) return 0;
  return std::chrono::duration<double>(until - *since) / std::chrono::duration<double>(until - run.start);
}

}  // namespace

void UsageTally::add_to(const std::string& key, const RunRecord& run, double share, double idle_gpus) {
  if (share <= 0) return;  // none of it in the window: not one of its runs either
  UsageRow& row = rows_[key];
  row.key = key;
  ++row.runs;
  row.gpu_hours += run.gpu_seconds * share / 3600;
  row.busy_gpu_hours += run.busy_gpu_seconds * share / 3600;
  row.unmeasured_gpu_hours += run.unmeasured_gpu_seconds * share / 3600;
  // The run's idle time on every GPU it ever held, never more than its GPU-hours: a run that
  // touched a second GPU briefly was not idle on it all along. Both carry the window's part.
  row.idle_gpu_hours += std::min(run.idle_seconds * idle_gpus, run.gpu_seconds * share) / 3600;
}

void UsageTally::add(const RunRecord& run) {
  const double gpus = static_cast<double>(std::max<std::size_t>(run.gpus.size(), 1));
  const double inside = share_inside(run, since_);
  switch (by_) {
    case UsageKey::user:
      add_to(run.user, run, inside, gpus * inside);
      break;
    case UsageKey::image:
      add_to(run.image, run, inside, gpus * inside);
      break;
    case UsageKey::gpu:
      for (const int gpu : run.gpus) add_to(std::to_string(gpu), run, inside / gpus, inside);
      break;
  }
}

std::vector<UsageRow> UsageTally::rows() const {
  std::vector<UsageRow> sorted;
  sorted.reserve(rows_.size());
  for (const auto& [key, row] : rows_) sorted.push_back(row);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const UsageRow& a, const UsageRow& b) { return a.gpu_hours > b.gpu_hours; });
  return sorted;
}

nlohmann::ordered_json usage_json(const std::vector<UsageRow>& rows) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const UsageRow& row : rows) {
    const auto efficiency = row.efficiency();
    array.push_back({{"key", row.key},
                     {"runs", row.runs},
                     {"gpu_hours", row.gpu_hours},
                     {"busy_gpu_hours", row.busy_gpu_hours},
                     {"unmeasured_gpu_hours", row.unmeasured_gpu_hours},
                     {"efficiency", efficiency ? nlohmann::ordered_json(*efficiency) : nlohmann::ordered_json()},
                     {"idle_gpu_hours", row.idle_gpu_hours}});
  }
  return array;
}

std::vector<UsageRow> usage_from_json(const nlohmann::ordered_json& json) {
  if (!json.is_array()) throw Error("the service answered with something that is not a usage table");
  std::vector<UsageRow> rows;
  for (const auto& item : json) {
    if (!item.is_object() || !item.contains("key") || !item["key"].is_string())
      throw Error("the service answered with something that is not a usage row");
    const auto number = [&](const char* key) {
      return item.contains(key) && item[key].is_number() ? item[key].get<double>() : 0.0;
    };
    rows.push_back({.key = item["key"].get<std::string>(),
                    .runs = static_cast<int>(number("runs")),
                    .gpu_hours = number("gpu_hours"),
                    .busy_gpu_hours = number("busy_gpu_hours"),
                    .unmeasured_gpu_hours = number("unmeasured_gpu_hours"),  // none from an older service
                    .idle_gpu_hours = number("idle_gpu_hours")});
  }
  return rows;
}

}  // namespace gpurun
