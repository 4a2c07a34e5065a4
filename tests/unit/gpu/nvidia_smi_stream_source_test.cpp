// Unit tests for gpurund's nvidia-smi source: two loop-mode streams of the stand-in nvidia-smi
// (which, like the real one, prints nothing in an iteration without processes), read as it prints.
#include "smi/nvidia_smi_stream_source.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

namespace fs = std::filesystem;
const fs::path kData = GPURUN_TEST_DATA_DIR;
const std::string kFakeSmi = std::string(GPURUN_FAKES_DIR) + "/nvidia-smi";
constexpr std::chrono::seconds kTimeout{20};
constexpr std::chrono::milliseconds kEvery{200};

// A scenario the test may rewrite while the streams run, and the stand-in's log of its invocations.
class StreamSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpurun-stream-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ::setenv("FAKE_SMI_LOG", (dir_ / "log").c_str(), 1);
    ::setenv("FAKE_SMI_SCENARIO", (dir_ / "scenario.json").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("FAKE_SMI_LOG");
    ::unsetenv("FAKE_SMI_SCENARIO");
    fs::remove_all(dir_);
  }
  // Two GPUs; `processes` of them on GPU 0 (pids 100, 101...), GPU 0 at `utilization` %. Written whole (a rename).
  void machine(int utilization, int processes, int exit_code = 0) const {
    std::string list;
    for (int i = 0; i < processes; ++i)
      list += std::string(i ? "," : "") + R"({"gpu_uuid": "GPU-a", "pid": )" + std::to_string(100 + i) +
              R"(, "used_memory": 1000})";
    std::ofstream(dir_ / "next.json")
        << R"({"exit_code": )" << exit_code
        << R"(, "stdout": "Failed to initialize NVML: Driver/library version mismatch\n",)"
        << R"( "gpus": [{"index": 0, "uuid": "GPU-a", "memory.used": 1000, "memory.total": 81920, "utilization.gpu": )"
        << utilization
        << R"(}, {"index": 1, "uuid": "GPU-b", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0}],)"
        << R"( "processes": [)" << list << "]}";
    fs::rename(dir_ / "next.json", dir_ / "scenario.json");
  }
  std::vector<std::string> calls() const {
    std::ifstream file(dir_ / "log");
    std::vector<std::string> lines;
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    return lines;
  }
  // Reads until `done` holds of a snapshot (the streams print every 100 ms); the last snapshot.
  template <typename Done>
  static Snapshot read_until(GpuSource& source, Done done) {
    Snapshot s;
    for (int i = 0; i < 50; ++i) {
      std::this_thread::sleep_for(kEvery);
      s = source.read(kTimeout);
      if (done(s)) break;
    }
    return s;
  }

 private:
  fs::path dir_;
};

TEST_F(StreamSourceTest, AsksOnceThenReadsBothStreamsWithoutAProcessPerSample) {
  machine(40, 2);
  const auto source = make_nvidia_smi_stream_source(kFakeSmi, false, kEvery);
  EXPECT_EQ(source->read(kTimeout).gpus.at(0).utilization_percent, 40);  // the one-shot pair
  machine(85, 2);
  const Snapshot s = read_until(*source, [](const Snapshot& x) { return x.gpus.at(0).utilization_percent == 85; });
  EXPECT_EQ(s.gpus.at(0).utilization_percent, 85);
  EXPECT_THAT(s.gpus.at(0).processes, SizeIs(2));
  EXPECT_EQ(s.source, "nvidia-smi");
  const std::vector<std::string> log = calls();
  ASSERT_THAT(log, SizeIs(4));  // and the two streams, for every read since
  EXPECT_THAT(log[2] + log[3], HasSubstr("\"-lms\", \"200\""));
  EXPECT_THAT(log[2] + log[3], HasSubstr("--query-compute-apps=timestamp,"));
}

TEST_F(StreamSourceTest, TheProcessStreamsSilenceAfterProcessesIsConfirmedByOneQuery) {
  machine(40, 1);
  const auto source = make_nvidia_smi_stream_source(kFakeSmi, false, kEvery);
  EXPECT_THAT(source->read(kTimeout).gpus.at(0).processes, SizeIs(1));
  machine(0, 0);
  const Snapshot s = read_until(*source, [](const Snapshot& x) { return x.gpus.at(0).processes.empty(); });
  EXPECT_TRUE(s.gpus.at(0).processes.empty());
  const std::vector<std::string> log = calls();
  ASSERT_THAT(log, SizeIs(5));
  EXPECT_THAT(log[4], HasSubstr("--query-compute-apps=gpu_uuid"));
  EXPECT_THAT(log[4], ::testing::Not(HasSubstr("-lms")));
  // The machine stays without processes: the silence is trusted, nothing more is asked.
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(kEvery);
    EXPECT_TRUE(source->read(kTimeout).gpus.at(0).processes.empty());
  }
  EXPECT_THAT(calls(), SizeIs(5));
  machine(60, 3);  // and a process that comes is seen in the stream
  EXPECT_THAT(
      read_until(*source, [](const Snapshot& x) { return x.gpus.at(0).processes.size() == 3; }).gpus.at(0).processes,
      SizeIs(3));
  EXPECT_THAT(calls(), SizeIs(5));
}

TEST_F(StreamSourceTest, AStreamThatEndsIsAskedOnceWhoseErrorSaysWhatIsWrongThenStartedAgain) {
  machine(40, 0);
  const auto source = make_nvidia_smi_stream_source(kFakeSmi, false, kEvery);
  source->read(kTimeout);
  machine(40, 0, /*exit_code=*/18);
  std::string error;
  for (int i = 0; i < 50 && error.empty(); ++i) {
    std::this_thread::sleep_for(kEvery);
    try {
      source->read(kTimeout);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  EXPECT_THAT(error, HasSubstr("version mismatch"));
  EXPECT_THAT(error, HasSubstr("reboot"));
  machine(70, 1);
  const Snapshot s = source->read(kTimeout);
  EXPECT_EQ(s.gpus.at(0).utilization_percent, 70);
  EXPECT_THAT(s.gpus.at(0).processes, SizeIs(1));
  read_until(*source, [](const Snapshot&) { return true; });
  int streams = 0;
  for (const std::string& call : calls()) streams += call.find("-lms") != std::string::npos ? 1 : 0;
  EXPECT_EQ(streams, 4);  // streaming again
}

TEST_F(StreamSourceTest, AFieldTheDriverRefusedIsLeftOutOfTheStreamToo) {
  ::setenv("FAKE_SMI_SCENARIO", (kData / "scenarios" / "pre_r450.json").c_str(), 1);
  const auto source = make_nvidia_smi_stream_source(kFakeSmi, false, kEvery);
  const Snapshot first = source->read(kTimeout);
  const Snapshot s = read_until(*source, [](const Snapshot&) { return true; });
  EXPECT_EQ(s.gpus.size(), first.gpus.size());
  const std::vector<std::string> log = calls();
  ASSERT_GE(log.size(), 4u);
  for (std::size_t i = log.size() - 2; i < log.size(); ++i) EXPECT_THAT(log[i], ::testing::Not(HasSubstr("mig.mode")));
}

}  // namespace
}  // namespace gpurun
