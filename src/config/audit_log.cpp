#include "gpurun/config/audit_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "gpurun/config/options.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/syslog.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

constexpr std::size_t kMaxField = 512;

// A value as one word: printable, and quoted where it has spaces or quotes of its own.
std::string field(std::string_view value) {
  std::string shown = text::printable(value, kMaxField);
  if (!shown.empty() && shown.find_first_of(" \"\\=") == std::string::npos) return shown;
  std::string quoted = "\"";
  for (char c : shown) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + '"';
}

std::string who(const std::optional<Caller>& caller) {
  if (caller) return fmt::format("user={} sudo=yes", field(caller->login));
  return fmt::format("user={} sudo=no", field(own_login_name().value_or(std::to_string(::getuid()))));
}

std::string job(const Options& options) {
  return fmt::format("image={} command={}", field(options.image.empty() ? "-" : options.image),
                     text::printable(shell_join(options.command), kMaxField));
}

}  // namespace

std::string launch_log_line(const Options& options, std::string_view gpus, std::string_view name) {
  return fmt::format("launch {} gpus={} name={} {}", who(options.caller), field(gpus), field(name), job(options));
}

std::string refusal_log_line(const Options& options, const std::optional<Caller>& caller, std::string_view why) {
  return fmt::format("refused {} gpus={} reason={} {}", who(caller), options.gpus,
                     field(text::printable(why, kMaxField)), job(options));
}

void log_launch(const Options& options, std::string_view gpus, std::string_view name) {
  if (!send_to_syslog(LogFacility::user, LogSeverity::notice, launch_log_line(options, gpus, name)))
    spdlog::debug("no system log listens at /dev/log: the launch is not recorded there");
}

void log_refusal(const Options& options, const std::optional<Caller>& caller, std::string_view why) {
  const LogFacility facility = caller ? LogFacility::authpriv : LogFacility::user;
  if (!send_to_syslog(facility, LogSeverity::warning, refusal_log_line(options, caller, why)))
    spdlog::debug("no system log listens at /dev/log: the refusal is not recorded there");
}

}  // namespace gpurun
