// Unit tests for the bounded reader: a whole file read, a bound kept, and what no named file may
// do to gpurun (a directory, a FIFO nobody writes, a device that never ends).
#include "gpurun/util/whole_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "gpurun/util/fd.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::TempDir;
using test::write_file;

TEST(ReadBounded, ReadsAWholeFileOfEitherKind) {
  const TempDir dir;
  const std::string text(100'000, 'x');
  const std::string path = write_file(dir.path() / "big.csv", text);
  EXPECT_EQ(read_bounded(path, text.size(), FileKinds::regular_only).text, text);
  EXPECT_EQ(read_bounded(path, text.size(), FileKinds::streams_too).text, text);
  EXPECT_EQ(read_bounded(write_file(dir.path() / "empty", ""), 10, FileKinds::regular_only).text, "");
}

TEST(ReadBounded, AFileOverTheBoundIsRefusedNotCut) {
  const TempDir dir;
  const std::string path = write_file(dir.path() / "f", std::string(3 << 20, 'x'));
  const BoundedRead read = read_bounded(path, std::size_t{2} << 20, FileKinds::regular_only);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "it is over 2 MiB");
  EXPECT_EQ(read_bounded(path, 1000, FileKinds::regular_only).problem, "it is over 1000 bytes");
}

TEST(ReadBounded, ADeviceThatNeverEndsStopsAtTheBound) {
  const BoundedRead read = read_bounded("/dev/zero", 1 << 20, FileKinds::streams_too);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "it is over 1 MiB");
  EXPECT_EQ(read_bounded("/dev/zero", 1 << 20, FileKinds::regular_only).problem, "it is not a regular file");
}

TEST(ReadBounded, ADirectoryIsSaidToBeOne) {
  const TempDir dir;
  const BoundedRead read = read_bounded(dir.str(), 100, FileKinds::streams_too);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "it is a directory");
  EXPECT_EQ(read_bounded(dir.str(), 100, FileKinds::regular_only).problem, "it is a directory");
}

TEST(ReadBounded, AFifoNobodyWritesIsRefusedAtOnceWhereOnlyFilesAreRead) {
  const TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const BoundedRead read = read_bounded(fifo, 100, FileKinds::regular_only);  // a blocking open would hang here
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "it is not a regular file");
}

TEST(ReadBounded, AFifoNobodyWritesIsGivenUpAfterTheTimeoutWhereStreamsAreRead) {
  const TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const BoundedRead read = read_bounded(fifo, 100, FileKinds::streams_too, std::chrono::milliseconds(100));
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.problem, "nothing came from it for 0.1 s");
}

TEST(ReadBounded, APipeIsReadWhereStreamsAre) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ASSERT_EQ(::write(ends[1], "0, GPU-0\n", 9), 9);
  ::close(ends[1]);
  EXPECT_EQ(read_bounded("/dev/fd/" + std::to_string(ends[0]), 100, FileKinds::streams_too).text,
            "0, GPU-0\n");  // <(...)
  ::close(ends[0]);
}

TEST(ReadBounded, AMissingFileGivesItsErrno) {
  const TempDir dir;
  const BoundedRead read = read_bounded(dir / "none", 100, FileKinds::regular_only);
  EXPECT_FALSE(read.text);
  EXPECT_EQ(read.error, ENOENT);
  EXPECT_EQ(read.problem, "No such file or directory");
}

TEST(WriteWhole, WritesAFileWholeAndReplacesWhatWasThere) {
  const TempDir dir;
  const std::string path = write_file(dir.path() / "report.json", std::string(100'000, 'x'));
  EXPECT_EQ(write_whole(path, "{}\n"), std::nullopt);
  EXPECT_EQ(test::read_file(path), "{}\n");
}

TEST(WriteWhole, WhatCannotTakeTheTextIsToldNotWaitedFor) {
  const TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(write_whole(fifo, "{}"), "it is a FIFO nobody reads");
  EXPECT_EQ(write_whole("/dev/full", "{}"), "No space left on device");
  EXPECT_EQ(write_whole(dir.str(), "{}"), "Is a directory");
}

// A regular file is replaced by renaming a whole new one over it: a reader holding the old one
// keeps it whole, and nothing is left beside it.
TEST(ReplaceWhole, RenamesAWholeNewFileOverARegularOne) {
  const TempDir dir;
  const std::string path = write_file(dir.path() / "report.json", "old\n");
  const Fd reader(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(replace_whole(path, "{}\n"), std::nullopt);
  EXPECT_EQ(test::read_file(path), "{}\n");
  char old[8] = {};
  EXPECT_EQ(::read(reader.get(), old, sizeof old), 4);  // the old file, untouched
  EXPECT_EQ(std::string(old), "old\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(replace_whole(path, "{}\n"), std::nullopt);
  EXPECT_EQ(std::filesystem::status(path).permissions(), std::filesystem::perms(0640));  // kept, not the umask's
  EXPECT_EQ(replace_whole(dir / "new.json", "[]"), std::nullopt);                        // none yet
  EXPECT_EQ(test::read_file(dir / "new.json"), "[]");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2u);
}

// What is no regular file is written in place, as write_whole does.
TEST(ReplaceWhole, AFifoADeviceOrASymlinkIsWrittenInPlace) {
  const TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(replace_whole(fifo, "{}"), "it is a FIFO nobody reads");
  EXPECT_EQ(replace_whole("/dev/full", "{}"), "No space left on device");
  const std::string target = write_file(dir.path() / "target.json", "old");
  std::filesystem::create_symlink(target, dir / "link.json");
  EXPECT_EQ(replace_whole(dir / "link.json", "new"), std::nullopt);
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.json"));
  EXPECT_EQ(test::read_file(target), "new");
  std::filesystem::create_hard_link(target, dir / "hard.json");  // both names see the new text
  EXPECT_EQ(replace_whole(dir / "hard.json", "newer"), std::nullopt);
  EXPECT_EQ(test::read_file(target), "newer");
}

}  // namespace
}  // namespace gpurun
