// Unit tests for GPU reservations: the lock directory, the selection lock, and one flock per GPU
// that a second launch (another open file, or another process) cannot take while it is held.
#include "gpurun/locks/reservation.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/proc_info.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::make_gpu;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

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

struct stat stat_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info;
}

// A group every machine has and whose id this test knows: the process's own.
std::string own_group() { return group_name(::getegid()); }

TEST(PrepareLockDir, RootCreatesItRootsAndTheLockGroupsWithModeSetgid2775) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  const std::string requested = dir / "locks";
  EXPECT_EQ(prepare_lock_dir({.dir = requested, .group = own_group(), .shared = true}), requested);
  const struct stat info = stat_of(requested);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(info.st_mode & 07777, 02775u);
  EXPECT_EQ(info.st_uid, 0u);
  EXPECT_EQ(info.st_gid, ::getegid());
}

TEST(PrepareLockDir, RootAloneWritesItWhereTheLockGroupDoesNotExist) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  EXPECT_EQ(prepare_lock_dir({.dir = dir / "locks", .group = "gpurun-no-such-group", .shared = true}), dir / "locks");
  EXPECT_EQ(stat_of(dir / "locks").st_mode & 07777, 0755u);
}

TEST(PrepareLockDir, RootMendsALegacyDirectoryAnyoneCouldWriteAndItsFiles) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  const std::string locks = dir / "locks";
  ASSERT_EQ(::mkdir(locks.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(locks.c_str(), 01777), 0);
  test::write_file(locks + "/gpu-GPU-0.lock", "");
  ASSERT_EQ(::chown((locks + "/gpu-GPU-0.lock").c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod((locks + "/gpu-GPU-0.lock").c_str(), 0600), 0);
  EXPECT_EQ(prepare_lock_dir({.dir = locks, .group = own_group(), .shared = true}), locks);
  EXPECT_EQ(stat_of(locks).st_mode & 07777, 02775u);
  const struct stat file = stat_of(locks + "/gpu-GPU-0.lock");
  EXPECT_EQ(file.st_mode & 07777, 0640u);
  EXPECT_EQ(file.st_uid, 0u);
}

TEST(PrepareLockDir, RootChangesNothingOfADirectoryHoldingWhatGpurunDidNotMake) {
  // A --lock-dir of /etc or /proc typed by mistake: neither it nor its files become the lock group's.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  ::chmod(dir.str().c_str(), 0755);
  test::write_file(dir / "passwd", "root:x:0:0::/root:/bin/sh\n");
  ::chmod((dir / "passwd").c_str(), 0644);
  test::write_file(dir / "gpu-GPU-0.lock", "");
  const auto e =
      test::caught_error([&] { prepare_lock_dir({.dir = dir.str(), .group = own_group(), .shared = true}); });
  EXPECT_THAT(e.message, ::testing::HasSubstr("holds passwd, which gpurun did not make"));
  EXPECT_THAT(e.message, ::testing::HasSubstr("give a new or empty directory (the default is /run/lock/gpurun)"));
  EXPECT_EQ(stat_of(dir.str()).st_mode & 07777, 0755u);
  EXPECT_EQ(stat_of(dir / "passwd").st_mode & 07777, 0644u);
  EXPECT_EQ(stat_of(dir / "gpu-GPU-0.lock").st_gid, 0u);
}

TEST(PrepareLockDir, RootRefusesADirectoryNotItsOwnWithTheMend) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  const std::string locks = dir / "locks";
  ASSERT_EQ(::mkdir(locks.c_str(), 0755), 0);
  ASSERT_EQ(::chown(locks.c_str(), 65534, 0), 0);
  const auto e = test::caught_error([&] { prepare_lock_dir({.dir = locks, .group = own_group(), .shared = true}); });
  EXPECT_THAT(e.message, ::testing::HasSubstr("not root's, so whoever owns it could forge or hide reservations"));
  // Moved aside, not given to root: its owner's lock files, held open, would stay theirs to hold.
  EXPECT_THAT(e.message,
              ::testing::HasSubstr(fmt::format("an admin moves it aside with `sudo mv {0} {0}.untrusted`", locks)));
  EXPECT_EQ(e.exit_code, exit_code::failure);
}

// As an ordinary user (a forked child that gave up root, where the test runs as root; this very
// process otherwise): the machine's directory must be one sudo gpurun trusts, and writable to launch.
template <typename F>
int as_ordinary_user(F attempt) {
  return in_another_process([&] {
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) return 99;
    return attempt();
  });
}

int error_kind(const std::function<void()>& attempt) {
  try {
    attempt();
    return 0;
  } catch (const Error& e) {
    const std::string m = e.what();
    if (m.find("which sudo gpurun does not trust") != std::string::npos) return 10;
    if (m.find("you cannot write the lock directory") != std::string::npos) return 11;
    if (m.find("only root may create it") != std::string::npos) return 12;
    return 1;
  }
}

TEST(PrepareLockDir, AnOrdinaryUserIsRefusedTheMachinesDirectoryWhenAnyoneCouldWriteIt) {
  const test::TempDir dir("gpurun-locks");
  ::chmod(dir.str().c_str(), 0755);
  const std::string locks = dir / "locks";
  ASSERT_EQ(::mkdir(locks.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(locks.c_str(), 01777), 0);
  const LockDirSpec machines{.dir = locks, .group = "gpurun-no-such-group", .shared = true};
  if (::geteuid() == 0) {
    EXPECT_EQ(as_ordinary_user([&] { return error_kind([&] { prepare_lock_dir(machines); }); }), 10);
    // A user's own choice is theirs, however it is set.
    EXPECT_EQ(as_ordinary_user(
                  [&] { return error_kind([&] { prepare_lock_dir({.dir = locks, .group = "x", .shared = false}); }); }),
              0);
  } else {
    EXPECT_EQ(error_kind([&] { prepare_lock_dir(machines); }), 10);
  }
}

TEST(PrepareLockDir, AnOrdinaryUserOutsideTheLockGroupMayLookButNotLaunch) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  ::chmod(dir.str().c_str(), 0755);
  const LockDirSpec machines{.dir = dir / "locks", .group = own_group(), .shared = true};
  prepare_lock_dir(machines);  // root made it
  EXPECT_EQ(as_ordinary_user([&] { return error_kind([&] { prepare_lock_dir(machines); }); }), 11);
  EXPECT_EQ(as_ordinary_user([&] { return error_kind([&] { prepare_lock_dir(machines, LockDirUse::read); }); }), 0);
  // Missing: only root makes it; a look finds no reservations.
  const LockDirSpec missing{.dir = dir / "none", .group = own_group(), .shared = true};
  EXPECT_EQ(as_ordinary_user([&] { return error_kind([&] { prepare_lock_dir(missing); }); }), 12);
  EXPECT_EQ(as_ordinary_user([&] { return error_kind([&] { prepare_lock_dir(missing, LockDirUse::read); }); }), 0);
}

TEST(PrepareLockDir, AUsersOwnChoiceIsCreatedForThemAlone) {
  const test::TempDir dir("gpurun-locks");
  const std::string requested = dir / "mine";
  EXPECT_EQ(prepare_lock_dir({.dir = requested, .group = "docker", .shared = false}), requested);
  EXPECT_TRUE(S_ISDIR(stat_of(requested).st_mode));
  EXPECT_EQ(stat_of(requested).st_mode & 07022, ::geteuid() == 0 ? 02020u : 0u);  // root's is the machine's kind
}

TEST(PrepareLockDir, RefusesASymbolicLinkAndAFile) {
  const test::TempDir dir("gpurun-locks");
  fs::create_directory(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  test::write_file(dir / "file", "");

  auto e = test::caught_error([&] { prepare_lock_dir({.dir = dir / "link", .group = "docker", .shared = true}); });
  EXPECT_EQ(e.message, "lock directory " + (dir / "link") +
                           " cannot be used: it is a symbolic link, which gpurun "
                           "does not follow");
  EXPECT_EQ(e.exit_code, exit_code::failure);
  e = test::caught_error([&] { prepare_lock_dir({.dir = dir / "file", .group = "docker", .shared = true}); });
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
    EXPECT_THAT(claims.at(1),
                ElementsAre(Field(&Claim::reason, "reserved by another gpurun launch (" + this_process() + ")")));
    ASSERT_TRUE(claims.at(1).at(0).holder);
    EXPECT_EQ(claims.at(1).at(0).holder->kind, Holder::Kind::reservation);
    EXPECT_EQ(claims.at(1).at(0).holder->user, process_user(::getpid()).value_or(""));
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

// Someone looking (a status, a pick, gpurund) holds the reservation file's lock for a moment: it
// must not make the GPU look reserved to another who looks, nor fail a launch reserving it then.
TEST(ReserveGpus, ALookBesideAnotherLookOrAReservationIsNoReservation) {
  const test::TempDir dir("gpurun-locks");
  const Gpu gpu = make_gpu(0, 0, 100, 0);
  reserve_gpus(dir.str(), {gpu});  // the file exists, nobody holds it
  const std::string path = reservation_file(dir.str(), gpu);
  const int looking = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(looking, 0);
  ASSERT_EQ(::flock(looking, LOCK_SH | LOCK_NB), 0);  // as reserved_gpus looks
  EXPECT_THAT(reserved_gpus(dir.str(), {gpu}), IsEmpty());
  std::thread done_looking([&] {
    std::this_thread::sleep_for(20ms);
    ::close(looking);
  });
  const std::vector<FileLock> held = reserve_gpus(dir.str(), {gpu});
  done_looking.join();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_THAT(reserved_gpus(dir.str(), {gpu}).at(0),
              ElementsAre(Field(&Claim::reason, "reserved by another gpurun launch (" + this_process() + ")")));
}

TEST(ReserveGpus, AGpuWithoutAReservationFileIsFreeAndLookingCreatesNone) {
  const test::TempDir dir("gpurun-locks");
  EXPECT_THAT(reserved_gpus(dir.str(), {make_gpu(0, 0, 100, 0)}), IsEmpty());
  EXPECT_FALSE(fs::exists(dir / "gpu-GPU-0.lock"));
  const std::vector<FileLock> held = reserve_gpus(dir.str(), {make_gpu(0, 0, 100, 0)});
  EXPECT_EQ(stat_of(dir / "gpu-GPU-0.lock").st_mode & 07777, 0640u);  // whatever the umask
}

TEST(ReserveGpus, OutsideTheLockGroupAReservationIsSeenButCannotBeTakenOrHeld) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const test::TempDir dir("gpurun-locks");
  ::chmod(dir.str().c_str(), 0755);
  const std::string locks = prepare_lock_dir({.dir = dir / "locks", .group = "gpurun-no-such-group", .shared = true});
  const Gpu gpu = make_gpu(0, 0, 100, 0);
  // 0: free, 1: reserved, 2: could take it, 3: something else.
  const auto seen_by_nobody = [&] {
    return as_ordinary_user([&] {
      const ExternalClaims claims = reserved_gpus(locks, {gpu});
      if (claims.empty()) {
        try {
          reserve_gpus(locks, {gpu});
          return 2;
        } catch (const Error&) {
          return 0;
        }
      }
      return claims.at(0).at(0).reason.starts_with("reserved by another gpurun launch (pid ") ? 1 : 3;
    });
  };
  {
    const std::vector<FileLock> held = reserve_gpus(locks, {gpu});
    EXPECT_EQ(stat_of(reservation_file(locks, gpu)).st_mode & 07777, 0640u);
    EXPECT_EQ(seen_by_nobody(), 1);
  }
  EXPECT_EQ(seen_by_nobody(), 0);
}

TEST(ReserveGpus, APlantedSymbolicLinkIsNeverFollowed) {
  const test::TempDir dir("gpurun-locks");
  const Gpu gpu = make_gpu(0, 0, 100, 0);
  test::write_file(dir / "target", "");
  fs::create_symlink(dir / "target", reservation_file(dir.str(), gpu));
  EXPECT_THAT(
      reserved_gpus(dir.str(), {gpu}).at(0),
      ElementsAre(Field(&Claim::reason,
                        "its reservation file cannot be used: it is a symbolic link, which gpurun does not follow")));
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
