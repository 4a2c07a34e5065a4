#pragma once
// What a command line's options set, as read by either reader (CLI11's, option_binding.hpp, or
// the plain one, plain_options.hpp), and the configuration layer it makes.
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/config/settings.hpp"

namespace gpurun::cli {

// Each registry setting's words as typed (its values are checked and typed by the config layer,
// with the flag named in any error), and the options about the run itself.
struct Bindings {
  std::map<std::string, std::string> words;               // key -> the value of a one-value flag
  std::map<std::string, std::vector<std::string>> lists;  // key -> the values of a repeatable flag
  std::map<std::string, bool> switches;                   // key -> a boolean flag
  int verbose = 0;
  int quiet = 0;
  std::string profile;
  std::vector<std::string> config_files;
  bool no_config = false;
};

using Names = std::set<std::string, std::less<>>;

// The flags of `scope` among the long names `given` ("--image"), typed (key -> value), in the
// registry's order: the top configuration layer.
std::vector<std::pair<std::string, nlohmann::json>> flags_given(const Names& given, const Bindings& b, Scope scope);

}  // namespace gpurun::cli
