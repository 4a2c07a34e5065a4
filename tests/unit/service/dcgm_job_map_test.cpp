// Unit tests for DCGM's job mapping files (service/dcgm_job_map.hpp): one file per held GPU, named
// by its index, its holders' hpc_job names one a line; written whole, only when they change, and
// gone when nobody holds the GPU or the service stops.
#include "dcgm_job_map.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

HolderSample container(const std::string& id, const std::string& name, std::vector<int> gpus) {
  HolderSample holder;
  holder.key = "container:" + id;
  holder.name = name;
  holder.container_id = id;
  holder.gpus = std::move(gpus);
  return holder;
}

HolderSample process(long pid, const std::string& command, std::vector<int> gpus) {
  HolderSample holder;
  holder.key = "process:" + std::to_string(pid);
  holder.name = command;
  holder.command = command;
  holder.gpus = std::move(gpus);
  return holder;
}

class DcgmJobMapTest : public ::testing::Test {
 protected:
  test::TempDir temp{"dcgm-job-map"};
  fs::path dir = temp.path() / "job-map";
};

TEST_F(DcgmJobMapTest, EachHeldGpuHasAFileOfItsHoldersNamesAndAFreeGpuNone) {
  DcgmJobMap map(dir.string());
  map.update({0, 1, 2}, {container("abc", "train-a", {0, 1}), process(42, "/usr/bin/python3 x.py --token=S", {1})});
  EXPECT_EQ(test::read_file(dir / "0"), "train-a\n");
  EXPECT_EQ(test::read_file(dir / "1"), "python3\ntrain-a\n");  // a process by its program alone, never its arguments
  EXPECT_FALSE(fs::exists(dir / "2"));
  struct stat info {};
  ASSERT_EQ(::stat((dir / "0").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644U);  // dcgm-exporter, another user, reads it

  map.update({0, 1, 2}, {process(42, "/usr/bin/python3 x.py", {1})});
  EXPECT_FALSE(fs::exists(dir / "0"));  // the container went
  EXPECT_EQ(test::read_file(dir / "1"), "python3\n");
  map.clear();
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST_F(DcgmJobMapTest, FilesAnEarlierServiceLeftAreRemovedAndNamesStayOnOneLine) {
  fs::create_directories(dir);
  std::ofstream(dir / "3") << "stale\n";
  DcgmJobMap map(dir.string());
  map.update({0, 3}, {container("abc", "evil\nname", {0})});
  EXPECT_FALSE(fs::exists(dir / "3"));
  EXPECT_EQ(test::read_file(dir / "0"), "evil\\x0aname\n");
}

TEST_F(DcgmJobMapTest, ALinkOrAnUnwritablePlaceIsRefusedSayingWhere) {
  fs::create_directories(dir);
  const fs::path link = temp.path() / "link";
  fs::create_directory_symlink(dir, link);
  try {
    DcgmJobMap map(link.string());
    FAIL() << "a link was taken";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(link.string()));
  }
  EXPECT_THROW(DcgmJobMap("/proc/no/such/dir"), Error);
}

// Root writes there and dcgm-exporter believes it: a directory another user made first (in /tmp),
// or one under a directory others may write, is refused.
TEST_F(DcgmJobMapTest, ADirectoryAnotherUserMayWriteOrSwapIsRefused) {
  const fs::path open_parent = temp.path() / "open";
  fs::create_directories(open_parent);
  fs::permissions(open_parent, fs::perms::all);  // 0777, not sticky
  EXPECT_THAT([&] { DcgmJobMap map((open_parent / "map").string()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("another user may write " + open_parent.string())));
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_all | fs::perms::others_read | fs::perms::others_exec);
  EXPECT_THAT([&] { DcgmJobMap map(dir.string()); }, ::testing::ThrowsMessage<Error>(HasSubstr("mode 775")));
  if (::geteuid() != 0) GTEST_SKIP() << "giving the directory to another user needs root";
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  EXPECT_THAT([&] { DcgmJobMap map(dir.string()); }, ::testing::ThrowsMessage<Error>(HasSubstr("uid 65534's")));
}

}  // namespace
}  // namespace gpurun
