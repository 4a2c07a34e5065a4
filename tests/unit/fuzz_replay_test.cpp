// Replays every seed of the fuzz corpora (tests/fuzz/corpus/<target>/) and every input that once
// made a fuzz target fail (tests/fuzz/regressions/<target>/) through the fuzz targets' own checks,
// compiled into this binary with GPURUN_FUZZ_REPLAY. So every CTest run, the ASan one included,
// holds the line the fuzzer drew, without clang or libFuzzer.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gpurun::fuzz {
int gpu_csv(const std::uint8_t* data, std::size_t size);
int compute_apps_csv(const std::uint8_t* data, std::size_t size);
int docker_inspect(const std::uint8_t* data, std::size_t size);
int config(const std::uint8_t* data, std::size_t size);
int sudo_docker_opts(const std::uint8_t* data, std::size_t size);
}  // namespace gpurun::fuzz

namespace {

namespace fs = std::filesystem;
using Target = int (*)(const std::uint8_t*, std::size_t);

const fs::path kFuzzDir = GPURUN_FUZZ_DIR;

// The files of corpus/<target>/ and regressions/<target>/.
std::vector<fs::path> inputs_of(const std::string& target) {
  std::vector<fs::path> files;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = kFuzzDir / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file()) files.push_back(entry.path());
  }
  return files;
}

std::string bytes_of(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void replay(const std::string& target, Target check, std::size_t at_least) {
  const std::vector<fs::path> files = inputs_of(target);
  EXPECT_GE(files.size(), at_least) << "the corpus of " << target << " went missing";
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    const std::string bytes = bytes_of(file);
    // A violated property aborts (a crash CTest reports); another exception than gpurun::Error fails here.
    EXPECT_NO_THROW(check(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }
}

TEST(FuzzReplay, GpuCsvCorpus) { replay("fuzz_gpu_csv", gpurun::fuzz::gpu_csv, 10); }
TEST(FuzzReplay, ComputeAppsCsvCorpus) { replay("fuzz_compute_apps_csv", gpurun::fuzz::compute_apps_csv, 5); }
TEST(FuzzReplay, DockerInspectCorpusAndRegressions) { replay("fuzz_docker_inspect", gpurun::fuzz::docker_inspect, 5); }
TEST(FuzzReplay, ConfigCorpusAndRegressions) { replay("fuzz_config", gpurun::fuzz::config, 10); }
TEST(FuzzReplay, SudoDockerOptsCorpus) { replay("fuzz_sudo_docker_opts", gpurun::fuzz::sudo_docker_opts, 10); }

}  // namespace
