// Mount pins (job/mount_pins.hpp): what a pin shows is the object opened, whatever its path
// names afterwards. Bind mounts need root: skipped otherwise (CI runs as root).
#include "mount_pins.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpurun/util/fd.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class MountPinsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "bind mounts need root";
  }
  test::TempDir tmp{"gpurun-pins"};
};

TEST_F(MountPinsTest, APinShowsWhatWasOpenedNotWhatThePathBecame) {
  fs::create_directories(tmp / "mine");
  fs::create_directories(tmp / "secret");
  test::write_file(tmp / "mine/file", "mine\n");
  test::write_file(tmp / "secret/file", "SECRET\n");
  test::write_file(tmp / "single", "one file\n");
  const Fd dir(::open((tmp / "mine").c_str(), O_PATH | O_CLOEXEC));
  const Fd file(::open((tmp / "single").c_str(), O_PATH | O_CLOEXEC));
  ASSERT_TRUE(dir.valid() && file.valid());
  // The caller swaps the paths after the check.
  fs::rename(tmp / "mine", tmp / "mine.old");
  fs::create_directory_symlink(tmp / "secret", tmp / "mine");
  fs::rename(tmp / "single", tmp / "single.old");
  fs::create_symlink(tmp / "secret/file", tmp / "single");

  const std::string root = tmp / "pins";
  std::string dir_pin;
  {
    MountPins pins(root);
    dir_pin = pins.pin(dir.get());
    const std::string file_pin = pins.pin(file.get());
    // PID.RANDOM: a name never used before (a kept container names its pins after they are gone).
    EXPECT_THAT(dir_pin, ::testing::MatchesRegex(root + "/" + std::to_string(::getpid()) + "\\.[0-9a-f]{8}/0"));
    EXPECT_EQ(read_all(dir_pin + "/file"), "mine\n");
    EXPECT_EQ(read_all(file_pin), "one file\n");
    EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all);
  }
  EXPECT_FALSE(fs::exists(dir_pin)) << "released with the owner";
  EXPECT_TRUE(fs::is_empty(root));
}

TEST_F(MountPinsTest, PinsOfAGpurunThatIsGoneAreCleared) {
  const std::string root = tmp / "pins";
  fs::create_directories(tmp / "src");
  const Fd dir(::open((tmp / "src").c_str(), O_PATH | O_CLOEXEC));
  // A child pins and dies without releasing (as a killed gpurun would).
  const pid_t child = ::fork();
  if (child == 0) {
    MountPins pins(root);
    pins.pin(dir.get());
    ::_exit(0);  // no destructor: the pin stays
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::string stale;
  for (const auto& entry : fs::directory_iterator(root)) stale = entry.path().string();
  ASSERT_TRUE(stale.starts_with(root + "/" + std::to_string(child) + ".")) << stale;
  ASSERT_TRUE(fs::exists(stale + "/0"));
  clear_stale_pins(root);
  EXPECT_FALSE(fs::exists(stale));
  // A killed gpurun's pins under the pid this one has now: stale too (ours are not made yet).
  const std::string ours = root + "/" + std::to_string(::getpid()) + ".0badf00d";
  fs::create_directories(ours + "/0");
  clear_stale_pins(root);
  EXPECT_FALSE(fs::exists(ours));
}

TEST_F(MountPinsTest, ARootThatOthersCouldUseIsRefused) {
  const std::string root = tmp / "open";
  fs::create_directories(root);
  fs::permissions(root, fs::perms::all);
  const Fd dir(::open(tmp.str().c_str(), O_PATH | O_CLOEXEC));
  MountPins pins(root);
  const auto e = test::caught_error([&] { pins.pin(dir.get()); });
  EXPECT_NE(e.message.find("is not a directory only root can use"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace gpurun
