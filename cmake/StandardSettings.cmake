# Warnings, sanitizers and coverage as INTERFACE targets: a target opts in by linking them.
add_library(gpurun_warnings INTERFACE)
target_compile_options(gpurun_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor -Wold-style-cast
  -Woverloaded-virtual -Wimplicit-fallthrough
  $<$<BOOL:${GPURUN_WARNINGS_AS_ERRORS}>:-Werror>)

add_library(gpurun_sanitizers INTERFACE)
if(GPURUN_SANITIZE)
  target_compile_options(gpurun_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(gpurun_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# Fuzzing (tests/fuzz): libFuzzer needs clang. Everything is built with the fuzzer's coverage
# instrumentation plus ASan and UBSan, so that a memory error or UB is a crash the fuzzer reports.
if(GPURUN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPURUN_FUZZ needs clang (libFuzzer): configure with CXX=clang++ or --preset fuzz")
  endif()
  target_compile_options(gpurun_sanitizers INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(gpurun_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

add_library(gpurun_coverage INTERFACE)
if(GPURUN_COVERAGE)
  # Atomic counters: the tests run threads (the engine stand-in, samplers), and racing updates of
  # an inline header's counters can wrap to -1, which gcovr refuses to read.
  target_compile_options(gpurun_coverage INTERFACE --coverage -fprofile-update=atomic -O0)
  target_link_options(gpurun_coverage INTERFACE --coverage)
endif()

# gpurun's code laid out for its launch (docs/performance.md, "Code layout"): every function in a
# section of its own, so that the linker drops those nothing calls and puts first those a launch
# runs (src/cli/launch.order, written by scripts/launch-order). A launch then maps about 200 pages
# of text instead of 800. The order needs gold; without it, only the unused code is dropped.
option(GPURUN_LAUNCH_LAYOUT "Lay out gpurun's code for its launch" ON)
set(GPURUN_LAUNCH_LAYOUT_ACTIVE OFF)
if(GPURUN_LAUNCH_LAYOUT AND NOT GPURUN_SANITIZE AND NOT GPURUN_COVERAGE AND NOT GPURUN_FUZZ)
  set(GPURUN_LAUNCH_LAYOUT_ACTIVE ON)
  add_compile_options(-ffunction-sections -fdata-sections)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=gold" GPURUN_HAVE_GOLD)
endif()
