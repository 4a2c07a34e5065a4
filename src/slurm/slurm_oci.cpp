#include "slurm_oci.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <regex>

#include "gpurun/engine/docker_command.hpp"
#include "gpurun/slurm/slurm_environment.hpp"
#include "gpurun/slurm/slurm_query.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/foreground.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"
#include "slurm_report.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr unsigned kNvidiaMajor = 195;

std::string run_checked(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const ProcessResult result = run_process({argv, {}}, timeout);
  if (!result.succeeded())
    throw Error(fmt::format("`{}` {}{}{}", shell_join(argv), describe_end(result, timeout),
                            result.err.empty() ? "" : ": ", result.err.substr(0, 400)));
  return result.out;
}

fs::path cache_dir(const Options& options) {
  if (!options.slurm.oci_cache.empty()) return options.slurm.oci_cache;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return fs::path(xdg) / "gpurun" / "oci";
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0')
    throw Error("slurm_container oci: no HOME for the bundle cache; set slurm_oci_cache");
  return fs::path(home) / ".cache" / "gpurun" / "oci";
}

// A directory of this process's alone under `parent` (mkdtemp: made 0700, never one that was there).
fs::path private_directory(const fs::path& parent, const std::string& prefix) {
  std::string name = (parent / (prefix + "XXXXXX")).string();
  if (::mkdtemp(name.data()) == nullptr)
    throw Error(
        fmt::format("slurm_container oci: cannot make a directory in {}: {}; set slurm_oci_cache "
                    "(--slurm-oci-cache) to a directory you may write",
                    text::printable(parent.string(), 200), std::strerror(errno)));
  return name;
}

// Builds that a killed launch left (Ctrl-C or SIGKILL during an hour's pull never unwinds): a
// build takes two hours at most (skopeo's hour and umoci's), so one untouched for three is
// nobody's. Only this user's own directories (the cache may be shared); errors are ignored.
void remove_abandoned_builds(const fs::path& dir) {
  std::error_code error;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (!it->path().filename().string().starts_with("building.")) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) continue;
    std::error_code ignored;
    const auto touched = fs::last_write_time(it->path(), ignored);
    if (!ignored && now - touched > std::chrono::hours(3)) {
      spdlog::info("slurm_container oci: removing an abandoned build, {}", it->path().string());
      fs::remove_all(it->path(), ignored);
    }
  }
}

// The image unpacked once into the cache (skopeo copy, then umoci unpack, in a directory of this
// launch's own, renamed into place whole); reused afterwards. Two launches building one image at
// once each build their own, and the one that comes second uses the first's.
fs::path image_bundle(const Options& options, const fs::path& cache) {
  const fs::path dir = cache / "images" / oci_cache_key(options.image);
  fs::path bundle = dir / "bundle";
  std::error_code error;
  if (fs::exists(bundle / "config.json", error)) return bundle;
  if (!fs::create_directories(dir, error) && error)
    throw Error(
        fmt::format("slurm_container oci: cannot make the bundle cache {}: {}; set slurm_oci_cache "
                    "(--slurm-oci-cache) to a directory you may write",
                    text::printable(dir.string(), 200), error.message()));
  remove_abandoned_builds(dir);
  const fs::path work = private_directory(dir, "building.");
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{work};
  const auto timeout = std::chrono::hours(1);  // a pull can take long
  spdlog::info("slurm_container oci: building the bundle of {} in {}", options.image, bundle.string());
  run_checked(
      {"skopeo", "copy", "--quiet", skopeo_source(options.image), "oci:" + (work / "layout").string() + ":image"},
      timeout);
  std::vector<std::string> unpack{"umoci", "unpack"};
  if (::geteuid() != 0) unpack.emplace_back("--rootless");
  unpack.insert(unpack.end(), {"--image", (work / "layout").string() + ":image", (work / "bundle").string()});
  run_checked(unpack, timeout);
  if (::rename((work / "bundle").c_str(), bundle.c_str()) != 0) {  // whole or not at all
    const int why = errno;
    if ((why == EEXIST || why == ENOTEMPTY) && fs::exists(bundle / "config.json", error)) return bundle;
    throw Error(fmt::format("slurm_container oci: cannot put the bundle in {}: {}",
                            text::printable(bundle.string(), 200), std::strerror(why)));
  }
  return bundle;
}

// The cached bundle's config.json, which umoci wrote: anything else there (a FIFO, a file cut
// short) is a cache to build again, said so, not a hang or a parser's words.
json bundle_config(const fs::path& bundle) {
  const fs::path path = bundle / "config.json";
  const auto unusable = [&](const std::string& why) {
    return Error(
        fmt::format("slurm_container oci: the cached bundle's {} is unusable ({}); remove {} and it is "
                    "built again",
                    text::printable(path.string(), 200), why, text::printable(bundle.parent_path().string(), 200)));
  };
  const BoundedRead file = read_bounded(path.string(), std::size_t{16} << 20, FileKinds::regular_only);
  if (!file.text) throw unusable(file.problem);
  json config = json::parse(*file.text, nullptr, false);
  if (!config.is_object()) throw unusable("it is not a JSON object");
  return config;
}

// The container step: `srun --jobid=ID --container=BUNDLE env CUDA_VISIBLE_DEVICES=GPUS COMMAND`.
// Slurm gives the container neither our environment nor the GPU variables: the command sets the
// GPUs', the bundle's config.json the job's -e (their values never on a command line `ps` shows).
// With --report it is the child of a gpurun step that samples the GPUs beside it (overlapping it).
std::vector<std::string> oci_step_argv(const Options& options, const SlurmJob& job, const std::string& id,
                                       const std::string& bundle, const std::string& gpus) {
  std::vector<std::string> argv{"srun", "--jobid=" + id, "--container=" + bundle, "env",
                                "CUDA_VISIBLE_DEVICES=" + gpus};
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  if (!options.report) return argv;
  std::vector<std::string> sampler{"srun", "--jobid=" + id, "--overlap"};
  const auto inner = report_step_command(options, own_path(), argv);
  sampler.insert(sampler.end(), inner.begin(), inner.end());
  return sampler;
}

// The job's GPUs: SLURM_JOB_GPUS inside the job, else what scontrol shows of it.
std::vector<int> job_gpus(const std::string& id, bool inside) {
  if (inside)
    if (const std::string listed = slurm_variable("SLURM_JOB_GPUS"); !listed.empty()) return parse_index_ranges(listed);
  return scontrol_gpu_indices(run_checked({"scontrol", "show", "job", "-d", id}, std::chrono::seconds(30)));
}

}  // namespace

std::string oci_cache_key(const std::string& image) {
  constexpr std::size_t kLongest = 150;  // escaped; a directory name may have 255 bytes
  std::string key = "img-";
  for (const char c : image) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-')
      key += c;
    else
      key += fmt::format("_{:02x}", static_cast<unsigned char>(c));
  }
  if (key.size() <= kLongest) return key;
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a
  for (const char c : image) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  key.resize(kLongest);
  return fmt::format("{}~{:016x}", key, hash);
}

std::string skopeo_source(const std::string& image) {
  for (const char* transport :
       {"docker://", "oci:", "oci-archive:", "docker-archive:", "dir:", "containers-storage:", "docker-daemon:"})
    if (image.rfind(transport, 0) == 0) return image;
  return "docker://" + image;
}

std::vector<int> scontrol_gpu_indices(const std::string& out) {
  static const std::regex idx(R"(GRES=[^ \n]*gpu[^ \n(]*\(IDX:([0-9,-]+)\))");
  std::smatch match;
  if (!std::regex_search(out, match, idx)) return {};
  return parse_index_ranges(match[1]);
}

std::string parse_salloc_job_id(const std::string& err) {
  static const std::regex granted(R"(Granted job allocation ([0-9]+))");
  std::smatch match;
  if (!std::regex_search(err, match, granted))
    throw Error(fmt::format("salloc did not say which job it allocated: {}", err.substr(0, 400)));
  return match[1];
}

json oci_job_config(json config, const OciJobSpec& spec) {
  config["process"]["cwd"] = spec.workdir;
  config["process"]["user"] = {{"uid", spec.uid}, {"gid", spec.gid}};
  config["process"]["terminal"] = false;  // srun carries the job's stdio
  json& mounts = config["mounts"];
  if (!mounts.is_array()) mounts = json::array();
  const auto bind = [&](const std::string& source, const std::string& destination, bool read_only) {
    mounts.push_back({{"destination", destination},
                      {"type", "bind"},
                      {"source", source},
                      {"options", {"rbind", read_only ? "ro" : "rw"}}});
  };
  json& env = config["process"]["env"];
  if (!env.is_array()) env = json::array();
  for (const std::string& item : spec.env) {  // the job's over the image's
    const std::string key = item.substr(0, item.find('=') + 1);
    for (auto it = env.begin(); it != env.end();)
      it = it->is_string() && it->get_ref<const std::string&>().starts_with(key) ? env.erase(it) : std::next(it);
    env.push_back(item);
  }
  bind(spec.workdir, spec.workdir, false);
  for (const std::string& volume : spec.volumes) {
    const std::string checked = pyxis_mount(volume);  // the same rules: absolute source, ro/rw only
    const auto first = checked.find(':');
    const auto second = checked.find(':', first + 1);
    bind(checked.substr(0, first),
         checked.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1),
         second != std::string::npos && checked.substr(second + 1) == "ro");
  }
  json& devices = config["linux"]["devices"];
  if (!devices.is_array()) devices = json::array();
  json& allowed = config["linux"]["resources"]["devices"];
  if (!allowed.is_array()) allowed = json::array({{{"allow", false}, {"access", "rwm"}}});
  for (int gpu : spec.gpus) {
    // The node's own numbers where this machine has the node, else NVIDIA's (major 195, minor = index).
    unsigned major = kNvidiaMajor, minor = static_cast<unsigned>(gpu);
    const std::string path = fmt::format("/dev/nvidia{}", gpu);
    if (struct stat st{}; ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
      major = ::major(st.st_rdev);
      minor = ::minor(st.st_rdev);
    }
    devices.push_back({{"path", path},
                       {"type", "c"},
                       {"major", major},
                       {"minor", minor},
                       {"fileMode", 0666},
                       {"uid", 0},
                       {"gid", 0}});
    allowed.push_back({{"allow", true}, {"type", "c"}, {"major", major}, {"minor", minor}, {"access", "rwm"}});
  }
  for (const char* control : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
    struct stat st {};
    if (::stat(control, &st) != 0 || !S_ISCHR(st.st_mode)) continue;
    const unsigned major = ::major(st.st_rdev), minor = ::minor(st.st_rdev);
    devices.push_back({{"path", control}, {"type", "c"}, {"major", major}, {"minor", minor}, {"fileMode", 0666}});
    allowed.push_back({{"allow", true}, {"type", "c"}, {"major", major}, {"minor", minor}, {"access", "rwm"}});
  }
  return config;
}

SlurmJob oci_batch_job(const Options& options, SlurmJob job, const std::string& self) {
  if (options.image.empty()) throw Error("slurm_container oci needs an image: pass --image IMAGE");
  for (const std::string& volume : job.volumes) (void)pyxis_mount(volume);  // refused now, not in the queue
  // --no-config: the node's gpurun does what this one decided, whatever the node's files say.
  std::vector<std::string> argv{
      self,  "--no-config", "--backend",   "slurm",          "--slurm-container",
      "oci", "--image",     options.image, "--cpus-per-gpu", std::to_string(job.cpus_per_gpu)};
  if (!options.slurm.oci_cache.empty()) argv.insert(argv.end(), {"--slurm-oci-cache", options.slurm.oci_cache});
  // The names only: sbatch carries the values in the job's environment (env K=V sbatch ...).
  for (const std::string& item : job.env) argv.insert(argv.end(), {"--env", item.substr(0, item.find('='))});
  for (const std::string& volume : job.volumes) argv.insert(argv.end(), {"--volume", volume});
  if (options.report) {
    const auto flags = report_flags(options);  // the report goes to the job's output file
    argv.insert(argv.end(), flags.begin(), flags.end());
  }
  argv.insert(argv.end(), {std::to_string(job.gpus), "--"});
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  job.command = argv;
  job.container = SlurmContainer::none;
  job.volumes.clear();  // the node's gpurun mounts them
  job.batch_runs_command = true;
  return job;
}

// Signals held (blocked, left pending) for its life; the mask as it was after.
class SignalsHeld {
 public:
  explicit SignalsHeld(std::initializer_list<int> signals) {
    sigset_t held;
    sigemptyset(&held);
    for (const int s : signals) sigaddset(&held, s);
    ::pthread_sigmask(SIG_BLOCK, &held, &before_);
  }
  ~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t before_{};
};

int run_oci_job(const Options& options, const SlurmJob& job, std::ostream& out) {
  if (options.image.empty()) throw Error("slurm_container oci needs an image: pass --image IMAGE");
  // In a batch script or an salloc shell the job is there already; else gpurun allocates one.
  const std::string enclosing = enclosing_slurm_job();
  const std::vector<std::string> salloc = build_salloc_argv(job);
  if (options.dry_run) {
    const std::string id = enclosing.empty() ? "JOBID" : enclosing;
    if (enclosing.empty()) out << shell_join(salloc) << '\n';
    out << "# then: scontrol show job -d " << id << " (its GPUs), write BUNDLE/config.json, and\n"
        << shell_join(oci_step_argv(options, job, id, "BUNDLE", "GPUS")) << '\n';
    if (enclosing.empty()) out << shell_join({"scancel", id}) << '\n';
    return 0;
  }
  // salloc -Q leaves out "Granted job allocation N": the allocation could not be released.
  for (const std::string& opt : job.extra)
    if (opt == "-Q" || opt == "--quiet")
      throw Error(
          fmt::format("slurm_container oci: the Slurm option {} hides the job id salloc gives, which gpurun "
                      "needs to release the allocation; leave it out",
                      text::printable(opt)));
  const fs::path cache = cache_dir(options);
  const fs::path image = image_bundle(options, cache);

  // From the allocation until it is released, Ctrl-C, SIGTERM and SIGHUP wait (the children get
  // them): released first, then they act. Ended between salloc and srun (scontrol, cp of the
  // rootfs), gpurun left the allocation holding its GPUs until its time limit. (While salloc
  // waits in the queue they act at once: salloc, in the terminal's group, gets Ctrl-C too.)
  std::optional<SignalsHeld> held;
  std::string id = enclosing;
  if (id.empty()) {
    const auto queue_timeout = std::chrono::hours(24 * 365);
    const ProcessResult allocated =
        run_process({salloc, {}}, options.wait.enabled ? queue_timeout : std::chrono::minutes(5));
    if (!allocated.succeeded()) {
      std::cerr << allocated.err;
      return allocated.end == ProcessResult::End::exited ? allocated.exit_code : 125;
    }
    id = parse_salloc_job_id(allocated.err);
  }
  held.emplace(std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP});
  // One directory per launch, not per job: two launches in one allocation (a batch script's,
  // an salloc shell's) each write their own config.json and remove only their own.
  fs::path bundle;
  const auto release = [&] {
    if (enclosing.empty()) (void)run_process({{"scancel", id}, {}}, std::chrono::seconds(30));
    std::error_code ignored;
    if (!bundle.empty()) fs::remove_all(bundle, ignored);
  };
  int status = exit_code::failure;
  try {
    std::error_code made_jobs;
    fs::create_directories(cache / "jobs", made_jobs);
    bundle = private_directory(cache / "jobs", id + ".");
    const std::vector<int> gpus = job_gpus(id, !enclosing.empty());
    if (gpus.empty()) throw Error(fmt::format("Slurm job {}: scontrol shows no GPU indices (GRES=gpu:N(IDX:...))", id));
    json config = bundle_config(image);
    const LaunchIdentity who = current_identity();
    std::vector<std::string> env;  // -e K=V, and -e K as ours
    for (const std::string& e : job.env)
      if (e.find('=') != std::string::npos)
        env.push_back(e);
      else if (const char* v = std::getenv(e.c_str()))
        env.push_back(e + "=" + v);
    config = oci_job_config(config, {job.workdir, who.uid, who.gid, job.volumes, gpus, env});
    // Ours alone (its config.json holds the job's variables): mkdtemp made it, 0700.
    if (const auto problem = write_whole((bundle / "config.json").string(), config.dump(1) + "\n"))
      throw Error(fmt::format("slurm_container oci: cannot write {}: {}",
                              text::printable((bundle / "config.json").string(), 200), *problem));
    // Slurm takes the root file system from BUNDLE/rootfs and refuses a symlink there: a tree of
    // hard links to the cached one is made per job (quick, and no copy of the files).
    run_checked({"cp", "-al", (image / "rootfs").string(), (bundle / "rootfs").string()}, std::chrono::minutes(10));
    // The container has the node's /dev/nvidiaN of its GPUs alone, which CUDA numbers from 0 (as
    // under docker's --gpus device=2): the node's numbers would name devices it does not have.
    std::vector<int> in_container(gpus.size());
    for (std::size_t i = 0; i < gpus.size(); ++i) in_container[i] = static_cast<int>(i);
    auto argv = oci_step_argv(options, job, id, bundle.string(), fmt::format("{}", fmt::join(in_container, ",")));
    spdlog::debug("{}", shell_join(argv));
    argv.front() = locate_program(argv.front());  // 126/127
    out.flush();
    status = ForegroundJob().run(argv);  // srun as our child, in the terminal's foreground
  } catch (...) {
    release();
    throw;
  }
  release();
  return status;
}

}  // namespace gpurun
