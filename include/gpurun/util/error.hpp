#pragma once
// The one exception type of gpurun: a message for the user and the exit code it maps to.
#include <stdexcept>
#include <string>

namespace gpurun {

// Documented exit codes (README "Exit codes"). Docker's own status passes through once it runs.
namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int failure = 125;         // any failure of gpurun itself, usage errors included
inline constexpr int cannot_execute = 126;  // docker found but not executable
inline constexpr int not_found = 127;       // docker not found
}  // namespace exit_code

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = exit_code::failure)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// A rule said no (the site policy, the rules under sudo): an Error to the user, and a line in the
// system log (gpurun/config/audit_log.hpp).
class Refusal : public Error {
 public:
  using Error::Error;
};

}  // namespace gpurun
