#pragma once
// The system file's "service" section: the gpurun service's settings, which its flags of the same
// names override (man gpurund):
//   "service": {"interval": 10, "write_every": 10, "idle_threshold": 5,
//               "keep_samples_days": 14, "keep_minutes_days": 400, "keep_ended_containers_days": 7,
//               "state_dir": "/var/lib/gpurun",
//               "listen": "127.0.0.1:9400", "web_names": ["gpus.lab.example.org"],
//               "trusted_peers": ["10.0.0.5", "10.1.0.0/16"],
//               "dcgm_job_mapping_dir": "/run/dcgm-job-map"}
// Only the system file may have one (the service runs as root).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

struct ServiceSection {
  std::optional<double> interval_s;
  std::optional<double> write_every_s;
  std::optional<double> idle_threshold_percent;
  std::optional<double> keep_samples_days;
  std::optional<double> keep_minutes_days;
  std::optional<double> keep_ended_containers_days;  // an ended detached job's container, then removed
  std::optional<std::string> state_dir;
  std::optional<std::string> listen;                  // HOST:PORT of /metrics; "" or absent: not served
  std::optional<std::string> dcgm_job_mapping_dir;    // where DCGM's job mapping files go; absent: none
  std::optional<std::vector<std::string>> web_names;  // more names the listener answers to (ServerSettings)
  // Peers of the listener that share its connections whole, as this host's services do: a
  // Prometheus or the page's proxy on another host (addresses or networks, "10.1.0.0/16").
  std::optional<std::vector<std::string>> trusted_peers;
};

// The section's keys, read; the first problem as ("key", "what is wrong") where one is found.
struct ServiceSectionRead {
  ServiceSection section;
  std::optional<std::pair<std::string, std::string>> problem;
};
ServiceSectionRead read_service_section(const nlohmann::json& value);

// Whether `name` is written as a host name may be (letters, digits, '-' and '.'; 1 to 253 of them).
bool host_name_text(std::string_view name);

}  // namespace gpurun
