// `gpurun logs|attach|stop|rm NAME`: a caller under sudo has no docker access of their own, so
// gpurun acts on the containers it started for them, and on no others (root and the members of
// the policy's admin_group: on any container gpurun started).
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <vector>

#include "gpurun/engine/container_engine.hpp"
#include "gpurun/engine/ownership.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/verbs/verbs.hpp"

namespace gpurun {
namespace {

bool in_admin_group(const Caller& caller, const std::string& group) {
  const auto gid = group_id(group);
  if (!gid) return false;
  return std::find(caller.ids.groups.begin(), caller.ids.groups.end(), *gid) != caller.ids.groups.end() ||
         caller.ids.gid == *gid;
}

bool owns(const Caller& caller, const ContainerOwner& owner) {
  return owner.uid ? *owner.uid == caller.ids.uid : owner.user == caller.login;
}

// `gpurun rm`: a detached job's container stays when the job ends, with its output; this removes
// it. Never a running one: that is `gpurun stop` first, which leaves the output to read.
int remove_container(const ContainerEngine& engine, const ContainerOwner& owner, const std::string& name,
                     const Options& options, std::ostream& out) {
  const std::string shown = text::printable(name);
  const std::string gpurun = options.caller ? "sudo gpurun" : "gpurun";
  if (owner.running)
    throw Error(fmt::format("container \"{}\" still runs its job: {} stop {} ends it (its output stays until {} rm {})",
                            shown, gpurun, shell_quote(shown), gpurun, shell_quote(shown)));
  const auto timeout = std::chrono::minutes(1) + options.smi_timeout;  // a large writable layer takes a while
  const ProcessResult result = run_process({engine.remove_argv(owner.id.empty() ? name : owner.id), {}}, timeout);
  if (!result.succeeded())
    throw Error(fmt::format("{} rm {} {}: {}", engine.name(), shown, describe_end(result, timeout),
                            text::printable(std::string(text::trim(result.err)))));
  out << name << '\n';
  return exit_code::ok;
}

}  // namespace

int run_manage(const std::string& verb, const std::string& name, const Options& options, std::ostream& out) {
  if (name.empty() || name.front() == '-')
    throw Error(fmt::format("gpurun {} needs a container name: gpurun {} NAME (gpurun ps lists them)", verb, verb));
  const std::string shown = text::printable(name);
  const std::string gpurun = options.caller ? "sudo gpurun" : "gpurun";  // the words to type, in messages
  if (const std::string& tail = options.logs_tail;
      !tail.empty() && tail != "all" && !(text::parse_integer(tail) && *text::parse_integer(tail) >= 0))
    throw Error(fmt::format("--tail takes a number of lines or all, not \"{}\": gpurun logs --tail 100 {}",
                            text::printable(tail), shown));
  // The engine the options name (docker or podman, socket or CLI): its own client does the work.
  const auto engine = make_container_engine(engine_spec(options));
  const auto owner = container_owner(*engine, name, options.smi_timeout);
  if (!owner || !owner->started_by_gpurun)
    throw Error(
        fmt::format("no container \"{}\" that gpurun started ({} ps -a lists them; an attached job's "
                    "container goes when the job ends, a detached one's when `{} rm` or the gpurun service removes "
                    "it)",
                    shown, gpurun, gpurun));
  if (options.caller && !in_admin_group(*options.caller, options.policy.admin_group)) {
    if (!owns(*options.caller, *owner))
      throw Refusal(fmt::format("not allowed under sudo: container \"{}\" belongs to {}, not to you ({})", shown,
                                owner->user.empty() ? "someone else" : text::printable(owner->user),
                                options.caller->login));
    // A label its image sets would say anyone's container is the caller's.
    if (!owner->image.empty() &&
        owner_from_image(*owner, engine->image_inspect_argv(owner->image), options.smi_timeout))
      throw Refusal(fmt::format(
          "not allowed under sudo: container \"{}\" is labelled yours by its image, not by a launch of yours, so "
          "whose it is cannot be told; ask an admin (a member of the site's admin_group)",
          shown));
  }
  const std::string& id = owner->id.empty() ? name : owner->id;  // the id: the name may move meanwhile
  if (verb == "stop") {  // run, not exec'd: the engine's client would echo the id, not the name
    // The engine waits for the job (-t, or the container's own --stop-timeout, 10 s unless a
    // --docker-opt set more), then kills it: our bound leaves it that time.
    const auto timeout = std::chrono::minutes(2) + std::chrono::seconds(options.stop_timeout_s.value_or(3600));
    const ProcessResult result = run_process({engine->stop_argv(id, options.stop_timeout_s), {}}, timeout);
    if (!result.succeeded())
      throw Error(fmt::format("{} stop {} {}: {}", engine->name(), shown, describe_end(result, timeout),
                              text::printable(std::string(text::trim(result.err)))));
    out << name << '\n';
    return exit_code::ok;
  }
  if (verb == "rm") return remove_container(*engine, *owner, name, options, out);
  if (verb == "attach" && !owner->running)  // docker would say to start it, which nobody should
    throw Error(fmt::format("container \"{}\" has ended{}: {} logs {} prints its output", shown,
                            owner->exit_code ? fmt::format(" (exit status {})", *owner->exit_code) : "", gpurun,
                            shell_quote(shown)));
  if (verb == "attach")
    spdlog::info(
        "attaching to {}: Ctrl-P Ctrl-Q detaches and the job runs on; in a job with a terminal (gpurun -d) "
        "Ctrl-C reaches the job, and ends it (its output stays: {} logs {})",
        shown, gpurun, shell_quote(shown));
  std::vector<std::string> argv =
      verb == "logs" ? engine->logs_argv(id, {.follow = options.logs_follow, .tail = options.logs_tail})
                     : engine->attach_argv(id);
  // From a script or `ssh host gpurun attach` (no terminal): its output only. docker refuses a
  // stdin that is no terminal for a job that has one, and an input's end would reach the job.
  if (verb == "attach" && ::isatty(STDIN_FILENO) == 0) argv.insert(argv.begin() + 2, "--no-stdin");
  exec_program(argv);
}

}  // namespace gpurun
