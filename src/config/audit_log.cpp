#include "gpurun/config/audit_log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <optional>

#include "gpurun/config/options.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/docker_args.hpp"
#include "gpurun/util/error.hpp"
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

// This process's own user, as a field: its login, or its uid where it has none.
std::string own_user() { return field(own_login_name().value_or(std::to_string(::getuid()))); }

std::string who(const std::optional<Caller>& caller) {
  if (caller) return fmt::format("user={} sudo=yes", field(caller->login));
  return fmt::format("user={} sudo=no", own_user());
}

std::string job(const Options& options) {
  return fmt::format("image={} command={}", field(options.image.empty() ? "-" : options.image),
                     text::printable(shell_join(options.command), kMaxField));
}

}  // namespace

// Items joined by spaces, each cut on its own: a long first one cannot push the rest out of the
// record.
std::string items(const std::vector<std::string>& list) {
  constexpr std::size_t kMaxItem = 160;
  std::string joined;
  for (const std::string& item : list) {
    if (!joined.empty()) joined += ' ';
    joined += text::printable(item, kMaxItem);
  }
  return joined;
}

// What else the container is given, where given: the mounts and docker options as typed, and the
// names of the variables set (their values may be tokens, --docker-opt --env's too).
std::string given(const Options& options) {
  std::string text;
  if (!options.volumes.empty()) text += fmt::format("volumes={} ", field(items(options.volumes)));
  if (!options.docker_opts.empty()) {
    std::vector<std::string> shown;
    for (const DockerArg& arg : docker_args(options.docker_opts))
      shown.push_back(arg.name == "env" && arg.value ? "--env=" + arg.value->substr(0, arg.value->find('='))
                                                     : arg.text);
    text += fmt::format("docker_opts={} ", field(items(shown)));
  }
  if (!options.env.empty()) {
    std::vector<std::string> names;
    for (const std::string& item : options.env) names.push_back(item.substr(0, item.find('=')));
    text += fmt::format("env={} ", field(fmt::format("{}", fmt::join(names, ","))));
  }
  return text;
}

std::string launch_log_line(const Options& options, std::string_view gpus, std::string_view name) {
  return fmt::format("launch {} gpus={} name={} {}{}", who(options.caller), field(gpus), field(name), given(options),
                     job(options));
}

std::string refusal_log_line(const Options& options, const std::optional<Caller>& caller, std::string_view why) {
  return fmt::format("refused {} gpus={} reason={} {}", who(caller), options.gpus,
                     field(text::printable(why, kMaxField)), job(options));
}

void log_launch(const Options& options, std::string_view gpus, std::string_view name) {
  // A sudo launch waits a second for a log whose queue is full, and is not made unrecorded: a
  // caller flooding /dev/log first would otherwise launch as root unseen.
  const std::chrono::milliseconds patience(options.caller ? 1000 : 0);
  const SyslogSent sent =
      send_to_syslog(LogFacility::user, LogSeverity::notice, launch_log_line(options, gpus, name), patience);
  if (sent == SyslogSent::no_log) spdlog::debug("no system log listens at /dev/log: the launch is not recorded there");
  if (sent == SyslogSent::failed && options.caller)
    throw Error(
        "the system log (/dev/log) did not take this launch's record: under sudo a launch is not made unrecorded; "
        "try again");
  if (sent == SyslogSent::failed) spdlog::debug("the system log did not take the launch's record");
}

void log_refusal(const Options& options, const std::optional<Caller>& caller, std::string_view why) {
  const LogFacility facility = caller ? LogFacility::authpriv : LogFacility::user;
  if (send_to_syslog(facility, LogSeverity::warning, refusal_log_line(options, caller, why)) != SyslogSent::sent)
    spdlog::debug("no system log listens at /dev/log: the refusal is not recorded there");
}

std::string sudo_id_refusal_log_line(uid_t claimed_uid, std::string_view why) {
  return fmt::format("refused user={} sudo=refused SUDO_UID={} reason={}", own_user(), claimed_uid,
                     field(text::printable(why, kMaxField)));
}

void log_sudo_id_refusal(uid_t claimed_uid, std::string_view why) {
  if (send_to_syslog(LogFacility::authpriv, LogSeverity::warning, sudo_id_refusal_log_line(claimed_uid, why)) !=
      SyslogSent::sent)
    spdlog::debug("no system log listens at /dev/log: the refusal is not recorded there");
}

}  // namespace gpurun
