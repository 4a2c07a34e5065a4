#pragma once
// `gpurun config`: every key, its effective value and where it came from; the files looked at;
// the profiles known.
#include <nlohmann/json.hpp>
#include <string>

#include "gpurun/config/config.hpp"

namespace gpurun {

std::string config_report_table(const Config& config);
nlohmann::json config_report_json(const Config& config);

}  // namespace gpurun
