// Unit tests for GPU reservations: the lock directory, the selection lock, and one flock per GPU
// that a second launch (another open file, or another process) cannot take while it is held.
#include "locks/reservation.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "util/error.hpp"
#include "util/proc_info.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using test::make_gpu;

// How gpurun names this very process as a lock holder: "pid 123, alice, gpurun_unit_tes".
std::string this_process() {
  return fmt::format("pid {}, {}, {}", ::getpid(), process_user(::getpid()).value_or("?"), process_command(::getpid()));
}

// Runs `attempt` in a forked child and returns its exit status: how another process fares.
template <typename F>
int in_another_process(F attempt) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(attempt());
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(PrepareLockDir, CreatesAMissingDirectoryWithMode1777) {
  const test::TempDir dir("gpurun-locks");
  const std::string requested = dir / "locks";
  EXPECT_EQ(prepare_lock_dir(requested), requested);
  struct stat info {};
  ASSERT_EQ(::stat(requested.c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(info.st_mode & 07777, 01777u);
}

TEST(PrepareLockDir, RefusesASymbolicLinkAndAFile) {
  const test::TempDir dir("gpurun-locks");
  fs::create_directory(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  test::write_file(dir / "file", "");

  auto e = test::caught_error([&] { prepare_lock_dir(dir / "link"); });
  EXPECT_EQ(e.message, "lock directory " + (dir / "link") + " cannot be used: it is a symbolic link, which gpurun "
                       "does not follow");
  EXPECT_EQ(e.exit_code, exit_code::failure);
  e = test::caught_error([&] { prepare_lock_dir(dir / "file"); });
  EXPECT_EQ(e.message, "lock directory " + (dir / "file") + " cannot be used: it is not a directory");
}

TEST(ReservationFile, IsNamedByUuidWithOddCharactersReplacedOrByIndexWithoutOne) {
  Gpu gpu = make_gpu(3, 0, 100, 0);
  gpu.uuid = "GPU-ab/../c d";
  EXPECT_EQ(reservation_file("/run/lock/gpurun", gpu), "/run/lock/gpurun/gpu-GPU-ab____c_d.lock");
  gpu.uuid.clear();
  EXPECT_EQ(reservation_file("/run/lock/gpurun", gpu), "/run/lock/gpurun/gpu-index-3.lock");
}

TEST(ReserveGpus, AReservedGpuIsReportedWithItsHolderUntilTheLockIsDropped) {
  const test::TempDir dir("gpurun-locks");
  const std::vector<Gpu> gpus{make_gpu(0, 0, 100, 0), make_gpu(1, 0, 100, 0)};
  {
    const std::vector<FileLock> held = reserve_gpus(dir.str(), {gpus[1]});
    ASSERT_EQ(held.size(), 1u);
    EXPECT_TRUE(held[0].held());
    EXPECT_TRUE(fs::exists(dir / "gpu-GPU-1.lock"));
    const ExternalClaims claims = reserved_gpus(dir.str(), gpus);
    EXPECT_EQ(claims.size(), 1u);
    EXPECT_THAT(claims.at(1), ElementsAre("reserved by another gpurun launch (" + this_process() + ")"));
  }
  EXPECT_THAT(reserved_gpus(dir.str(), gpus), IsEmpty());
}

TEST(ReserveGpus, ASecondReservationOfTheSameGpuFromAnotherProcessFails) {
  const test::TempDir dir("gpurun-locks");
  const Gpu gpu = make_gpu(1, 0, 100, 0);
  const auto reserve_elsewhere = [&] {
    return in_another_process([&] {
      try {
        reserve_gpus(dir.str(), {gpu});
        return 0;
      } catch (const Error& e) {
        return std::string(e.what()) == "GPU 1 was reserved by another launch meanwhile" ? 42 : 1;
      }
    });
  };
  {
    const std::vector<FileLock> held = reserve_gpus(dir.str(), {gpu});
    EXPECT_EQ(reserve_elsewhere(), 42);
    // Another open file of the same process is just as much another launch.
    EXPECT_EQ(test::caught_error([&] { reserve_gpus(dir.str(), {gpu}); }).message,
              "GPU 1 was reserved by another launch meanwhile");
  }
  EXPECT_EQ(reserve_elsewhere(), 0);  // released when the holder closed it
}

TEST(ReserveGpus, APlantedSymbolicLinkIsNeverFollowed) {
  const test::TempDir dir("gpurun-locks");
  const Gpu gpu = make_gpu(0, 0, 100, 0);
  test::write_file(dir / "target", "");
  fs::create_symlink(dir / "target", reservation_file(dir.str(), gpu));
  EXPECT_THAT(reserved_gpus(dir.str(), {gpu}).at(0),
              ElementsAre("its reservation file cannot be used: it is a symbolic link, which gpurun does not follow"));
  EXPECT_EQ(test::caught_error([&] { reserve_gpus(dir.str(), {gpu}); }).message,
            "cannot reserve GPU 0: " + reservation_file(dir.str(), gpu) +
                ": it is a symbolic link, which gpurun does not follow");
}

TEST(LockSelection, ASecondLauncherGivesUpAfterItsPatienceNamingTheHolder) {
  const test::TempDir dir("gpurun-locks");
  {
    const FileLock first = lock_selection(dir.str(), 0ms);
    EXPECT_TRUE(first.held());
    const auto e = test::caught_error([&] { lock_selection(dir.str(), 0ms); });
    EXPECT_EQ(e.message, "another gpurun launch (" + this_process() + ") has held the selection lock " +
                             (dir / "select.lock") + " for over 0 s; try again");
    EXPECT_EQ(e.exit_code, exit_code::failure);
  }
  EXPECT_TRUE(lock_selection(dir.str(), 0ms).held());
}

TEST(FileLock, KeepAcrossExecClearsCloseOnExecAndMovingTransfersOwnership) {
  const test::TempDir dir("gpurun-locks");
  FileLock lock = lock_selection(dir.str(), 0ms);
  EXPECT_NE(::fcntl(lock.fd(), F_GETFD) & FD_CLOEXEC, 0);
  lock.keep_across_exec();
  EXPECT_EQ(::fcntl(lock.fd(), F_GETFD) & FD_CLOEXEC, 0);
  const int fd = lock.fd();
  FileLock moved(std::move(lock));
  EXPECT_FALSE(lock.held());  // NOLINT(bugprone-use-after-move): a moved-from lock owns nothing
  EXPECT_EQ(moved.fd(), fd);
}

}  // namespace
}  // namespace gpurun
