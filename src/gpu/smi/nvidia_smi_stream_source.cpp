// What a real nvidia-smi (driver 580) prints in loop mode, and what this reader relies on: each
// iteration's rows come at once and carry the same `timestamp`, at a fixed rate from the start;
// the compute-apps stream prints nothing at all in an iteration without processes. So a frame
// is the rows sharing a stamp. A read waits for the GPU stream's next iteration, so that its
// figures are of now, as /proc and the engine are when they are asked, and takes the process
// stream's iteration of the same moment; none coming means no processes. The silence right after
// processes is confirmed by one compute-apps query, and so is a long silence now and then, so a
// stalled process stream cannot hide a holder for long.
#include "smi/nvidia_smi_stream_source.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/stop_request.hpp"
#include "smi/nvidia_smi_source.hpp"
#include "smi/smi_csv.hpp"
#include "smi/smi_query.hpp"

namespace gpurun {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// "2026/11/25 17:01:37.956, rest": the stamp and the rest; nullopt for a line without one (a lost GPU's).
std::optional<std::pair<std::string, std::string>> split_stamp(const std::string& line) {
  const bool stamped = line.size() > 25 && line[4] == '/' && line[7] == '/' && line[10] == ' ' && line[13] == ':' &&
                       line.compare(23, 2, ", ") == 0;
  if (!stamped) return std::nullopt;
  return std::pair{line.substr(0, 23), line.substr(25)};
}

// A stamp in milliseconds, read as printed (local time, no zone: only the difference of two is
// used); nullopt for anything else.
std::optional<long long> stamp_ms(std::string_view stamp) {
  const auto number = [&](std::size_t at, std::size_t size) {
    int value = -1;
    const char* first = stamp.data() + at;
    const auto [end, error] = std::from_chars(first, first + size, value);
    return error == std::errc{} && end == first + size ? value : -1;
  };
  if (stamp.size() != 23) return std::nullopt;
  const int year = number(0, 4), month = number(5, 2), day_of_month = number(8, 2);
  const int hour = number(11, 2), minute = number(14, 2), second = number(17, 2), milli = number(20, 3);
  if (year < 0 || month < 0 || day_of_month < 0 || hour < 0 || minute < 0 || second < 0 || milli < 0)
    return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day_of_month)}};
  if (!date.ok()) return std::nullopt;
  const auto day = std::chrono::sys_days(date).time_since_epoch();
  return std::chrono::duration_cast<milliseconds>(day).count() + ((hour * 60LL + minute) * 60 + second) * 1000 + milli;
}

// One stream's newest whole iteration, its stamps taken off.
class FrameReader {
 public:
  explicit FrameReader(const ProcessSpec& spec) : child_(spec) {}

  // Takes what has been printed; false once the stream has ended. An iteration of more than the
  // child's 4 KiB buffer comes in a few writes, back to back: a begun one gets a moment more.
  bool drain() {
    for (milliseconds wait{0};;) {
      const std::size_t before = pending_.size();
      if (!child_.read(pending_, wait)) return false;
      if (pending_.size() != before) {
        wait = milliseconds(0);
        continue;
      }
      split();
      if (wait.count() > 0 || building_.empty()) break;
      wait = milliseconds(2);
    }
    if (!building_.empty() && pending_.empty()) finish(/*with_loose=*/true);
    return true;
  }

  // Waits up to `timeout` for an iteration newer than the ones taken so far; false when none came.
  bool next(Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    const unsigned long seen = frames_;
    while (frames_ == seen) {
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      const std::size_t before = pending_.size();
      if (left.count() <= 0 || !child_.read(pending_, left)) return false;
      if (pending_.size() != before && !drain()) return false;
    }
    return true;
  }

  const std::string& latest() const { return latest_; }
  const std::string& latest_stamp() const { return latest_stamp_; }  // "" before the first

 private:
  void split() {
    std::size_t end = 0;
    while ((end = pending_.find('\n')) != std::string::npos) {
      const std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      const auto stamped = split_stamp(line);
      if (!stamped) {  // a lost GPU's line: it goes with the stamped rows around it
        loose_ += line + '\n';
        continue;
      }
      if (!building_.empty() && stamped->first != stamp_) finish(/*with_loose=*/false);
      stamp_ = stamped->first;
      building_ += loose_ + stamped->second + '\n';
      loose_.clear();
    }
  }

  void finish(bool with_loose) {
    latest_ = std::move(building_);
    latest_stamp_ = stamp_;
    if (with_loose) latest_ += std::exchange(loose_, {});
    building_.clear();
    ++frames_;
  }

  ChildStream child_;
  std::string pending_;
  std::string building_;
  std::string loose_;
  std::string stamp_;
  std::string latest_;
  std::string latest_stamp_;
  unsigned long frames_ = 0;
};

class NvidiaSmiStreamSource final : public GpuSource {
 public:
  NvidiaSmiStreamSource(std::string program, bool sensors, milliseconds every)
      : once_(program, sensors),
        program_(std::move(program)),
        every_(std::max(every, milliseconds(100))),
        confirm_every_(std::max<long>(1, std::chrono::minutes(5) / every_)) {}

  Snapshot read(milliseconds timeout) override {
    if (!gpus_ || !apps_) return start(timeout);
    try {
      Snapshot snapshot = from_streams(timeout);
      failures_ = 0;
      return snapshot;
    } catch (const Error& e) {
      gpus_.reset();
      apps_.reset();
      if (stop_seen()) throw;  // gpurund asked to stop: no failure, and nothing started again
      if (++failures_ == kMaxFailures) {
        spdlog::warn("nvidia-smi's loop mode failed {} times in a row ({}): asking it once per sample for {} min",
                     failures_, e.what(), kPause.count());
        paused_until_ = Clock::now() + kPause;
      } else {
        spdlog::debug("nvidia-smi stream: {}; asking once and starting it again", e.what());
      }
      return start(timeout);
    }
  }
  std::string name() const override { return "nvidia-smi"; }

 private:
  static constexpr int kMaxFailures = 3;
  static constexpr std::chrono::minutes kPause{10};

  // One ask of both queries (which also learns the fields this driver knows), then the streams.
  Snapshot start(milliseconds timeout) {
    Snapshot snapshot = once_.read(timeout);
    if (failures_ >= kMaxFailures) {
      if (Clock::now() < paused_until_) return snapshot;
      failures_ = 0;
    }
    std::vector<std::string_view> fields{"timestamp"};
    fields.insert(fields.end(), once_.gpu_fields().begin(), once_.gpu_fields().end());
    gpus_.emplace(looped(gpu_query(program_, fields)));
    apps_.emplace(looped(compute_apps_query(program_, /*stamped=*/true)));
    had_processes_ =
        std::any_of(snapshot.gpus.begin(), snapshot.gpus.end(), [](const Gpu& gpu) { return !gpu.processes.empty(); });
    quiet_reads_ = 0;
    return snapshot;
  }

  ProcessSpec looped(ProcessSpec spec) const {
    spec.argv.insert(spec.argv.end(), {"-lms", std::to_string(every_.count())});
    return spec;
  }

  Snapshot from_streams(milliseconds timeout) {
    // What was printed before this read is of another moment: the next iteration is waited for.
    // Both streams started together and print at the same fixed rate, so it is at most one
    // period away, and usually as far as the last read took.
    if (!gpus_->drain() || !apps_->drain()) throw Error("a stream ended");
    const milliseconds patience = every_ + timeout;
    if (!gpus_->next(patience)) throw Error(fmt::format("the GPU stream printed nothing for {} ms", patience.count()));
    GpuTable table = parse_gpu_table(gpus_->latest(), once_.gpu_fields());
    // The process stream's iteration of the same moment (by nvidia-smi's own stamps) comes within
    // milliseconds, or not at all.
    const auto same_moment = [&] {
      const auto gpus = stamp_ms(gpus_->latest_stamp());
      const auto apps = stamp_ms(apps_->latest_stamp());
      return gpus && apps && std::llabs(*apps - *gpus) * 2 < every_.count();
    };
    if (!apps_->drain()) throw Error("the process stream ended");
    const auto until = Clock::now() + std::min<Clock::duration>(every_ / 4, milliseconds(200));
    while (!same_moment()) {
      const auto left = until - Clock::now();
      if (left <= Clock::duration::zero() || !apps_->next(left)) break;
    }
    std::vector<GpuProcess> processes;
    if (same_moment()) processes = parse_compute_apps_csv(apps_->latest());
    if (processes.empty() && (had_processes_ || ++quiet_reads_ >= confirm_every_)) processes = confirm(timeout);
    had_processes_ = !processes.empty();
    return smi_snapshot(std::move(table), processes);
  }

  // The process list asked once: the stream's silence is trusted only after this agrees with it. Where it does not,
  // its answer is the one taken, and both streams start again at the next read (together, so that their iterations
  // stay at the same moments).
  std::vector<GpuProcess> confirm(milliseconds timeout) {
    quiet_reads_ = 0;
    const ProcessResult result = run_process(compute_apps_query(program_), timeout);
    if (!result.succeeded()) throw Error(fmt::format("the process query {}", describe_end(result, timeout)));
    std::vector<GpuProcess> processes = parse_compute_apps_csv(result.out);
    if (!processes.empty()) {
      spdlog::debug("the nvidia-smi process stream missed {} process(es): starting the streams again",
                    processes.size());
      gpus_.reset();
      apps_.reset();
    }
    return processes;
  }

  NvidiaSmiSource once_;
  std::string program_;
  milliseconds every_;
  long confirm_every_;
  std::optional<FrameReader> gpus_;
  std::optional<FrameReader> apps_;
  bool had_processes_ = false;
  long quiet_reads_ = 0;
  int failures_ = 0;
  Clock::time_point paused_until_{};
};

}  // namespace

std::unique_ptr<GpuSource> make_nvidia_smi_stream_source(std::string program, bool sensors, milliseconds every) {
  return std::make_unique<NvidiaSmiStreamSource>(std::move(program), sensors, every);
}

}  // namespace gpurun
