#pragma once
// gpurun's side of the gpurun service's socket (gpurun/service/service_server.hpp): one GET, its
// JSON answer. Without the service, one line saying so and how to start it (exit 125).
#include <nlohmann/json.hpp>
#include <string>

#include "gpurun/config/options.hpp"

namespace gpurun {

// GET `target` ("/v1/runs?since=...") from the service at options.service_socket; under sudo it
// names the caller (the service believes that from root only). Throws Error: no service, an
// error answer (its message), an answer that is not JSON.
nlohmann::ordered_json ask_service(const Options& options, const std::string& target);

}  // namespace gpurun
