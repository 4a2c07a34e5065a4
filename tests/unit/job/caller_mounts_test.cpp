// Unit tests for a sudo caller's mounts (job/caller_mounts.hpp): what docker is given is what was
// checked, in whatever case the keys were typed, and no -v mode has root do more than mount.
#include "caller_mounts.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "gpurun/config/options.hpp"
#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Options with_docker_opts(std::vector<std::string> docker_opts) {
  Options o;
  o.docker_opts = std::move(docker_opts);
  return o;
}

// Docker lowercases --mount's keys: "Source=" was handed on unresolved, and the daemon mounted
// the path as root.
TEST(CallerMounts, AMountSourceInAnyCaseIsResolvedAndTheKeysWrittenInLowerCase) {
  const test::TempDir temp;
  const std::string dir = temp.path().string();
  const std::string real = std::filesystem::canonical(temp.path()).string();
  const CallerMounts mounts =
      check_caller_mounts(with_docker_opts({"--mount", "Type=BIND,Source=" + dir + "/.,Target=/x,RO"}), "/");
  EXPECT_THAT(mounts.docker_opts, ElementsAre("--mount=type=bind,source=" + real + ",target=/x,ro"));
}

TEST(CallerMounts, AVolumeTakesOnlyModesThatMountAndNothingMore) {
  const test::TempDir temp;
  const std::string dir = temp.path().string();
  const std::string real = std::filesystem::canonical(temp.path()).string();
  EXPECT_THAT(check_caller_mounts(with_docker_opts({"-v", dir + ":/x:ro,rslave"}), "/").docker_opts,
              ElementsAre("--volume=" + real + ":/x:ro,rslave"));
  Options own;
  own.volumes = {dir + ":/x:rw"};
  EXPECT_THAT(check_caller_mounts(own, "/").volumes, ElementsAre(real + ":/x:rw"));
  // :z/:Z relabel the tree as root, podman's :U gives it to the container's user, :O overlays it.
  for (const char* mode : {"z", "Z", "U", "O", "ro,U", "idmap", "ro:z"}) {
    const auto e = test::caught_error([&] { check_caller_mounts(with_docker_opts({"-v", dir + ":/x:" + mode}), "/"); });
    EXPECT_EQ(e.exit_code, 125) << mode;
    EXPECT_THAT(e.message, HasSubstr("not allowed under sudo")) << mode;
  }
}

}  // namespace
}  // namespace gpurun
