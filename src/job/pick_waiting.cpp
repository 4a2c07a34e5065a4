// Picking GPUs for a launch, and with --wait the queue: a ticket, a look each second, Ctrl-C.
#include "pick_waiting.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "gpurun/locks/wait_queue.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

volatile sig_atomic_t interrupted_by = 0;
extern "C" void note_interrupt(int signal) { interrupted_by = signal; }

// While waiting, Ctrl-C (or a TERM) ends the wait cleanly: the ticket is removed on the way out.
class InterruptibleWait {
 public:
  InterruptibleWait() {
    interrupted_by = 0;
    struct sigaction action {};
    action.sa_handler = note_interrupt;
    sigemptyset(&action.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &action, nullptr);
  }
  ~InterruptibleWait() {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &action, nullptr);
  }
  InterruptibleWait(const InterruptibleWait&) = delete;
  InterruptibleWait& operator=(const InterruptibleWait&) = delete;
};

// One updating line on a terminal; elsewhere a line whenever what it says changes.
class WaitStatus {
 public:
  WaitStatus() : terminal_(::isatty(STDERR_FILENO) != 0) {}
  ~WaitStatus() { clear(); }
  WaitStatus(const WaitStatus&) = delete;
  WaitStatus& operator=(const WaitStatus&) = delete;

  void show(const std::string& state, std::chrono::seconds waited) {
    const std::string line = fmt::format("gpurun: waiting for GPUs: {}; waited {}", state, format_duration(waited));
    if (terminal_) {
      std::cerr << "\r\033[K" << line << std::flush;
      shown_ = true;
    } else if (state != last_state_) {
      std::cerr << line << '\n' << std::flush;
    }
    last_state_ = state;
  }
  void clear() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  bool terminal_;
  bool shown_ = false;
  std::string last_state_;
};

std::chrono::milliseconds selection_patience(const Options& options) {
  return 2 * smi_timeout(options) + std::chrono::seconds(10);
}

// A dry run with --wait that finds too few free: what a real launch would wait for.
void tell_would_wait(const Options& options, const Inventory& inventory, const PickResult& result,
                     std::optional<std::chrono::seconds> limit) {
  if (spdlog::should_log(spdlog::level::info)) std::cerr << format_gpu_table(ranked(inventory.assessed)) << std::flush;
  spdlog::info(
      "dry run: {} of {} GPU{} free now; a real launch would wait {} until {} {} free, then run docker on them",
      result.available, options.gpus, options.gpus == 1 ? "" : "s",
      limit ? "up to " + format_duration(*limit) : std::string("without limit"), options.gpus,
      options.gpus == 1 ? "is" : "are");
}

}  // namespace

std::optional<int> pick_gpus(const Options& options, const std::string& lock_dir, GpuSource& source,
                             ContainerEngine& engine, FileLock& selection, Inventory& inventory,
                             std::vector<GpuAssessment>& chosen) {
  // No limit is a limit of a century: a plain duration (not seconds::max(), which overflows when
  // compared in nanoseconds) also spares GCC's maybe-uninitialized on optionals.
  const std::chrono::seconds wait_limit = options.wait.limit.value_or(std::chrono::hours(24 * 365 * 100));
  const bool waits = options.wait.enabled && !options.dry_run;
  std::optional<WaitTicket> ticket;
  std::optional<InterruptibleWait> interruptible;
  std::optional<WaitStatus> status;
  if (waits) {
    ticket.emplace(lock_dir);
    interruptible.emplace();
    status.emplace();
  }
  std::set<std::string> told;  // each warning once, however long the wait
  const auto started = std::chrono::steady_clock::now();
  std::string last_free = "?";
  bool looked = false;  // a look that went through: a later one that fails is waited out
  // Ctrl-C also reaches nvidia-smi and docker (gpurun's process group): a look it cut short, or
  // one that found the GPUs as it came, ends the wait, never the launch.
  const auto interrupted = [&] { return waits && interrupted_by != 0; };
  // Looks that failed one after another once the wait was under way, and the last one's error.
  constexpr int kMostFailedLooks = 5;
  int failed_looks = 0;
  std::string last_failure;
  const auto stopped_waiting = [&] {
    selection = FileLock();
    status->clear();
    std::cerr << "gpurun: stopped waiting\n";
    return 128 + interrupted_by;
  };
  while (true) {
    const int position = ticket ? ticket->position() : 0;
    if (position == 0) {
      std::optional<PickResult> result;
      try {
        if (!options.dry_run) selection = lock_selection(lock_dir, selection_patience(options));
        inventory = take_inventory(options, lock_dir, source, &engine);
        // After a detached launch's client has returned, only the engine's list keeps its GPUs
        // busy: a launch without it could take them. A look (status, pick, a dry run) goes on.
        if (!options.dry_run && inventory.engine && !inventory.engine->error.empty()) {
          const EngineAnswer& answer = *inventory.engine;
          if (answer.exit_code == exit_code::not_found || answer.exit_code == exit_code::cannot_execute) {
            // Its client cannot be run, nor could the launch's: said as that exec would say it.
            (void)locate_program(engine.inspect_argv("").front());
            throw Error(answer.error, answer.exit_code);
          }
          throw Error(fmt::format(
              "cannot ask the {} engine which containers hold GPUs, so a GPU a detached container holds would look "
              "free; nothing was launched: {}; try again",
              engine_title(answer.engine), answer.error));
        }
        warn_once(inventory.warnings, told);
        if (const std::string warning = unchecked_processes_warning(inventory); !warning.empty())
          warn_once({warning}, told);
        result = pick_units(options, inventory);
      } catch (const Error& e) {
        if (interrupted()) return stopped_waiting();
        // An nvidia-smi that timed out once, a selection lock held long: a wait of hours goes on.
        // One that keeps failing (a driver upgraded under it) ends it, and frees the queue behind.
        if (!waits || !looked || ++failed_looks >= kMostFailedLooks) throw;
        selection = FileLock();
        last_free = "?";
        last_failure = e.what();
        if (last_failure.ends_with("; try again")) last_failure.resize(last_failure.size() - 11);
        warn_once({fmt::format("while waiting: {} (the wait goes on: gpurun looks again)", last_failure)}, told);
      }
      if (interrupted()) return stopped_waiting();
      if (result) {
        looked = true;
        failed_looks = 0;
        last_failure.clear();
        if (result->ok()) {
          chosen = result->chosen;
          return std::nullopt;  // leaving the queue (the ticket's destructor) lets the next waiter try
        }
        if (!options.wait.enabled || !result->waiting_can_help) throw Error(result->shortfall);
        if (options.dry_run) {
          tell_would_wait(options, inventory, *result, options.wait.limit);
          return 0;
        }
        last_free = std::to_string(result->available);
        selection = FileLock();
      }
    }
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
    if (waited >= wait_limit)
      throw Error(fmt::format("gave up after waiting {} for {} free GPU{} ({}){}", format_duration(waited),
                              options.gpus, options.gpus == 1 ? "" : "s",
                              last_failure.empty() ? fmt::format("{} free now", last_free) : "the last look failed",
                              last_failure.empty() ? std::string() : fmt::format(": {}", last_failure)));
    status->show(
        fmt::format("{} of {} free, {}", last_free, options.gpus,
                    position == 0 ? std::string("first in the queue") : fmt::format("{} ahead in the queue", position)),
        waited);
    // Look again in a second (or when the limit comes), in slices so that Ctrl-C is prompt.
    const auto next = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (interrupted_by == 0 && std::chrono::steady_clock::now() < next &&
           std::chrono::steady_clock::now() - started < wait_limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (interrupted()) return stopped_waiting();
  }
}

}  // namespace gpurun
