// The container names a launch may take: the form docker and podman take, and no name a
// container has already.
#include "container_names.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "gpurun/engine/ownership.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

// Letters, digits, '_', '.' and '-', the first a letter or digit (a leading '/' docker drops).
// Checked by hand, not by std::regex: building one costs every launch some 0.05 ms (libstdc++
// compiles it through the locale's facets), a tenth of what gpurun adds to its floor.
bool is_container_name(std::string_view name) {
  name = bare_container_name(name);
  const auto letter_or_digit = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return !name.empty() && letter_or_digit(name.front()) &&
         std::ranges::all_of(name, [&](char c) { return letter_or_digit(c) || c == '_' || c == '.' || c == '-'; });
}

}  // namespace

std::string_view bare_container_name(std::string_view name) { return name.substr(name.starts_with('/') ? 1 : 0); }

// A container name as docker and podman take one, refused before the pick and any --wait rather
// than by the engine after them.
void check_container_name(const std::string& name) {
  if (!name.empty() && !is_container_name(name))
    throw Error(
        fmt::format("--name \"{}\": a container name is letters, digits, '_', '.' and '-', the first a letter "
                    "or digit",
                    text::printable(name, 80)));
}

// docker takes a name of two characters at least (podman one): refused before the pick and any --wait.
void check_name_for_engine(const std::string& name, const ContainerEngine& engine) {
  if (bare_container_name(name).size() == 1 && engine.name() == "docker")
    throw Error(fmt::format("--name \"{}\": docker takes a container name of two characters or more", name));
}

// A detached job's container keeps its name after the job ends (until `gpurun rm`): a --name
// taken so is said before the pick and any --wait, with what to type, rather than by docker after
// them (under sudo the caller could not act on docker's advice). Where the engine cannot be asked,
// the launch goes on: docker still refuses a taken name.
void check_name_free(const Options& options, const ContainerEngine& engine) {
  if (options.name.empty()) return;
  std::optional<ContainerOwner> owner;
  try {
    owner = container_owner(engine, options.name, options.smi_timeout);
  } catch (const Error& e) {
    spdlog::debug("whether --name {} is taken could not be asked: {}", text::printable(options.name), e.what());
    return;
  }
  // inspect finds an id by its prefix too (--name cafe, --name 42): only a name is taken.
  if (!owner || owner->container_name != bare_container_name(options.name)) return;
  const std::string name = text::printable(options.name);
  const std::string gpurun = options.caller ? "sudo gpurun" : "gpurun";
  const unsigned uid = options.caller ? options.caller->ids.uid : ::getuid();
  const bool mine = owner->started_by_gpurun && owner->uid == uid;
  const std::string whose = !owner->started_by_gpurun ? "a container gpurun did not start"
                            : mine                    ? "a job of yours"
                                                      : fmt::format("{}'s job", text::printable(owner->user));
  if (mine && !owner->running)
    throw Error(
        fmt::format("--name {}: an ended job of yours has that name ({} logs {} shows its output, {} rm {} "
                    "removes it); or choose another --name",
                    name, gpurun, shell_quote(name), gpurun, shell_quote(name)));
  throw Error(fmt::format("--name {}: {} {} that name{}; choose another --name", name, whose,
                          owner->running ? "runs under" : "has",
                          mine ? fmt::format(" ({} stop {})", gpurun, shell_quote(name)) : ""));
}

}  // namespace gpurun
