#include "config_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string_view>
#include <vector>

#include "gpurun/config/idle_policy.hpp"
#include "gpurun/config/notify_policy.hpp"
#include "gpurun/config/policy.hpp"
#include "gpurun/config/service_section.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/config/values.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/docker_args.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;
using Kind = ConfigSource::Kind;

std::vector<std::string> key_names(bool with_policy, bool with_profiles) {
  std::vector<std::string> names;
  for (const Setting& s : settings())
    if (s.scope == Scope::option || (with_policy && s.scope == Scope::policy)) names.emplace_back(s.key);
  if (with_profiles) names.emplace_back("profiles");
  if (with_policy) names.insert(names.end(), {"service", "idle_policy", "notify"});
  return names;
}

ParsedFile parse_file(const std::string& path, Kind layer, const std::string& text) {
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    const auto [line, column] = line_column(text, nul + 1);
    throw Error(fmt::format("{}:{}:{}: a NUL byte: a configuration file is JSON text", path, line, column));
  }
  KeyScan scan = scan_keys(text);
  if (scan.too_deep_line != 0)
    throw Error(
        fmt::format("{}:{}: nested deeper than {} levels, which no setting is", path, scan.too_deep_line, kMaxNesting));
  if (scan.duplicate)
    throw Error(fmt::format("{}:{}: key \"{}\" is given twice (first on line {}): keep one of the two", path,
                            scan.duplicate->line, dotted(scan.duplicate->path), scan.duplicate->first_line));
  if (scan.overflow)
    throw Error(fmt::format("{}:{}: the number {} is beyond what any setting takes (at most about 1.8e308)", path,
                            scan.overflow->line, text::printable(scan.overflow->number, 40)));
  ParsedFile file{path, layer, json::object(), std::move(scan.lines)};
  if (!scan.has_content) return file;  // blank or comments only: sets nothing
  try {
    file.content = json::parse(text, nullptr, true, true);
  } catch (const json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte);
    throw Error(fmt::format("{}:{}:{}: {}", path, line, column, parse_detail(e.what())));
  } catch (const json::out_of_range& e) {    // a number beyond a double, such as 1e400; no position
    const std::string_view what = e.what();  // "[json.exception.out_of_range.406] number overflow ..."
    throw Error(
        fmt::format("{}: {}", path, what.substr(what.find("] ") == std::string_view::npos ? 0 : what.find("] ") + 2)));
  }
  if (!file.content.is_object())
    throw Error(fmt::format("{}:1: expected a JSON object {{ ... }} at the top level, got {}", path,
                            describe_json(file.content)));
  return file;
}

bool found_project(const ParsedFile& f) { return f.layer == Kind::project; }

// What a project's file may not give its job: power over the host (the engine's socket is root's).
// A cloned repository's code runs in that job; only its user widens what the job may do.
void check_project_docker_options(const ParsedFile& f, const std::string& key_path, const std::string& key,
                                  const json& value) {
  static const std::set<std::string, std::less<>> kHostPowers{
      "privileged", "cap-add", "device",   "device-cgroup-rule", "runtime",      "user",          "group-add",
      "userns",     "pid",     "cgroupns", "cgroup-parent",      "volumes-from", "volume-driver", "use-api-socket"};
  static const std::vector<std::string> kEngineSockets{"/run/docker.sock", "/var/run/docker.sock",
                                                       "/run/podman/podman.sock", "/var/run/podman/podman.sock"};
  std::vector<std::string> words;
  for (const json& item : value.is_array() ? value : json::array({value}))
    if (item.is_string()) words.push_back(item.get<std::string>());
  std::vector<DockerArg> args;
  if (key == "docker_opts") {
    args = docker_args(words);
  } else {
    for (const std::string& word : words) args.push_back({"volume", word, word});
  }
  for (const DockerArg& arg : args) {
    const std::string text = arg.value.value_or("");
    const std::string source = arg.name == "volume"  ? volume_source(text)
                               : arg.name == "mount" ? mount_source(text)
                                                     : "";
    const bool reaches_engine =
        !source.empty() && std::any_of(kEngineSockets.begin(), kEngineSockets.end(),
                                       [&](const std::string& s) { return paths_overlap_as_mounted(source, s); });
    // A volume's driver options can bind any host path (volume-opt=o=bind,volume-opt=device=/run).
    const bool driver_options = arg.name == "mount" && (text.find("volume-opt") != std::string::npos ||
                                                        text.find("volume-driver") != std::string::npos);
    const bool unconfined = arg.name == "security-opt" && (text.find("unconfined") != std::string::npos ||
                                                           text.find("no-new-privileges=false") != std::string::npos ||
                                                           text.find("label=disable") != std::string::npos);
    if (!reaches_engine && !driver_options && !unconfined && !kHostPowers.contains(arg.name)) continue;
    throw f.error(key_path, fmt::format("a project's .gpurun.json cannot give its job power over the host "
                                        "(a cloned repository's code runs in it): \"{}\"; if you mean it, give it "
                                        "with --docker-opt or in your user file",
                                        text::printable(arg.text)));
  }
}

// srun's options that run a program of their own (on the submit host or the node): a project's
// file choosing one would run the repository's script at every launch from it, as a program
// choice would (`docker`, `nvidia_smi`). Any prefix srun would take for them counts.
void check_project_srun_options(const ParsedFile& f, const std::string& key_path, const json& value) {
  static constexpr std::string_view kRunPrograms[] = {"--prolog", "--epilog", "--task-prolog", "--task-epilog"};
  for (const json& item : value) {
    if (!item.is_string()) continue;
    const std::string_view word = item.get_ref<const std::string&>();
    const std::string_view name = word.substr(0, word.find('='));
    if (name.size() < 4 || !name.starts_with("--")) continue;
    for (const std::string_view option : kRunPrograms)
      if (option.starts_with(name))
        throw f.error(key_path, fmt::format("a project's .gpurun.json cannot choose a program srun runs ({}: a "
                                            "cloned repository could run anything); give it with --slurm-opt or "
                                            "in your user file",
                                            text::printable(std::string(word))));
  }
}

void check_option(const ParsedFile& f, const std::string& key_path, const std::string& key, const json& value,
                  bool in_profile) {
  const Setting* info = find_setting(key);
  if (info == nullptr || info->scope == Scope::invocation) {
    const std::vector<std::string> candidates = key_names(!in_profile, !in_profile);
    throw Error(
        fmt::format("{}: unknown key \"{}\"{}", f.location(key_path), dotted(key_path), suggestion(key, candidates)));
  }
  if (info->scope == Scope::policy)
    throw f.error(key_path, "site policy keys belong at the top level of the system file /etc/gpurun/config.json");
  if (info->program && found_project(f))
    throw f.error(key_path, fmt::format("a project's .gpurun.json cannot choose a program gpurun runs (a cloned "
                                        "repository could run anything); set it in your user file, {} or {}",
                                        info->env(), info->flag));
  if (info->machine_wide && found_project(f))
    throw f.error(key_path, fmt::format("a project's .gpurun.json cannot move the machine's reservations (its "
                                        "launches and everyone else's would each take the same GPUs); set it in "
                                        "your user file, {} or {}",
                                        info->env(), info->flag));
  if (value.is_null()) return;  // null: back to the built-in default
  if (const auto problem = info->problem(value)) throw f.error(key_path, *problem);
  if ((key == "docker_opts" || key == "volumes") && found_project(f))
    check_project_docker_options(f, key_path, key, value);
  if (key == "slurm_srun_opts" && found_project(f)) check_project_srun_options(f, key_path, value);
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

// Why a key of the system file alone is refused in `f`: which kind of file it is.
std::string system_file_only(const ParsedFile& f, std::string_view what) {
  const std::string_view file = f.layer == Kind::user      ? "a user file"
                                : f.layer == Kind::project ? "a project file"
                                                           : "a --config file";
  return fmt::format("{} belong in the system file /etc/gpurun/config.json; {} cannot set them", what, file);
}

// `"notify": true` meant --notify, whose key is another (notify is the site's section).
std::string notify_hint(const std::string& key, const json& value) {
  return key == "notify" && value.is_boolean() ? " (for --notify, the key is notify_end)" : "";
}

void check_policy_key(const ParsedFile& f, const Setting& info, const json& value) {
  if (f.layer != Kind::system) throw f.error(std::string(info.key), system_file_only(f, "site policy keys"));
  const std::string key(info.key);
  if (const auto problem = info.problem(value)) throw f.error(key, *problem);  // its words too
  if (key == "refused_docker_options" || key == "allowed_docker_options")
    for (const json& rule : value)
      if (const auto problem = rule_problem(rule.get<std::string>())) throw f.error(key, *problem);
}

void check_service(const ParsedFile& f, const json& value) {
  if (f.layer != Kind::system) throw f.error("service", system_file_only(f, "the service's settings"));
  if (const auto read = read_service_section(value); read.problem)
    throw f.error(read.problem->first.empty() ? "service" : join_path("service", read.problem->first),
                  read.problem->second);
}

void check_policy_object(const ParsedFile& f, const std::string& key, const json& value) {
  if (f.layer != Kind::system) throw f.error(key, system_file_only(f, "site policy keys") + notify_hint(key, value));
  if (const auto problem = policy_object_problem(key, value))
    throw f.error(problem->first.empty() ? key : join_path(key, problem->first),
                  problem->second + notify_hint(key, value));
}

void check_file(const ParsedFile& f) {
  for (const auto& [key, value] : f.content.items()) {
    const Setting* info = find_setting(key);
    if (key == "profiles")
      check_profiles(f, value);
    else if (key == "service")
      check_service(f, value);
    else if (is_policy_object(key))
      check_policy_object(f, key, value);
    else if (info != nullptr && info->scope == Scope::policy)
      check_policy_key(f, *info, value);
    else
      check_option(f, key, key, value, false);
  }
}

}  // namespace

std::optional<FileText> read_text(const std::string& path, bool must_exist, std::optional<uid_t> owner) {
  // A symlink is judged by its own owner first (as fs.protected_symlinks does): another user's
  // link to a root-owned file would pass the target's check.
  struct stat link {};
  if (owner && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && link.st_uid != *owner && link.st_uid != 0)
    return FileText{.text = {},
                    .st = link,
                    .untrusted = fmt::format("it is a symlink of uid {}'s, not yours (uid {})", link.st_uid, *owner)};
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  const std::string shown = text::terminal_safe(path);  // a line end in a name stays on the message's line
  if (!fd.valid()) {
    const int error = errno;
    if (error == ENOENT && !must_exist) return std::nullopt;
    if (error == ENOENT) throw Error(fmt::format("configuration file {} does not exist", shown));
    // Someone else's file we may not read is as untrusted as one we may: skipped, not an error.
    struct stat st {};
    if (owner && error == EACCES && ::stat(path.c_str(), &st) == 0)
      if (auto why = untrusted(st, *owner)) return FileText{.text = {}, .st = st, .untrusted = std::move(why)};
    throw Error(fmt::format("cannot read configuration file {}: {}", shown, std::strerror(error)));
  }
  FileText file;
  std::string problem;
  if (::fstat(fd.get(), &file.st) != 0) {
    problem = std::strerror(errno);
  } else if (owner && (file.untrusted = untrusted(file.st, *owner))) {
    return file;  // not read: a file anyone may have put there, of any kind or size
  } else if (S_ISDIR(file.st.st_mode)) {
    problem = "it is a directory";
  } else if (!S_ISREG(file.st.st_mode)) {
    problem = "it is not a regular file";
  } else if (file.st.st_size > static_cast<off_t>(kMaxConfigBytes)) {
    problem = fmt::format("it is {} bytes, over the {} a configuration file may be", file.st.st_size, "1 MiB");
  } else {
    BoundedRead read = read_bounded(fd.get(), kMaxConfigBytes);
    if (read.text)
      file.text = std::move(*read.text);
    else
      problem = read.problem;
  }
  if (!problem.empty()) throw Error(fmt::format("cannot read configuration file {}: {}", shown, problem));
  return file;
}

namespace {

// A volume's source written from where the file is (./data, ../shared, ., .cache), as compose reads one:
// made absolute there, not left to docker, which takes it from wherever gpurun was started (a
// project's subdirectory: an empty directory docker makes, root's).
void anchor_relative_volumes(json& volumes, const std::filesystem::path& dir) {
  if (!volumes.is_array()) return;
  for (json& item : volumes) {
    if (!item.is_string()) continue;
    const std::string volume = item.get<std::string>();
    const std::size_t colon = volume.find(':');
    const std::string source = volume.substr(0, colon);
    if (colon == std::string::npos || !source.starts_with('.')) continue;  // no volume's name starts so
    std::string anchored = (dir / source).lexically_normal().string();
    if (anchored.size() > 1 && anchored.ends_with('/')) anchored.pop_back();
    item = anchored + volume.substr(colon);
  }
}

}  // namespace

ParsedFile checked_file(const std::string& path, Kind layer, const std::string& text) {
  ParsedFile file = parse_file(path, layer, text);
  // Before the checks: a project's "../../run/docker.sock:/s" is checked as the socket it names.
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  if (file.content.contains("volumes")) anchor_relative_volumes(file.content["volumes"], dir);
  if (file.content.contains("profiles") && file.content["profiles"].is_object())
    for (auto& [name, profile] : file.content["profiles"].items())
      if (profile.is_object() && profile.contains("volumes")) anchor_relative_volumes(profile["volumes"], dir);
  check_file(file);
  return file;
}

std::optional<std::string> not_roots_alone(const std::string& path, const struct stat& st) {
  const auto trusted_owner = [](uid_t uid) { return uid == 0 || uid == ::geteuid(); };
  if (!trusted_owner(st.st_uid) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("it is uid {}'s with mode {:04o}", st.st_uid, st.st_mode & 07777);
  // Every directory above it, where the name points and where the file is (a link into a lab
  // share): whoever may write one of them may put another file, or directory, in its place.
  const auto directories_above = [&](const std::filesystem::path& file) -> std::optional<std::string> {
    for (std::filesystem::path dir = file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      struct stat info {};
      if (::stat(dir.c_str(), &info) != 0)
        return fmt::format("its directory {}: {}", text::terminal_safe(dir.string()), std::strerror(errno));
      if (!trusted_owner(info.st_uid) || ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0))
        return fmt::format("its directory {} is uid {}'s with mode {:04o}", text::terminal_safe(dir.string()),
                           info.st_uid, info.st_mode & 07777);
      if (dir == dir.root_path()) break;
    }
    return std::nullopt;
  };
  const std::filesystem::path named = std::filesystem::absolute(path);
  if (auto why = directories_above(named)) return why;
  std::error_code error;
  const std::filesystem::path real = std::filesystem::canonical(named, error);
  if (error) return fmt::format("where it leads: {}", error.message());
  return real == named ? std::nullopt : directories_above(real);
}

std::optional<ParsedFile> load_file(const std::string& path, Kind layer, bool must_exist) {
  const std::optional<FileText> file = read_text(path, must_exist);
  if (!file) return std::nullopt;
  return checked_file(path, layer, file->text);
}

bool is_policy_object(std::string_view key) { return key == "idle_policy" || key == "notify"; }

std::optional<std::pair<std::string, std::string>> policy_object_problem(std::string_view key, const json& value) {
  if (key == "idle_policy") return read_idle_policy(value).problem;
  if (key == "notify") return read_notify_policy(value).problem;
  return std::nullopt;
}

std::optional<std::string> untrusted(const struct stat& st, uid_t user) {
  if (st.st_uid != user && st.st_uid != 0)
    return fmt::format("it belongs to uid {}, not to you (uid {})", st.st_uid, user);
  if ((st.st_mode & S_IWOTH) != 0) return std::string("anyone may write it");
  // Group write is harmless where the group is the owner's private one (useradd's, with umask
  // 002); otherwise each member of the group could choose the owner's image and mounts.
  if ((st.st_mode & S_IWGRP) != 0 && !group_private_to(st.st_gid, st.st_uid))
    return fmt::format("the members of group {} may write it", text::terminal_safe(group_name(st.st_gid)));
  return std::nullopt;
}

}  // namespace gpurun
