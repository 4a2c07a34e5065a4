// Unit tests for the --wait queue: first come, first served across processes; a dead waiter's
// ticket is swept by the next one to look.
#include "gpurun/locks/wait_queue.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::SizeIs;
using ::testing::StartsWith;

// The names of the queue's files, sorted.
std::vector<std::string> files_in(const test::TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WaitTicket, LaterWaitersQueueBehindEarlierOnesAndMoveUpWhenTheyLeave) {
  const test::TempDir dir("gpurun-queue");
  auto first = std::make_unique<WaitTicket>(dir.str());
  const WaitTicket second(dir.str());
  const WaitTicket third(dir.str());
  EXPECT_EQ(first->position(), 0);
  EXPECT_EQ(second.position(), 1);
  EXPECT_EQ(third.position(), 2);
  ASSERT_THAT(files_in(dir), SizeIs(3));
  for (const auto& name : files_in(dir)) EXPECT_THAT(name, StartsWith("ticket-"));  // no draft left behind

  first.reset();  // leaves the queue: its ticket is removed
  EXPECT_THAT(files_in(dir), SizeIs(2));
  EXPECT_EQ(second.position(), 0);
  EXPECT_EQ(third.position(), 1);
}

TEST(WaitTicket, ATicketNobodyHoldsIsSweptAndNotCounted) {
  const test::TempDir dir("gpurun-queue");
  const std::string stale = test::write_file(dir / "ticket-00000000000000000000-1", "");
  const WaitTicket mine(dir.str());
  EXPECT_EQ(mine.position(), 0);
  EXPECT_FALSE(fs::exists(stale));
}

TEST(WaitTicket, TheTicketOfAWaiterThatDiedIsSwept) {
  const test::TempDir dir("gpurun-queue");
  const pid_t child = ::fork();
  if (child == 0) {
    new WaitTicket(dir.str());  // never destroyed: the process dies holding its place
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_THAT(files_in(dir), SizeIs(1));  // the dead waiter's ticket

  const WaitTicket mine(dir.str());
  EXPECT_EQ(mine.position(), 0);
  EXPECT_THAT(files_in(dir), SizeIs(1));  // only ours is left
}

// sudo's umask (077) made a ticket root's alone: a lock-group member launching directly could not
// open it, took it for a dead waiter's and removed it, and went ahead.
TEST(WaitTicket, ATicketIsReadableByEveryWaiterWhateverTheUmask) {
  const test::TempDir dir("gpurun-queue");
  const mode_t before = ::umask(077);
  const WaitTicket mine(dir.str());
  ::umask(before);
  const auto names = files_in(dir);
  ASSERT_THAT(names, SizeIs(1));
  EXPECT_EQ(fs::status(dir / names.front()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

TEST(WaitTicket, AMissingDirectoryIsAnErrorNamingIt) {
  const test::TempDir dir("gpurun-queue");
  const auto e = test::caught_error([&] { WaitTicket ticket(dir / "missing"); });
  EXPECT_EQ(e.message, "cannot join the wait queue in " + (dir / "missing") + ": No such file or directory");
  EXPECT_EQ(e.exit_code, exit_code::failure);
}

}  // namespace
}  // namespace gpurun
