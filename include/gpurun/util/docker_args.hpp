#pragma once
// Reads `docker run` arguments the way docker's own flag parser does, so that a rule about an
// option holds for every spelling of it: --name=value, --name value, -v value, -vvalue, -v=value,
// and clusters of short booleans such as -it.
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

struct DockerArg {
  std::string name;                  // canonical long name without dashes: "volume", "privileged"
  std::optional<std::string> value;  // absent for a bare boolean flag
  std::string text;                  // as written, for messages: "-v /a:/b", "--privileged=true"
};

// Whether docker's option `name` (long, without dashes) is a boolean flag that takes no value.
bool docker_boolean(std::string_view name);

// Every option of `words`, in order; reading stops at "--".
std::vector<DockerArg> docker_args(const std::vector<std::string>& words);

// A boolean option's value as strconv.ParseBool (which docker uses) reads it: no value is true;
// nullopt when it is not a boolean word.
std::optional<bool> docker_bool(const std::optional<std::string>& value);

// The NVIDIA container toolkit's switches that give a container host devices beside its GPUs
// (/dev/infiniband, /dev/nvidia-nvswitch*, /dev/nvidia-fs*, /dev/gdrdrv), which --device is
// refused for under sudo: a sudo caller's are refused too (config/sudo_rules.cpp), and the
// caller's container gets each "disabled" (engine/docker_command.cpp), whatever its image says.
inline constexpr std::array<std::string_view, 4> kToolkitDeviceSwitches{"NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS",
                                                                        "NVIDIA_GDRCOPY"};

// Whether host path `a` is `b`, lies inside it, or contains it (named volumes: equal names).
bool paths_overlap(const std::string& a, const std::string& b);

// paths_overlap, or the same through symlinks as docker (root) mounts them: /var/run is /run, and a
// repository's ./sock may lead to the engine's socket. For refusals only: an allowance must not
// follow a link its owner can point elsewhere before docker mounts it.
bool paths_overlap_as_mounted(const std::string& a, const std::string& b);

// The host side of a --volume value ("/a:/b:ro") and of a --mount value ("type=bind,src=/a,dst=/b").
std::string volume_source(const std::string& value);
std::string mount_source(const std::string& value);

// A --mount value's field of one of `keys` ("target", "dst", "destination"), as docker reads the
// value: one CSV record (a quoted field may hold commas, "" is a quote), each field KEY=VALUE with
// the key in any case, the last one given counting. nullopt where none is given.
std::optional<std::string> mount_field(const std::string& value, std::initializer_list<std::string_view> keys);

// A capability's name as docker compares it: upper case, without "CAP_".
std::string capability(std::string_view name);

}  // namespace gpurun
