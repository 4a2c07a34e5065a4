#pragma once
// Shared by the libFuzzer targets: the input as text, and a check that stops the run with a
// message when a property that must hold for every input does not (a finding, like a crash).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace gpurun::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

// Not assert(): the fuzz build may define NDEBUG, and a broken property must never pass silently.
#define GPURUN_FUZZ_CHECK(condition)                                                          \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)

}  // namespace gpurun::fuzz

// Defines the check of one input as gpurun::fuzz::NAME(data, size), and libFuzzer's entry point
// calling it. The unit tests (tests/unit/fuzz_replay_test.cpp) compile the same file with
// GPURUN_FUZZ_REPLAY and replay the seed corpora and the regression inputs through NAME.
#ifdef GPURUN_FUZZ_REPLAY
#define GPURUN_FUZZ_TARGET(name)                        \
  namespace gpurun::fuzz {                              \
  int name(const std::uint8_t* data, std::size_t size); \
  }                                                     \
  int gpurun::fuzz::name(const std::uint8_t* data, std::size_t size)
#else
#define GPURUN_FUZZ_TARGET(name)                                                      \
  namespace gpurun::fuzz {                                                            \
  int name(const std::uint8_t* data, std::size_t size);                               \
  }                                                                                   \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    return gpurun::fuzz::name(data, size);                                            \
  }                                                                                   \
  int gpurun::fuzz::name(const std::uint8_t* data, std::size_t size)
#endif
