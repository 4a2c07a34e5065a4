#include "gpurun/config/starter.hpp"

#include <fmt/format.h>

#include "gpurun/config/settings.hpp"

namespace gpurun {

std::string starter_user_config() {
  std::string text = R"(// gpurun user configuration (JSON; // and /* */ comments allowed).
// Remove the // in front of a line to use it; `gpurun config` shows what is in effect and why.
//
// Precedence, lowest first: built-in defaults < /etc/gpurun/config.json < this file
//   < .gpurun.json in the current directory or the nearest parent, then --config files
//   < the profile chosen with -P/--profile NAME < GPURUN_* variables < command-line flags.
// env, volumes, publish and docker_opts add to what lower layers set; null resets a key
// to its built-in default (for those lists: drops what lower layers added).
{
)";
  for (const Setting& s : settings()) {
    if (s.scope != Scope::option || s.example.empty()) continue;
    const std::string line = fmt::format("  // \"{}\": {},", s.key, s.example);
    text += fmt::format("{:<51}// {}: {}\n", line, s.flag, s.help);
  }
  text += R"(  "profiles": {
    // "jupyter": {"publish": ["8888:8888"], "gpus": 1, "command": ["jupyter", "lab", "--ip=0.0.0.0"]}
  }
}
)";
  return text;
}

std::string starter_system_config() {
  std::string text = R"(// gpurun system configuration: /etc/gpurun/config.json (JSON; // and /* */ comments allowed).
// Root's file, read by every user's gpurun and by sudo gpurun. Check an edited copy before
// installing it: `gpurun config --check FILE` (a mistake here stops every user's gpurun).
//
// The site's defaults: users may override them in their own files, variables and flags.
// Keys marked "root only" are honoured only here (and for root): they choose programs and
// libraries that gpurun runs.
{
)";
  for (const Setting& s : settings()) {
    if (s.scope != Scope::option || s.example.empty()) continue;
    const std::string line = fmt::format("  // \"{}\": {},", s.key, s.example);
    text += fmt::format("{:<51}// {}{}\n", line, s.help, s.root_only ? " (root only)" : "");
  }
  text += R"(
  // The site policy: here only, and enforced for everyone, under sudo too.
)";
  for (const Setting& s : settings()) {
    if (s.scope != Scope::policy || s.example.empty()) continue;
    const std::string line = fmt::format("  // \"{}\": {},", s.key, s.example);
    text += fmt::format("{:<51}// {}\n", line, s.help);
  }
  text += R"(  // What gpurund does about GPUs held idle (man gpurund): warn the owner, then stop the container.
  // "idle_policy": {"below": "5%", "warn_after": "1h", "stop_after": "2h", "scope": "gpurun",
  //                 "exempt_users": [], "exempt_containers": ["dcgm-exporter"], "dry_run": false},
  // How gpurund tells people about idle runs and time limits (man gpurund): a webhook, mail, or both.
  // "notify": {"webhook": "https://chat.example.org/hooks/abc", "mail": true,
  //            "mail_domain": "lab.example.org", "sendmail": "/usr/sbin/sendmail",
  //            "events": ["idle_warning", "idle_stopped", "time_warning", "time_limit_stopped"]},

  // The gpurun service (gpurund; man gpurund): its flags of the same names win.
  // "service": {"interval": 10, "write_every": 10, "idle_threshold": 5,
  //             "keep_samples_days": 14, "keep_minutes_days": 400, "keep_ended_containers_days": 7,
  //             "state_dir": "/var/lib/gpurun",
  //             "listen": "127.0.0.1:9400", "web_names": ["gpus.lab.example.org"],
  //             "dcgm_job_mapping_dir": "/run/dcgm-job-map"},

  "profiles": {
    // "jupyter": {"publish": ["8888:8888"], "gpus": 1, "command": ["jupyter", "lab", "--ip=0.0.0.0"]}
  }
}
)";
  return text;
}

}  // namespace gpurun
