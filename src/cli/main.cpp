// The gpurun executable: a trampoline into the CLI layer.
#include <unistd.h>

#include <string>

#include "cli.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/version.hpp"

namespace {

// `gpurun --version` alone is answered before the static initializers run (libstdc++'s locale and
// iostreams, Asio's error categories: a tenth of a millisecond), so a script that asks it at every
// shell start pays for the process alone (docs/performance.md, "Start-up"). glibc calls a
// .preinit_array function with main's arguments; anything else goes on to main. It calls nothing
// but write and _exit: a sanitizer's runtime may not be up yet.
void answer_version_early(int argc, char** argv, char** /*envp*/) {
  if (argc != 2) return;
  constexpr std::string_view flag = "--version";
  for (std::size_t i = 0; i <= flag.size(); ++i)
    if (argv[1][i] != (i < flag.size() ? flag[i] : '\0')) return;
  constexpr std::string_view prefix = "gpurun ";
  char line[64];
  std::size_t size = 0;
  for (std::string_view part : {prefix, gpurun::kVersion, std::string_view("\n")})
    for (char c : part)
      if (size < sizeof line) line[size++] = c;
  const ssize_t written = ::write(STDOUT_FILENO, line, size);
  ::_exit(written == static_cast<ssize_t>(size) ? gpurun::exit_code::ok : gpurun::exit_code::failure);
}

[[gnu::section(".preinit_array"), gnu::used]] void (*const kAnswerVersionEarly)(int, char**,
                                                                                char**) = answer_version_early;

}  // namespace

int main(int argc, char** argv) { return gpurun::cli::main(argc, argv); }
