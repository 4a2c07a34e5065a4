// Unit tests for the NVIDIA CDI spec check (gpurun/engine/cdi_specs.hpp) on scratch directories.
#include "gpurun/engine/cdi_specs.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

TEST(NvidiaCdiSpec, FindsTheFirstSpecThatNamesNvidiaGpusAndNothingElse) {
  test::TempDir dir{"gpurun-cdi"};
  const std::string etc = dir.path().string() + "/etc/cdi";
  const std::string run = dir.path().string() + "/run/cdi";
  EXPECT_EQ(nvidia_cdi_spec({etc, run}), std::nullopt);  // neither exists
  test::write_file(etc + "/fpga.yaml", "cdiVersion: 0.5.0\nkind: example.com/fpga\n");
  test::write_file(etc + "/notes.txt", "kind: nvidia.com/gpu\n");  // not a spec's name
  std::filesystem::create_directories(etc + "/nvidia.json");       // a directory, not a spec
  EXPECT_EQ(nvidia_cdi_spec({etc, run}), std::nullopt);
  test::write_file(run + "/nvidia.yaml", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n");
  EXPECT_EQ(nvidia_cdi_spec({etc, run}), run + "/nvidia.yaml");
  std::filesystem::create_symlink(run + "/nvidia.yaml", etc + "/link.yaml");  // not followed
  EXPECT_EQ(nvidia_cdi_spec({etc}), std::nullopt);
}

}  // namespace
}  // namespace gpurun
