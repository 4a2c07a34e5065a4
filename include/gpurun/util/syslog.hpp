#pragma once
// One line to the system log (syslog or journald, through /dev/log), the way syslog(3) sends it.
// Written here rather than with syslog(3) because glibc's socket path is fixed: the tests point
// GPURUN_SYSLOG_SOCKET at a socket of their own (dropped under sudo with the other test hooks,
// gpurun/config/caller.hpp). No log listening fails no command; a sudo launch whose log listens
// and does not take its record is refused (gpurun/config/audit_log.hpp).
#include <chrono>
#include <string>
#include <string_view>

namespace gpurun {

// The facilities and severities gpurun uses, with syslog.h's numbers.
enum class LogFacility { user = 1, authpriv = 10 };
enum class LogSeverity { warning = 4, notice = 5, info = 6 };

// "<PRI>Nov 24 13:05:01 gpurun[PID]: MESSAGE", as RFC 3164 and syslog(3) write it.
std::string syslog_datagram(LogFacility facility, LogSeverity severity, std::string_view message);

// Sends it: `no_log` where no log listens, `failed` where one listens but did not take it (its
// queue full past `patience`, which 0 does not wait for at all).
enum class SyslogSent { sent, no_log, failed };
SyslogSent send_to_syslog(LogFacility facility, LogSeverity severity, std::string_view message,
                          std::chrono::milliseconds patience = std::chrono::milliseconds(0));

}  // namespace gpurun
