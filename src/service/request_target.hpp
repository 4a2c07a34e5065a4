#pragma once
// An HTTP request's target split into its path and query, both percent-decoded: what the service's
// socket (service_server.cpp) and the lab's page (web_routes.cpp) route on.
#include <map>
#include <optional>
#include <string>

namespace gpurun {

struct Target {
  std::string path;
  std::map<std::string, std::string> query;
};

// nullopt for text that is not valid URL text (a broken %XX).
std::optional<Target> parse_target(const std::string& target);

}  // namespace gpurun
