#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <future>
#include <ostream>

#include "select/claims.hpp"
#include "util/error.hpp"
#include "select/inventory.hpp"
#include "verbs/slurm_views.hpp"
#include "verbs/verbs.hpp"

namespace gpurun {
namespace {

// Seconds since an RFC 3339 time as docker prints it ("2026-11-21T08:19:37.123456789Z").
std::optional<long long> seconds_since(const std::string& rfc3339) {
  std::tm tm{};
  if (rfc3339.size() < 19 || ::strptime(rfc3339.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr)
    return std::nullopt;
  const std::time_t started = ::timegm(&tm);
  const std::time_t now = std::time(nullptr);
  if (started <= 0 || now < started) return std::nullopt;
  return static_cast<long long>(now - started);
}

std::string human_duration(std::optional<long long> seconds) {
  if (!seconds) return "?";
  const long long s = *seconds;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d {}h", s / 86400, s % 86400 / 3600);
}

std::string gpu_list(const GpuContainer& c, const std::vector<Gpu>& gpus) {
  if (gpus.empty()) return c.all_gpus ? "all" : fmt::format("{}", fmt::join(c.devices, ","));
  return fmt::format("{}", fmt::join(held_gpu_indices(c, gpus), ","));
}

}  // namespace

int run_ps(const Options& options, std::ostream& out) {
  if (options.backend == "slurm") return run_slurm_ps(options, out);  // the cluster: verbs/slurm_views.cpp
  const auto timeout = smi_timeout(options);
  // GPU indices and UUIDs come from nvidia-smi (asked while the engine answers); without it, the
  // devices as docker was told.
  const auto source = make_gpu_source(gpu_source_spec(options));
  auto gpus_read = std::async(std::launch::async, [&] { return source->read(timeout); });
  const std::vector<GpuContainer> containers = list_gpu_containers(options.docker, timeout);
  std::vector<Gpu> gpus;
  try {
    gpus = gpus_read.get().gpus;
  } catch (const Error& e) {
    spdlog::warn("GPUs are shown as docker was told, without nvidia-smi: {}", e.what());
  }

  if (options.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& c : containers) {
      nlohmann::ordered_json held = nlohmann::ordered_json::array();
      for (int index : held_gpu_indices(c, gpus))
        for (const Gpu& g : gpus)
          if (g.index == index) held.push_back({{"index", g.index}, {"uuid", g.uuid}});
      list.push_back({{"id", c.id}, {"name", c.name}, {"user", c.user}, {"image", c.image}, {"status", c.status},
                      {"started_at", c.started_at}, {"running_s", seconds_since(c.started_at).value_or(-1)},
                      {"gpus", held}, {"devices", c.devices}, {"all_gpus", c.all_gpus},
                      {"started_by_gpurun", c.started_by_gpurun}});
    }
    out << nlohmann::ordered_json{{"containers", list}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << '\n';
    return 0;
  }
  std::size_t name_width = 4;
  std::size_t image_width = 5;
  for (const auto& c : containers) {
    name_width = std::max(name_width, c.name.size());
    image_width = std::max(image_width, c.image.size());
  }
  out << fmt::format("{:<{}}  {:<10}  {:<12}  {:<{}}  {:>11}  {:<8}  {}\n", "NAME", name_width, "USER", "GPUS",
                     "IMAGE", image_width, "RUNNING FOR", "STATUS", "GPURUN");
  for (const auto& c : containers)
    out << fmt::format("{:<{}}  {:<10}  {:<12}  {:<{}}  {:>11}  {:<8}  {}\n", c.name, name_width,
                       c.user.empty() ? "?" : c.user, gpu_list(c, gpus), c.image, image_width,
                       human_duration(seconds_since(c.started_at)), c.status, c.started_by_gpurun ? "yes" : "no");
  return 0;
}

}  // namespace gpurun
