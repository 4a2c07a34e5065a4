// --report's job control: the job runs as gpurun's child while its GPUs are sampled.
#include "gpurun/job/supervise.hpp"

#include "gpurun/gpu/gpu_monitor.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/foreground.hpp"

namespace gpurun {

int run_supervised(const SupervisedRun& run, JobReport& report) {
  // Looked for before the monitor's thread starts: under sudo the search raises the whole process.
  std::vector<std::string> argv = run.argv;
  argv.front() = locate_program(argv.front());  // 126/127 as for an attached launch
  ForegroundJob job;  // before the monitor's thread starts, so that it inherits the signal mask
  std::vector<int> indices;
  for (const Gpu& g : report.gpus) indices.push_back(g.index);
  GpuMonitor monitor(run.nvml ? make_nvml_sampler(run.nvml_library, indices, run.interval)
                              : make_smi_stream_sampler(run.nvidia_smi, indices, run.interval),
                     indices);
  const auto started = std::chrono::steady_clock::now();
  report.exit_status = job.run(argv);
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  report.stats = monitor.stop();
  return report.exit_status;
}

}  // namespace gpurun
