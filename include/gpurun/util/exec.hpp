#pragma once
// Replaces gpurun with another program, so that its TTY, signals and exit status are the job's own.
#include <string>
#include <vector>

namespace gpurun {

// Finds `program` as execvp would (a name with '/' is taken as is), without execvp's fallback of
// running unrecognised files through /bin/sh. Returns the path, or empty with `error` set to
// ENOENT (nowhere) or EACCES (found, not executable).
std::string find_program(const std::string& program, int& error);

// find_program, or Error: exit 127 when `program` is not found, 126 when it cannot be executed.
// Under sudo (gpurun/util/privileges.hpp) with root's rights, as the program will run: it came from
// the admin's file, and may lie in a directory only root can search.
std::string locate_program(const std::string& program);

// Flushes the logs and execs argv. Returns only by throwing Error: exit 127 when the program is
// not found, 126 when it cannot be executed.
[[noreturn]] void exec_program(const std::vector<std::string>& argv);

// The NULL-terminated char* array that exec and posix_spawn take, pointing into `strings` (which
// must outlive it); they never write through it.
std::vector<char*> c_argv(const std::vector<std::string>& strings);

}  // namespace gpurun
