#include "gpurun/service/metrics.hpp"

#include "gpurun/service/idle_enforcer.hpp"
#include "gpurun/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>

namespace gpurun {
namespace {

struct Label {
  std::string name;
  std::string value;
  bool safe = false;  // made label_safe already (a list of names, each cut on its own)
};
using Labels = std::vector<Label>;

std::string label_text(const Labels& labels) {
  std::string text;
  for (const Label& label : labels) {
    if (!text.empty()) text += ',';
    text += fmt::format("{}=\"{}\"", label.name,
                        prometheus_label_value(label.safe ? label.value : label_safe(label.value)));
  }
  return text;
}

// Several holders' names in one label: each cut on its own, as many as fit, then "+N more", so
// that one long name does not push the others out of the label (a cut of the whole list did).
Label names_label(std::string name, const std::set<std::string>& names) {
  constexpr std::size_t kLongest = 128;  // label_safe's
  constexpr std::size_t kMostPerName = 48;
  std::string joined;
  std::size_t shown = 0;
  for (const std::string& each : names) {
    const std::string piece = label_safe(each, kMostPerName);
    if (shown > 0 && joined.size() + 1 + piece.size() > kLongest - 12) break;  // room for ",+N more"
    if (shown > 0) joined += ',';
    joined += piece;
    ++shown;
  }
  if (shown < names.size()) joined += fmt::format(",+{} more", names.size() - shown);
  return {.name = std::move(name), .value = std::move(joined), .safe = true};
}

// One metric family: its HELP and TYPE once, then its series.
class Family {
 public:
  Family(std::string& out, const char* name, const char* type, const char* help) : out_(out), name_(name) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  // Each series once (Prometheus counts a repeat as an error and drops it): a repeat is left out.
  void add(const Labels& labels, double value) {
    std::string text = label_text(labels);
    if (!written_.insert(text).second) return;
    out_ += fmt::format("{}{{{}}} {}\n", name_, text, value);
  }

 private:
  std::string& out_;
  const char* name_;
  std::set<std::string> written_;
};

// The holders of one GPU now, and the run each is.
struct GpuHolder {
  const HolderSample* holder;
  const RunRecord* run;  // nullptr: not tracked yet
};

// `merged`: the state's holders one per key (merged_holders), so that a process the driver lists
// twice on one GPU (two of its MIG instances) is one series, not two Prometheus would refuse.
std::vector<GpuHolder> holders_of(const MetricsState& state, const std::vector<HolderSample>& merged, int gpu) {
  std::vector<GpuHolder> found;
  for (const HolderSample& holder : merged) {
    if (std::find(holder.gpus.begin(), holder.gpus.end(), gpu) == holder.gpus.end()) continue;
    found.push_back({.holder = &holder, .run = run_of_holder(state.running, holder.key)});
  }
  return found;
}

std::string container_of(const HolderSample& holder) { return holder.container_id.empty() ? "" : holder.name; }

std::string run_of(const GpuHolder& held) { return held.run != nullptr ? std::to_string(held.run->id) : ""; }

// DCGM's labels of a GPU, with its holders' (several: joined by commas, in a stable order).
Labels dcgm_labels(const MetricsState& state, const std::vector<HolderSample>& merged, const Gpu& gpu) {
  Labels labels{{"gpu", std::to_string(gpu.index)},
                {"UUID", gpu.uuid},
                {"pci_bus_id", gpu.pci_bus_id},
                {"device", fmt::format("nvidia{}", gpu.index)},
                {"modelName", gpu.name},
                {"Hostname", state.hostname}};
  const std::vector<GpuHolder> held = holders_of(state, merged, gpu.index);
  if (held.empty()) return labels;
  std::set<std::string> containers;
  std::set<std::string> users;
  std::set<std::string> jobs;
  for (const GpuHolder& h : held) {
    if (!container_of(*h.holder).empty()) containers.insert(container_of(*h.holder));
    if (!h.holder->user.empty()) users.insert(h.holder->user);
    jobs.insert(hpc_job_label(*h.holder));
  }
  labels.push_back(names_label("container", containers));
  labels.push_back(names_label("user", users));
  labels.push_back(names_label("hpc_job", jobs));
  return labels;
}

}  // namespace

std::string label_safe(std::string_view value, std::size_t longest) {
  // A backslash is escaped too (\x5c): every one in a label then begins an escape, so a name
  // spelling "\x0a" stays apart from a name with a line end.
  std::string out;
  for (std::size_t start = 0; start <= value.size();) {
    const std::size_t slash = std::min(value.find('\\', start), value.size());
    out += text::terminal_safe(value.substr(start, slash - start));
    if (slash < value.size()) out += "\\x5c";
    start = slash + 1;
  }
  if (out.size() <= longest) return out;
  // Cut where a character starts, and told apart by the whole value's hash (FNV-1a): two long
  // names alike in their first 119 bytes stay two series.
  std::uint32_t hash = 2166136261U;
  for (const char c : value) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
  std::size_t cut = std::max<std::size_t>(longest, 16) - 9;  // room for "~" and the hash
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
  return fmt::format("{}~{:08x}", std::string_view(out).substr(0, cut), hash);
}

std::string hpc_job_of(const HolderSample& holder) {
  if (!holder.container_id.empty() || holder.command.empty()) return holder.name;  // "pid N" without one
  return std::string(text::program_of(holder.command));
}

std::string hpc_job_label(const HolderSample& holder) {
  return holder.container_id.empty() && holder.command.empty() ? "unknown" : hpc_job_of(holder);
}

std::optional<WallTime> MetricsState::holder_idle_since(const HolderSample& holder, int gpu) const {
  const auto since = idle_since.find(gpu);
  if (since == idle_since.end()) return std::nullopt;
  const RunRecord* run = run_of_holder(running, holder.key);
  return run == nullptr ? since->second : std::max(since->second, run->start);
}

std::optional<WallTime> MetricsState::held_idle_since(int gpu) const {
  std::optional<WallTime> earliest;
  for (const HolderSample& holder : holders) {
    if (std::find(holder.gpus.begin(), holder.gpus.end(), gpu) == holder.gpus.end() ||
        exempt_from_idle_policy(idle_exempt_containers, holder))
      continue;
    if (const auto since = holder_idle_since(holder, gpu); since && (!earliest || *since < *earliest)) earliest = since;
  }
  return earliest;
}

std::string prometheus_label_value(const std::string& value) {
  std::string escaped;
  escaped.reserve(value.size());
  for (const char c : value) {
    if (c == '\\')
      escaped += "\\\\";
    else if (c == '"')
      escaped += "\\\"";
    else if (c == '\n')
      escaped += "\\n";
    else
      escaped += c;
  }
  return escaped;
}

void credit_users(const std::vector<RunRecord>& before, const std::vector<RunRecord>& running,
                  const std::vector<RunRecord>& ended, std::map<std::string, UserSeconds>& totals) {
  const auto credit = [&](const RunRecord& now) {
    double gpu = now.gpu_seconds;
    double busy = now.busy_gpu_seconds;
    double unmeasured = now.unmeasured_gpu_seconds;
    const auto old = std::find_if(before.begin(), before.end(), [&now](const RunRecord& r) { return r.id == now.id; });
    // A run whose user was learnt late (a rootless container first seen without one) is its user's
    // whole, as `gpurun usage` counts it; what user="" was credited before stays, a counter.
    const bool user_learnt = old != before.end() && old->user.empty() && !now.user.empty();
    if (old != before.end() && !user_learnt) {
      gpu -= old->gpu_seconds;
      busy -= old->busy_gpu_seconds;
      unmeasured -= old->unmeasured_gpu_seconds;
    }
    UserSeconds& total = totals[now.user];
    total.gpu += std::max(0.0, gpu);  // a counter never goes down
    total.busy += std::max(0.0, busy);
    total.unmeasured += std::max(0.0, unmeasured);
  };
  for (const RunRecord& run : running) credit(run);
  for (const RunRecord& run : ended) credit(run);
}

std::string prometheus_text(const MetricsState& state, WallTime now, HistoryVisibility visibility) {
  std::string out;
  // Readings the source has not renewed for a while (a hung driver) are not the GPUs' now: no
  // series, rather than old figures an alert would take for today's; gpurun_up says why.
  const bool fresh = state.fresh(now);
  const std::vector<HolderSample> merged = fresh ? merged_holders(state.holders) : std::vector<HolderSample>{};
  const std::vector<Gpu> no_gpus;
  const std::vector<Gpu>& gpus = fresh ? state.gpus : no_gpus;
  // DCGM's per-GPU gauges: a GPU whose reading the source did not give has no series, never a zero.
  const auto per_gpu = [&](const char* name, const char* help, auto reading) {
    Family family(out, name, "gauge", help);
    for (const Gpu& gpu : gpus)
      if (const std::optional<double> value = reading(gpu)) family.add(dcgm_labels(state, merged, gpu), *value);
  };
  per_gpu("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", [](const Gpu& g) { return g.utilization_percent; });
  per_gpu("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", [](const Gpu& g) { return g.memory_used_mib; });
  per_gpu("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", [](const Gpu& g) -> std::optional<double> {
    if (!g.memory_used_mib || !g.memory_total_mib) return std::nullopt;
    return std::max(0.0, *g.memory_total_mib - *g.memory_used_mib);
  });
  per_gpu("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", [](const Gpu& g) { return g.power_draw_w; });
  per_gpu("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", [](const Gpu& g) { return g.temperature_c; });
  {
    // Two families over the same series: each is written whole (the text format wants a family's
    // lines together), the second from its own buffer.
    std::string idle_lines;
    Family held(out, "gpurun_gpu_held", "gauge", "1 for each holder of each GPU: a container or a process.");
    Family idle(idle_lines, "gpurun_gpu_idle_seconds", "gauge",
                "Seconds a holder has held a GPU at or below the idle threshold without a break (0: busy); "
                "none for a container the idle policy exempts.");
    for (const Gpu& gpu : gpus) {
      for (const GpuHolder& h : holders_of(state, merged, gpu.index)) {
        const Labels labels{{"gpu", std::to_string(gpu.index)},
                            {"UUID", gpu.uuid},
                            {"user", h.holder->user},
                            {"container", container_of(*h.holder)},
                            {"run", run_of(h)}};
        held.add(labels, 1);
        if (exempt_from_idle_policy(state.idle_exempt_containers, *h.holder)) continue;
        const std::optional<WallTime> since = state.holder_idle_since(*h.holder, gpu.index);
        idle.add(labels, since ? std::max(0.0, std::chrono::duration<double>(now - *since).count()) : 0.0);
      }
    }
    out += idle_lines;
  }
  if (visibility == HistoryVisibility::all) {
    Family gpu_s(out, "gpurun_user_gpu_seconds_total", "counter",
                 "GPU-seconds held per user since the service started (GPU-hours: increase / 3600).");
    for (const auto& [user, seconds] : state.user_seconds) gpu_s.add({{"user", user}}, seconds.gpu);
  }
  if (visibility == HistoryVisibility::all) {
    Family busy_s(out, "gpurun_user_gpu_busy_seconds_total", "counter",
                  "Busy GPU-seconds per user (utilization / 100 of each held second); efficiency: the ratio "
                  "of its rate to gpurun_user_gpu_seconds_total's less gpurun_user_gpu_unmeasured_seconds_total's.");
    for (const auto& [user, seconds] : state.user_seconds) busy_s.add({{"user", user}}, seconds.busy);
  }
  if (visibility == HistoryVisibility::all) {
    Family unmeasured_s(out, "gpurun_user_gpu_unmeasured_seconds_total", "counter",
                        "Of the GPU-seconds per user, those whose utilization is not known (MIG instances): "
                        "efficiency is busy over GPU-seconds less these.");
    for (const auto& [user, seconds] : state.user_seconds) unmeasured_s.add({{"user", user}}, seconds.unmeasured);
  }
  {
    // 0 too once the readings are stale (a source that hangs rather than fails): the GPU series
    // are gone then, and an alert on gpurun_up says why.
    Family up(out, "gpurun_up", "gauge", "1 when the service's last look at the GPUs succeeded and is recent.");
    up.add({{"Hostname", state.hostname}}, state.last_sample_ok && fresh ? 1 : 0);
  }
  {
    Family errors(out, "gpurun_source_errors_total", "counter", "Samples the GPU source failed to give.");
    errors.add({{"Hostname", state.hostname}}, static_cast<double>(state.source_errors));
  }
  return out;
}

}  // namespace gpurun
