#include "gpurun/job/launch.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <ostream>
#include <string_view>

#include "caller_mounts.hpp"
#include "container_names.hpp"
#include "gpurun/config/audit_log.hpp"
#include "gpurun/config/policy.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/engine/cdi_specs.hpp"
#include "gpurun/engine/container_engine.hpp"
#include "gpurun/engine/docker_command.hpp"
#include "gpurun/engine/gpu_request.hpp"
#include "gpurun/engine/ownership.hpp"
#include "gpurun/history/time_text.hpp"
#include "gpurun/job/job_report.hpp"
#include "gpurun/job/supervise.hpp"
#include "gpurun/locks/reservation.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/select/cpu_quota.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/select/placement.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/rounding.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"
#include "mount_pins.hpp"
#include "pick_waiting.hpp"

namespace gpurun {
namespace {

void check_image(const std::string& image, const std::vector<std::string>& command) {
  // `gpurun 2 python train.py --image img`: gpurun's options stop at N's command.
  const bool in_command = std::any_of(command.begin(), command.end(), [](const std::string& word) {
    return word == "--image" || word.starts_with("--image=");
  });
  if (image.empty() && in_command)
    throw Error(
        "no image to run: --image is in the job's command, which begins after N; put it before N "
        "(gpurun --image IMAGE 2 python train.py)");
  if (image.empty())
    throw Error(
        "no image to run: pass --image IMAGE (e.g. --image nvcr.io/nvidia/pytorch:24.05-py3) or set GPURUN_IMAGE");
  if (image.front() == '-')
    throw Error(fmt::format("--image \"{}\" starts with '-': that is not an image name", image));
}

// Under sudo the container runs as the caller, with the mounts checked as the caller.
void act_for_caller(const Options& options, const CallerMounts& mounts, DockerRunRequest& request) {
  const Caller& caller = *options.caller;
  request.identity.uid = caller.ids.uid;
  request.identity.gid = caller.ids.gid;
  request.identity.login = caller.login;
  request.identity.groups.assign(caller.ids.groups.begin(), caller.ids.groups.end());
  request.identity.workdir_source = mounts.workdir_source;
  request.volumes = mounts.volumes;
  request.docker_opts = mounts.docker_opts;
  request.for_caller = true;
}

// Under sudo the mounts are the caller's, checked as the caller (run_launch); in a real launch, not
// a dry run, docker gets pins of what was checked, never a path the caller could swap.
DockerRunRequest make_request(const Options& options, const std::vector<GpuAssessment>& chosen, int cpus,
                              const std::optional<CallerMounts>& caller_mounts) {
  DockerRunRequest request;
  request.docker = options.docker;
  request.image = options.image;
  for (const auto& a : chosen) {
    request.gpu_indices.push_back(a.gpu.mig ? a.gpu.mig->gpu_index : a.gpu.index);  // a MIG unit: its GPU's
    request.gpu_uuids.push_back(a.gpu.uuid);
  }
  request.cpus = cpus;
  if (options.numa_affinity) {
    if (const auto place = cpu_placement(chosen)) {
      request.cpuset_cpus = place->cpus;
      request.cpuset_mems = place->mems;
    }
  }
  request.identity = current_identity();
  if (options.caller) request.identity.login = options.caller->login;  // names the container below
  request.tty = ::isatty(STDIN_FILENO) != 0 && ::isatty(STDOUT_FILENO) != 0;
  request.detach = options.detach;
  // A leading '/' is dropped, as docker drops it from the name it keeps: in the gpurun.name label
  // it would no longer match the name, and the container would not count as gpurun's (no time
  // limit, no idle scope, no stop by its own user).
  request.name = options.name.empty() ? container_name(request.identity.login, request.gpu_indices, random_suffix())
                                      : std::string(bare_container_name(options.name));
  request.env = options.env;
  request.volumes = options.volumes;
  request.publish = options.publish;
  request.docker_opts = options.docker_opts;
  request.command = options.command;
  request.time_limit = launch_time_limit(options.policy, options);
  request.notify = options.notify;
  if (caller_mounts) act_for_caller(options, *caller_mounts, request);
  return request;
}

// How the container asks for its GPUs (the gpu_request setting); said at `level` (a dry run's).
GpuRequestForm gpu_request_form(const Options& options, ContainerEngine& engine, const DockerRunRequest& request,
                                spdlog::level::level_enum level) {
  // Only auto asks (docker only where an NVIDIA CDI spec exists: engine/cdi_specs.hpp).
  const CdiSupport cdi = options.gpu_request == GpuRequestSetting::automatic
                             ? launch_cdi_support(engine, smi_timeout(options))
                             : CdiSupport{};
  const GpuRequestChoice choice = choose_gpu_request(options.gpu_request, engine.name(), cdi);
  spdlog::log(level, "GPUs requested as {} ({})", form_name(choice.form), choice.why);
  if (choice.form != GpuRequestForm::gpus)
    for (std::size_t i = 0; i < request.gpu_uuids.size(); ++i)
      if (request.gpu_uuids[i].empty())
        spdlog::warn("GPU {} has no UUID in the GPU data: it is named by its index, which can change at boot",
                     request.gpu_indices[i]);
  return choice.form;
}

// `docker run -d` that failed after it created the container (its command not found, a device
// the runtime refused) leaves it created and never started, under the launch's name, which the
// next launch could then not take: --rm removed it, and a detached launch has none. Only such a
// container with this launch's labels goes: never an older one of that name (a conflict with it
// is what failed the launch).
void remove_unstarted(const ContainerEngine& engine, const std::string& name, unsigned uid, WallTime launched,
                      std::chrono::milliseconds timeout) {
  try {
    const auto owner = container_owner(engine, name, timeout);  // `name`: the bare one (make_request)
    if (!owner || !owner->started_by_gpurun || owner->name != name || owner->uid != uid ||
        (owner->status != "created" && owner->status != "initialized"))
      return;
    // Made by this launch's run, not by another launch of that name a moment before (docker's
    // times have nanoseconds; the clocks are the same machine's).
    const auto made = parse_rfc3339(owner->created_at);
    if (!made || *made < launched) return;
    const ProcessResult removed = run_process({engine.remove_argv(owner->id), {}}, timeout);
    if (!removed.succeeded())
      spdlog::warn("the container {} that did not start is left: {} rm {}", text::printable(name), engine.name(),
                   describe_end(removed, timeout));
  } catch (const Error& e) {
    spdlog::warn("the container {} that did not start may be left: {}", text::printable(name), e.what());
  }
}

// A detached container: the engine's client returns once it runs; say how to reach it.
int run_detached(const ContainerEngine& engine, const std::vector<std::string>& argv, const std::string& name,
                 const std::string& gpus, bool for_caller, unsigned uid, std::chrono::milliseconds smi_timeout,
                 std::ostream& out) {
  const auto timeout = std::chrono::hours(1);  // an image pull can take long
  std::vector<std::string> resolved = argv;
  resolved.front() = locate_program(argv.front());  // 126/127 as for an attached launch
  // What this run makes is made after this (to the second: parse_rfc3339 drops the fractions).
  const WallTime launched = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  const ProcessResult result = run_process({resolved, {}}, timeout);
  std::cerr << result.err;
  const std::string gpurun = for_caller ? "sudo gpurun" : "gpurun";
  const std::string quoted = shell_quote(name);
  if (!result.succeeded()) {
    // A detached job's container stays after the job (below), so its name is taken until then;
    // under sudo the caller cannot remove it with docker's own client.
    // docker's and podman's words for a name taken ("The container name … is already in use",
    // podman's `name "…" is in use: container already exists`); not a port in use.
    const std::string said = text::to_lower(result.err);
    if ((said.find("container name") != std::string::npos && said.find("in use") != std::string::npos) ||
        said.find("container already exists") != std::string::npos)
      std::cerr << fmt::format(
          "gpurun: a container named {} is there already; if it is an ended job of yours, {} logs {} shows its "
          "output and {} rm {} removes it; or choose another --name\n",
          quoted, gpurun, quoted, gpurun, quoted);
    else if (result.end == ProcessResult::End::exited)
      remove_unstarted(engine, name, uid, launched, smi_timeout);
    if (result.end == ProcessResult::End::exited) return result.exit_code;
    throw Error(fmt::format("{} run {}", engine.name(), describe_end(result, timeout)));
  }
  out << name << '\n';
  // gpurun's own verbs: they go to the same engine, and under sudo (where the caller has no
  // engine access) act on the caller's containers.
  std::cerr << fmt::format(
      "gpurun: container {} runs detached on GPU{} {}\n"
      "  follow its output: {} logs -f {}   (it stays after the job ends, until removed)\n"
      "  attach to it:      {} attach {}   (detach again with Ctrl-P Ctrl-Q)\n"
      "  stop it:           {} stop {}\n"
      "  once it has ended: {} rm {}   (removes the container and its output)\n",
      name, gpus.find(',') == std::string::npos ? "" : "s", gpus, gpurun, quoted, gpurun, quoted, gpurun, quoted,
      gpurun, quoted);
  return 0;
}

// --report: the job runs as our child; afterwards, how well it used its GPUs.
int run_reported(const Options& options, const std::vector<std::string>& argv, const std::vector<Gpu>& chosen, int cpus,
                 const std::string& source) {
  JobReport report;
  report.cpus = cpus;
  report.threshold_percent = options.report_threshold;
  report.gpus = chosen;
  SupervisedRun run{
      argv, options.nvidia_smi,
      std::chrono::milliseconds(std::max<long long>(100, round_to_integer(options.report_interval_s * 1000))),
      source == "nvml", options.nvml_library};
  const int status = run_supervised(run, report);
  std::cerr << format_job_report(report) << std::flush;
  return write_report_json(options.report_json, report, status);
}

// Whether anything listens on the service's socket (a connect, no request): only where a launch
// asks for what gpurund does.
bool service_answers(const std::string& socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof address.sun_path) return true;  // not ours to judge
  std::memcpy(address.sun_path, socket_path.data(), socket_path.size());
  const Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return true;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes a sockaddr*
  const int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  // Only no socket, or nobody listening on it, is no service: a socket an admin has closed to
  // users (EACCES) is gpurund's still, and it acts on the containers' labels, not on this socket.
  return rc == 0 || (errno != ENOENT && errno != ECONNREFUSED);
}

// Time limits and --notify are gpurund's to act on. Said where the launch asks for them and they
// will not be (no service, or a rootless engine's containers, which root's engines do not list,
// so their labels go unread); not refused, as the job runs all the same.
void warn_if_beyond_the_service(const Options& options, const ContainerEngine& engine) {
  const bool time_limited = options.time_limit || options.policy.max_runtime;
  if (!time_limited && !options.notify) return;
  const std::string_view what = time_limited && options.notify ? "its time limit and --notify are"
                                : time_limited                 ? "its time limit is"
                                                               : "--notify is";
  if (!service_answers(options.service_socket))
    spdlog::warn(
        "the gpurun service does not answer on {}, so {} not acted on unless it runs by then (an admin "
        "starts it: sudo systemctl enable --now gpurund)",
        options.service_socket, what);
  if (options.dry_run || ::geteuid() == 0 || !engine.rootless().value_or(false)) return;
  spdlog::warn(
      "this launch goes to your own (rootless) {}, whose containers the gpurun service sees only as your "
      "processes: {} not acted on; a launch through root's engine (sudo gpurun) is",
      engine.name(), what);
}

}  // namespace

int run_launch(const Options& options, std::ostream& out) {
  enforce_policy(options);                         // whoever calls the library: the site policy holds
  enforce_caller_rules(options, options.dry_run);  // under sudo: gpurun/config/sudo_rules.hpp
  // Under sudo the mounts are checked as the caller and pinned (a real launch) before anything
  // else: a refusal costs no GPU query, and a path the caller stalls (a FUSE or hung NFS mount)
  // holds up no other launch, as it would under the selection lock. The site's refused paths are
  // checked again against what was pinned.
  MountPins pins;
  std::optional<CallerMounts> caller_mounts;
  if (options.caller) {
    caller_mounts = check_caller_mounts(options, current_workdir(), options.dry_run ? nullptr : &pins);
    check_mounted_sources(options.policy, caller_mounts->real_sources);
  }
  check_image(options.image, options.command);  // before asking nvidia-smi anything: fail fast
  check_container_name(options.name);
  check_workdir_mount(current_workdir());
  const bool report = options.report;  // --report-json set it too (settle_options)
  if (report && options.detach) throw Error("--report needs the job attached; it cannot go with --detach");
  if (report && options.from_csv) throw Error("--report samples live GPUs; it cannot go with --from-csv");
  if (report && options.mig) throw Error("--report samples whole GPUs; it cannot go with --mig yet");
  if (!options.report_json.empty()) check_report_destination(options.report_json);  // not after a day's run
  if (options.notify && !options.policy.notify)
    spdlog::warn(
        "--notify: this server's system file sets no \"notify\" (webhook or mail), so nobody will be told "
        "when the job ends");

  // One launch picks at a time; a dry run only looks.
  const std::string lock_dir =
      options.dry_run ? lock_dir_for_reading(options) : prepare_lock_dir(lock_dir_spec(options));
  if (!options.dry_run) spdlog::debug("reservations: {}", lock_dir);
  const Machine machine = open_machine(options);
  GpuSource& source = *machine.source;
  ContainerEngine* const engine = machine.engine.get();
  warn_if_beyond_the_service(options, *engine);
  check_name_for_engine(options.name, *engine);
  check_name_free(options, *engine);
  FileLock selection;
  Inventory inventory;
  std::vector<GpuAssessment> chosen;
  if (const auto status = pick_gpus(options, lock_dir, source, *engine, selection, inventory, chosen)) return *status;

  const CpuPlan cpus = plan_cpus(options.gpus, static_cast<int>(inventory.assessed.size()),
                                 options.host_cpus.value_or(host_cpu_count()), options.cpus_per_gpu);

  // The ranking is shown for a dry run; a real launch keeps stderr quiet unless asked (--verbose).
  const auto ranking_level = options.dry_run ? spdlog::level::info : spdlog::level::debug;
  if (spdlog::should_log(ranking_level)) std::cerr << format_gpu_table(ranked(inventory.assessed)) << std::flush;
  // A fact of the host, the same at every launch: a note beside the ranking, not a warning each time.
  if (cpus.warning) spdlog::log(ranking_level, "{}", *cpus.warning);
  spdlog::log(ranking_level, "picked GPU{} {} of {}; --cpus {} ({} per GPU)", chosen.size() == 1 ? "" : "s",
              index_list(chosen), inventory.assessed.size(), cpus.total, cpus.per_gpu);

  DockerRunRequest request = make_request(options, chosen, cpus.total, caller_mounts);
  request.gpu_request = gpu_request_form(options, *engine, request, ranking_level);
  const std::vector<std::string> argv = engine->run_argv(request);
  if (options.dry_run) {
    out << shell_join(argv) << '\n';
    return 0;
  }

  std::vector<Gpu> chosen_gpus;
  chosen_gpus.reserve(chosen.size());
  for (const auto& a : chosen) chosen_gpus.push_back(a.gpu);
  const std::vector<FileLock> reservations = reserve_gpus(lock_dir, chosen_gpus);
  selection = FileLock();  // the next launch may pick now: it will see our reservations
  log_launch(options, index_list(chosen), request.name);
  if (options.detach) {
    // The engine's client inherits them too: gpurun killed while it pulls the image (up to an
    // hour) must not free the GPUs its container is about to start on.
    for (const FileLock& lock : reservations) lock.keep_across_exec();
    return run_detached(*engine, argv, request.name, index_list(chosen), request.for_caller, request.identity.uid,
                        options.smi_timeout, out);
  }
  if (report) return run_reported(options, argv, chosen_gpus, cpus.total, inventory.source);

  // The docker client inherits the reservations and holds them while the job is attached.
  for (const FileLock& lock : reservations) lock.keep_across_exec();
  out.flush();
  pins.release_after_exec();
  exec_program(argv);
}

}  // namespace gpurun
