#include "gpurun/util/docker_args.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

std::string docker_long_name(std::string_view name) {
  if (name == "net") return "network";
  if (name == "net-alias") return "network-alias";
  return std::string(name);
}

std::string docker_short_name(char c) {
  static const std::map<char, std::string> names{
      {'a', "attach"},      {'c', "cpu-shares"}, {'d', "detach"}, {'e', "env"},     {'h', "hostname"},
      {'i', "interactive"}, {'l', "label"},      {'m', "memory"}, {'p', "publish"}, {'P', "publish-all"},
      {'q', "quiet"},       {'t', "tty"},        {'u', "user"},   {'v', "volume"},  {'w', "workdir"}};
  const auto it = names.find(c);
  return it != names.end() ? it->second : std::string(1, c);
}

}  // namespace

bool docker_boolean(std::string_view name) {
  static const std::set<std::string_view> names{"detach",         "interactive", "tty",
                                                "privileged",     "init",        "rm",
                                                "read-only",      "publish-all", "oom-kill-disable",
                                                "no-healthcheck", "sig-proxy",   "disable-content-trust",
                                                "help",           "quiet",       "use-api-socket"};
  return names.contains(name);
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
    std::string n = std::filesystem::path(p).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  const std::string x = normal(a), y = normal(b);
  const auto inside = [](const std::string& inner, const std::string& outer) {
    return outer == "/" || inner == outer || inner.starts_with(outer + "/");
  };
  return inside(x, y) || inside(y, x);
}

bool paths_overlap_as_mounted(const std::string& a, const std::string& b) {
  if (paths_overlap(a, b)) return true;
  // docker binds a path relative to the working directory too (./sock:/s); anything else is a named volume.
  const auto host_path = [](const std::string& p) {
    return p.starts_with("/") || p == "." || p == ".." || p.starts_with("./") || p.starts_with("../");
  };
  if (!host_path(a) || !host_path(b)) return false;
  const auto resolved = [](const std::string& p) {
    std::error_code error;
    const std::filesystem::path real = std::filesystem::weakly_canonical(std::filesystem::absolute(p, error), error);
    return error ? p : real.string();
  };
  return paths_overlap(resolved(a), resolved(b));
}

// The host side of a --volume value ("/a:/b:ro") or of a --mount value ("type=bind,src=/a,dst=/b").
std::string volume_source(const std::string& value) { return value.substr(0, value.find(':')); }
std::string mount_source(const std::string& value) {
  return mount_field(value, {"source", "src"}).value_or("");  // "SRC=/run/docker.sock" is the source too
}

std::optional<std::string> mount_field(const std::string& value, std::initializer_list<std::string_view> keys) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '"' && quoted && i + 1 < value.size() && value[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  std::optional<std::string> found;
  for (const std::string& field : fields) {
    const std::size_t eq = field.find('=');
    const std::string key = text::to_lower(text::trim(std::string_view(field).substr(0, eq)));
    if (eq != std::string::npos && std::find(keys.begin(), keys.end(), key) != keys.end())
      found = field.substr(eq + 1);  // the last one given, as docker keeps it
  }
  return found;
}

std::string capability(std::string_view name) {
  const std::string upper = text::to_upper(name);
  return upper.starts_with("CAP_") ? upper.substr(4) : upper;
}

}  // namespace gpurun
