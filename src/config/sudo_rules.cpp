#include "gpurun/config/sudo_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>
#include <set>
#include <string_view>

#include "gpurun/config/options.hpp"
#include "gpurun/config/policy.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

using Value = std::optional<std::string>;

bool one_of(const Value& v, std::initializer_list<std::string_view> words) {
  return v && std::find(words.begin(), words.end(), *v) != words.end();
}
bool ipc_ok(const Value& v) { return one_of(v, {"private", "shareable", "none"}); }
bool network_ok(const Value& v) { return one_of(v, {"none", "bridge", "default"}); }
// A limit of processes, never none: 0 and -1 lift podman's default of 2048 (a fork bomb as root's
// engine's container).
bool pids_limit_ok(const Value& v) {
  const auto limit = v ? text::parse_integer(*v) : std::nullopt;
  return limit && *limit > 0;
}
// gpurun's labels say who owns the container (and its time limit): never the caller's to give. A
// key must begin with a letter or digit, so that no engine trimming blanks (of any kind) before it
// reads gpurun's own. Nor the labels tools running as root act on: podman's auto-update restarts
// the systemd unit PODMAN_SYSTEMD_UNIT names (reboot.target), watchtower and traefik follow theirs.
bool label_ok(const Value& v) {
  constexpr std::array<std::string_view, 6> kRootToolsLabels{
      "gpurun.", "io.containers.", "PODMAN_", "io.podman.", "traefik.", "com.centurylinklabs.watchtower."};
  if (!v || v->empty() || std::isalnum(static_cast<unsigned char>(v->front())) == 0) return false;
  const std::string key = v->substr(0, v->find('='));
  return std::none_of(kRootToolsLabels.begin(), kRootToolsLabels.end(),
                      [&](std::string_view prefix) { return text::to_lower(key).starts_with(text::to_lower(prefix)); });
}
bool security_ok(const Value& v) {
  return one_of(v, {"no-new-privileges", "no-new-privileges=true", "no-new-privileges:true"});
}
// Bind mounts are checked as the caller (job/caller_mounts.hpp), a tmpfs is private. Only the keys
// below, in any case (docker lowercases them): any other (volume-*, bind-propagation, podman's
// U/chown/idmap/relabel) would have root do more than mount what the caller may reach.
bool mount_ok(const Value& v) {
  if (!v || v->find('"') != std::string::npos) return false;
  std::optional<std::string> type;
  bool source = false;
  bool tmpfs_option = false;
  for (std::string_view field : text::split(*v, ',')) {
    const std::size_t eq = field.find('=');
    const std::string key = text::to_lower(field.substr(0, eq));
    if (key == "type") {
      if (type || eq == std::string_view::npos) return false;  // docker keeps the last: one only
      type = text::to_lower(field.substr(eq + 1));
    } else if (key == "source" || key == "src") {
      source = true;
    } else if (key == "tmpfs-size" || key == "tmpfs-mode") {
      tmpfs_option = true;
    } else if (key != "target" && key != "dst" && key != "destination" && key != "readonly" && key != "ro") {
      return false;
    }
  }
  return (type == "bind" && !tmpfs_option) || (type == "tmpfs" && !source);
}
// An attached job's --rm=false would leave its container behind, with no verb of gpurun's having
// kept it (a detached job's stays until `gpurun rm`, or the service's clean-up).
bool not_false(const Value& v) { return docker_bool(v).value_or(true); }

// A registry reference, as docker's grammar has it (distribution/reference):
// [HOST[:PORT]/]PATH[:TAG][@DIGEST], HOST a name or a bracketed IPv6 address ([::1]:5000/img, as
// distribution/reference takes since v3). Not an engine's transport: podman reads
// "oci-archive:/home/bob/x.tar", "dir:/root/img" or "containers-storage:[…]" as a path, which root
// would open and unpack into the caller's container.
bool registry_reference(const std::string& image) {
  constexpr std::size_t kLongestReference = 512;  // a name of 255 and a digest; bounds the matcher too
  static const std::regex reference(
      R"((?:(?:\[[a-fA-F0-9:]+\]|(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*))"
      R"((?::[0-9]+)?/)?)"
      R"([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
      R"((?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?)"
      R"((?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?)");
  // Matched as HOST:PORT/PATH, "dir:0/root/img" is podman's dir transport of a path relative to
  // its working directory (the caller's); no registry host is named as a transport is.
  constexpr std::array<std::string_view, 11> kTransports{
      "dir", "oci",     "oci-archive", "docker-archive", "docker-daemon", "containers-storage",
      "sif", "tarball", "ostree",      "docker",         "atomic"};
  const std::string first = text::to_lower(image.substr(0, image.find_first_of(":/")));
  if (image.find(':') < image.find('/') &&
      std::find(kTransports.begin(), kTransports.end(), first) != kTransports.end())
    return false;
  return image.size() <= kLongestReference && std::regex_match(image, reference);
}

[[noreturn]] void refuse(const std::string& what) { throw Refusal("not allowed under sudo: " + what); }

}  // namespace

const std::vector<DockerOptionRule>& sudo_docker_rules() {
  static const std::vector<DockerOptionRule> rules{
      // What a training job needs.
      {"env", true, "environment variables (not NVIDIA_*_DEVICES, refused everywhere)"},
      {"volume", true, "bind mounts of paths the caller may reach, checked as the caller; no named volumes"},
      {"mount", true,
       "type=bind (checked as the caller) or type=tmpfs, given once, with only source, target, readonly and "
       "tmpfs-size/-mode; no named volumes, no quotes",
       mount_ok},
      {"tmpfs", true, "a private tmpfs"},
      {"publish", true, "ports; host ports below 1024 are refused"},
      {"expose", true, "ports"},
      {"publish-all", true, "random host ports"},
      {"shm-size", true, "the container's own /dev/shm"},
      {"workdir", true, "inside the container"},
      {"entrypoint", true, "inside the container"},
      {"ipc", true, "private, shareable or none", ipc_ok},
      {"network", true, "none, bridge or default", network_ok},
      {"label", true,
       "not gpurun.* (they say who owns the container), nor the labels of tools running as root (io.containers.*, "
       "PODMAN_*, traefik.*, watchtower's), whatever the admin allows",
       label_ok},
      {"hostname", true, "inside the container"},
      {"domainname", true, "inside the container"},
      {"add-host", true, "the container's /etc/hosts"},
      {"dns", true, "the container's resolver"},
      {"dns-search", true, "the container's resolver"},
      {"dns-option", true, "the container's resolver"},
      {"memory", true, "limits only lower"},
      {"memory-reservation", true, "limits only lower"},
      {"memory-swap", true, "limits only lower"},
      {"pids-limit", true, "a positive limit (0 and -1 lift podman's default)", pids_limit_ok},
      {"cap-drop", true, "drops only"},
      {"security-opt", true, "only no-new-privileges, which gpurun adds anyway", security_ok},
      {"read-only", true, "the container's root file system"},
      {"init", true, "an init process in the container"},
      {"rm", true, "not --rm=false", not_false},
      {"interactive", true, "stdin"},
      {"tty", true, "a terminal"},
      {"sig-proxy", true, "signals to the job"},
      {"detach-keys", true, "keys"},
      {"stop-signal", true, "how docker stops it"},
      {"stop-timeout", true, "how docker stops it"},
      {"health-cmd", true, "health checks"},
      {"health-interval", true, "health checks"},
      {"health-retries", true, "health checks"},
      {"health-timeout", true, "health checks"},
      {"health-start-period", true, "health checks"},
      {"no-healthcheck", true, "health checks"},
      {"pull", true, "when to pull the image"},
      {"platform", true, "the image's platform"},
      {"quiet", true, "pull output"},
      // Refused, with what each would give the caller.
      {"privileged", false, "every device and capability: root on the host"},
      {"cap-add", false, "capabilities beyond docker's default set"},
      {"device", false, "host devices, other GPUs among them"},
      {"device-cgroup-rule", false, "access to host devices"},
      {"device-read-bps", false, "host device names"},
      {"device-write-bps", false, "host device names"},
      {"gpus", false, "GPUs outside the reservation (gpurun sets --gpus itself)"},
      {"runtime", false, "another runtime, which may expose every GPU"},
      {"user", false, "another uid, root among them (gpurun sets --user to the caller)"},
      {"group-add", false, "another group's files (gpurun adds the caller's own groups)"},
      {"userns", false, "the host's user namespace settings"},
      {"pid", false, "the host's or another container's processes"},
      {"uts", false, "the host's host name"},
      {"cgroupns", false, "the host's cgroup namespace"},
      {"cgroup-parent", false, "escaping the engine's resource limits"},
      {"volumes-from", false, "another user's container's volumes"},
      {"link", false, "another user's container"},
      {"volume-driver", false, "a volume plugin running as root"},
      {"sysctl", false, "kernel settings"},
      {"ulimit", false, "limits above the host's"},
      {"oom-kill-disable", false, "the host's protection against running out of memory"},
      {"oom-score-adj", false, "the host's protection against running out of memory"},
      {"cpus", false, "more CPUs than gpurun's quota"},
      {"cpuset-cpus", false, "CPUs outside gpurun's quota"},
      {"cpuset-mems", false, "NUMA placement outside gpurun's"},
      {"cpu-shares", false, "a larger CPU share"},
      {"cpu-quota", false, "more CPU than gpurun's quota"},
      {"cpu-period", false, "more CPU than gpurun's quota"},
      {"cpu-rt-runtime", false, "real-time scheduling"},
      {"cpu-rt-period", false, "real-time scheduling"},
      {"blkio-weight", false, "a larger share of the host's disks"},
      {"storage-opt", false, "the engine's storage settings"},
      {"isolation", false, "the engine's isolation"},
      {"restart", false, "a container that outlives its reservation"},
      {"detach", false, "a container that outlives its reservation (use gpurun --detach)"},
      {"name", false, "a second name (use gpurun --name)"},
      {"cidfile", false, "a file the docker client writes as root"},
      {"env-file", false, "a file the docker client reads as root (use -e)"},
      {"label-file", false, "a file the docker client reads as root, its labels unchecked (use --label)"},
      {"log-driver", false, "where the engine writes the container's output, as root"},
      {"log-opt", false, "where the engine writes the container's output, as root"},
      {"use-api-socket", false, "the engine's socket: root on the host"},
      {"annotation", false, "runtime settings"},
  };
  return rules;
}

void check_root_only(const Setting& setting, const ConfigSource& source, const std::string& system_file) {
  if (!setting.root_only) return;
  const bool admin = source.kind == ConfigSource::Kind::system || source.kind == ConfigSource::Kind::defaults ||
                     (source.kind == ConfigSource::Kind::profile && source.where == system_file);
  if (admin) return;
  refuse(fmt::format("{} sets \"{}\"; under sudo it comes only from the system file {}, which the admin writes",
                     source.describe(), setting.key, system_file));
}

const DockerOptionRule* find_docker_rule(std::string_view name) {
  const auto& rules = sudo_docker_rules();
  const auto it = std::find_if(rules.begin(), rules.end(), [&](const DockerOptionRule& r) { return r.name == name; });
  return it == rules.end() ? nullptr : &*it;
}

std::string sudo_refusal(const DockerArg& arg, const std::vector<std::string>& admin_allowed) {
  // Whose the container is: not a site's choice either (an admin's `--label` allows any value).
  if (arg.name == "label" && !label_ok(arg.value))
    return fmt::format(
        "docker option \"{}\": labels gpurun.* say whose the container is, and only gpurun writes them; tools "
        "running as root act on io.containers.*, PODMAN_*, traefik.* and watchtower's (a label's key begins "
        "with a letter or digit)",
        text::printable(arg.text));
  if (arg.name == "label-file")
    return fmt::format(
        "docker option \"{}\": a file the docker client reads as root, whose labels gpurun cannot "
        "check (use --label)",
        text::printable(arg.text));
  for (const std::string& rule : admin_allowed)
    if (rule_matches(rule, arg)) return {};
  const DockerOptionRule* const known = find_docker_rule(arg.name);
  if (known == nullptr)
    return fmt::format(
        "docker option \"{}\" is not on the list of options allowed under sudo (the admin can add it "
        "to \"allowed_docker_options\" in /etc/gpurun/config.json)",
        text::printable(arg.text));
  // What the caller can do: ask the admin, where allowing it is a site's choice rather than root.
  const auto ask_admin = [&] {
    return fmt::format(
        "; the admin may allow it by adding \"{}\" to \"allowed_docker_options\" in "
        "/etc/gpurun/config.json",
        text::printable(arg.text));
  };
  static const std::set<std::string, std::less<>> kSiteChoices{"ulimit", "sysctl", "uts", "oom-score-adj"};
  if (!known->allowed)
    return fmt::format("docker option \"{}\": it would give {}{}", text::printable(arg.text), known->why,
                       kSiteChoices.contains(arg.name) ? ask_admin() : "");
  if (known->value_ok != nullptr && !known->value_ok(arg.value))
    return fmt::format("docker option \"{}\": allowed only as {}{}", text::printable(arg.text), known->why,
                       ask_admin());
  return {};
}

namespace {

// The host port of a -p value ("8080:80", "127.0.0.1:8080:80/tcp", "80"): 0 when docker picks it.
long host_port(const std::string& value) {
  const std::string spec = value.substr(0, value.find('/'));
  const auto parts = text::split(spec, ':');
  if (parts.size() < 2) return 0;
  const std::string host(parts[parts.size() - 2]);
  const std::string first = host.substr(0, host.find('-'));
  const auto port = text::parse_integer(first);
  return port ? static_cast<long>(*port) : 0;
}

}  // namespace

std::vector<DockerArg> caller_docker_args(const std::vector<std::string>& words) {
  std::vector<DockerArg> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    std::vector<DockerArg> args =
        w.starts_with("-") && w != "-" && w != "--" ? docker_args({w}) : std::vector<DockerArg>{};
    if (args.empty())
      refuse(
          fmt::format("--docker-opt \"{}\": not a docker option (docker would read it as the image or the end "
                      "of the options)",
                      text::printable(w)));
    DockerArg& last = args.back();
    // "-e" alone reads as an empty value; its value is the next word, as for "--env".
    const bool bare_short =
        last.value && last.value->empty() && !w.starts_with("--") && w.find('=') == std::string::npos;
    if ((!last.value || bare_short) && !docker_boolean(last.name)) {
      if (i + 1 >= words.size())
        refuse(fmt::format("--docker-opt \"{}\": it needs a value (docker would take the image for it)",
                           text::printable(w)));
      last.value = words[++i];
      last.text += " " + *last.value;
    }
    for (DockerArg& arg : args) out.push_back(std::move(arg));
  }
  return out;
}

std::string canonical(const DockerArg& arg) { return "--" + arg.name + (arg.value ? "=" + *arg.value : ""); }

void enforce_caller_rules(const Options& options, bool dry_run) {
  if (!options.caller) return;
  // srun/sbatch as root would run the caller's job as root on the cluster; Slurm already knows users.
  if (options.backend == Backend::slurm)
    refuse(
        "backend slurm: a Slurm job started under sudo would run as root; run gpurun without sudo for "
        "the cluster (Slurm runs the job as you)");
  if (options.from_csv && !dry_run)
    refuse(
        "--from-csv for a launch: under sudo a launch reads the GPUs from nvidia-smi (use --from-csv with "
        "status, pick or --dry-run)");
  if (!options.image.empty() && !registry_reference(options.image))
    refuse(
        fmt::format("--image \"{}\": under sudo an image is a registry reference, [REGISTRY/]NAME[:TAG][@DIGEST], "
                    "its name in lower case (an engine's transport, such as oci-archive: or dir:, would have root "
                    "read a path)",
                    text::printable(options.image)));
  const std::vector<DockerArg> args = caller_docker_args(options.docker_opts);
  for (const DockerArg& arg : args)
    if (const std::string why = sudo_refusal(arg, options.policy.allowed_docker_options); !why.empty()) refuse(why);
  // sudo reset the environment, so "-e NAME" would pass root's value (usually none), not the caller's.
  const auto without_value = [](const std::string& item) { return item.find('=') == std::string::npos; };
  for (const std::string& item : options.env)
    if (without_value(item))
      refuse(
          fmt::format("-e \"{}\" without a value: sudo reset the environment, so the job would get root's "
                      "value, not yours; write -e {}=VALUE (-e {}=\"${}\" passes yours)",
                      text::printable(item), text::printable(item), text::printable(item), text::printable(item)));
  for (const DockerArg& arg : args)
    if (arg.name == "env" && arg.value && without_value(*arg.value))
      refuse(fmt::format("docker option \"{}\" without a value: sudo reset the environment; write {}=VALUE",
                         text::printable(arg.text), text::printable(arg.text)));
  // The toolkit's switches hand the container host devices (InfiniBand, NVSwitch, GPUDirect),
  // which --device is refused for; gpurun sets each "disabled" for the caller.
  const auto device_switch = [](std::string_view item) {
    const std::string name = text::to_upper(item.substr(0, item.find('=')));
    return std::find(kToolkitDeviceSwitches.begin(), kToolkitDeviceSwitches.end(), name) !=
           kToolkitDeviceSwitches.end();
  };
  for (const std::string& item : options.env)
    if (device_switch(item))
      refuse(fmt::format("-e \"{}\": it has the NVIDIA runtime hand the container host devices besides its GPUs",
                         text::printable(item)));
  for (const DockerArg& arg : args)
    if (arg.name == "env" && arg.value && device_switch(*arg.value))
      refuse(
          fmt::format("docker option \"{}\": it has the NVIDIA runtime hand the container host devices besides "
                      "its GPUs",
                      text::printable(arg.text)));
  for (const std::string& p : options.publish)
    if (const long port = host_port(p); port > 0 && port < 1024)
      refuse(fmt::format("--publish \"{}\": host ports below 1024 belong to the host's services", text::printable(p)));
  for (const DockerArg& arg : args)
    if (arg.name == "publish" && arg.value && host_port(*arg.value) > 0 && host_port(*arg.value) < 1024)
      refuse(fmt::format("docker option \"{}\": host ports below 1024 belong to the host's services",
                         text::printable(arg.text)));
}

}  // namespace gpurun
