// The test support's own promises: what it creates goes away, what it changes comes back.
#include "support/test_support.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace gpurun::test {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, IsRemovedWithEverythingInItEvenAReadOnlyDirectory) {
  fs::path kept;
  {
    const TempDir dir("gpurun-support");
    kept = dir.path();
    EXPECT_TRUE(fs::is_directory(kept));
    write_file(dir / "a/b/c.txt", "text");
    fs::permissions(dir / "a", fs::perms::owner_read | fs::perms::owner_exec);
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(WriteFile, WritesBytesThatReadFileGivesBack) {
  const TempDir dir("gpurun-support");
  const std::string bytes("a\r\nb\0c", 6);
  EXPECT_EQ(read_file(write_file(dir / "x/y", bytes)), bytes);
}

TEST(WriteScript, IsAnExecutableShellScript) {
  const TempDir dir("gpurun-support");
  const std::string path = write_script(dir / "prog", "exit 3");
  EXPECT_EQ(read_file(path), "#!/bin/sh\nexit 3\n");
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0755u);
}

TEST(EnvGuard, RestoresTheOldValueOrAbsence) {
  ::unsetenv("GPURUN_SUPPORT_TEST");
  {
    const EnvGuard set("GPURUN_SUPPORT_TEST", "one");
    EXPECT_STREQ(::getenv("GPURUN_SUPPORT_TEST"), "one");
    {
      const EnvGuard unset("GPURUN_SUPPORT_TEST", std::nullopt);
      EXPECT_EQ(::getenv("GPURUN_SUPPORT_TEST"), nullptr);
    }
    EXPECT_STREQ(::getenv("GPURUN_SUPPORT_TEST"), "one");
  }
  EXPECT_EQ(::getenv("GPURUN_SUPPORT_TEST"), nullptr);
}

TEST(CaughtError, HasTheMessageAndExitCode) {
  const CaughtError e = caught_error([] { throw Error("no such thing", 127); });
  EXPECT_TRUE(e.thrown);
  EXPECT_EQ(e.message, "no such thing");
  EXPECT_EQ(e.exit_code, 127);
}

TEST(MakeGpu, FillsTheReadingsGiven) {
  const Gpu g = make_gpu(4, 10, std::nullopt, 55);
  EXPECT_EQ(g.index, 4);
  EXPECT_EQ(g.uuid, "GPU-4");
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.memory_used_mib, 10);
  EXPECT_EQ(g.memory_total_mib, std::nullopt);
  EXPECT_EQ(g.utilization_percent, 55);
  EXPECT_FALSE(g.mig_enabled);
  EXPECT_TRUE(g.processes.empty());
}

}  // namespace
}  // namespace gpurun::test
