#include "config/config.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "util/error.hpp"
#include "util/text.hpp"
#include "util/units.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Kind = ConfigSource::Kind;

// ---------------------------------------------------------------------------------------------
// The keys

enum class Type { text, seconds, count, percent, memory, boolean, wait, list, appended_list, gpu_indices };

struct KeyInfo {
  std::string name;
  Type type;
  std::string flag;
  std::string meaning;
  json fallback;         // the built-in default; null: unset (the verb decides)
  bool program = false;  // names a program gpurun runs: not taken from a found .gpurun.json
  bool policy = false;   // site policy: system file only
};

const std::vector<KeyInfo>& key_table() {
  static const std::vector<KeyInfo> table{
      {"nvidia_smi", Type::text, "--nvidia-smi", "nvidia-smi program to run", "nvidia-smi", true},
      {"smi_timeout", Type::seconds, "--smi-timeout", "seconds nvidia-smi may take", 10},
      {"max_util", Type::percent, "--max-util", "a GPU above this utilization is busy", "10%"},
      {"max_memory", Type::memory, "--max-memory", "a GPU using more memory is busy", "10%"},
      {"allow_busy", Type::boolean, "--allow-busy", "rank busy GPUs too", false},
      {"ignore_containers", Type::boolean, "--ignore-containers", "do not ask Docker which containers hold GPUs",
       false},
      {"lock_dir", Type::text, "--lock-dir", "directory of the GPU reservations", nullptr},
      {"docker", Type::text, "--docker", "docker client to exec", "docker", true},
      {"image", Type::text, "--image", "image to run", nullptr},
      {"gpus", Type::count, "N", "how many GPUs to take", 1},
      {"command", Type::list, "COMMAND", "command to run in the container", json::array()},
      {"cpus_per_gpu", Type::count, "--cpus-per-gpu", "CPUs per GPU, 8..24", nullptr},
      {"host_cpus", Type::count, "--host-cpus", "CPUs of the Docker host", nullptr},
      {"name", Type::text, "--name", "container name", nullptr},
      {"env", Type::appended_list, "--env", "environment variables for the container", json::array()},
      {"volumes", Type::appended_list, "--volume", "bind mounts, as docker's -v", json::array()},
      {"publish", Type::appended_list, "--publish", "published ports, as docker's -p", json::array()},
      {"docker_opts", Type::appended_list, "--docker-opt", "more docker run arguments, verbatim", json::array()},
      {"detach", Type::boolean, "--detach", "run the container in the background", false},
      {"report", Type::boolean, "--report", "report the job's GPU utilization when it ends", false},
      {"wait", Type::wait, "--wait", "wait for GPUs: a duration, true (no limit) or false", false},
      {"allowed_gpus", Type::gpu_indices, "", "GPUs gpurun may hand out", nullptr, false, true},
      {"max_gpus_per_launch", Type::count, "", "most GPUs one launch may take", nullptr, false, true},
      {"refused_docker_options", Type::list, "", "docker options that are refused", nullptr, false, true},
  };
  return table;
}

const KeyInfo* find_key(std::string_view name) {
  for (const KeyInfo& k : key_table())
    if (k.name == name) return &k;
  return nullptr;
}

std::string env_name(std::string_view key) {
  return "GPURUN_" + text::to_upper(key);
}

// ---------------------------------------------------------------------------------------------
// Did you mean

// Optimal string alignment distance: a swapped pair of letters counts as one edit.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string normal_key(std::string_view word) {
  std::string normal = text::to_lower(word);
  std::replace(normal.begin(), normal.end(), '-', '_');  // --flag-style spellings
  return normal;
}

// " (did you mean "image"?)" for a near miss among `candidates`, else "".
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string normal = normal_key(word);
  const std::string* best = nullptr;
  std::size_t best_distance = normal.size() >= 6 ? 3 : 2;
  for (const std::string& candidate : candidates)
    if (const std::size_t d = edit_distance(normal, normal_key(candidate)); d < best_distance) {
      best = &candidate;
      best_distance = d;
    }
  return best != nullptr ? fmt::format(" (did you mean \"{}\"?)", *best) : "";
}

std::vector<std::string> key_names(bool with_policy, bool with_profiles) {
  std::vector<std::string> names;
  for (const KeyInfo& k : key_table())
    if (with_policy || !k.policy) names.push_back(k.name);
  if (with_profiles) names.emplace_back("profiles");
  return names;
}

// ---------------------------------------------------------------------------------------------
// Values

std::string describe_json(const json& j) {
  if (j.is_string()) return fmt::format("\"{}\"", text::printable(j.get<std::string>()));
  return text::printable(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool whole(const json& j, long long min) {
  if (!j.is_number_integer()) return false;
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(INT_MAX) && static_cast<long long>(u) >= min;
  }
  const auto v = j.get<std::int64_t>();
  return v >= min && v <= INT_MAX;
}

bool all_strings(const json& j) {
  return j.is_array() && std::all_of(j.begin(), j.end(), [](const json& item) { return item.is_string(); });
}

std::string_view expectation(Type type) {
  switch (type) {
    case Type::text: return "a string";
    case Type::seconds: return "a number of seconds above 0";
    case Type::count: return "a whole number of at least 1";
    case Type::percent: return "a percentage such as 10 or \"10%\"";
    case Type::memory: return "a string such as \"10%\", \"500MiB\" or \"2GiB\"";
    case Type::boolean: return "true or false";
    case Type::wait: return "a duration such as \"30m\", true (no limit) or false";
    case Type::list:
    case Type::appended_list: return "a list of strings";
    case Type::gpu_indices: return "a list of GPU indices (whole numbers from 0)";
  }
  return "a value";
}

// Runs one of the option parsers to check a value early, where the file and line are known.
template <typename Parse>
std::optional<std::string> parser_problem(Parse parse) {
  try {
    parse();
    return std::nullopt;
  } catch (const Error& e) {
    return e.what();
  }
}

// Why `j` is not a valid value of `type`; nullopt when it is.
std::optional<std::string> value_problem(Type type, const json& j) {
  const auto expected = [&] { return fmt::format("expected {}, got {}", expectation(type), describe_json(j)); };
  switch (type) {
    case Type::text:
      if (!j.is_string()) return expected();
      return std::nullopt;
    case Type::seconds:
      if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= 0) return expected();
      return std::nullopt;
    case Type::count:
      if (!whole(j, 1)) return expected();
      return std::nullopt;
    case Type::percent:
      if (j.is_number() && j.get<double>() >= 0 && j.get<double>() <= 100) return std::nullopt;
      if (j.is_string()) return parser_problem([&] { parse_utilization_limit(j.get<std::string>()); });
      return expected();
    case Type::memory:
      if (j.is_string()) return parser_problem([&] { parse_memory_limit(j.get<std::string>()); });
      return expected();
    case Type::boolean:
      if (!j.is_boolean()) return expected();
      return std::nullopt;
    case Type::wait:
      if (j.is_boolean()) return std::nullopt;
      if (j.is_string()) return parser_problem([&] { parse_wait_duration(j.get<std::string>()); });
      return expected();
    case Type::list:
    case Type::appended_list:
      if (!all_strings(j)) return expected();
      return std::nullopt;
    case Type::gpu_indices:
      if (!j.is_array() || !std::all_of(j.begin(), j.end(), [](const json& i) { return whole(i, 0); }))
        return expected();
      return std::nullopt;
  }
  return expected();
}

// ---------------------------------------------------------------------------------------------
// Docker options, for refused_docker_options

struct DockerArg {
  std::string name;                  // canonical long name without dashes: "volume", "privileged"
  std::optional<std::string> value;  // absent for a bare boolean flag
  std::string text;                  // as written, for messages: "-v /a:/b", "--privileged=true"
};

bool docker_boolean(std::string_view name) {
  static const std::set<std::string_view> names{"detach",         "interactive",  "tty",
                                                "privileged",     "init",         "rm",
                                                "read-only",      "publish-all",  "oom-kill-disable",
                                                "no-healthcheck", "sig-proxy",    "disable-content-trust",
                                                "help",           "quiet",        "use-api-socket"};
  return names.contains(name);
}

std::string docker_long_name(std::string_view name) {
  if (name == "net") return "network";
  if (name == "net-alias") return "network-alias";
  return std::string(name);
}

std::string docker_short_name(char c) {
  static const std::map<char, std::string> names{{'a', "attach"},  {'c', "cpu-shares"}, {'d', "detach"},
                                                 {'e', "env"},     {'h', "hostname"},   {'i', "interactive"},
                                                 {'l', "label"},   {'m', "memory"},     {'p', "publish"},
                                                 {'P', "publish-all"}, {'q', "quiet"},  {'t', "tty"},
                                                 {'u', "user"},    {'v', "volume"},     {'w', "workdir"}};
  const auto it = names.find(c);
  return it != names.end() ? it->second : std::string(1, c);
}

// Reads docker-run arguments the way docker's flag parser does: --name=value, --name value,
// -v value, -vvalue, -v=value, and clusters of short booleans such as -it.
std::vector<DockerArg> docker_args(const std::vector<std::string>& words) {
  std::vector<DockerArg> args;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") break;  // what follows is not options
    if (w.size() > 2 && w.starts_with("--")) {
      const std::size_t eq = w.find('=');
      DockerArg arg{docker_long_name(w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)), {}, w};
      if (eq != std::string::npos) {
        arg.value = w.substr(eq + 1);
      } else if (!docker_boolean(arg.name) && i + 1 < words.size()) {
        arg.value = words[++i];
        arg.text += " " + *arg.value;
      }
      args.push_back(std::move(arg));
    } else if (w.size() > 1 && w[0] == '-') {
      for (std::size_t j = 1; j < w.size(); ++j) {
        DockerArg arg{docker_short_name(w[j]), {}, w};
        if (j + 1 < w.size() && w[j + 1] == '=') {
          arg.value = w.substr(j + 2);
        } else if (!docker_boolean(arg.name)) {
          arg.value = w.substr(j + 1);
          if (arg.value->empty() && i + 1 < words.size()) {
            arg.value = words[++i];
            arg.text += " " + *arg.value;
          }
        } else {
          args.push_back(std::move(arg));
          continue;  // a cluster of booleans: -it
        }
        args.push_back(std::move(arg));
        break;
      }
    }
  }
  return args;
}

// A refused_docker_options rule: exactly one docker option, in any spelling docker accepts.
std::optional<DockerArg> parse_rule(const std::string& rule) {
  std::vector<std::string> words;
  std::istringstream in(rule);
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty() || words[0].size() < 2 || words[0][0] != '-') return std::nullopt;
  std::vector<DockerArg> args = docker_args(words);
  if (args.size() != 1) return std::nullopt;
  const std::size_t used = args[0].text.find(' ') == std::string::npos ? 1 : 2;
  if (used != words.size()) return std::nullopt;
  return args[0];
}

// strconv.ParseBool, which docker uses; nullopt when it is not a boolean word.
std::optional<bool> docker_bool(const std::optional<std::string>& value) {
  if (!value) return true;
  static const std::set<std::string_view> yes{"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string_view> no{"0", "f", "F", "FALSE", "false", "False"};
  if (yes.contains(*value)) return true;
  if (no.contains(*value)) return false;
  return std::nullopt;
}

// Two host paths overlap when one is the other or lies inside it: mounting /var/run exposes
// /var/run/docker.sock, and mounting /etc/ssh is mounting part of /etc.
bool paths_overlap(const std::string& a, const std::string& b) {
  if (!a.starts_with("/") || !b.starts_with("/")) return a == b;  // named volumes: by name
  const auto normal = [](const std::string& p) {
    std::string n = fs::path(p).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  const std::string x = normal(a), y = normal(b);
  const auto inside = [](const std::string& inner, const std::string& outer) {
    return outer == "/" || inner == outer || inner.starts_with(outer + "/");
  };
  return inside(x, y) || inside(y, x);
}

// The host side of a --volume value ("/a:/b:ro") or of a --mount value ("type=bind,src=/a,dst=/b").
std::string volume_source(const std::string& value) { return value.substr(0, value.find(':')); }
std::string mount_source(const std::string& value) {
  for (std::string_view field : text::split(value, ','))
    for (std::string_view key : {"source=", "src="})
      if (field.starts_with(key)) return std::string(field.substr(key.size()));
  return "";
}

std::string capability(std::string_view name) {
  const std::string upper = text::to_upper(name);
  return upper.starts_with("CAP_") ? upper.substr(4) : upper;
}

bool same_value(const std::string& option, const std::string& refused, const std::string& given) {
  if (refused == given) return true;
  // A rule naming only a host path refuses every mount that exposes it: "-v /var/run/docker.sock".
  if (option == "volume" && refused.find(':') == std::string::npos) return paths_overlap(refused, volume_source(given));
  if (option == "cap-add" || option == "cap-drop") return capability(refused) == capability(given);
  return false;
}

bool refuses(const DockerArg& rule, const DockerArg& arg) {
  if (rule.name == "volume" && arg.name == "mount" && rule.value && rule.value->find(':') == std::string::npos)
    return paths_overlap(*rule.value, mount_source(arg.value.value_or("")));
  if (rule.name != arg.name) return false;
  if (docker_boolean(rule.name))  // an unreadable boolean counts as true: docker would fail anyway
    return docker_bool(rule.value).value_or(true) == docker_bool(arg.value).value_or(true);
  return !rule.value || same_value(rule.name, *rule.value, arg.value.value_or(""));
}

// ---------------------------------------------------------------------------------------------
// Files

// Every key's line, by path ("image", "profiles/jupyter/gpus"), found by a scan that knows strings
// and comments. nlohmann reports no positions for keys, and a plain text search would find a
// profile's "gpus" when the top-level one is meant.
struct KeyScan {
  std::map<std::string, std::size_t> lines;
  bool has_content = false;  // anything besides blanks and comments
};

std::string join_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "/" + std::string(key);
}

KeyScan scan_keys(std::string_view s) {
  struct Frame {
    bool object;
    std::string path;
    std::string key;
    bool expect_key;
  };
  KeyScan scan;
  std::vector<Frame> stack;
  std::size_t line = 1;
  std::size_t i = s.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      i = std::min(s.find('\n', i), s.size());
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = std::min(s.find("*/", i + 2), s.size());
      line += static_cast<std::size_t>(std::count(s.begin() + static_cast<std::ptrdiff_t>(i),
                                                  s.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      i = std::min(end + 2, s.size());
    } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (c == '"') {
      scan.has_content = true;
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') j += s[j] == '\\' ? std::size_t{2} : std::size_t{1};
      const std::string_view str = s.substr(i + 1, std::min(j, s.size()) - i - 1);
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().key = std::string(str);
        stack.back().expect_key = false;
        scan.lines[join_path(stack.back().path, str)] = line;
      }
      i = j + 1;
    } else {
      scan.has_content = true;
      if (c == '{' || c == '[') {
        std::string path;
        if (!stack.empty()) path = join_path(stack.back().path, stack.back().object ? stack.back().key : "[]");
        stack.push_back({c == '{', path, "", c == '{'});
      } else if ((c == '}' || c == ']') && !stack.empty()) {
        stack.pop_back();
      } else if (c == ',' && !stack.empty() && stack.back().object) {
        stack.back().expect_key = true;
      }
      ++i;
    }
  }
  return scan;
}

// nlohmann's byte offset (characters read, the offending one included) as line and column.
std::pair<std::size_t, std::size_t> line_column(std::string_view s, std::size_t byte) {
  const std::size_t at = std::min(byte > 0 ? byte - 1 : 0, s.size());
  const std::string_view before = s.substr(0, at);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t line_start = before.rfind('\n');
  const std::size_t column = line_start == std::string_view::npos ? at + 1 : at - line_start;
  return {line, column};
}

// "syntax error while parsing object - unexpected '}'; ..." out of nlohmann's message.
std::string parse_detail(const std::string& what) {
  const std::size_t column = what.find("column");
  const std::size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
  std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
  return detail.starts_with("syntax error") ? detail : "syntax error: " + detail;
}

std::string dotted(std::string path) {
  std::replace(path.begin(), path.end(), '/', '.');
  return path;
}

struct ParsedFile {
  std::string path;
  Kind layer;
  json content;
  std::map<std::string, std::size_t> lines;

  std::size_t line_of(const std::string& key_path) const {
    const auto it = lines.find(key_path);
    return it != lines.end() ? it->second : 0;
  }
  std::string location(const std::string& key_path) const { return source(key_path).location(); }
  ConfigSource source(const std::string& key_path, std::string profile = {}) const {
    return {profile.empty() ? layer : Kind::profile, path, line_of(key_path), std::move(profile)};
  }
  Error error(const std::string& key_path, std::string_view problem) const {
    return Error(fmt::format("{}: key \"{}\": {}", location(key_path), dotted(key_path), problem));
  }
};

struct FileText {
  std::string text;
  struct stat st {};  // of the very file read, for the trust check
};

// The file's text; nullopt when it does not exist and need not. O_NONBLOCK: a FIFO planted under
// the name must not hang gpurun (it is refused as not a regular file).
std::optional<FileText> read_text(const std::string& path, bool must_exist) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT && !must_exist) return std::nullopt;
  if (fd < 0 && errno == ENOENT) throw Error(fmt::format("configuration file {} does not exist", path));
  if (fd < 0) throw Error(fmt::format("cannot read configuration file {}: {}", path, std::strerror(errno)));
  FileText file;
  std::string problem;
  if (::fstat(fd, &file.st) != 0) {
    problem = std::strerror(errno);
  } else if (S_ISDIR(file.st.st_mode)) {
    problem = "it is a directory";
  } else if (!S_ISREG(file.st.st_mode)) {
    problem = "it is not a regular file";
  } else {
    char buffer[8192];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0) file.text.append(buffer, static_cast<std::size_t>(n));
    if (n < 0) problem = std::strerror(errno);
  }
  ::close(fd);
  if (!problem.empty()) throw Error(fmt::format("cannot read configuration file {}: {}", path, problem));
  return file;
}

ParsedFile parse_file(const std::string& path, Kind layer, const std::string& text) {
  KeyScan scan = scan_keys(text);
  ParsedFile file{path, layer, json::object(), std::move(scan.lines)};
  if (!scan.has_content) return file;  // blank or comments only: sets nothing
  try {
    file.content = json::parse(text, nullptr, true, true);
  } catch (const json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte);
    throw Error(fmt::format("{}:{}:{}: {}", path, line, column, parse_detail(e.what())));
  } catch (const json::out_of_range& e) {  // a number beyond a double, such as 1e400; no position
    const std::string_view what = e.what();  // "[json.exception.out_of_range.406] number overflow ..."
    throw Error(fmt::format("{}: {}", path, what.substr(what.find("] ") == std::string_view::npos ? 0 : what.find("] ") + 2)));
  }
  if (!file.content.is_object())
    throw Error(fmt::format("{}:1: expected a JSON object {{ ... }} at the top level, got {}", path,
                            describe_json(file.content)));
  return file;
}

// ---------------------------------------------------------------------------------------------
// Checking a file

bool found_project(const ParsedFile& f) { return f.layer == Kind::project; }

void check_option(const ParsedFile& f, const std::string& key_path, const std::string& key, const json& value,
                  bool in_profile) {
  const KeyInfo* info = find_key(key);
  if (info == nullptr) {
    const std::vector<std::string> candidates = key_names(!in_profile, !in_profile);
    throw Error(fmt::format("{}: unknown key \"{}\"{}", f.location(key_path), dotted(key_path),
                            suggestion(key, candidates)));
  }
  if (info->policy)
    throw f.error(key_path, "site policy keys belong at the top level of the system file /etc/gpurun/config.json");
  if (info->program && found_project(f))
    throw f.error(key_path, fmt::format("a project's .gpurun.json cannot choose a program gpurun runs (a cloned "
                                        "repository could run anything); set it in your user file, {} or {}",
                                        env_name(key), info->flag));
  if (value.is_null()) return;  // null: back to the built-in default
  if (const auto problem = value_problem(info->type, value)) throw f.error(key_path, *problem);
}

void check_profiles(const ParsedFile& f, const json& profiles) {
  if (!profiles.is_object())
    throw f.error("profiles", fmt::format("expected an object of named profiles, got {}", describe_json(profiles)));
  for (const auto& [name, profile] : profiles.items()) {
    const std::string path = join_path("profiles", name);
    if (!profile.is_object())
      throw f.error(path, fmt::format("expected an object of option keys, got {}", describe_json(profile)));
    for (const auto& [key, value] : profile.items()) check_option(f, join_path(path, key), key, value, true);
  }
}

void check_policy_key(const ParsedFile& f, const KeyInfo& info, const json& value) {
  if (f.layer != Kind::system)
    throw f.error(info.name, "site policy keys belong in the system file /etc/gpurun/config.json; a user or "
                             "project file cannot set them");
  if (const auto problem = value_problem(info.type, value)) throw f.error(info.name, *problem);
  if (info.name == "refused_docker_options")
    for (const json& rule : value)
      if (!parse_rule(rule.get<std::string>()))
        throw f.error(info.name, fmt::format("\"{}\" is not one docker option; write it as \"--privileged\", "
                                             "\"--pid=host\" or \"-v /var/run/docker.sock\"",
                                             text::printable(rule.get<std::string>())));
}

void check_file(const ParsedFile& f) {
  for (const auto& [key, value] : f.content.items()) {
    const KeyInfo* info = find_key(key);
    if (key == "profiles")
      check_profiles(f, value);
    else if (info != nullptr && info->policy)
      check_policy_key(f, *info, value);
    else
      check_option(f, key, key, value, false);
  }
}

ParsedFile checked_file(const std::string& path, Kind layer, const std::string& text) {
  ParsedFile file = parse_file(path, layer, text);
  check_file(file);
  return file;
}

std::optional<ParsedFile> load_file(const std::string& path, Kind layer, bool must_exist) {
  const std::optional<FileText> file = read_text(path, must_exist);
  if (!file) return std::nullopt;
  return checked_file(path, layer, file->text);
}

// Why a .gpurun.json found by the search must not be used; nullopt when it may. Root's files are
// trusted: whoever controls root controls gpurun anyway.
std::optional<std::string> untrusted(const struct stat& st, uid_t user) {
  if (st.st_uid != user && st.st_uid != 0)
    return fmt::format("it belongs to uid {}, not to you (uid {})", st.st_uid, user);
  if ((st.st_mode & S_IWOTH) != 0) return std::string("anyone may write it");
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Merging

void set_value(Config& config, const KeyInfo& info, const json& value, const ConfigSource& source) {
  ConfigValue& slot = config.values[info.name];
  if (value.is_null()) {
    slot = {info.fallback, source, {}};
  } else if (info.type == Type::appended_list) {
    // Lists add up across layers; an item already there keeps its first source.
    for (const json& item : value)
      if (std::find(slot.value.begin(), slot.value.end(), item) == slot.value.end()) {
        slot.value.push_back(item);
        slot.item_sources.push_back(source);
      }
    slot.source = source;
  } else {
    slot = {value, source, {}};
  }
}

void merge_file(Config& config, const ParsedFile& f) {
  for (const auto& [key, value] : f.content.items()) {
    const KeyInfo* info = find_key(key);
    if (info != nullptr && !info->policy) set_value(config, *info, value, f.source(key));
  }
}

void load_policy(Config& config, const ParsedFile& system) {
  SitePolicy& policy = config.policy;
  for (const auto& [key, value] : system.content.items()) {
    const KeyInfo* info = find_key(key);
    if (info == nullptr || !info->policy) continue;
    policy.sources[key] = system.source(key);
    if (key == "allowed_gpus") policy.allowed_gpus = value.get<std::vector<int>>();
    if (key == "max_gpus_per_launch") policy.max_gpus_per_launch = value.get<int>();
    if (key == "refused_docker_options") policy.refused_docker_options = value.get<std::vector<std::string>>();
  }
}

void merge_profile(Config& config, const std::vector<ParsedFile>& files, const std::string& name,
                   const std::string& chosen_by) {
  if (!config.profiles.contains(name)) {
    std::vector<std::string> known;
    for (const auto& [known_name, where] : config.profiles) known.push_back(known_name);
    throw Error(fmt::format("unknown profile \"{}\" (chosen by {}){}; {}", text::printable(name), chosen_by,
                            suggestion(name, known),
                            known.empty() ? "no configuration file defines any profile"
                                          : fmt::format("known profiles: {}", fmt::join(known, ", "))));
  }
  config.profile = ChosenProfile{name, chosen_by, config.profiles.at(name)};
  for (const ParsedFile& f : files) {
    if (!f.content.contains("profiles") || !f.content["profiles"].contains(name)) continue;
    for (const auto& [key, value] : f.content["profiles"][name].items())
      set_value(config, *find_key(key), value, f.source(join_path(join_path("profiles", name), key), name));
  }
}

std::optional<bool> boolean_word(std::string_view word) {
  const std::string w = text::to_lower(text::trim(word));
  if (w == "1" || w == "true" || w == "yes" || w == "on") return true;
  if (w == "0" || w == "false" || w == "no" || w == "off") return false;
  return std::nullopt;
}

// A GPURUN_* value as JSON of the key's type; left a string when it does not read as one, so
// that value_problem() says what was expected.
json env_json(const KeyInfo& info, const std::string& variable, const std::string& raw) {
  switch (info.type) {
    case Type::seconds:
      if (const auto v = text::parse_double(raw)) return *v;
      return raw;
    case Type::count:
      if (const auto v = text::parse_integer(raw)) return *v;
      return raw;
    case Type::boolean:
      if (const auto v = boolean_word(raw)) return *v;
      return raw;
    case Type::wait:
      if (text::to_lower(text::trim(raw)) == "forever") return true;
      if (const auto v = boolean_word(raw)) return *v;
      return raw;
    case Type::list:
    case Type::appended_list:
      // A JSON list holds several items; anything else is one item, never split on spaces.
      if (text::trim(raw).starts_with("[")) {
        json list = json::parse(raw, nullptr, false);
        if (list.is_discarded())
          throw Error(fmt::format("{}: not a JSON list of strings, such as [\"/data:/data\", \"/scratch:/scratch\"]",
                                  variable));
        return list;
      }
      return json::array({raw});
    default:
      return raw;
  }
}

void merge_environment(Config& config, const std::map<std::string, std::string>& environment) {
  std::vector<std::string> variables{"GPURUN_PROFILE"};
  for (const KeyInfo& k : key_table())
    if (!k.policy) variables.push_back(env_name(k.name));
  for (const auto& [variable, raw] : environment) {
    if (variable == "GPURUN_PROFILE" || raw.empty()) continue;  // empty: unset, as shells mean it
    const KeyInfo* info = variable.starts_with("GPURUN_") ? find_key(text::to_lower(variable.substr(7))) : nullptr;
    if (info == nullptr || info->policy) {
      config.warnings.push_back(fmt::format("ignoring {}: gpurun has no such setting{}", variable,
                                            info != nullptr ? " (site policy is set only in /etc/gpurun/config.json)"
                                                            : suggestion(variable, variables)));
      continue;
    }
    const json value = env_json(*info, variable, raw);
    if (const auto problem = value_problem(info->type, value))
      throw Error(fmt::format("{}=\"{}\": {}", variable, text::printable(raw), *problem));
    set_value(config, *info, value, {Kind::environment, variable, 0, {}});
  }
}

void merge_flags(Config& config, const std::vector<std::pair<std::string, json>>& flags) {
  for (const auto& [key, given] : flags) {
    const KeyInfo* info = find_key(key);
    if (info == nullptr || info->policy)
      throw Error(fmt::format("no command-line flag sets the configuration key \"{}\"", key));
    const json value = info->type == Type::appended_list && given.is_string() ? json::array({given}) : given;
    if (const auto problem = value_problem(info->type, value)) throw Error(fmt::format("{}: {}", info->flag, *problem));
    set_value(config, *info, value, {Kind::flag, info->flag, 0, {}});
  }
}

// ---------------------------------------------------------------------------------------------
// Reports

// Values from GPURUN_* variables and flags are not checked for UTF-8: replace what is invalid.
std::string display(const json& value) {
  return value.is_null() ? "(unset)" : value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// "system /etc/...:4 + flag --volume" for a list built by several layers.
std::string describe_sources(const ConfigValue& v) {
  if (v.item_sources.empty()) return v.source.describe();
  std::vector<std::string> parts;
  for (const ConfigSource& s : v.item_sources)
    if (std::string d = s.describe(); std::find(parts.begin(), parts.end(), d) == parts.end()) parts.push_back(d);
  return fmt::format("{}", fmt::join(parts, " + "));
}

json source_json(const ConfigSource& s) {
  json j{{"layer", kind_name(s.kind)}};
  if (!s.where.empty()) j["where"] = s.where;
  if (s.line > 0) j["line"] = s.line;
  if (!s.profile.empty()) j["profile"] = s.profile;
  return j;
}

std::string_view state_name(ConfigFile::State state) {
  switch (state) {
    case ConfigFile::State::loaded: return "loaded";
    case ConfigFile::State::not_found: return "not found";
    case ConfigFile::State::ignored: return "ignored (--no-config)";
    case ConfigFile::State::untrusted: return "ignored (not trusted)";
  }
  return "";
}

std::string policy_location(const Config& config, const std::string& key) {
  const auto it = config.policy.sources.find(key);
  if (it == config.policy.sources.end()) return "the system file";
  return it->second.location();
}

// The item of an option list that a docker argument came from, to name its source in a refusal.
std::string origin_of(const Config& config, const std::string& key, const std::string& item) {
  const auto it = config.values.find(key);
  if (it == config.values.end()) return "";
  const ConfigValue& v = it->second;
  for (std::size_t i = 0; i < v.value.size() && i < v.item_sources.size(); ++i)
    if (v.value[i] == item) return fmt::format(" (from {})", v.item_sources[i].describe());
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public

std::string_view kind_name(ConfigSource::Kind kind) {
  switch (kind) {
    case Kind::defaults: return "default";
    case Kind::system: return "system";
    case Kind::user: return "user";
    case Kind::project: return "project";
    case Kind::extra_file: return "config";
    case Kind::profile: return "profile";
    case Kind::environment: return "env";
    case Kind::flag: return "flag";
  }
  return "";
}

std::string ConfigSource::location() const { return line > 0 ? fmt::format("{}:{}", where, line) : where; }

std::string ConfigSource::describe() const {
  const std::string at = location();
  switch (kind) {
    case Kind::defaults: return "default";
    case Kind::profile: return fmt::format("profile {} in {}", profile, at);
    case Kind::flag: return where.starts_with("-") ? "flag " + where : "command line " + where;
    default: return fmt::format("{} {}", kind_name(kind), at);
  }
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> out;
    for (const KeyInfo& k : key_table())
      out.push_back({k.name, k.flag, k.policy ? "" : env_name(k.name), k.meaning, k.policy});
    return out;
  }();
  return keys;
}

const ConfigValue& Config::at(std::string_view key) const {
  const auto it = values.find(std::string(key));
  if (it == values.end()) throw Error(fmt::format("no configuration key \"{}\"", key));
  return it->second;
}

std::optional<std::string> default_user_config_path(const std::optional<std::string>& xdg_config_home,
                                                    const std::optional<std::string>& home) {
  // The XDG spec says to ignore a relative XDG_CONFIG_HOME.
  if (xdg_config_home && xdg_config_home->starts_with("/")) return *xdg_config_home + "/gpurun/config.json";
  if (home && !home->empty()) return *home + "/.config/gpurun/config.json";
  return std::nullopt;
}

std::optional<std::string> find_project_file(const std::string& cwd) {
  std::error_code ec;
  fs::path dir = fs::absolute(cwd, ec).lexically_normal();
  if (ec) return std::nullopt;
  if (!dir.has_filename() && dir.has_parent_path() && dir != dir.root_path()) dir = dir.parent_path();
  while (true) {
    const fs::path candidate = dir / ".gpurun.json";
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (dir == dir.root_path() || !dir.has_parent_path()) return std::nullopt;
    dir = dir.parent_path();
  }
}

std::map<std::string, std::string> gpurun_environment(const char* const* envp) {
  std::map<std::string, std::string> found;
  for (; envp != nullptr && *envp != nullptr; ++envp) {
    const std::string_view entry(*envp);
    const std::size_t eq = entry.find('=');
    if (entry.starts_with("GPURUN_") && eq != std::string_view::npos)
      found.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return found;
}

Config load_config(const ConfigInputs& inputs) {
  Config config;
  for (const KeyInfo& k : key_table())
    if (!k.policy) config.values[k.name] = {k.fallback, {}, {}};

  // The system file is read even with --no-config: its site policy always holds.
  std::vector<ParsedFile> files;  // those whose options count, lowest first
  const auto note = [&](Kind layer, const std::string& path, ConfigFile::State state) {
    config.files.push_back({layer, path, state});
  };
  if (auto system = load_file(inputs.system_file, Kind::system, false)) {
    load_policy(config, *system);
    note(Kind::system, inputs.system_file, inputs.no_config ? ConfigFile::State::ignored : ConfigFile::State::loaded);
    if (!inputs.no_config) files.push_back(std::move(*system));
  } else {
    note(Kind::system, inputs.system_file, ConfigFile::State::not_found);
  }

  if (inputs.user_file) {
    if (inputs.no_config) {
      note(Kind::user, *inputs.user_file, ConfigFile::State::ignored);
    } else if (auto user = load_file(*inputs.user_file, Kind::user, false)) {
      note(Kind::user, *inputs.user_file, ConfigFile::State::loaded);
      files.push_back(std::move(*user));
    } else {
      note(Kind::user, *inputs.user_file, ConfigFile::State::not_found);
    }
  }

  if (!inputs.no_config && !inputs.cwd.empty()) {
    if (const auto project = find_project_file(inputs.cwd)) {
      if (const auto file = read_text(*project, false)) {
        if (const auto why = untrusted(file->st, inputs.user_id.value_or(::geteuid()))) {
          config.warnings.push_back(fmt::format("ignoring {}: {}", *project, *why));
          note(Kind::project, *project, ConfigFile::State::untrusted);
        } else {
          note(Kind::project, *project, ConfigFile::State::loaded);
          files.push_back(checked_file(*project, Kind::project, file->text));
        }
      }
    }
  }

  for (const std::string& extra : inputs.extra_files) {
    files.push_back(*load_file(extra, Kind::extra_file, true));
    note(Kind::extra_file, extra, ConfigFile::State::loaded);
  }

  for (const ParsedFile& f : files) {
    merge_file(config, f);
    if (f.content.contains("profiles"))
      for (const auto& [name, profile] : f.content["profiles"].items())
        config.profiles[name].push_back(f.source(join_path("profiles", name)));
  }

  const auto env_profile = inputs.environment.find("GPURUN_PROFILE");
  if (inputs.profile)
    merge_profile(config, files, *inputs.profile, "--profile");
  else if (env_profile != inputs.environment.end() && !env_profile->second.empty())
    merge_profile(config, files, env_profile->second, "GPURUN_PROFILE");

  merge_environment(config, inputs.environment);
  merge_flags(config, inputs.flags);
  return config;
}

void apply_to(const Config& config, Options& o) {
  const auto get = [&](const char* key) -> const json& { return config.at(key).value; };
  const auto text_or_empty = [&](const char* key) { return get(key).is_null() ? "" : get(key).get<std::string>(); };
  const auto optional_int = [&](const char* key) {
    return get(key).is_null() ? std::nullopt : std::optional<int>(get(key).get<int>());
  };
  o.nvidia_smi = get("nvidia_smi").get<std::string>();
  o.smi_timeout_s = get("smi_timeout").get<double>();
  o.max_util = get("max_util").is_string() ? get("max_util").get<std::string>() : get("max_util").dump();
  o.max_memory = get("max_memory").get<std::string>();
  o.allow_busy = get("allow_busy").get<bool>();
  o.container_awareness = !get("ignore_containers").get<bool>();
  o.lock_dir = text_or_empty("lock_dir");
  o.docker = get("docker").get<std::string>();
  o.image = text_or_empty("image");
  o.gpus = get("gpus").get<int>();
  o.command = get("command").get<std::vector<std::string>>();
  o.cpus_per_gpu = optional_int("cpus_per_gpu");
  o.host_cpus = optional_int("host_cpus");
  o.name = text_or_empty("name");
  o.env = get("env").get<std::vector<std::string>>();
  o.volumes = get("volumes").get<std::vector<std::string>>();
  o.publish = get("publish").get<std::vector<std::string>>();
  o.docker_opts = get("docker_opts").get<std::vector<std::string>>();
  o.detach = get("detach").get<bool>();
  o.report = get("report").get<bool>();
  const json& wait = get("wait");  // false: no waiting; true: no limit; else a duration
  if (wait.is_boolean())
    o.wait = wait.get<bool>() ? std::optional<std::string>("") : std::nullopt;
  else
    o.wait = wait.get<std::string>();
}

bool gpu_allowed(const Config& config, int index) {
  const auto& allowed = config.policy.allowed_gpus;
  return !allowed || std::find(allowed->begin(), allowed->end(), index) != allowed->end();
}

std::string gpu_not_allowed_reason(const Config& config) {
  return fmt::format("not offered by the site policy \"allowed_gpus\" in {}", policy_location(config, "allowed_gpus"));
}

void check_gpu_count(const Config& config, int gpus) {
  const SitePolicy& policy = config.policy;
  if (policy.max_gpus_per_launch && gpus > *policy.max_gpus_per_launch)
    throw Error(fmt::format("{} GPUs asked for, but the site policy \"max_gpus_per_launch\" in {} allows at most {} "
                            "per launch",
                            gpus, policy_location(config, "max_gpus_per_launch"), *policy.max_gpus_per_launch));
  if (policy.allowed_gpus && static_cast<std::size_t>(gpus) > policy.allowed_gpus->size())
    throw Error(fmt::format("{} GPUs asked for, but the site policy \"allowed_gpus\" in {} offers only {}: {}", gpus,
                            policy_location(config, "allowed_gpus"), policy.allowed_gpus->size(),
                            fmt::join(*policy.allowed_gpus, ", ")));
}

void check_docker_options(const Config& config, const Options& options) {
  // What the user adds to docker run, as docker will read it; gpurun's own arguments are not checked.
  struct Given {
    DockerArg arg;
    std::string key;
    std::string item;
  };
  std::vector<Given> given;
  for (DockerArg& arg : docker_args(options.docker_opts)) {
    const std::string first_word = arg.text.substr(0, arg.text.find(' '));
    given.push_back({std::move(arg), "docker_opts", first_word});
  }
  const auto add_list = [&](const std::vector<std::string>& items, const char* option, const char* key) {
    for (const std::string& item : items)
      given.push_back({{option, item, fmt::format("--{} {}", option, item)}, key, item});
  };
  add_list(options.env, "env", "env");
  add_list(options.volumes, "volume", "volumes");
  add_list(options.publish, "publish", "publish");

  for (const std::string& rule_text : config.policy.refused_docker_options) {
    const std::optional<DockerArg> rule = parse_rule(rule_text);
    if (!rule) continue;  // load_config() refused such a rule already
    for (const Given& g : given)
      if (refuses(*rule, g.arg))
        throw Error(fmt::format("docker option \"{}\"{} is refused by the site policy \"refused_docker_options\" "
                                "(rule \"{}\") in {}",
                                text::printable(g.arg.text), origin_of(config, g.key, g.item), rule_text,
                                policy_location(config, "refused_docker_options")));
  }
}

void check_policy(const Config& config, const Options& options) {
  check_gpu_count(config, options.gpus);
  check_docker_options(config, options);
}

std::string config_report_table(const Config& config) {
  struct Row {
    std::string key, value, source;
  };
  std::vector<Row> rows;
  for (const KeyInfo& k : key_table()) {
    if (k.policy) {
      const auto it = config.policy.sources.find(k.name);
      json value = nullptr;
      if (k.name == "allowed_gpus" && config.policy.allowed_gpus) value = *config.policy.allowed_gpus;
      if (k.name == "max_gpus_per_launch" && config.policy.max_gpus_per_launch)
        value = *config.policy.max_gpus_per_launch;
      if (k.name == "refused_docker_options" && it != config.policy.sources.end())
        value = config.policy.refused_docker_options;
      rows.push_back({k.name, value.is_null() ? "(not set)" : value.dump(),
                      it == config.policy.sources.end() ? "site policy" : "site policy, " + it->second.describe()});
    } else {
      const ConfigValue& v = config.at(k.name);
      rows.push_back({k.name, display(v.value), describe_sources(v)});
    }
  }
  if (config.profile)
    rows.push_back({"profile", config.profile->name, config.profile->chosen_by == "--profile"
                                                         ? "flag --profile"
                                                         : "env " + config.profile->chosen_by});

  std::size_t key_width = 3, value_width = 5;
  for (const Row& r : rows) {
    key_width = std::max(key_width, r.key.size());
    value_width = std::max(value_width, std::min(r.value.size(), std::size_t{40}));  // a long list overflows
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {}\n", "KEY", key_width, "VALUE", value_width, "SOURCE");
  for (const Row& r : rows)
    out += fmt::format("{:<{}}  {:<{}}  {}\n", r.key, key_width, r.value, value_width, r.source);

  out += "\nFiles (lowest precedence first):\n";
  for (const ConfigFile& f : config.files)
    out += fmt::format("  {:<8} {}  {}\n", kind_name(f.layer), f.path, state_name(f.state));
  if (!config.profiles.empty()) {
    out += "\nProfiles:\n";
    std::size_t name_width = 0;
    for (const auto& [name, where] : config.profiles) name_width = std::max(name_width, name.size());
    for (const auto& [name, where] : config.profiles) {
      std::vector<std::string> places;
      for (const ConfigSource& s : where) places.push_back(s.location());
      out += fmt::format("  {:<{}}  {}\n", name, name_width, fmt::join(places, ", "));
    }
  }
  return out;
}

json config_report_json(const Config& config) {
  json keys = json::object();
  for (const KeyInfo& k : key_table()) {
    if (k.policy) continue;
    const ConfigValue& v = config.at(k.name);
    json entry{{"value", v.value}, {"source", source_json(v.source)}};
    if (k.type == Type::appended_list) {
      entry["items"] = json::array();
      for (std::size_t i = 0; i < v.value.size() && i < v.item_sources.size(); ++i)
        entry["items"].push_back({{"value", v.value[i]}, {"source", source_json(v.item_sources[i])}});
    }
    keys[k.name] = std::move(entry);
  }

  json policy = json::object();
  const SitePolicy& p = config.policy;
  const auto rule = [&](const std::string& key, json value) {
    const auto it = p.sources.find(key);
    policy[key] = it == p.sources.end() ? json(nullptr)
                                        : json{{"value", std::move(value)}, {"source", source_json(it->second)}};
  };
  rule("allowed_gpus", p.allowed_gpus ? json(*p.allowed_gpus) : json(nullptr));
  rule("max_gpus_per_launch", p.max_gpus_per_launch ? json(*p.max_gpus_per_launch) : json(nullptr));
  rule("refused_docker_options", p.refused_docker_options);

  json profiles = json::object();
  for (const auto& [name, where] : config.profiles) {
    profiles[name] = json::array();
    for (const ConfigSource& s : where) profiles[name].push_back(source_json(s));
  }
  json profile = nullptr;
  if (config.profile) profile = {{"name", config.profile->name}, {"chosen_by", config.profile->chosen_by}};

  json files = json::array();
  for (const ConfigFile& f : config.files)
    files.push_back({{"layer", kind_name(f.layer)}, {"path", f.path}, {"state", state_name(f.state)}});

  return {{"keys", keys},     {"policy", policy}, {"profile", profile},
          {"profiles", profiles}, {"files", files}, {"warnings", config.warnings}};
}

std::string starter_user_config() {
  return R"(// gpurun user configuration (JSON; // and /* */ comments allowed).
// Remove the // in front of a line to use it; `gpurun config` shows what is in effect and why.
//
// Precedence, lowest first: built-in defaults < /etc/gpurun/config.json < this file
//   < .gpurun.json in the current directory or the nearest parent, then --config files
//   < the profile chosen with -P/--profile NAME < GPURUN_* variables < command-line flags.
// env, volumes, publish and docker_opts add to what lower layers set; null resets a key
// to its built-in default (for those lists: drops what lower layers added).
{
  // "image": "nvcr.io/nvidia/pytorch:24.05-py3",   // --image
  // "gpus": 1,                                      // N: how many GPUs to take
  // "command": ["python", "train.py"],              // the command when none is given
  // "max_util": "10%",                              // a GPU above this utilization is busy
  // "max_memory": "10%",                            // or "500MiB", "2GiB"
  // "allow_busy": false,
  // "ignore_containers": false,
  // "wait": "30m",                                  // or true: wait without limit
  // "detach": false,
  // "report": true,                                 // a utilization summary when each job ends
  // "cpus_per_gpu": 16,                             // 8..24; default: host CPUs / GPUs
  // "host_cpus": 64,                                // when docker runs on another machine
  // "name": "my-job",                               // a fixed container name
  // "env": ["WANDB_MODE=offline"],
  // "volumes": ["/data:/data:ro"],
  // "publish": ["6006:6006"],
  // "docker_opts": ["--ipc=host"],
  // "lock_dir": "/run/lock/gpurun",
  // "docker": "docker",
  // "nvidia_smi": "nvidia-smi",
  // "smi_timeout": 10,
  "profiles": {
    // "jupyter": {"publish": ["8888:8888"], "gpus": 1, "command": ["jupyter", "lab", "--ip=0.0.0.0"]}
  }
}
)";
}

Config configure(const ConfigInputs& inputs, Options& options) {
  Config config = load_config(inputs);
  apply_to(config, options);
  if (config.policy.allowed_gpus) {
    options.allowed_gpus = *config.policy.allowed_gpus;
    options.not_allowed_reason = gpu_not_allowed_reason(config);
  }
  return config;
}

}  // namespace gpurun
