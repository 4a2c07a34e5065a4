// Micro-benchmarks of gpurun's launch path, in process, for machines of 8, 64 and 1024 GPUs:
//
//   BM_Parse            parse_gpu_csv + parse_compute_apps_csv + attach_processes, and apart:
//   BM_ParseGpuCsv, BM_ParseComputeApps, BM_AttachProcesses
//   BM_AssessPick       assess + pick (2 GPUs) on the parsed table
//   BM_BuildArgv        build_docker_argv + shell_join for the 2 chosen GPUs
//   BM_WholePath        parse -> assess -> pick -> plan_cpus -> build_docker_argv -> shell_join
//   BM_WholeDryRun      BM_WholePath plus what run_launch adds for --dry-run: the ranking table
//                       (ranked + format_gpu_table), current_identity() and random_suffix()
//   BM_RankingTable     ranked + format_gpu_table alone (printed on stderr by --dry-run)
//   BM_LaunchContext    current_identity + random_suffix + host_cpu_count (syscalls, no GPUs)
//   BM_SpawnTwoTrue     run_processes() on two `true` children, as gpurun runs nvidia-smi twice,
//   BM_RawSpawnTwoTrue  against the floor: posix_spawn both, then a blocking waitpid on each.
//
// The input is generated, deterministically: realistic `nvidia-smi --query-gpu=index,uuid,name,
// memory.used,memory.total,utilization.gpu,mig.mode.current --format=csv,noheader,nounits` and
// `--query-compute-apps=gpu_uuid,pid,used_memory` text with a mix of idle, lightly used, busy,
// [N/A]-utilization and MIG GPUs, 1 to 4 processes on each used GPU.
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpurun/engine/docker_command.hpp"
#include "gpurun/gpu/gpu.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/select/cpu_quota.hpp"
#include "gpurun/select/selection.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "smi/smi_csv.hpp"

extern char** environ;

namespace {

constexpr int kGpusRequested = 2;  // a typical launch: `gpurun --image X 2 -- python train.py`
constexpr int kHostCpus = 256;     // fixed, so that the figures do not depend on this machine

// splitmix64: small, fast and the same on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  long range(long lo, long hi) { return lo + static_cast<long>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }

 private:
  std::uint64_t state_;
};

std::string make_uuid(Rng& rng) {
  const std::uint64_t a = rng.next();
  const std::uint64_t b = rng.next();
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buffer;
}

struct Machine {
  std::string gpu_csv;
  std::string apps_csv;
};

// One node model per 8 GPUs, as on a cluster of DGX-like servers.
struct Model {
  const char* name;
  long total_mib;
};
constexpr Model kModels[] = {
    {"NVIDIA A100-SXM4-80GB", 81920}, {"NVIDIA H100 80GB HBM3", 81559}, {"NVIDIA A100-SXM4-40GB", 40960}};

Machine make_machine(int gpus) {
  Rng rng(std::uint64_t{0x67707572756e} + static_cast<std::uint64_t>(gpus));
  Machine m;
  m.gpu_csv.reserve(static_cast<std::size_t>(gpus) * 96);
  long pid = 40000;
  for (int i = 0; i < gpus; ++i) {
    const Model& model = kModels[(i / 8) % 3];
    const std::string uuid = make_uuid(rng);
    long used = 0;
    std::string util;
    const char* mig = "Disabled";
    int processes = 0;
    // GPUs 2 and 7 of every 8 are idle, so that a pick of 2 always succeeds; the rest are a mix.
    const long kind = (i % 8 == 2 || i % 8 == 7) ? 0 : rng.range(0, 99);
    if (kind < 35) {  // idle
      used = rng.range(0, 4);
      util = "0";
    } else if (kind < 45) {  // lightly used, still free
      used = rng.range(300, model.total_mib / 20);
      util = std::to_string(rng.range(0, 8));
      processes = 1;
    } else if (kind < 88) {  // training
      used = rng.range(model.total_mib / 3, model.total_mib - 200);
      util = std::to_string(rng.range(55, 100));
      processes = static_cast<int>(rng.range(1, 4));
    } else if (kind < 93) {  // utilization not reported
      used = rng.range(1000, model.total_mib / 2);
      util = "[N/A]";
      processes = 1;
    } else if (kind < 97) {  // MIG enabled
      used = rng.range(0, 200);
      util = "[N/A]";
      mig = "Enabled";
    } else {  // busy by utilization only (a memory-light kernel)
      used = rng.range(200, 2000);
      util = std::to_string(rng.range(30, 100));
      processes = 1;
    }
    m.gpu_csv += std::to_string(i) + ", " + uuid + ", " + model.name + ", " + std::to_string(used) + ", " +
                 std::to_string(model.total_mib) + ", " + util + ", " + mig + "\n";
    long left = used;
    for (int p = 0; p < processes; ++p) {
      const long mem = (p + 1 == processes) ? left : rng.range(0, left);
      left -= mem;
      pid += rng.range(1, 5000);
      m.apps_csv += uuid + ", " + std::to_string(pid) + ", " + std::to_string(mem) + "\n";
    }
  }
  return m;
}

const Machine& machine(int gpus) {
  static const Machine m8 = make_machine(8);
  static const Machine m64 = make_machine(64);
  static const Machine m1024 = make_machine(1024);
  switch (gpus) {
    case 8:
      return m8;
    case 64:
      return m64;
    case 1024:
      return m1024;
    default: {
      static thread_local Machine other;
      other = make_machine(gpus);
      return other;
    }
  }
}

gpurun::Thresholds default_thresholds() {
  gpurun::Thresholds t;
  t.max_utilization_percent = gpurun::parse_utilization_limit("10%");
  t.max_memory = gpurun::parse_memory_limit("10%");
  return t;
}

gpurun::LaunchIdentity fixed_identity() { return {1000, 1000, "alice", "/home/alice/projects/llm-finetune", "", {}}; }

std::vector<gpurun::Gpu> parse_machine(const Machine& m) {
  std::vector<gpurun::Gpu> gpus = gpurun::parse_gpu_csv(m.gpu_csv);
  gpurun::attach_processes(gpus, gpurun::parse_compute_apps_csv(m.apps_csv));
  return gpus;
}

gpurun::DockerRunRequest make_request(const std::vector<gpurun::GpuAssessment>& chosen, int cpus,
                                      gpurun::LaunchIdentity identity, std::string suffix) {
  gpurun::DockerRunRequest request;
  request.docker = "docker";
  request.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  for (const auto& a : chosen) {
    request.gpu_indices.push_back(a.gpu.index);
    request.gpu_uuids.push_back(a.gpu.uuid);
  }
  request.cpus = cpus;
  request.identity = std::move(identity);
  request.name_suffix = std::move(suffix);
  request.env = {"WANDB_MODE=offline"};
  request.volumes = {"/data/datasets:/data:ro"};
  request.command = {"python", "train.py", "--config", "configs/llama-7b lora.yaml", "--lr", "2e-4"};
  return request;
}

void set_gpu_counters(benchmark::State& state, int gpus) {
  state.counters["GPUs"] = gpus;
  state.counters["GPUs/s"] = benchmark::Counter(gpus, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Parse(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Machine& m = machine(n);
  for (auto _ : state) {
    std::vector<gpurun::Gpu> gpus = parse_machine(m);
    benchmark::DoNotOptimize(gpus.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(m.gpu_csv.size() + m.apps_csv.size()));
}

void BM_ParseGpuCsv(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Machine& m = machine(n);
  for (auto _ : state) {
    std::vector<gpurun::Gpu> gpus = gpurun::parse_gpu_csv(m.gpu_csv);
    benchmark::DoNotOptimize(gpus.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
}

void BM_ParseComputeApps(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Machine& m = machine(n);
  std::size_t processes = 0;
  for (auto _ : state) {
    std::vector<gpurun::GpuProcess> apps = gpurun::parse_compute_apps_csv(m.apps_csv);
    processes = apps.size();
    benchmark::DoNotOptimize(apps.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
  state.counters["processes"] = static_cast<double>(processes);
}

// Copies the parsed table every iteration (attach_processes appends to it); the copy is timed too.
void BM_AttachProcesses(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Machine& m = machine(n);
  const std::vector<gpurun::Gpu> parsed = gpurun::parse_gpu_csv(m.gpu_csv);
  const std::vector<gpurun::GpuProcess> apps = gpurun::parse_compute_apps_csv(m.apps_csv);
  for (auto _ : state) {
    std::vector<gpurun::Gpu> gpus = parsed;
    gpurun::attach_processes(gpus, apps);
    benchmark::DoNotOptimize(gpus.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
  state.counters["processes"] = static_cast<double>(apps.size());
}

void BM_AssessPick(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<gpurun::Gpu> gpus = parse_machine(machine(n));
  const gpurun::Thresholds thresholds = default_thresholds();
  for (auto _ : state) {
    std::vector<gpurun::GpuAssessment> assessed = gpurun::assess(gpus, thresholds);
    gpurun::PickResult chosen = gpurun::pick(assessed, kGpusRequested, false);
    benchmark::DoNotOptimize(chosen.chosen.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
}

void BM_BuildArgv(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::vector<gpurun::Gpu> gpus = parse_machine(machine(n));
  const auto chosen = gpurun::pick(gpurun::assess(gpus, default_thresholds()), kGpusRequested, false).gpus_or_throw();
  const gpurun::CpuPlan cpus = gpurun::plan_cpus(kGpusRequested, n, kHostCpus, std::nullopt);
  const gpurun::DockerRunRequest request = make_request(chosen, cpus.total, fixed_identity(), "5f3a9c1e");
  for (auto _ : state) {
    std::vector<std::string> argv = gpurun::build_docker_argv(request);
    std::string line = gpurun::shell_join(argv);
    benchmark::DoNotOptimize(line.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
}

// Everything between nvidia-smi's output and the argv handed to execve, without syscalls.
void BM_WholePath(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Machine& m = machine(n);
  const gpurun::LaunchIdentity identity = fixed_identity();
  for (auto _ : state) {
    std::vector<gpurun::Gpu> gpus = parse_machine(m);
    const auto assessed = gpurun::assess(gpus, default_thresholds());
    const auto chosen = gpurun::pick(assessed, kGpusRequested, false).gpus_or_throw();
    const gpurun::CpuPlan cpus =
        gpurun::plan_cpus(kGpusRequested, static_cast<int>(assessed.size()), kHostCpus, std::nullopt);
    const std::vector<std::string> argv =
        gpurun::build_docker_argv(make_request(chosen, cpus.total, identity, "5f3a9c1e"));
    std::string line = gpurun::shell_join(argv);
    benchmark::DoNotOptimize(line.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
}

// What run_launch does for --dry-run after nvidia-smi answered (output not written anywhere).
void BM_WholeDryRun(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Machine& m = machine(n);
  for (auto _ : state) {
    std::vector<gpurun::Gpu> gpus = parse_machine(m);
    const auto assessed = gpurun::assess(gpus, default_thresholds());
    const auto chosen = gpurun::pick(assessed, kGpusRequested, false).gpus_or_throw();
    const gpurun::CpuPlan cpus =
        gpurun::plan_cpus(kGpusRequested, static_cast<int>(assessed.size()), gpurun::host_cpu_count(), std::nullopt);
    std::string table = gpurun::format_gpu_table(gpurun::ranked(assessed));
    const std::vector<std::string> argv = gpurun::build_docker_argv(
        make_request(chosen, cpus.total, gpurun::current_identity(), gpurun::random_suffix()));
    std::string line = gpurun::shell_join(argv);
    benchmark::DoNotOptimize(table.data());
    benchmark::DoNotOptimize(line.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
}

void BM_RankingTable(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto assessed = gpurun::assess(parse_machine(machine(n)), default_thresholds());
  for (auto _ : state) {
    std::string table = gpurun::format_gpu_table(gpurun::ranked(assessed));
    benchmark::DoNotOptimize(table.data());
    benchmark::ClobberMemory();
  }
  set_gpu_counters(state, n);
}

void BM_LaunchContext(benchmark::State& state) {
  for (auto _ : state) {
    gpurun::LaunchIdentity identity = gpurun::current_identity();
    std::string suffix = gpurun::random_suffix();
    int cpus = gpurun::host_cpu_count();
    benchmark::DoNotOptimize(identity.login.data());
    benchmark::DoNotOptimize(suffix.data());
    benchmark::DoNotOptimize(cpus);
  }
}

// gpurun's child-process runner on two children that exit at once: its cost above the floor
// below is the runner's own (pipes, poll, reaping), not the children's.
void BM_SpawnTwoTrue(benchmark::State& state) {
  const std::vector<gpurun::ProcessSpec> specs{{{"true"}, {}}, {{"true"}, {}}};
  for (auto _ : state) {
    auto results = gpurun::run_processes(specs, std::chrono::milliseconds(10000));
    if (!results[0].succeeded() || !results[1].succeeded()) state.SkipWithError("`true` failed");
    benchmark::DoNotOptimize(results.data());
  }
}

void BM_RawSpawnTwoTrue(benchmark::State& state) {
  char name[] = "true";
  char* argv[] = {name, nullptr};
  for (auto _ : state) {
    pid_t pids[2] = {-1, -1};
    for (pid_t& pid : pids)
      if (::posix_spawnp(&pid, name, nullptr, nullptr, argv, environ) != 0) state.SkipWithError("posix_spawnp failed");
    for (pid_t pid : pids) {
      int status = 0;
      if (pid > 0) ::waitpid(pid, &status, 0);
    }
  }
}

}  // namespace

BENCHMARK(BM_Parse)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseGpuCsv)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseComputeApps)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttachProcesses)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AssessPick)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BuildArgv)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WholePath)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WholeDryRun)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RankingTable)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchContext)->Unit(benchmark::kMicrosecond);
// Real time: the work happens in children, not in this process's CPU time.
BENCHMARK(BM_SpawnTwoTrue)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RawSpawnTwoTrue)->Unit(benchmark::kMicrosecond)->UseRealTime();
