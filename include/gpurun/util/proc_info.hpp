#pragma once
// Who runs a process, from /proc: for showing who holds a GPU or a reservation.
#include <optional>
#include <string>

namespace gpurun {

// The login name of the process's real user ("uid 1234" when it has no name); nullopt when the
// process is gone or hidden.
std::optional<std::string> process_user(long pid);

// The process's command name (/proc/PID/comm), empty when unknown.
std::string process_command(long pid);

}  // namespace gpurun
