// What a real nvidia-smi (driver 580) prints in loop mode, and what this reader relies on: each
// iteration is one write of its rows, every row of it stamped with the same `timestamp`; the
// compute-apps stream prints nothing at all in an iteration without processes. So a frame is the
// rows sharing a stamp, and a silent process stream while the GPU stream goes on means no
// processes. The silence right after processes is confirmed by one compute-apps query, and so is
// a long silence now and then, so a stalled process stream cannot hide a holder for long.
#include "smi/nvidia_smi_stream_source.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>
#include <vector>

#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "smi/nvidia_smi_source.hpp"
#include "smi/smi_csv.hpp"
#include "smi/smi_query.hpp"

namespace gpurun {
namespace {

using Clock = std::chrono::steady_clock;

// "2026/11/25 17:01:37.956, rest": the stamp and the rest; nullopt for a line without one (a lost GPU's).
std::optional<std::pair<std::string, std::string>> split_stamp(const std::string& line) {
  const bool stamped = line.size() > 25 && line[4] == '/' && line[7] == '/' && line[10] == ' ' && line[13] == ':' &&
                       line.compare(23, 2, ", ") == 0;
  if (!stamped) return std::nullopt;
  return std::pair{line.substr(0, 23), line.substr(25)};
}

// One stream's newest complete iteration, with the time it came.
class FrameReader {
 public:
  explicit FrameReader(const ProcessSpec& spec) : child_(spec) {}

  // Takes what has been printed; false once the stream has ended.
  bool drain() {
    for (;;) {
      const std::size_t before = pending_.size();
      if (!child_.read(pending_, std::chrono::milliseconds(0))) return false;
      if (pending_.size() == before) break;
    }
    split();
    return true;
  }

  // Waits up to `timeout` for an iteration newer than the one held; false when none came.
  bool next(Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    const unsigned long seen = frames_;
    while (frames_ == seen) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 || !child_.read(pending_, left)) return false;
      split();
    }
    return true;
  }

  const std::string& latest() const { return latest_; }
  bool fresh(Clock::duration within) const { return frames_ > 0 && Clock::now() - arrived_ <= within; }

 private:
  void split() {
    bool any = false;
    std::size_t end = 0;
    while ((end = pending_.find('\n')) != std::string::npos) {
      const std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      const auto stamped = split_stamp(line);
      if (stamped && !stamp_.empty() && stamped->first != stamp_) finish();
      if (stamped) stamp_ = stamped->first;
      building_ += (stamped ? stamped->second : line) + '\n';
      any = true;
    }
    // An iteration comes in one write: with no partial line left, the last one is whole.
    if (any && pending_.empty()) finish();
  }

  void finish() {
    latest_ = std::move(building_);
    building_.clear();
    stamp_.clear();
    arrived_ = Clock::now();
    ++frames_;
  }

  ChildStream child_;
  std::string pending_;
  std::string building_;
  std::string stamp_;
  std::string latest_;
  Clock::time_point arrived_;
  unsigned long frames_ = 0;
};

class NvidiaSmiStreamSource final : public GpuSource {
 public:
  NvidiaSmiStreamSource(std::string program, bool sensors, std::chrono::milliseconds every)
      : once_(program, sensors),
        program_(std::move(program)),
        every_(std::max(every, std::chrono::milliseconds(100))),
        confirm_every_(std::max<long>(1, std::chrono::minutes(5) / every_)) {}

  Snapshot read(std::chrono::milliseconds timeout) override {
    if (!gpus_ || !apps_) return start(timeout);
    try {
      Snapshot snapshot = from_streams(timeout);
      failures_ = 0;
      return snapshot;
    } catch (const Error& e) {
      gpus_.reset();
      apps_.reset();
      if (++failures_ == kMaxFailures)
        spdlog::warn("nvidia-smi's loop mode failed {} times in a row ({}): asking it once per sample from now on",
                     failures_, e.what());
      else
        spdlog::debug("nvidia-smi stream: {}; asking once and starting it again", e.what());
      return start(timeout);
    }
  }
  std::string name() const override { return "nvidia-smi"; }

 private:
  static constexpr int kMaxFailures = 3;

  // One ask of both queries (which also learns the fields this driver knows), then the streams.
  Snapshot start(std::chrono::milliseconds timeout) {
    Snapshot snapshot = once_.read(timeout);
    if (failures_ >= kMaxFailures) return snapshot;
    const std::string period = std::to_string(every_.count());
    std::vector<std::string_view> fields{"timestamp"};
    fields.insert(fields.end(), once_.gpu_fields().begin(), once_.gpu_fields().end());
    ProcessSpec gpus = gpu_query(program_, fields);
    gpus.argv.insert(gpus.argv.end(), {"-lms", period});
    ProcessSpec apps = compute_apps_query(program_, /*stamped=*/true);
    apps.argv.insert(apps.argv.end(), {"-lms", period});
    gpus_.emplace(gpus);
    apps_.emplace(apps);
    had_processes_ = false;
    for (const Gpu& gpu : snapshot.gpus) had_processes_ = had_processes_ || !gpu.processes.empty();
    quiet_reads_ = 0;
    return snapshot;
  }

  Snapshot from_streams(std::chrono::milliseconds timeout) {
    const auto within = every_ * 3 / 2;
    if (!gpus_->drain()) throw Error("the GPU stream ended");
    if (!gpus_->fresh(within) && !gpus_->next(timeout))
      throw Error(fmt::format("the GPU stream printed nothing for {} ms", timeout.count()));
    GpuTable table = parse_gpu_table(gpus_->latest(), once_.gpu_fields());
    if (!apps_->drain()) throw Error("the process stream ended");
    std::vector<GpuProcess> processes;
    if (apps_->fresh(within)) processes = parse_compute_apps_csv(apps_->latest());
    if (processes.empty() && (had_processes_ || ++quiet_reads_ >= confirm_every_)) processes = confirm(timeout);
    had_processes_ = !processes.empty();
    return smi_snapshot(std::move(table), processes);
  }

  // The process list asked once: the stream's silence is trusted only after this agrees with it.
  std::vector<GpuProcess> confirm(std::chrono::milliseconds timeout) {
    quiet_reads_ = 0;
    const ProcessResult result = run_process(compute_apps_query(program_), timeout);
    if (!result.succeeded()) throw Error(fmt::format("the process query {}", describe_end(result, timeout)));
    std::vector<GpuProcess> processes = parse_compute_apps_csv(result.out);
    if (!processes.empty()) throw Error("the process stream missed a process");
    return processes;
  }

  NvidiaSmiSource once_;
  std::string program_;
  std::chrono::milliseconds every_;
  long confirm_every_;
  std::optional<FrameReader> gpus_;
  std::optional<FrameReader> apps_;
  bool had_processes_ = false;
  long quiet_reads_ = 0;
  int failures_ = 0;
};

}  // namespace

std::unique_ptr<GpuSource> make_nvidia_smi_stream_source(std::string program, bool sensors,
                                                         std::chrono::milliseconds every) {
  return std::make_unique<NvidiaSmiStreamSource>(std::move(program), sensors, every);
}

}  // namespace gpurun
