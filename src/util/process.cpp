#include "gpurun/util/process.hpp"

#include "gpurun/util/stop_request.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "spawn.hpp"

namespace gpurun {

using spawning::has_ended;
using spawning::kill_child;
using spawning::reap_killed;
using spawning::record_status;
using spawning::Running;
using spawning::wait_for;

namespace {

// Reads what is available from `fd` into `sink`; closes it at end of file.
void drain(Fd& fd, std::string& sink) {
  char buffer[65536];
  const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
  if (n > 0) {
    sink.append(buffer, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    fd.reset();
  }
}

}  // namespace

struct StartedProcesses::State {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::vector<ProcessResult> results;
  std::vector<Running> children;
};

StartedProcesses::StartedProcesses(std::unique_ptr<State> state) : state_(std::move(state)) {}
StartedProcesses::StartedProcesses(StartedProcesses&&) noexcept = default;
StartedProcesses& StartedProcesses::operator=(StartedProcesses&&) noexcept = default;

StartedProcesses::~StartedProcesses() {
  if (!state_) return;
  for (const Running& child : state_->children) {
    if (child.pid < 0 || child.reaped) continue;
    int status = 0;
    kill_child(child.pid, child.own_group);
    reap_killed(child.pid, status);
  }
}

StartedProcesses start_processes(const std::vector<ProcessSpec>& specs) {
  auto state = std::make_unique<StartedProcesses::State>();
  state->results.resize(specs.size());
  state->children.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i)
    state->children.push_back(spawning::spawn(specs[i], state->results[i]));
  return StartedProcesses(std::move(state));
}

std::vector<ProcessResult> wait_processes(StartedProcesses& started, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  StartedProcesses::State& state = *started.state_;
  const auto deadline = state.started + timeout;
  std::vector<ProcessResult>& results = state.results;
  std::vector<Running>& children = state.children;

  std::chrono::nanoseconds reap_backoff = std::chrono::microseconds(50);
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Fd*, std::string*>> sinks;
    for (std::size_t i = 0; i < children.size(); ++i) {
      for (auto [fd, sink] :
           {std::pair{&children[i].out, &results[i].out}, std::pair{&children[i].err, &results[i].err}}) {
        if (fd->get() < 0) continue;
        fds.push_back({fd->get(), POLLIN, 0});
        sinks.emplace_back(fd, sink);
      }
    }
    // Children that closed their pipes may still run: reap them, or wait for their end below
    // (their pidfd wakes the ppoll when they end, as a blocking waitpid would).
    bool all_reaped = true;
    bool unwatched = false;  // one of them has no pidfd: ppoll must wake now and then to look
    for (std::size_t i = 0; i < children.size(); ++i) {
      Running& child = children[i];
      if (child.pid < 0 || child.reaped) continue;
      if (child.out.get() < 0 && child.err.get() < 0) {
        // Whether its pidfd says it ended, asked before waitpid: a child that had ended and still
        // cannot be reaped (SIGCHLD ignored by whoever started us, a tracer) would wake ppoll at
        // once, forever, so its pidfd is dropped for the backoff.
        pollfd ended{child.pidfd.get(), POLLIN, 0};
        const bool said_ended = child.pidfd.valid() && ::poll(&ended, 1, 0) > 0;
        int status = 0;
        if (wait_for(child.pid, status, WNOHANG) == child.pid) {
          record_status(status, results[i]);
          child.reaped = true;
          continue;
        }
        if (said_ended) child.pidfd.reset();
        if (child.pidfd.valid()) {
          fds.push_back({child.pidfd.get(), POLLIN, 0});
          sinks.emplace_back(nullptr, nullptr);
        } else {
          unwatched = true;
        }
      }
      all_reaped = false;
    }
    if (all_reaped) break;
    const int stop_fd = watched_stop_fd();
    if (stop_fd >= 0) {
      fds.push_back({stop_fd, POLLIN, 0});
      sinks.emplace_back(nullptr, nullptr);
    }

    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    // Without a pidfd, ppoll sleeps before the next waitpid: briefly at first, since a child that
    // closed its output is usually exiting, then longer.
    const auto wait = unwatched ? std::min<std::chrono::nanoseconds>(left, reap_backoff) : left;
    if (unwatched) reap_backoff = std::min<std::chrono::nanoseconds>(reap_backoff * 2, std::chrono::milliseconds(5));
    const timespec wait_ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                           static_cast<long>(wait.count() % 1'000'000'000)};
    const int ready = ::ppoll(fds.data(), fds.size(), &wait_ts, nullptr);
    if (ready < 0 && errno != EINTR) break;
    if (stop_fd >= 0 && ready > 0 && fds.back().revents != 0) break;  // asked to stop: as at the deadline
    for (std::size_t k = 0; k < fds.size() && ready > 0; ++k)
      if (fds[k].revents != 0 && sinks[k].first != nullptr) drain(*sinks[k].first, *sinks[k].second);
  }

  // Past the deadline (or asked to stop): kill whatever still runs, and reap it so no zombie is left.
  for (std::size_t i = 0; i < children.size(); ++i) {
    Running& child = children[i];
    if (child.pid < 0 || child.reaped) continue;
    child.reaped = true;
    const bool ended = has_ended(child.pid);  // then something it left holds the pipes
    if (!ended || child.own_group) kill_child(child.pid, child.own_group);
    int status = 0;
    reap_killed(child.pid, status);  // at once where it had ended
    if (ended)
      record_status(status, results[i]);
    else
      results[i].end = stop_seen() ? ProcessResult::End::abandoned : ProcessResult::End::timed_out;
  }
  return std::move(state.results);  // once: the answers leave the state, whose children are all reaped
}

std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs, std::chrono::milliseconds timeout) {
  StartedProcesses started = start_processes(specs);
  return wait_processes(started, timeout);
}

ProcessResult run_process(const ProcessSpec& spec, std::chrono::milliseconds timeout) {
  return std::move(run_processes({spec}, timeout).front());
}

std::string describe_end(const ProcessResult& result, std::chrono::milliseconds timeout) {
  switch (result.end) {
    case ProcessResult::End::exited:
      return fmt::format("exited with status {}", result.exit_code);
    case ProcessResult::End::signaled:
      return fmt::format("was killed by signal {} ({})", result.signal, ::strsignal(result.signal));
    case ProcessResult::End::timed_out:
      return fmt::format("did not answer within {:g} s and was killed", static_cast<double>(timeout.count()) / 1000.0);
    case ProcessResult::End::abandoned:
      return "was killed unfinished: asked to stop";
    case ProcessResult::End::not_started:
      break;
  }
  return fmt::format("could not be started: {}", std::strerror(result.spawn_errno));
}

}  // namespace gpurun
