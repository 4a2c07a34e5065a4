// Unit tests for the bounded reader: a whole file read, a bound kept, and what no named file may
// do to gpurun (a directory, a FIFO nobody writes, a device that never ends).
#include "gpurun/util/whole_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

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

}  // namespace
}  // namespace gpurun
