#pragma once
// What gpurun tells the system log: one line per launch and one per refusal (user, GPUs, image,
// command), so that an admin can see who ran what and what the rules refused. Refusals under sudo
// go to LOG_AUTHPRIV, beside sudo's own lines; the rest to LOG_USER. Whatever the caller typed is
// written printable, never as it came.
#include <optional>
#include <string>
#include <string_view>

#include "gpurun/config/caller.hpp"

namespace gpurun {

struct Options;

// "launch user=alice sudo=yes gpus=0,1 image=me/x:1 name=gpurun-alice-1 command=python train.py"
std::string launch_log_line(const Options& options, std::string_view gpus, std::string_view name);
// "refused user=alice sudo=yes gpus=2 image=me/x:1 reason=\"...\" command=python train.py"
std::string refusal_log_line(const Options& options, const std::optional<Caller>& caller, std::string_view why);

// `gpus`: the indices ("0,1"), or how many where Slurm picks them.
void log_launch(const Options& options, std::string_view gpus, std::string_view name);
void log_refusal(const Options& options, const std::optional<Caller>& caller, std::string_view why);

// A SUDO_UID or SUDO_GID that is not who ran sudo (SudoIdRefusal), refused before any caller was
// known: "refused user=root sudo=refused SUDO_UID=N reason=…", to authpriv beside sudo's lines.
std::string sudo_id_refusal_log_line(uid_t claimed_uid, std::string_view why);
void log_sudo_id_refusal(uid_t claimed_uid, std::string_view why);

}  // namespace gpurun
