#pragma once
// POSIX-shell quoting, only to *print* a command (--dry-run): pasting the line runs the same argv.
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace gpurun
