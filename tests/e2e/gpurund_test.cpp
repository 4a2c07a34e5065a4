// End-to-end: the real gpurund against the stand-in nvidia-smi (whose busy DGX lists seven GPU
// processes), recording runs into a real SQLite database; stopped by SIGTERM and by kill -9.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "gpurun/service/run_store.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun_fixture.hpp"
#include "support/test_support.hpp"
#include "support/webhook_receiver.hpp"

namespace gpurun::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

// Now as the engine writes a container's State.StartedAt: "2026-11-27T10:00:00Z".
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  return std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) != 0 ? text : "";
}

class GpurundTest : public GpurunTest {
 protected:
  std::string state() const { return dir() + "/state"; }
  std::string socket() const { return dir() + "/run/gpurund.sock"; }
  // Starts gpurund sampling every 0.1 s (the stand-in nvidia-smi answering from `scenario_path`);
  // its stderr goes to dir()/gpurund.err. With `real_proc`, the GPU processes' owners and
  // commands come from this machine's /proc (the scenario lists a real pid), else from a tree
  // that has none.
  // `env`: more of its environment (the stand-in docker's, say).
  pid_t start(const std::string& scenario_path = scenario("busy_dgx.json"), bool real_proc = false,
              const std::vector<std::string>& more = {}, const std::vector<std::string>& env = {}) const {
    std::vector<std::string> args{GPURUND_BINARY, "--state-dir",  state(),        "--interval",
                                  "0.1",          "--no-config",  "--nvidia-smi", fake("nvidia-smi"),
                                  "--docker",     fake("docker"), "--socket",     socket()};
    // Never a GPU host's NVML, unless a test asks for the NVML stand-in: the stand-ins' answers alone.
    if (std::find(more.begin(), more.end(), "--gpu-source") == more.end())
      args.insert(args.end(), {"--gpu-source", "nvidia-smi"});
    args.insert(args.end(), more.begin(), more.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text{"FAKE_SMI_SCENARIO=" + scenario_path, "PATH=/usr/bin:/bin",
                                      "GPURUN_SYSTEM_CONFIG=" + system_config(),
                                      "GPURUN_SYSFS_ROOT=" + (real_proc ? std::string("/") : dir() + "/no-sysfs"),
                                      // Never this machine's dockerd: the stand-in's CLI answers.
                                      "DOCKER_HOST=unix:///nonexistent/gpurun-e2e-docker.sock"};
    env_text.insert(env_text.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string err = dir() + "/gpurund.err";
    const std::size_t answering_before = answering_lines(err);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid = 0;
    EXPECT_EQ(::posix_spawn(&pid, GPURUND_BINARY, &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    running_.insert(pid);
    // Until it answers (its signal handlers set) or ends: built with ASan its start can take over
    // a second, and a SIGTERM before its handlers are set ends it unwritten.
    for (int i = 0; i < 1500 && answering_lines(err) == answering_before && !ended(pid); ++i)
      std::this_thread::sleep_for(20ms);
    return pid;
  }
  static std::size_t answering_lines(const std::string& err) {
    std::ifstream file(err);
    std::stringstream text;
    text << file.rdbuf();
    const std::string all = text.str();
    std::size_t count = 0;
    for (std::size_t at = 0; (at = all.find("answering on", at)) != std::string::npos; ++at) ++count;
    return count;
  }
  // Whether `pid` has exited (a zombie not yet reaped), without reaping it.
  static bool ended(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const std::size_t paren = line.rfind(')');
    return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z';
  }
  int stop(pid_t pid, int signal) const {
    ::kill(pid, signal);
    int status = 0;
    ::waitpid(pid, &status, 0);
    running_.erase(pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // The state directory on a 4 MB tmpfs of its own, for a test to fill; unmounted when it ends.
  // "" once mounted, else why it cannot be (the test skips).
  std::string mount_small_state_dir() {
    if (::geteuid() != 0) return "needs root to mount a small tmpfs as the state directory";
    std::filesystem::create_directories(state());
    if (shell("mount -t tmpfs -o size=4m,mode=0700 gpurun-test-full " + state()).exit_code != 0)
      return "cannot mount a tmpfs here";
    mounted_ = true;
    return "";
  }
  // A service that a failed assertion left running would outlive the test (and hold ctest's pipe).
  void TearDown() override {
    while (!running_.empty()) stop(*running_.begin(), SIGKILL);
    if (mounted_) std::system(("umount -l " + state() + " 2>/dev/null").c_str());
    GpurunTest::TearDown();
  }
  std::vector<RunRecord> runs() const { return RunStore(state() + "/gpurund.db").runs({}); }
  // gpurun asking this test's service.
  Outcome ask(const std::vector<std::string>& args) const {
    return gpurun(args, {{"GPURUN_SERVICE_SOCKET", socket()}, {"GPURUN_SYSTEM_CONFIG", system_config()}});
  }
  // Waits until `done` holds (at most 10 s).
  static bool eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 200; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return done();
  }

 private:
  mutable std::set<pid_t> running_;  // started and not yet stopped
  bool mounted_ = false;             // mount_small_state_dir() mounted the state directory
};

// The busy DGX with its GPU 2 at 40 % held by `pid` alone (or by nobody), written where the
// stand-in nvidia-smi reads it at every sample.
void write_scenario(const std::string& path, std::optional<pid_t> pid) {
  nlohmann::json data = nlohmann::json::parse(read_file(scenario("busy_dgx.json")));
  data["gpus"][2]["utilization.gpu"] = 40;
  data["processes"] = nlohmann::json::array();
  if (pid)
    data["processes"].push_back(
        {{"gpu_uuid", data["gpus"][2]["uuid"]}, {"pid", *pid}, {"process_name", "sleep"}, {"used_memory", 1234}});
  std::ofstream(path + ".new") << data.dump();
  std::filesystem::rename(path + ".new", path);  // whole, never half-written
}

// A process of another user where the test runs as root (nobody's), else the tester's own.
pid_t start_sleeper(std::string& user) {
  const bool root = ::geteuid() == 0;
  std::vector<std::string> args = root ? std::vector<std::string>{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                                                  "--clear-groups",   "/bin/sleep",    "60"}
                                       : std::vector<std::string>{"/bin/sleep", "60"};
  user = root ? user_name(65534) : user_name(::geteuid());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  return pid;
}

TEST_F(GpurundTest, RecordsEveryGpuProcessAsARunAndStopsCleanlyOnSigterm) {
  const pid_t pid = start();
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(stop(pid, SIGTERM), 0) << read_file(dir() + "/gpurund.err");
  const std::vector<RunRecord> recorded = runs();
  ASSERT_EQ(recorded.size(), 7u) << read_file(dir() + "/gpurund.err");
  std::set<std::string> keys;
  for (const RunRecord& run : recorded) {
    keys.insert(run.key);
    EXPECT_FALSE(run.end);
    EXPECT_GT(run.gpu_seconds, 0.5);
    ASSERT_EQ(run.gpus.size(), 1u);
  }
  EXPECT_TRUE(keys.contains("process:48213:"));  // GPU 0 at 100 %: busy all the time
  // The database holds everyone's commands: private, whatever umask gpurund was started with.
  for (const char* file : {"/gpurund.db", "/gpurund.lock"}) {
    struct stat info {};
    ASSERT_EQ(::stat((state() + file).c_str(), &info), 0) << file;
    EXPECT_EQ(info.st_mode & 077, 0U) << file;
  }
  // The GPU history beside the runs: each GPU at each sample, and the minute so far.
  const RunStore store(state() + "/gpurund.db");
  const std::vector<GpuSampleRow> samples = store.gpu_samples(WallTime{});
  EXPECT_GE(samples.size(), 8U * 5);
  EXPECT_EQ(samples.size() % 8, 0U);
  const std::vector<GpuMinute> minutes = store.gpu_minutes(WallTime{});
  ASSERT_GE(minutes.size(), 8U);
  int samples_in_minutes = 0;
  for (const GpuMinute& m : minutes) {
    samples_in_minutes += m.samples;
    if (m.gpu == 0) {
      EXPECT_DOUBLE_EQ(*m.utilization_mean(), 100);
    } else if (m.gpu == 3) {
      EXPECT_EQ(m.idle_samples, m.samples);  // held at 0 %
    } else if (m.gpu == 2) {
      EXPECT_EQ(m.idle_samples, 0);  // 0 %, but nobody holds it
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(samples_in_minutes), samples.size());
  for (const RunRecord& run : recorded) {
    if (run.key == "process:48213:") {
      EXPECT_DOUBLE_EQ(*run.efficiency(), 100.0);
    }
  }
}

// systemd waits 30 s before its SIGKILL; a hung nvidia-smi would keep gpurund until its timeout
// (10 s a query, and a sample asks two).
TEST_F(GpurundTest, ASigtermEndsAHungNvidiaSmiAtOnce) {
  nlohmann::json hung = nlohmann::json::parse(read_file(scenario("busy_dgx.json")));
  hung["delay_s"] = 600;
  const std::string path = dir() + "/hung.json";
  std::ofstream(path) << hung.dump();
  const pid_t pid = start(path);
  ASSERT_TRUE(eventually([&] { return read_file(dir() + "/gpurund.err").find("answering on") != std::string::npos; }));
  std::this_thread::sleep_for(500ms);  // into the first sample's wait
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(stop(pid, SIGTERM), 0) << read_file(dir() + "/gpurund.err");
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 5s) << "gpurund waited for nvidia-smi's timeout (10 s)";
  const std::string err = read_file(dir() + "/gpurund.err");
  EXPECT_THAT(err, Not(HasSubstr("did not answer within")));
  EXPECT_THAT(err, Not(HasSubstr("error"))) << "a query given up for the stop is no trouble of the source";
  EXPECT_THAT(err, HasSubstr("gpurund: info: stopped"));
}

TEST_F(GpurundTest, ASighupStopsItAsSigtermDoes) {
  // It died of the signal: no last write, its socket left behind, and systemd took that for a clean end.
  const pid_t pid = start();
  ASSERT_TRUE(eventually([&] { return read_file(dir() + "/gpurund.err").find("answering on") != std::string::npos; }));
  EXPECT_EQ(stop(pid, SIGHUP), 0);
  EXPECT_THAT(read_file(dir() + "/gpurund.err"), HasSubstr("gpurund: info: stopped"));
  EXPECT_FALSE(std::filesystem::exists(socket()));
  // Started as nohup starts it (SIGHUP ignored, which exec keeps): a hangup is ignored, as asked.
  const auto before = ::signal(SIGHUP, SIG_IGN);
  const pid_t kept = start();
  ::signal(SIGHUP, before);
  ASSERT_TRUE(eventually([&] { return read_file(dir() + "/gpurund.err").find("answering on") != std::string::npos; }));
  ::kill(kept, SIGHUP);
  std::this_thread::sleep_for(300ms);
  int status = 0;
  EXPECT_EQ(::waitpid(kept, &status, WNOHANG), 0) << "a SIGHUP ended a gpurund started under nohup";
  EXPECT_EQ(stop(kept, SIGTERM), 0);
}

TEST_F(GpurundTest, AfterKill9ARestartContinuesTheSameRunsWithoutDuplicates) {
  pid_t pid = start();
  std::this_thread::sleep_for(1200ms);
  // The store is written at each flush; kill -9 loses only what came after the last.
  stop(pid, SIGKILL);
  ASSERT_EQ(runs().size(), 7u);  // written when they started
  pid = start();
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  const std::vector<RunRecord> recorded = runs();
  EXPECT_EQ(recorded.size(), 7u);
  for (const RunRecord& run : recorded) EXPECT_LE(run.id, 7);
}

TEST_F(GpurundTest, AFullDiskKeepsSamplingInMemorySaysSoOnceAndWritesItAllWhenThereIsRoomAgain) {
  if (const std::string why = mount_small_state_dir(); !why.empty()) GTEST_SKIP() << why;
  const pid_t pid = start(scenario("busy_dgx.json"), false, {"--write-every", "0.3"});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(state() + "/gpurund.db") && runs().size() == 7; }));
  // Fill the disk: every write of the store fails from here on.
  shell("dd if=/dev/zero of=" + state() + "/filler bs=64k 2>/dev/null");
  const std::string err_path = dir() + "/gpurund.err";
  ASSERT_TRUE(eventually([&] { return read_file(err_path).find("the store:") != std::string::npos; }))
      << read_file(err_path);
  std::this_thread::sleep_for(1000ms);  // many samples, many failed writes
  std::filesystem::remove(state() + "/filler");
  ASSERT_TRUE(eventually([&] { return read_file(err_path).find("the store: working again") != std::string::npos; }))
      << read_file(err_path);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  const std::string err = read_file(err_path);
  // Said once while it lasted (one distinct message), not at every sample.
  std::size_t said = 0;
  for (std::size_t at = 0; (at = err.find("gpurund: error: the store:", at)) != std::string::npos; ++at) ++said;
  EXPECT_LE(said, 2U) << err;
  // Nothing lost: the samples of the full-disk time were written later, each minute sums them all.
  const RunStore store(state() + "/gpurund.db");
  const std::vector<GpuSampleRow> samples = store.gpu_samples(WallTime{});
  int in_minutes = 0;
  for (const GpuMinute& m : store.gpu_minutes(WallTime{})) in_minutes += m.samples;
  EXPECT_EQ(static_cast<std::size_t>(in_minutes), samples.size());
  std::set<WallTime> times;
  for (const GpuSampleRow& row : samples) times.insert(row.when);
  ASSERT_GE(times.size(), 10U);
  // No hole the size of the full-disk second between consecutive samples (the stand-in nvidia-smi,
  // a Python script, takes tens of ms a sample).
  for (auto it = std::next(times.begin()); it != times.end(); ++it) EXPECT_LT(*it - *std::prev(it), 900ms);
  EXPECT_EQ(runs().size(), 7U);
}

// The store damaged under the running service (garbage over the file, as a bad sector or another
// program's write leaves it): every write and answer failed for good. It ends, saying why; its
// next start moves the file aside and records afresh.
TEST_F(GpurundTest, AStoreDamagedWhileItRunsEndsItAndTheNextStartRecordsAfresh) {
  pid_t pid = start(scenario("busy_dgx.json"), false, {"--write-every", "0.3"});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(state() + "/gpurund.db") && runs().size() == 7; }));
  shell("for f in " + state() + "/gpurund.db " + state() + "/gpurund.db-wal " + state() +
        "/gpurund.db-shm; do [ -e $f ] && head -c $(stat -c %s $f) /dev/urandom | dd of=$f conv=notrunc "
        "2>/dev/null; done; true");
  const std::string err_path = dir() + "/gpurund.err";
  ASSERT_TRUE(eventually([&] { return read_file(err_path).find("is damaged") != std::string::npos; }))
      << read_file(err_path);
  EXPECT_EQ(stop(pid, 0), 1);  // signal 0: only waits for it to end
  EXPECT_THAT(read_file(err_path), HasSubstr("moved aside to " + state() + "/gpurund.db.unusable-"));
  pid = start();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  EXPECT_EQ(runs().size(), 7U);  // recorded afresh
}

TEST_F(GpurundTest, ARestartOnAFullDiskLeavesTheDatabaseAsItIsAndWaitsForRoom) {
  if (const std::string why = mount_small_state_dir(); !why.empty()) GTEST_SKIP() << why;
  pid_t pid = start();
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(state() + "/gpurund.db") && runs().size() == 7; }));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  shell("dd if=/dev/zero of=" + state() + "/filler bs=64k 2>/dev/null");
  // It was moved aside as "unusable", and a fresh, empty one started once there was room.
  pid = start();
  EXPECT_EQ(stop(pid, 0), 125);  // signal 0: only waits for it to end
  const std::string err = read_file(dir() + "/gpurund.err");
  EXPECT_THAT(err, HasSubstr("The file is left as it is")) << err;
  std::filesystem::remove(state() + "/filler");
  for (const auto& entry : std::filesystem::directory_iterator(state()))
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr("unusable")));
  pid = start();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  EXPECT_EQ(runs().size(), 7U);
}

TEST_F(GpurundTest, TakesItsSettingsFromTheSystemFilesServiceSectionAndItsFlagsOverThem) {
  const std::string from_file = dir() + "/from-file";
  std::ofstream(system_config()) << R"({"service": {"state_dir": ")" << from_file << R"(", "interval": 0.2}})";
  const Env env{{"GPURUN_SYSTEM_CONFIG", system_config()}, {"FAKE_SMI_SCENARIO", scenario("busy_dgx.json")}};
  const std::string run = "timeout --preserve-status 1 " + std::string(GPURUND_BINARY) + " --socket " + socket() +
                          " --nvidia-smi " + fake("nvidia-smi") + " --docker " + fake("docker");
  Outcome out = shell(run, env);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_THAT(out.err, HasSubstr("recording into " + from_file + " every 200 ms"));
  EXPECT_TRUE(std::filesystem::exists(from_file + "/gpurund.db"));
  out = shell(run + " --interval 0.3", env);
  EXPECT_THAT(out.err, HasSubstr("recording into " + from_file + " every 300 ms"));
  // A mistake in the section stops it before it starts, with the file and line.
  std::ofstream(system_config()) << "{\n  \"service\": {\"keep_samples_days\": 0}\n}\n";
  out = shell(run, env);
  EXPECT_EQ(out.exit_code, 125);
  EXPECT_THAT(out.err, HasSubstr(system_config() + ":2: key \"service.keep_samples_days\": expected a number of days"));
}

// CLI11 reads "nan" and "inf" as numbers: an interval of NaN milliseconds sampled without pause
// and kept nothing. Refused with 125 and a message of gpurund's own, before anything starts.
TEST_F(GpurundTest, ABadOptionIsRefusedWith125AndNamedNaNAndInfinityAmongThem) {
  for (const char* bad : {"--interval nan", "--write-every inf", "--keep-samples -nan", "--idle-threshold nan",
                          "--interval 0.01", "--frobnicate"}) {
    const Outcome out = shell(std::string(GPURUND_BINARY) + " --no-config --state-dir " + state() + " " + bad);
    EXPECT_EQ(out.exit_code, 125) << bad;
    EXPECT_THAT(out.err, ::testing::StartsWith("gpurund: error: ")) << bad;
    EXPECT_THAT(out.err, HasSubstr("(gpurund --help lists the options)\n")) << bad;
  }
  EXPECT_FALSE(std::filesystem::exists(state()));
}

TEST_F(GpurundTest, ASecondGpurundOnTheSameStateDirectoryIsRefused) {
  const pid_t first = start();
  std::this_thread::sleep_for(500ms);
  const Outcome second = shell(std::string(GPURUND_BINARY) + " --no-config --state-dir " + state() + " --nvidia-smi " +
                               fake("nvidia-smi") + " --interval 0.1 --socket " + dir() + "/second.sock");
  EXPECT_EQ(second.exit_code, 125);
  EXPECT_THAT(second.err, HasSubstr("another gpurund records into " + state()));
  EXPECT_EQ(stop(first, SIGTERM), 0);
}

// The state directory holds everyone's commands: one below a directory another user may write
// (who could swap it), another user's, or one whose database is another's is refused; its own, that
// others may read or write (an admin's 0775, a umask of 002), is made 0700.
TEST_F(GpurundTest, AStateDirectoryAnotherUserOwnsOrMaySwapIsRefusedAndItsOwnMadePrivate) {
  const auto run = [&](const std::string& state_dir) {
    return shell(std::string(GPURUND_BINARY) + " --no-config --state-dir " + state_dir + " --nvidia-smi " +
                 fake("nvidia-smi") + " --interval 0.1 --socket " + dir() + "/s.sock");
  };
  const std::string shared = dir() + "/shared";
  std::filesystem::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  Outcome out = run(shared + "/state");
  EXPECT_EQ(out.exit_code, 125);
  EXPECT_THAT(out.err, HasSubstr("cannot record into " + shared + "/state: another user may write " + shared));
  EXPECT_FALSE(std::filesystem::exists(shared + "/state"));
  if (::geteuid() == 0) {
    std::filesystem::create_directory(state());
    ASSERT_EQ(::chown(state().c_str(), 65534, 65534), 0);
    out = run(state());
    EXPECT_EQ(out.exit_code, 125);
    EXPECT_THAT(out.err, HasSubstr("cannot record into " + state() + ": it belongs to another user (uid 65534)"));
    ASSERT_EQ(::chown(state().c_str(), 0, 0), 0);
    { std::ofstream(state() + "/gpurund.db") << ""; }
    ASSERT_EQ(::chown((state() + "/gpurund.db").c_str(), 65534, 65534), 0);
    out = run(state());
    EXPECT_EQ(out.exit_code, 125);
    EXPECT_THAT(out.err, HasSubstr("gpurund.db is not a file of gpurund's own (owner uid 65534)"));
    std::filesystem::remove(state() + "/gpurund.db");
  }
  // Written with a trailing slash, a new one is made all the same.
  out = shell("timeout 1 " + std::string(GPURUND_BINARY) + " --no-config --state-dir " + dir() + "/slashed/ " +
              "--nvidia-smi " + fake("nvidia-smi") + " --interval 0.1 --socket " + dir() + "/slashed.sock");
  EXPECT_THAT(out.err, HasSubstr("recording into " + dir() + "/slashed/"));
  std::filesystem::create_directories(state());
  ASSERT_EQ(::chmod(state().c_str(), 0775), 0);
  const pid_t pid = start();
  struct stat info {};
  ASSERT_EQ(::stat(state().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0700U);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(GpurundTest, HistoryUsageAndReportAnswerWithAnotherUsersProcessFiguresAfterItEnds) {
  if (!std::filesystem::exists("/usr/bin/setpriv") && ::geteuid() == 0) GTEST_SKIP() << "no setpriv";
  std::string user;
  const pid_t sleeper = start_sleeper(user);
  const std::string path = dir() + "/scenario.json";
  write_scenario(path, sleeper);
  const pid_t pid = start(path, true);
  // Held for a while at 40 %, then gone: the run ends after two samples without it. The process
  // leaves the GPU's list first and dies a second later, so that a sample still reading the old list
  // sees the same process (one run), never a pid without it (another run, named "pid N").
  std::this_thread::sleep_for(1500ms);
  write_scenario(path, std::nullopt);
  std::this_thread::sleep_for(1000ms);
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  nlohmann::json history;
  ASSERT_TRUE(eventually([&] {
    const Outcome out = ask({"history", "--json"});
    history = nlohmann::json::parse(out.out, nullptr, false);
    return out.exit_code == 0 && history.is_array() && history.size() == 1 && !history[0]["end"].is_null();
  })) << ask({"history", "--json"}).out
      << read_file(dir() + "/gpurund.err");
  const nlohmann::json& run = history[0];
  EXPECT_EQ(run["user"], user);  // the owner of the holding process, by name
  EXPECT_THAT(run["name"].get<std::string>(), HasSubstr("sleep 60"));
  EXPECT_TRUE(run["container"].is_null());
  EXPECT_EQ(run["gpus"], nlohmann::json::array({2}));
  EXPECT_EQ(run["ended_by"], "gone");
  EXPECT_GT(run["gpu_seconds"].get<double>(), 1.0);
  EXPECT_NEAR(run["efficiency"].get<double>(), 40.0, 0.01);  // the known utilization
  EXPECT_DOUBLE_EQ(run["idle_seconds"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(run["max_memory_mib"].get<double>(), 1234);

  const Outcome table = ask({"history"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, ::testing::StartsWith("ID  NAME"));  // the ID, which report takes
  EXPECT_THAT(table.out, ::testing::ContainsRegex("\n *" + std::to_string(run["id"].get<int>()) + "  "));
  EXPECT_THAT(table.out, HasSubstr("40%"));
  EXPECT_THAT(table.out, HasSubstr("gone"));

  const Outcome usage = ask({"usage", "--by", "gpu", "--json"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  const nlohmann::json rows = nlohmann::json::parse(usage.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["key"], "2");
  EXPECT_NEAR(rows[0]["efficiency"].get<double>(), 40.0, 0.01);
  EXPECT_THAT(ask({"usage"}).out, HasSubstr(user));
  for (const char* verb : {"history", "usage"}) {  // an empty answer says whose runs it looked for
    const Outcome none = ask({verb, "--user", "nobody-here"});
    EXPECT_EQ(none.exit_code, 0) << none.err;
    EXPECT_THAT(none.err, HasSubstr("no runs of nobody-here")) << verb;
  }

  const Outcome report = ask({"report", std::to_string(run["id"].get<int>())});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("GPU efficiency  40.0%"));
  EXPECT_THAT(report.out, HasSubstr("gone"));
  EXPECT_THAT(report.out, HasSubstr("DataLoader(num_workers=...)"));  // the hints of --report
  const Outcome unknown = ask({"report", "no-such-run"});
  EXPECT_EQ(unknown.exit_code, 125);
  EXPECT_THAT(unknown.err, HasSubstr("no run named no-such-run"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  EXPECT_FALSE(std::filesystem::exists(socket()));  // removed on the way out
}

// A command line in any script is shown whole by `report`, as by `history`; a control byte in it
// is written escaped, never sent to the terminal.
TEST_F(GpurundTest, ReportKeepsAUtf8CommandWholeAndEscapesItsControlBytes) {
  // The busy DGX's pid 48213 (GPU 0), its command line in the /proc this gpurund reads.
  const std::filesystem::path proc = std::filesystem::path(dir()) / "no-sysfs" / "proc" / "48213";
  std::filesystem::create_directories(proc);
  std::ofstream(proc / "cmdline") << std::string("python3") + '\0' + "训练-josé.py" + '\0' + "--tag" + '\0' +
                                         "\x1b[2J" + '\0';
  const pid_t pid = start();
  nlohmann::json history;
  nlohmann::json run;
  ASSERT_TRUE(eventually([&] {
    history = nlohmann::json::parse(ask({"history", "--json"}).out, nullptr, false);
    if (!history.is_array()) return false;
    for (const nlohmann::json& one : history)
      if (one.value("command", nlohmann::json()).is_string() &&
          one["command"].get<std::string>().find("jos") != std::string::npos)
        run = one;
    return run.is_object();
  })) << history.dump()
      << read_file(dir() + "/gpurund.err");
  EXPECT_EQ(run["command"], "python3 训练-josé.py --tag \x1b[2J");  // the JSON keeps it as it is

  const Outcome report = ask({"report", std::to_string(run["id"].get<int>())});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  const std::string shown = "python3 训练-josé.py --tag \\x1b[2J";
  EXPECT_THAT(report.out, HasSubstr(fmt::format("gpurun: run report: {} (run", shown)));
  EXPECT_THAT(report.out, HasSubstr(fmt::format("\n  command         {}\n", shown)));
  EXPECT_EQ(report.out.find('\x1b'), std::string::npos) << report.out;
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// MIG through the NVML stand-in (tests/data/nvml/mig.json): GPU 0 whole runs pid 7001; GPU 1 is in
// MIG mode, pid 8301 in a 1g.10gb instance (9 984 of 81 559 MiB). Both runs start in the same
// sample, so the MIG one's GPU-seconds are its share of the whole one's.
TEST_F(GpurundTest, AProcessInAMigInstanceIsCreditedTheInstancesShareOfTheGpu) {
  const pid_t pid = start(scenario("busy_dgx.json"), false, {"--gpu-source", "nvml", "--nvml-library", FAKE_NVML_FULL},
                          {"FAKE_NVML_SCENARIO=" + std::string(GPURUN_TEST_DATA_DIR) + "/nvml/mig.json"});
  nlohmann::json whole;
  nlohmann::json mig;
  ASSERT_TRUE(eventually([&] {
    const nlohmann::json runs = nlohmann::json::parse(ask({"history", "--json"}).out, nullptr, false);
    if (!runs.is_array()) return false;
    for (const auto& run : runs) {
      if (run["name"] == "pid 7001") whole = run;
      if (run["name"] == "pid 8301") mig = run;
    }
    return whole.is_object() && mig.is_object() && whole["gpu_seconds"].get<double>() > 1.0;
  })) << ask({"history", "--json"}).out
      << read_file(dir() + "/gpurund.err");
  EXPECT_EQ(mig["gpus"], nlohmann::json::array({1}));
  EXPECT_NEAR(mig["gpu_seconds"].get<double>() / whole["gpu_seconds"].get<double>(), 9984.0 / 81559, 0.01);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(GpurundTest, WithoutTheServiceTheVerbsSaySoAndHowToStartIt) {
  for (const char* verb : {"history", "usage"}) {
    const Outcome out = ask({verb});
    EXPECT_EQ(out.exit_code, 125);
    EXPECT_THAT(out.err, HasSubstr("the gpurun service is not running (nothing at " + socket() + ")"));
    EXPECT_THAT(out.err, HasSubstr("sudo systemctl enable --now gpurund"));
    EXPECT_EQ(out.out, "");
  }
  EXPECT_EQ(ask({"report", "x"}).exit_code, 125);
  EXPECT_EQ(ask({"history", "--since", "last week"}).exit_code, 125);
  // "" is a filter nobody meant (an unset shell variable): refused, not taken for every run.
  for (const char* flag : {"--since", "--user"}) {
    const Outcome empty = ask({"usage", flag, ""});
    EXPECT_EQ(empty.exit_code, 125);
    EXPECT_THAT(empty.err, HasSubstr(std::string(flag) + ": expected a string, not empty, got \"\""));
  }
}

TEST_F(GpurundTest, StatusShowsHowLongEachHeldGpuHasBeenIdleWhileTheServiceRuns) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_SERVICE_SOCKET", socket());
  // Without the service: no IDLE column, and not a word about it on stderr.
  const Outcome before = gpurun({"status"}, env);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.out, Not(HasSubstr("IDLE")));
  EXPECT_THAT(before.err, Not(HasSubstr("idle")));
  const pid_t pid = start();
  // GPU 3 is held (pid 52771) at 0 %: idle; GPU 0 is held at 100 %, GPU 2 is idle but nobody's.
  ASSERT_TRUE(eventually([&] {
    // Until the service answers, the GPUs have no idle_s at all.
    const auto json = nlohmann::json::parse(gpurun({"status", "--json"}, env).out, nullptr, false);
    const nlohmann::json::json_pointer idle3("/gpus/3/idle_s");
    return json.contains(idle3) && json.at(idle3).is_number();
  })) << gpurun({"status", "--json", "--verbose"}, env).err
      << read_file(dir() + "/gpurund.err");
  const auto json = nlohmann::json::parse(gpurun({"status", "--json"}, env).out);
  EXPECT_TRUE(json.at("gpus").at(0).at("idle_s").is_null());
  EXPECT_TRUE(json.at("gpus").at(2).at("idle_s").is_null());
  // The table, asked until it shows the service's answer; where it never does, --verbose says why.
  Outcome table;
  const std::regex idle_gpu("\n  3  [^\n]*  0%  +[0-9]+s  ");
  const std::regex busy_gpu("\n  0  [^\n]* 100%  +-  ");
  EXPECT_TRUE(eventually([&] {
    table = gpurun({"status"}, env);
    return table.out.find("  IDLE  USER") != std::string::npos && std::regex_search(table.out, idle_gpu) &&
           std::regex_search(table.out, busy_gpu);
  })) << table.out
      << gpurun({"status", "--verbose"}, env).err << read_file(dir() + "/gpurund.err");
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(GpurundTest, UnderOwnVisibilityAnotherUserSeesNoneOfTheRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to ask as another user";
  std::ofstream(system_config()) << R"({"history_visibility": "own"})";
  std::filesystem::permissions(dir(), std::filesystem::perms::others_exec, std::filesystem::perm_options::add);
  const pid_t pid = start();
  ASSERT_TRUE(eventually([&] {
    return nlohmann::json::parse(ask({"history", "--json"}).out, nullptr, false).size() == 7;
  }));
  // nobody asks: the busy DGX's processes are not theirs.
  const Outcome as_nobody = shell(fmt::format("/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups {} "
                                              "history --json --service-socket {}",
                                              GPURUN_BINARY, socket()),
                                  {{"GPURUN_SYSTEM_CONFIG", system_config()},
                                   {"HOME", "/nonexistent"},
                                   {"XDG_CONFIG_HOME", "/nonexistent/.config"}});
  EXPECT_EQ(as_nobody.exit_code, 0) << as_nobody.err;
  EXPECT_EQ(nlohmann::json::parse(as_nobody.out, nullptr, false), nlohmann::json::array());
  const Outcome as_root = ask({"history", "--json"});
  EXPECT_EQ(nlohmann::json::parse(as_root.out, nullptr, false).size(), 7u);  // root sees all
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// A socket the admin made 0600: the service runs, and a user it keeps out is told that, not that
// it is not running (with the command to start it).
TEST_F(GpurundTest, ASocketThisUserMayNotOpenIsNotAServiceThatIsNotRunning) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to ask as another user";
  std::filesystem::permissions(dir(), std::filesystem::perms::others_exec, std::filesystem::perm_options::add);
  const pid_t pid = start();
  ASSERT_TRUE(eventually([&] { return ask({"history", "--json"}).exit_code == 0; }));
  std::filesystem::permissions(socket(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const Outcome as_nobody = shell(fmt::format("/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups {} "
                                              "history --service-socket {}",
                                              GPURUN_BINARY, socket()),
                                  {{"GPURUN_SYSTEM_CONFIG", system_config()},
                                   {"HOME", "/nonexistent"},
                                   {"XDG_CONFIG_HOME", "/nonexistent/.config"}});
  EXPECT_EQ(as_nobody.exit_code, 125);
  EXPECT_THAT(as_nobody.err, HasSubstr("Permission denied"));
  EXPECT_THAT(as_nobody.err, HasSubstr("your user may not open the socket or its directory"));
  EXPECT_THAT(as_nobody.err, Not(HasSubstr("not running")));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(GpurundTest, ServesMetricsForPrometheusWithEachGpusHolderAndPromtoolAcceptsThem) {
  const std::string job_map = dir() + "/dcgm-job-map";
  const pid_t pid =
      start(scenario("busy_dgx.json"), false, {"--listen", "127.0.0.1:0", "--dcgm-job-mapping-dir", job_map});
  int port = 0;
  ASSERT_TRUE(eventually([&] {
    static const std::regex bound("on 127.0.0.1:0 \\(port ([0-9]+)\\)");
    const std::string log = read_file(dir() + "/gpurund.err");
    std::smatch found;
    if (std::regex_search(log, found, bound)) port = std::stoi(found[1].str());
    return port > 0;
  })) << read_file(dir() + "/gpurund.err");
  const std::string fetch = fmt::format(
      "python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("
      "\"http://127.0.0.1:{}/metrics\", timeout=10).read().decode())'",
      port);
  // GPU 3 is held by pid 52771 (its run is one of the first seven), at 0 %: idle after two samples,
  // for however long a loaded machine took to ask (not only under a second).
  ASSERT_TRUE(eventually([&] {
    return ::testing::Matches(::testing::ContainsRegex(
        "\ngpurun_gpu_idle_seconds\\{gpu=\"3\",[^}]*\\} ([1-9][0-9]*|0\\.[0-9]*[1-9])[0-9.]*\n"))(shell(fetch).out);
  })) << shell(fetch).out;
  const Outcome metrics = shell(fetch);
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_THAT(metrics.out, HasSubstr("\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-"));
  // The scenario's power draw and temperature of GPU 2, asked of nvidia-smi by the service alone.
  EXPECT_THAT(metrics.out, ::testing::ContainsRegex("\nDCGM_FI_DEV_POWER_USAGE\\{gpu=\"2\",[^}]*\\} 62.18\n"));
  EXPECT_THAT(metrics.out, ::testing::ContainsRegex("\nDCGM_FI_DEV_GPU_TEMP\\{gpu=\"2\",[^}]*\\} 31\n"));
  EXPECT_THAT(metrics.out, ::testing::ContainsRegex("\ngpurun_gpu_held\\{gpu=\"1\",[^}]*run=\"[0-9]+\"\\} 1\n"));
  EXPECT_THAT(metrics.out, Not(HasSubstr("gpurun_gpu_held{gpu=\"2\"")));  // GPU 2: nobody's
  EXPECT_THAT(metrics.out, HasSubstr("\ngpurun_up{Hostname=\""));
  EXPECT_THAT(metrics.out, ::testing::ContainsRegex("\ngpurun_user_gpu_seconds_total\\{user=\"\"\\} [0-9.]+\n"));
  // DCGM's job mapping: a file for each held GPU with its holders, none for GPU 2; gone at the stop.
  // The scenario's processes are not in /proc: no command line, so no name a label would keep.
  EXPECT_EQ(read_file(job_map + "/1"), "unknown\n");
  EXPECT_FALSE(std::filesystem::exists(job_map + "/2"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  EXPECT_TRUE(std::filesystem::is_empty(job_map));

  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool is missing (apt-get install prometheus)";
  std::ofstream(dir() + "/metrics.txt") << metrics.out;
  const Outcome check = shell(fmt::format("/usr/bin/promtool check metrics < {}/metrics.txt", dir()));
  // Exit 3 with only lint remarks about DCGM's own label names (UUID, modelName, Hostname), which
  // stay as DCGM spells them so that its dashboards work; anything else is a failure.
  std::string remarks = check.out + check.err;
  std::istringstream lines(remarks);
  for (std::string line; std::getline(lines, line);)
    EXPECT_THAT(line, HasSubstr("label names should be written in 'snake_case' not 'camelCase'")) << line;
  EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 3) << remarks;
}

// Containers for the idle policy: c1 started by gpurun (bob's) on GPU 2, c2 started by someone's
// own `docker run` on GPU 5; both GPUs sit at 0 % in the busy DGX, as GPU 3 does with pid 52771.
constexpr const char* kIdleContainers = R"([
 {"Id": "c1", "Name": "/bob_gpu2", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"},
  "Path": "python", "Args": ["train.py"], "Config": {"Image": "bob/train:1", "Labels": {"gpurun.user": "bob"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c2", "Name": "/notebook", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"},
  "Path": "jupyter", "Config": {"Image": "jupyter:1", "User": "carol"},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["5"], "Capabilities": [["gpu"]]}]}}
])";

class IdlePolicyTest : public GpurundTest {
 protected:
  // gpurund under the idle policy `policy` (the object), the stand-in docker listing
  // kIdleContainers from dir()/inspect.json and recording its other calls in dir()/argv.
  pid_t start_with_idle_containers(const std::string& policy) const {
    return start_with_containers(R"({"idle_policy": )" + policy + "}", kIdleContainers);
  }
  // gpurund under the system file `system`, the stand-in docker listing `inspect` (containers c1
  // and c2).
  // While dir()/engine-down exists, the stand-in's `ps` fails as an engine out of reach does.
  // Their State.StartedAt, written 2026-01-01T00:00:00Z, is now: a time limit counts from it.
  pid_t start_with_containers(const std::string& system, std::string inspect,
                              const std::string& scenario_path = scenario("busy_dgx.json"),
                              const std::vector<std::string>& more = {}) const {
    std::ofstream(system_config()) << system;
    const std::string written = "2026-01-01T00:00:00Z";
    for (std::size_t at; (at = inspect.find(written)) != std::string::npos;)
      inspect.replace(at, written.size(), utc_now());
    std::ofstream(dir() + "/inspect.json") << inspect;
    std::filesystem::create_directory(dir() + "/argv");
    return start(scenario_path, false, more,
                 {"FAKE_DOCKER_PS_IDS=c1 c2", "FAKE_DOCKER_INSPECT=" + dir() + "/inspect.json",
                  "FAKE_DOCKER_ARGV_DIR=" + dir() + "/argv", "FAKE_DOCKER_PS_ERROR_FILE=" + dir() + "/engine-down"});
  }
};

// A detached job's container stays after its job, for its output; the service removes it once it
// has been ended for keep_ended_containers_days, and nothing else: not one that ended recently,
// not a running one, not one a launch of gpurun's did not label.
TEST_F(IdlePolicyTest, TheServiceRemovesADetachedJobsContainerOnceEndedForAWeek) {
  constexpr const char* kEnded = R"([
 {"Id": "c1", "Name": "/bob_gpu2", "Created": "2025-05-31T23:00:00Z",
  "State": {"Status": "exited", "StartedAt": "2025-05-31T23:00:01Z", "FinishedAt": "2025-06-01T00:00:00Z"},
  "Config": {"Labels": {"gpurun.user": "bob", "gpurun.gpus": "2", "gpurun.name": "bob_gpu2",
   "gpurun.detached": "true"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c2", "Name": "/bob_gpu3", "Created": "2025-05-31T23:00:00Z",
  "State": {"Status": "exited", "StartedAt": "2025-05-31T23:00:01Z", "FinishedAt": "2026-01-01T00:00:00Z"},
  "Config": {"Labels": {"gpurun.user": "bob", "gpurun.gpus": "3", "gpurun.name": "bob_gpu3",
   "gpurun.detached": "true"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["3"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c3", "Name": "/notebook", "Created": "2025-05-31T23:00:00Z",
  "State": {"Status": "exited", "StartedAt": "2025-05-31T23:00:01Z", "FinishedAt": "2025-06-01T00:00:00Z"},
  "Config": {"Labels": {}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["5"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c4", "Name": "/kept", "Created": "2025-05-31T23:00:00Z",
  "State": {"Status": "exited", "StartedAt": "2025-05-31T23:00:01Z", "FinishedAt": "2025-06-01T00:00:00Z"},
  "Config": {"Labels": {"gpurun.user": "bob", "gpurun.gpus": "6", "gpurun.name": "kept", "gpurun.detached": ""}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["6"], "Capabilities": [["gpu"]]}]}}
])";
  const pid_t pid = start_with_containers("{}", kEnded);  // c2 ended now (the fixture writes now)
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  ASSERT_TRUE(eventually([&] { return log().find("removed container bob_gpu2") != std::string::npos; })) << log();
  EXPECT_THAT(log(), HasSubstr("removed container bob_gpu2 (user bob): its job ended over 7d ago"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);  // the sweep done: all it asked is in
  std::vector<std::string> asked;
  for (const auto& file : std::filesystem::directory_iterator(dir() + "/argv")) asked.push_back(read_file(file.path()));
  std::string c1_rm;
  for (const char* arg : {"rm", "--volumes", "--", "c1"}) c1_rm.append(arg).push_back('\0');
  EXPECT_THAT(asked, ::testing::ElementsAre(c1_rm));

  // The site's own time: 0 removes an ended one at the next look, as --rm would have.
  std::filesystem::remove_all(dir() + "/argv");
  const std::size_t restart = log().size();
  const pid_t again = start_with_containers("{}", kEnded, scenario("busy_dgx.json"), {"--keep-ended-containers", "0"});
  ASSERT_TRUE(eventually([&] { return log().find("removed container bob_gpu3", restart) != std::string::npos; }))
      << log();
  EXPECT_EQ(stop(again, SIGTERM), 0);
  EXPECT_EQ(log().find("removed container notebook"), std::string::npos);  // no launch of gpurun's
  EXPECT_EQ(log().find("removed container kept"), std::string::npos);      // attached, kept on purpose
}

TEST_F(IdlePolicyTest, AnEngineThatStopsAnsweringForAWhileEndsNoIdleContainersRun) {
  const pid_t pid = start_with_containers("{}", kIdleContainers);
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  // The runs named bob_gpu2 (c1, on GPU 2 with no process on it: the engine alone shows it).
  const auto bob_runs = [&] {
    std::vector<nlohmann::json> found;
    for (const auto& run : nlohmann::json::parse(ask({"history", "--json"}).out, nullptr, false))
      if (run.is_object() && run["name"] == "bob_gpu2") found.push_back(run);
    return found;
  };
  ASSERT_TRUE(eventually([&] { return bob_runs().size() == 1; })) << ask({"history", "--json"}).out;
  std::ofstream(dir() + "/engine-down") << "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.";
  ASSERT_TRUE(eventually([&] { return log().find("Cannot connect to the Docker daemon") != std::string::npos; }))
      << log();
  std::this_thread::sleep_for(1s);  // ten samples without the engine
  std::filesystem::remove(dir() + "/engine-down");
  ASSERT_TRUE(eventually([&] { return log().find("the container engine: working again") != std::string::npos; }))
      << log();
  std::this_thread::sleep_for(300ms);  // three samples with it
  const std::vector<nlohmann::json> runs = bob_runs();
  ASSERT_EQ(runs.size(), 1u) << ask({"history", "--json"}).out;  // the same run throughout
  EXPECT_TRUE(runs[0]["end"].is_null()) << runs[0].dump();
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(IdlePolicyTest, TheIdlePolicyWarnsThenStopsGpurunsIdleContainerAndOnlyReportsTheOthers) {
  const pid_t pid = start_with_idle_containers(R"({"below": "5%", "warn_after": 1, "stop_after": 2})");
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  const std::string inspect = dir() + "/inspect.json";
  ASSERT_TRUE(eventually([&] { return log().find("idle policy: stopped run") != std::string::npos; })) << log();
  // Idle times as the samples saw them: 1 s, or a little more where the machine is slow.
  EXPECT_THAT(log(), ::testing::ContainsRegex("idle policy: run [0-9]+ \\(bob_gpu2, user bob, GPU 2\\) has been idle "
                                              "for [1-9]s; it will be stopped when idle for 2s"));
  EXPECT_THAT(log(), ::testing::ContainsRegex("idle policy: stopped run [0-9]+ \\(bob_gpu2, user bob, GPU 2\\)"));
  // The stop went through the engine's CLI, once, for c1 alone.
  std::vector<std::string> stops;
  for (const auto& file : std::filesystem::directory_iterator(dir() + "/argv")) stops.push_back(read_file(file.path()));
  std::string c1_stop;
  for (const char* arg : {"stop", "--time", "10", "--", "c1"}) c1_stop.append(arg).push_back('\0');
  EXPECT_THAT(stops, ::testing::ElementsAre(c1_stop));
  // The others: reported once they are idle past stop_after, never stopped.
  ASSERT_TRUE(eventually([&] {
    const std::string text = log();
    // (Its image's Config.User, "carol", is an account inside the image: not who ran it.)
    return text.find("(notebook, user unknown, GPU 5) has been idle for") != std::string::npos &&
           text.find("left running: not a container gpurun started") != std::string::npos &&
           text.find("left running: a process is never killed") != std::string::npos;
  })) << log();
  EXPECT_THAT(log(), ::testing::ContainsRegex("\\(notebook, user unknown, GPU 5\\) has been idle for [2-9]s, and is "
                                              "left running: not a container gpurun started"));
  EXPECT_THAT(log(), ::testing::ContainsRegex("\\(pid 52771, user unknown, GPU 3\\) has been idle for [2-9]s, and is "
                                              "left running: a process is never killed"));
  // c1 is gone from the engine now: its run ends, and says why.
  std::ofstream(inspect) << R"([)"
                         << std::string(kIdleContainers).substr(std::string(kIdleContainers).find(" {\"Id\": \"c2\""));
  ASSERT_TRUE(eventually([&] {
    const auto runs = nlohmann::json::parse(ask({"history", "--json"}).out, nullptr, false);
    for (const auto& run : runs)
      if (run.is_object() && run["name"] == "bob_gpu2" && run["ended_by"] == "idle_policy") return true;
    return false;
  })) << ask({"history", "--json"}).out;
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(IdlePolicyTest, ARestartNeitherWarnsAgainNorStartsTheWaitToStopAgain) {
  const std::string policy = R"({"below": "5%", "warn_after": 1, "stop_after": 5})";
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  const std::string warning = "(bob_gpu2, user bob, GPU 2) has been idle for ";
  pid_t pid = start_with_idle_containers(policy);
  ASSERT_TRUE(eventually([&] { return log().find(warning) != std::string::npos; })) << log();
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  const std::size_t restart = log().size();
  pid = start_with_idle_containers(policy);  // restarted seconds before the stop is due
  ASSERT_TRUE(eventually([&] { return log().find("idle policy: stopped run", restart) != std::string::npos; }))
      << log();
  const std::string text = log();
  std::size_t warnings = 0;
  for (std::size_t at = text.find(warning); at != std::string::npos; at = text.find(warning, at + 1))
    if (const std::size_t semicolon = text.find(';', at);
        semicolon != std::string::npos && text.compare(semicolon, 25, "; it will be stopped when") == 0)
      ++warnings;
  EXPECT_EQ(warnings, 1u) << text;
  // Stopped once, through the engine's CLI (however long the restart took on a loaded machine).
  std::size_t stops = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir() + "/argv"))
    if (read_file(file.path()).starts_with(std::string("stop") + '\0')) ++stops;
  EXPECT_EQ(stops, 1u);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(IdlePolicyTest, ARestartUnderAnotherPolicyStartsItsStreaksAfresh) {
  // The way to change the policy is a restart: what the old one did is no guide to the new one.
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  const auto warnings = [&] {
    const std::string text = log();
    std::size_t count = 0;
    for (std::size_t at = text.find("(bob_gpu2, user bob, GPU 2) has been idle for"); at != std::string::npos;
         at = text.find("(bob_gpu2, user bob, GPU 2) has been idle for", at + 1))
      ++count;
    return count;
  };
  pid_t pid = start_with_idle_containers(R"({"warn_after": 1, "stop_after": 60})");
  ASSERT_TRUE(eventually([&] { return warnings() == 1; })) << log();
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  pid = start_with_idle_containers(R"({"warn_after": 1, "stop_after": 90})");
  ASSERT_TRUE(eventually([&] { return warnings() == 2; })) << log();
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(IdlePolicyTest, UnderADryRunTheIdlePolicyOnlySaysWhatItWouldStop) {
  const pid_t pid = start_with_idle_containers(R"({"stop_after": 1, "dry_run": true})");
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  ASSERT_TRUE(eventually([&] { return log().find("would stop run") != std::string::npos; })) << log();
  EXPECT_THAT(log(), ::testing::ContainsRegex("idle policy \\(dry run\\): would stop run [0-9]+ \\(bob_gpu2"));
  EXPECT_TRUE(std::filesystem::is_empty(dir() + "/argv"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// c1 as IdlePolicyTest's, launched with --time-limit 2s and --notify; c2 someone's own container
// whose labels look like gpurun's time limit, which is not gpurun's to enforce.
constexpr const char* kTimedContainers = R"([
 {"Id": "c1", "Name": "/bob_gpu2", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"},
  "Path": "python", "Args": ["train.py"], "Config": {"Image": "bob/train:1", "Labels": {"gpurun.user": "bob",
  "gpurun.gpus": "2", "gpurun.time-limit": "2", "gpurun.notify": "run_ended", "gpurun.name": "bob_gpu2"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c2", "Name": "/notebook", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"},
  "Path": "jupyter", "Config": {"Image": "jupyter:1", "User": "carol", "Labels": {"gpurun.time-limit": "1"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["5"], "Capabilities": [["gpu"]]}]}}
])";

// The idle policy and time limits telling people: a real HTTP receiver as the webhook, and a
// sendmail stand-in that keeps each message it is given with -t.
class NotifyTest : public IdlePolicyTest {
 protected:
  // The system file's "notify" object, `events` its list (or the default's when empty).
  std::string notify(const std::string& events = "") const {
    test::write_script(dir() + "/sendmail",
                       "test \"$1\" = -t || exit 9\ncat >> " + dir() + "/mail\necho ---- >> " + dir() + "/mail");
    return fmt::format(R"("notify": {{"webhook": "{}", "mail": true, "mail_domain": "lab.example.org",
                           "sendmail": "{}/sendmail"{}}})",
                       receiver.url(), dir(), events.empty() ? "" : R"(, "events": )" + events);
  }
  // The events the webhook got, in order, and the bodies of those about `name`.
  std::vector<std::string> events(const std::string& name) const {
    std::vector<std::string> seen;
    for (const std::string& body : receiver.bodies()) {
      const auto j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_object() && j.contains("run") && j["run"].is_object() && j["run"].value("name", "") == name)
        seen.push_back(j.value("event", ""));
    }
    return seen;
  }
  std::string mail() const {
    return std::filesystem::exists(dir() + "/mail") ? read_file(dir() + "/mail") : std::string();
  }
  // gpurund with kTimedContainers, bob_gpu2's limit `seconds`, the stand-in nvidia-smi answering
  // from a copy of the busy DGX (source()), once bob_gpu2's run is recorded.
  pid_t start_timed(const std::string& seconds) const {
    std::filesystem::copy_file(scenario("busy_dgx.json"), source());
    std::string timed(kTimedContainers);
    timed.replace(timed.find(R"("gpurun.time-limit": "2")"), 24, R"("gpurun.time-limit": ")" + seconds + "\"");
    const pid_t pid = start_with_containers("{}", timed, source());
    EXPECT_TRUE(eventually([&] { return ask({"history", "--json"}).out.find("bob_gpu2") != std::string::npos; }));
    return pid;
  }
  std::string source() const { return dir() + "/scenario.json"; }
  // Every read of the GPUs fails from now on, as after a driver upgraded under running jobs.
  void fail_the_gpu_source() const {
    std::ofstream(source()) << R"({"gpus": [], "processes": [], "exit_code": 18,
      "stdout": "Failed to initialize NVML: Driver/library version mismatch\n"})";
  }
  test::WebhookReceiver receiver;
};

TEST_F(NotifyTest, ARunPastItsTimeLimitIsWarnedStoppedAndItsEndToldByWebhookAndMail) {
  const pid_t pid = start_with_containers("{" + notify() + "}", kTimedContainers);
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  ASSERT_TRUE(eventually([&] { return log().find("time limit: stopped run") != std::string::npos; })) << log();
  EXPECT_THAT(log(), ::testing::ContainsRegex("time limit: run [0-9]+ \\(bob_gpu2, user bob, GPU 2\\) has been running "
                                              "for [1-9]s; its time limit of 2s stops it in"));
  // One stop, of c1: c2's label is not gpurun's to act on.
  std::vector<std::string> stops;
  for (const auto& file : std::filesystem::directory_iterator(dir() + "/argv")) stops.push_back(read_file(file.path()));
  std::string c1_stop;
  for (const char* arg : {"stop", "--time", "10", "--", "c1"}) c1_stop.append(arg).push_back('\0');
  EXPECT_THAT(stops, ::testing::ElementsAre(c1_stop));
  ASSERT_TRUE(eventually([&] { return events("bob_gpu2").size() == 2; })) << log();
  EXPECT_THAT(events("bob_gpu2"), ::testing::ElementsAre("time_warning", "time_limit_stopped"));
  ASSERT_TRUE(eventually([&] { return mail().find("stopped run") != std::string::npos; })) << log();
  EXPECT_THAT(mail(), ::testing::ContainsRegex("To: bob@lab.example.org\nSubject: \\[gpurun\\] run [0-9]+ "
                                               "\\(bob_gpu2, user bob, GPU 2\\) has been running for"));
  EXPECT_THAT(mail(), ::testing::ContainsRegex("To: bob@lab.example.org\nSubject: \\[gpurun\\] stopped run [0-9]+ "
                                               "\\(bob_gpu2, user bob, GPU 2\\), running for"));
  // c1 is gone now: its run ends by the time limit, and its --notify asked to hear of that.
  const std::string timed(kTimedContainers);
  std::ofstream(dir() + "/inspect.json") << "[" << timed.substr(timed.find(" {\"Id\": \"c2\""));
  ASSERT_TRUE(eventually([&] { return events("bob_gpu2").size() == 3; })) << log();
  for (const std::string& body : receiver.bodies()) {
    const auto j = nlohmann::json::parse(body);
    if (j.at("event") != "run_ended") continue;
    EXPECT_EQ(j.at("run").at("ended_by"), "time_limit") << body;
    EXPECT_THAT(j.at("text").get<std::string>(), HasSubstr("stopped at its time limit")) << body;
    EXPECT_FALSE(j.at("host").get<std::string>().empty());
  }
  EXPECT_THAT(events("notebook"), ::testing::IsEmpty());
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// Raw samples kept 14 days (the default), an idle policy that stops after 20: a restart would see
// 14 days of a 20-day streak. The samples are kept as long as the policy looks back, and the log
// says so.
TEST_F(IdlePolicyTest, RawSamplesAreKeptAsLongAsTheIdlePolicyLooksBack) {
  const pid_t pid = start_with_containers(R"({"idle_policy": {"stop_after": "20d", "dry_run": true}})", "[]");
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  ASSERT_TRUE(eventually([&] { return log().find("raw samples are kept") != std::string::npos; })) << log();
  EXPECT_THAT(log(), HasSubstr("raw samples are kept for 20d 1h rather than 14d (keep_samples_days)"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// A driver upgraded under running jobs ("Driver/library version mismatch" until a reboot): the
// GPU source fails at every sample, and the time limits, which need only the engine's containers,
// hold all the same.
TEST_F(NotifyTest, TimeLimitsHoldWhileTheGpuSourceFails) {
  const pid_t pid = start_timed("4");
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  fail_the_gpu_source();
  ASSERT_TRUE(eventually([&] { return log().find("time limit: stopped run") != std::string::npos; })) << log();
  const std::string text = log();
  EXPECT_LT(text.find("Driver/library version mismatch"), text.find("time limit: stopped run")) << text;
  std::string c1_stop;
  for (const char* arg : {"stop", "--time", "10", "--", "c1"}) c1_stop.append(arg).push_back('\0');
  bool stopped = false;
  for (const auto& file : std::filesystem::directory_iterator(dir() + "/argv"))
    stopped = stopped || read_file(file.path()) == c1_stop;
  EXPECT_TRUE(stopped);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// The same outage with gpurund restarted in it (the package's try-restart, systemd's
// Restart=on-failure): nothing read since its start, the open runs' GPUs stand in for the list.
TEST_F(NotifyTest, TimeLimitsHoldAfterARestartDuringTheGpuSourcesOutage) {
  pid_t pid = start_timed("6");
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  fail_the_gpu_source();
  pid = start(source(), false, {},
              {"FAKE_DOCKER_PS_IDS=c1 c2", "FAKE_DOCKER_INSPECT=" + dir() + "/inspect.json",
               "FAKE_DOCKER_ARGV_DIR=" + dir() + "/argv"});
  ASSERT_TRUE(eventually([&] { return log().find("time limit: stopped run") != std::string::npos; })) << log();
  EXPECT_THAT(log(), ::testing::ContainsRegex("time limit: stopped run [0-9]+ \\(bob_gpu2, user bob, GPU 2\\)"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

// Mail on, and no sendmail where the file says: said once at the start, with what to install,
// rather than in a failure at every mail.
TEST_F(NotifyTest, MailWithoutASendmailProgramIsSaidAtTheStart) {
  const pid_t pid = start_with_containers(R"({"notify": {"mail": true, "sendmail": "/nonexistent/sbin/sendmail"}})",
                                          kTimedContainers);
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  ASSERT_TRUE(eventually([&] { return log().find("no mail will be sent") != std::string::npos; })) << log();
  EXPECT_THAT(log(), HasSubstr("/nonexistent/sbin/sendmail is not a program this service can run"));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

TEST_F(NotifyTest, TheIdlePolicyWarnsAndStopsByWebhookAndMailAndAUserNameIsDataInTheMail) {
  const pid_t pid = start_with_containers(
      R"({"idle_policy": {"warn_after": 1, "stop_after": 2}, )" + notify(R"(["idle_warning", "idle_stopped"])") + "}",
      kIdleContainers);
  const auto log = [&] { return read_file(dir() + "/gpurund.err"); };
  ASSERT_TRUE(eventually([&] { return events("bob_gpu2").size() == 2; })) << log();
  EXPECT_THAT(events("bob_gpu2"), ::testing::ElementsAre("idle_warning", "idle_stopped"));
  // carol's notebook is warned, then reported (left running): a warning again, never a stop.
  ASSERT_TRUE(eventually([&] { return events("notebook").size() == 2; })) << log();
  EXPECT_THAT(events("notebook"), ::testing::ElementsAre("idle_warning", "idle_warning"));
  ASSERT_TRUE(eventually([&] {
    return mail().find("To: bob@lab.example.org\nSubject: [gpurun] stopped run") != std::string::npos;
  })) << log();
  // Nobody is known to have run the notebook (its image's Config.User is an account inside it).
  EXPECT_THAT(mail(), Not(HasSubstr("To: carol")));
  EXPECT_EQ(stop(pid, SIGTERM), 0);
}

}  // namespace
}  // namespace gpurun::testing
