#pragma once
// gpurun's side of the gpurun service's socket (gpurun/service/service_server.hpp): one GET, its
// JSON answer. Without the service, one line saying so and how to start it (exit 125).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "gpurun/config/options.hpp"

namespace gpurun {

// GET `target` ("/v1/runs?since=...") from the service at options.service_socket; under sudo it
// names the caller (the service believes that from root only). Throws Error: no service, an
// error answer (its message), an answer that is not JSON.
nlohmann::ordered_json ask_service(const Options& options, const std::string& target);
// The same, parsed without keeping the keys' order: for answers that are read, not printed.
nlohmann::json ask_service_plain(const Options& options, const std::string& target);

// How long each held GPU has been idle (seconds, by index) as the service saw it; nullopt where no
// service answers, said on stderr at info level: status and ps never depend on the service.
std::optional<std::map<int, long long>> service_idle_gpus(const Options& options);

}  // namespace gpurun
