// Unit tests for reading docker-run arguments as docker does (gpurun/util/docker_args.hpp).
#include "gpurun/util/docker_args.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

// docker's --mount is one CSV record of KEY=VALUE fields, the keys in any case.
TEST(MountSource, ReadsTheSourceAsDockerDoes) {
  EXPECT_EQ(mount_source("type=bind,src=/a,dst=/b"), "/a");
  EXPECT_EQ(mount_source("type=bind,source=/a,target=/b"), "/a");
  EXPECT_EQ(mount_source("type=bind,\"src=/run/docker.sock\",dst=/s"), "/run/docker.sock");
  EXPECT_EQ(mount_source("type=bind,SRC=/run,dst=/s"), "/run");
  EXPECT_EQ(mount_source("type=bind,\"src=/a,b\",dst=/s"), "/a,b");
  EXPECT_EQ(mount_source("type=bind,src=/a,src=/b,dst=/s"), "/b");  // the last one given
  EXPECT_EQ(mount_source("type=tmpfs,dst=/t"), "");
}

// A refusal follows links as docker (root) does when it mounts; an allowance does not.
TEST(PathsOverlap, AsMountedFollowsLinks) {
  const test::TempDir dir;
  std::filesystem::create_directory_symlink("/var/run", dir / "run-link");
  const std::string link = dir / "run-link";
  EXPECT_FALSE(paths_overlap(link, "/var/run/docker.sock"));
  EXPECT_TRUE(paths_overlap_as_mounted(link, "/var/run/docker.sock"));
  EXPECT_TRUE(paths_overlap_as_mounted("/var/run/docker.sock", "/var/run/docker.sock"));
  EXPECT_FALSE(paths_overlap_as_mounted("/data", "/var/run/docker.sock"));
  EXPECT_FALSE(paths_overlap_as_mounted("data", "/var/run/docker.sock"));  // a named volume
}

}  // namespace
}  // namespace gpurun
