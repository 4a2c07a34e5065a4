#include "gpurun/engine/gpu_process_owner.hpp"

#include <pwd.h>

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/gpu/topology.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

bool is_hex_id(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A cgroup named after a container: "<prefix>-<id>[.scope]", the prefix naming the engine.
std::optional<CgroupContainer> from_scope(std::string_view part) {
  static constexpr std::pair<std::string_view, std::string_view> prefixes[] = {{"docker-", "docker"},
                                                                               {"libpod-", "podman"},
                                                                               {"cri-containerd-", "containerd"},
                                                                               {"crio-", "cri-o"},
                                                                               {"nerdctl-", "containerd"}};
  // systemd's cgroup driver names scopes "<prefix>-<id>.scope"; podman's cgroupfs driver the
  // same without ".scope" (/libpod_parent/libpod-<id>).
  if (part.ends_with(".scope")) part.remove_suffix(6);
  for (const auto& [prefix, engine] : prefixes)
    if (part.starts_with(prefix) && is_hex_id(part.substr(prefix.size())))
      return CgroupContainer{std::string(part.substr(prefix.size())), std::string(engine), false, std::nullopt};
  return std::nullopt;
}

// The container of one cgroup path, e.g. /system.slice/docker-<id>.scope, /docker/<id>,
// /kubepods/besteffort/pod<uid>/<id>, /user.slice/user-1000.slice/user@1000.service/...
// The user's manager a cgroup path runs under, where it is one: systemd delegates
// /user.slice/user-N.slice/user@N.service to user N, who makes any cgroup below it, another
// "user@M.service" too. So only the first such part counts, and only beside its own slice; a
// path whose first one is not (nothing systemd makes) is no container anyone can vouch for.
enum class ManagerPart { none, manager, forged };
ManagerPart user_manager(std::string_view part, std::string_view parent, std::optional<unsigned>& uid) {
  if (!part.starts_with("user@") || !part.ends_with(".service")) return ManagerPart::none;
  const std::string_view digits = part.substr(5, part.size() - 5 - 8);
  const auto n = text::parse_integer(digits);
  if (!n || *n < 0 || *n > 0xFFFFFFFELL || parent != fmt::format("user-{}.slice", digits)) return ManagerPart::forged;
  uid = static_cast<unsigned>(*n);
  return ManagerPart::manager;
}

std::optional<CgroupContainer> from_path(std::string_view path) {
  std::optional<unsigned> rootless_uid;
  bool kubernetes = false;
  std::string_view parent;
  for (std::string_view part : text::split(path, '/')) {
    if (!rootless_uid && user_manager(part, parent, rootless_uid) == ManagerPart::forged) return std::nullopt;
    if (part.starts_with("kubepods")) kubernetes = true;
    std::optional<CgroupContainer> found = from_scope(part);
    if (!found && is_hex_id(part)) {
      // cgroupfs driver: /docker/<id>, /libpod_parent/libpod-<id> is a scope above, kubepods' /<id>
      found = CgroupContainer{std::string(part), parent == "docker" ? "docker" : "", false, std::nullopt};
    }
    if (found) {
      found->kubernetes = kubernetes;
      found->rootless_uid = rootless_uid;
      return found;
    }
    parent = part;
  }
  return std::nullopt;
}

// Bounded and regular: /proc's files are, and a tree under GPURUN_SYSFS_ROOT may hold anything.
std::string read_file(const std::string& path) {
  BoundedRead file = read_bounded(path, std::size_t{1} << 20, FileKinds::regular_only);
  return file.text ? std::move(*file.text) : std::string();
}

// A numeric field of /proc/PID/status ("Uid:\treal\t...", "PPid:\tN"): its first value.
std::optional<long long> status_field(const std::string& status, std::string_view key) {
  for (const auto& line : text::non_blank_lines(status)) {
    if (!line.text.starts_with(key)) continue;
    const auto fields = text::split(text::trim(line.text.substr(key.size())), '\t');
    return fields.empty() ? std::nullopt : text::parse_integer(text::trim(fields.front()));
  }
  return std::nullopt;
}

// The container ID in conmon's argv ("-c <id>", "--cid <id>" or "--cid=<id>"), where `cmdline`
// (/proc/PID/cmdline: NUL-separated) is conmon's.
std::optional<std::string> conmon_container_id(const std::string& cmdline) {
  const auto args = text::split(cmdline, '\0');
  if (args.empty() || !(args.front() == "conmon" || args.front().ends_with("/conmon"))) return std::nullopt;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string_view id;
    if ((args[i] == "-c" || args[i] == "--cid") && i + 1 < args.size())
      id = args[i + 1];
    else if (args[i].starts_with("--cid="))
      id = args[i].substr(6);
    if (is_hex_id(id)) return std::string(id);
  }
  return std::nullopt;
}

// A podman container whose cgroup does not name it: rootless podman on cgroup v1 (or with
// --cgroups=disabled) leaves it in its user's cgroup. Its processes descend from the conmon that
// monitors it, whose argv names the container; a conmon run by an ordinary user is that user's
// rootless podman's.
std::optional<CgroupContainer> container_from_conmon(long pid, const std::string& proc_root) {
  constexpr int max_depth = 32;  // a GPU process sits a few forks below its container's init
  auto parent = status_field(read_file(fmt::format("{}/{}/status", proc_root, pid)), "PPid:");
  for (int depth = 0; depth < max_depth && parent && *parent > 1; ++depth) {
    const std::string dir = fmt::format("{}/{}", proc_root, *parent);
    const std::string status = read_file(dir + "/status");
    if (const auto id = conmon_container_id(read_file(dir + "/cmdline"))) {
      CgroupContainer found{*id, "podman", false, std::nullopt};
      const auto uid = status_field(status, "Uid:");
      if (uid && *uid > 0 && *uid <= 0xFFFFFFFELL) found.rootless_uid = static_cast<unsigned>(*uid);
      return found;
    }
    parent = status_field(status, "PPid:");
  }
  return std::nullopt;
}

std::string login_of(unsigned uid) {
  const passwd* entry = ::getpwuid(static_cast<uid_t>(uid));
  return entry != nullptr ? std::string(entry->pw_name) : fmt::format("uid {}", uid);
}

}  // namespace

std::optional<CgroupContainer> container_from_cgroup(std::string_view cgroup_text) {
  for (const auto& line : text::non_blank_lines(cgroup_text)) {
    // "hierarchy-ID:controller-list:cgroup-path" (cgroups(7)); the path may itself hold ':'.
    const std::string_view l = line.text;
    const auto first = l.find(':');
    const auto second = first == std::string_view::npos ? first : l.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    if (auto found = from_path(text::trim(l.substr(second + 1)))) return found;
  }
  return std::nullopt;
}

std::string host_proc_root() {
  std::string root = sysfs_root();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root == "/" ? "/proc" : root + "/proc";
}

std::optional<ProcessOwner> process_owner(long pid, const std::string& proc_root) {
  const std::string dir = fmt::format("{}/{}", proc_root, pid);
  const BoundedRead status = read_bounded(dir + "/status", std::size_t{1} << 20, FileKinds::regular_only);
  if (!status.text) return std::nullopt;
  ProcessOwner owner;
  owner.pid = pid;
  // "Uid:\treal\teffective\tsaved\tfilesystem"
  const auto uid = status_field(*status.text, "Uid:");
  if (uid && *uid >= 0 && *uid <= 0xFFFFFFFFLL) owner.uid = static_cast<unsigned>(*uid);
  owner.container = container_from_cgroup(read_file(dir + "/cgroup"));
  if (!owner.container) owner.container = container_from_conmon(pid, proc_root);
  if (owner.container && owner.container->rootless_uid)
    owner.user = login_of(*owner.container->rootless_uid);
  else if (owner.uid)
    owner.user = login_of(*owner.uid);
  return owner;
}

bool runs_in(const CgroupContainer& found, const GpuContainer& holder, unsigned asking_uid) {
  if (holder.id.empty() || !(found.id.starts_with(holder.id) || holder.id.starts_with(found.id))) return false;
  if (holder.from_processes) return holder.rootless_uid == found.rootless_uid;
  return !found.rootless_uid || *found.rootless_uid == asking_uid;
}

void add_process_holders(std::vector<GpuContainer>& holders, const std::vector<Gpu>& gpus, const std::string& proc_root,
                         unsigned asking_uid) {
  for (const Gpu& gpu : gpus) {
    const std::string device = gpu.uuid.empty() ? std::to_string(gpu.index) : gpu.uuid;
    for (const GpuProcess& process : gpu.processes) {
      const auto owner = process_owner(process.pid, proc_root);
      if (!owner || !owner->container) continue;
      const std::string& id = owner->container->id;
      // The engine's IDs are full ones; a holder added here has its full ID too.
      auto it = std::find_if(holders.begin(), holders.end(),
                             [&](const GpuContainer& c) { return runs_in(*owner->container, c, asking_uid); });
      if (it == holders.end()) {
        GpuContainer c;
        c.id = id;
        c.from_processes = true;
        c.rootless_uid = owner->container->rootless_uid;
        c.name = id.substr(0, 12);
        // A rootless engine's container is its user's. A rootful one's processes run as the uid
        // its image chose (a Jupyter image's 1000, most images' 0), an account inside it that
        // names nobody on the host: its user stays unknown (no mail, no exemption, no history of
        // someone who never ran it).
        if (owner->container->rootless_uid) c.user = owner->user;
        c.image = owner->container->engine.empty() ? "container" : owner->container->engine + " container";
        if (owner->container->rootless_uid) c.image = "rootless " + c.image;
        c.status = "running";
        holders.push_back(std::move(c));
        it = std::prev(holders.end());
      }
      if (!it->all_gpus && std::find(it->devices.begin(), it->devices.end(), device) == it->devices.end() &&
          std::find(it->devices.begin(), it->devices.end(), std::to_string(gpu.index)) == it->devices.end())
        it->devices.push_back(device);
    }
  }
}

}  // namespace gpurun
