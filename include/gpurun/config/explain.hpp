#pragma once
// `gpurun config`: every key, its effective value and where it came from; the files looked at;
// the profiles known.
#include <nlohmann/json.hpp>
#include <string>

#include "gpurun/config/config.hpp"

namespace gpurun {

std::string config_table(const Config& config);
nlohmann::json config_json(const Config& config);

}  // namespace gpurun
