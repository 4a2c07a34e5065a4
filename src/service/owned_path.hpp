// Paths gpurund (root) writes into: no other user may change what they lead to (the state
// directory, the socket's).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "gpurun/util/fd.hpp"

namespace gpurun {

// Throws Error unless `dir` and every directory above it belong to root or gpurund's own user and
// none is writable by others (a sticky one, as /tmp, lets nobody rename another's entry): else a
// file root writes there could be swapped for a link between its check and its use. `use` says
// what it was for ("put the socket in /x"), `instead` what to give in its place.
void check_owned_ancestry(const std::filesystem::path& dir, std::string_view use, std::string_view instead);

// The state directory (private: the database holds everyone's commands), made or checked as
// gpurund's alone, and its lock, held while the recorder runs: a second gpurund on it is refused.
Fd lock_state_dir(const std::string& dir);

}  // namespace gpurun
