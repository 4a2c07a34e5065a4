// End-to-end: concurrent launches never share a GPU; containers holding GPUs count as busy.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>

#include <future>
#include <set>
#include <thread>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "gpurun/util/proc_info.hpp"

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using namespace std::chrono_literals;

// The GPUs of a recorded docker argv.
std::vector<int> gpus_of(const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--gpus") return gpu_devices(argv[i + 1]);
  return {};
}

bool wait_for_file(const std::string& path, std::chrono::seconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (!std::filesystem::exists(path) || std::filesystem::file_size(path) == 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class ReservationTest : public GpurunTest {
 protected:
  // A launch whose docker holds its GPUs for `seconds` (exec'd sleep: one process).
  Env holding_launch_env(const std::string& scenario_name, int seconds) const {
    Env env = fakes(scenario_name);
    env.emplace_back("FAKE_DOCKER_EXEC_SLEEP", std::to_string(seconds));
    return env;
  }
};

TEST_F(ReservationTest, AGpuHeldByARunningLaunchIsBusyForTheNext) {
  auto first = std::async(std::launch::async, [&] {
    // Held for 12 s: five gpurun runs look at it meanwhile, slowly under ASan with coverage.
    return gpurun({"--image", "img", "1"}, holding_launch_env("all_free_8.json", 12));
  });
  ASSERT_TRUE(wait_for_file(argv_file(), 20s));
  EXPECT_THAT(gpus_of(docker_argv()), ::testing::ElementsAre(0));

  const Outcome status = gpurun({"status"}, fakes("all_free_8.json"));
  const std::string me = process_user(::getpid()).value_or("?");
  EXPECT_THAT(status.out, ::testing::ContainsRegex("\n  0  .*  " + me + " +reserved: " + me + "\n"));
  const Outcome verbose = gpurun({"status", "--verbose"}, fakes("all_free_8.json"));
  EXPECT_THAT(verbose.out, HasSubstr("why: reserved by another gpurun launch (pid "));
  const auto json = nlohmann::json::parse(gpurun({"status", "--json"}, fakes("all_free_8.json")).out);
  EXPECT_EQ(json.at("gpus").at(0).at("holders").at(0).at("kind"), "reservation");
  EXPECT_EQ(json.at("gpus").at(0).at("holders").at(0).at("user"), me);
  EXPECT_EQ(gpurun({"pick", "1"}, fakes("all_free_8.json")).out, "1\n");
  EXPECT_EQ(first.get().exit_code, 0);
  EXPECT_EQ(gpurun({"pick", "1"}, fakes("all_free_8.json")).out, "0\n");  // released when docker ended
}

TEST_F(ReservationTest, EightConcurrentLaunchesOfTwoOnEightFreeGpusExactlyFourWinDisjointGpus) {
  const std::string argv_dir = dir() + "/argvs";
  std::filesystem::create_directory(argv_dir);
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_ARGV_DIR", argv_dir);
  env.emplace_back("FAKE_DOCKER_EXEC_SLEEP", "8");  // long enough for all eight to have picked

  std::vector<std::future<Outcome>> launches;
  for (int i = 0; i < 8; ++i)
    launches.push_back(std::async(std::launch::async, [&] { return gpurun({"--image", "img", "2", "job"}, env); }));
  int succeeded = 0;
  int refused = 0;
  for (auto& launch : launches) {
    const Outcome outcome = launch.get();
    if (outcome.exit_code == 0) ++succeeded;
    if (outcome.exit_code == 125) {
      ++refused;
      EXPECT_THAT(outcome.err, HasSubstr("reserved by another gpurun launch"));
    }
  }
  EXPECT_EQ(succeeded, 4);
  EXPECT_EQ(refused, 4);

  std::multiset<int> used;
  for (const auto& entry : std::filesystem::directory_iterator(argv_dir))
    for (int gpu : gpus_of(split_nul(read_file(entry.path())))) used.insert(gpu);
  EXPECT_EQ(used, (std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7}));  // each GPU exactly once
}

TEST_F(ReservationTest, AKilledLauncherLeavesNoReservationBehind) {
  // gpurun execs docker, so docker has gpurun's pid: kill -9 it as a crash would.
  const std::string pid_file = dir() + "/pid";
  Env env = holding_launch_env("all_free_8.json", 60);
  auto launch = std::async(std::launch::async, [&] {
    return run_process(
        {{"/bin/sh", "-c", fmt::format("echo $$ > {}; exec {} --image img 2 job", pid_file, GPURUN_BINARY)}, env}, 60s);
  });
  ASSERT_TRUE(wait_for_file(argv_file(), 20s));
  EXPECT_EQ(gpurun({"pick", "2"}, fakes("all_free_8.json")).out, "2,3\n");
  const pid_t pid = std::stoi(read_file(pid_file));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(launch.get().signal, SIGKILL);

  EXPECT_FALSE(std::filesystem::is_empty(lock_dir()));                      // the files stay ...
  EXPECT_EQ(gpurun({"pick", "2"}, fakes("all_free_8.json")).out, "0,1\n");  // ... and block nobody
}

TEST_F(ReservationTest, ADetachedLaunchKilledWhileTheEngineStartsItKeepsItsGpusReserved) {
  // `docker run -d` pulling an image, and gpurun killed meanwhile: the client still starts the
  // container, so it holds the reservation gpurun made until it returns.
  const std::string pid_file = dir() + "/pid";
  Env env = holding_launch_env("all_free_8.json", 6);
  auto launch = std::async(std::launch::async, [&] {
    return run_process(
        {{"/bin/sh", "-c", fmt::format("echo $$ > {}; exec {} -d --image img 1 job", pid_file, GPURUN_BINARY)}, env},
        60s);
  });
  ASSERT_TRUE(wait_for_file(argv_file(), 20s));
  const pid_t pid = std::stoi(read_file(pid_file));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(launch.get().signal, SIGKILL);
  EXPECT_EQ(gpurun({"pick", "1"}, fakes("all_free_8.json")).out, "1\n");  // GPU 0: the client's still
}

TEST_F(ReservationTest, APlantedSymlinkIsNeverFollowed) {
  std::filesystem::create_directory(lock_dir());
  const std::string target = dir() + "/victim";
  std::ofstream(target) << "precious\n";
  const std::string gpu0 = lock_dir() + "/gpu-GPU-a84bba07-931d-b925-306a-0799dc6ebd71.lock";
  std::filesystem::create_symlink(target, gpu0);

  const Outcome pick = gpurun({"pick", "1"}, fakes("all_free_8.json"));
  EXPECT_EQ(pick.out, "1\n");  // GPU 0's reservation cannot be checked: it is not offered
  const Outcome status = gpurun({"status", "--verbose"}, fakes("all_free_8.json"));
  EXPECT_THAT(status.out, HasSubstr("its reservation file cannot be used: it is a symbolic link"));

  std::filesystem::create_symlink(target, lock_dir() + "/select.lock");
  const Outcome launch = gpurun({"--image", "img", "1"}, fakes("all_free_8.json"));
  EXPECT_EQ(launch.exit_code, 125);
  EXPECT_THAT(launch.err, HasSubstr("select.lock: it is a symbolic link"));
  EXPECT_EQ(read_file(target), "precious\n");
  EXPECT_TRUE(std::filesystem::is_symlink(gpu0));
}

TEST_F(ReservationTest, ALockDirThatIsASymlinkIsRefused) {
  std::filesystem::create_directory(dir() + "/elsewhere");
  std::filesystem::create_directory_symlink(dir() + "/elsewhere", lock_dir());
  const Outcome launch = gpurun({"--image", "img", "1"}, fakes("all_free_8.json"));
  EXPECT_EQ(launch.exit_code, 125);
  EXPECT_THAT(launch.err, HasSubstr("it is a symbolic link"));
}

TEST_F(ReservationTest, ANewLockDirIsWritableByNoOneElse) {
  gpurun({"pick"}, fakes("all_free_8.json"));
  const auto perms = std::filesystem::status(lock_dir()).permissions();
  EXPECT_EQ(perms & std::filesystem::perms::others_write, std::filesystem::perms::none);
  EXPECT_EQ(perms & std::filesystem::perms::owner_all, std::filesystem::perms::owner_all);
}

class ContainerAwarenessTest : public GpurunTest {
 protected:
  Env with_containers(const std::string& scenario_name, const std::string& inspect_json) const {
    const std::string path = dir() + "/inspect.json";
    std::ofstream(path) << inspect_json;
    Env env = fakes(scenario_name);
    env.emplace_back("FAKE_DOCKER_PS_IDS", "c1 c2");
    env.emplace_back("FAKE_DOCKER_INSPECT", path);
    return env;
  }
};

constexpr const char* kTwoContainers = R"([
 {"Id": "c1", "Name": "/bob_gpu0_12345678", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00.5Z"},
  "Path": "python", "Args": ["train.py", "--lr", "0.1"],
  "Config": {"Image": "bob/train:1", "User": "1001:1001", "Env": ["PATH=/bin"], "Labels": {"gpurun.user": "bob"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c2", "Name": "/legacy", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"},
  "Config": {"Image": "old/tf:18", "User": "", "Env": ["NVIDIA_VISIBLE_DEVICES=GPU-8b8c764d-1c0a-cb3d-ea13-519a60a077bb"]},
  "HostConfig": {"DeviceRequests": null}}
])";

TEST_F(ContainerAwarenessTest, GpusHeldByRunningContainersAreBusyAtZeroMemory) {
  const Env env = with_containers("all_free_8.json", kTwoContainers);
  EXPECT_EQ(gpurun({"pick", "2"}, env).out, "2,3\n");
  const Outcome status = gpurun({"status"}, env);
  EXPECT_THAT(status.out, HasSubstr("  bob   busy: bob 0%\n"));
  EXPECT_THAT(status.out, HasSubstr("  -     busy: legacy 0%\n"));  // nobody known: the container's name
  const Outcome verbose = gpurun({"status", "--verbose"}, env);
  EXPECT_THAT(verbose.out, HasSubstr("why: in use by container bob_gpu0_12345678 (bob, bob/train:1)"));
  EXPECT_THAT(verbose.out, HasSubstr("why: in use by container legacy (old/tf:18)"));
}

TEST_F(ContainerAwarenessTest, AnEngineOutOfReachIsAWarningNotAFailure) {
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_PS_ERROR", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.");
  const Outcome pick = gpurun({"pick", "1"}, env);
  EXPECT_EQ(pick.exit_code, 0);
  EXPECT_EQ(pick.out, "0\n");
  EXPECT_THAT(pick.err, HasSubstr("warning: cannot ask the Docker engine which containers hold GPUs, going by "
                                  "the GPUs' processes alone: `" +
                                  fake("docker") + " ps` exited with status 1: Cannot connect"));
  // status --json says so too, for a program that does not read stderr.
  const auto down = nlohmann::json::parse(gpurun({"status", "--json"}, env).out);
  EXPECT_EQ(down.at("containers").at("engine"), "docker");
  EXPECT_EQ(down.at("containers").at("checked"), false);
  EXPECT_THAT(down.at("containers").at("error").get<std::string>(), HasSubstr("Cannot connect"));
  const auto up = nlohmann::json::parse(gpurun({"status", "--json"}, fakes("all_free_8.json")).out);
  EXPECT_EQ(up.at("containers"), nlohmann::json({{"engine", "docker"}, {"checked", true}, {"error", nullptr}}));
  const auto unasked = nlohmann::json::parse(gpurun({"status", "--json", "--ignore-containers"}, env).out);
  EXPECT_EQ(unasked.at("containers"), nlohmann::json({{"engine", nullptr}, {"checked", false}, {"error", nullptr}}));
}

// A slow or failing engine must not let a launch take the GPU of a detached container, which
// nothing else shows busy once its client has returned: the launch stops, a dry run only warns.
TEST_F(ContainerAwarenessTest, ALaunchStopsWhereTheEngineCannotSayWhichContainersHoldGpus) {
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_PS_ERROR", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.");
  const Outcome launch = gpurun({"--image", "img", "1", "job"}, env);
  EXPECT_EQ(launch.exit_code, 125);
  EXPECT_EQ(launch.err,
            "gpurun: error: cannot ask the Docker engine which containers hold GPUs, so a GPU a detached container "
            "holds would look free; nothing was launched: `" +
                fake("docker") +
                " ps` exited with status 1: Cannot connect to the Docker daemon at unix:///var/run/docker.sock.; "
                "try again\n");
  EXPECT_FALSE(std::filesystem::exists(argv_file()));  // no docker run
  const Outcome dry = gpurun({"--dry-run", "--image", "img", "1", "job"}, env);
  EXPECT_EQ(dry.exit_code, 0);
  EXPECT_THAT(dry.err, HasSubstr("going by the GPUs' processes alone"));
}

TEST_F(ContainerAwarenessTest, NoAccessToTheEngineIsSaidWholeWithWhatToAskFor) {
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_PS_ERROR",
                   "permission denied while trying to connect to the Docker daemon socket at "
                   "unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.47/containers/json\": "
                   "dial unix /var/run/docker.sock: connect: permission denied");
  const Outcome ps = gpurun({"ps"}, env);
  EXPECT_EQ(ps.exit_code, 125);
  EXPECT_EQ(ps.out, "");
  EXPECT_THAT(ps.err, HasSubstr("permission denied while trying to connect to the Docker daemon socket"));
  EXPECT_THAT(ps.err, HasSubstr("ask your admin for `sudo gpurun`"));
  EXPECT_THAT(ps.err, HasSubstr("`docker` group"));
  // Cut, if at all, where a word ends.
  EXPECT_THAT(ps.err, Not(HasSubstr("%2Fv...")));
}

TEST_F(ContainerAwarenessTest, PsListsContainersHoldingGpus) {
  const Env env = with_containers("all_free_8.json", kTwoContainers);
  const Outcome ps = gpurun({"ps"}, env);
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_THAT(ps.out, ::testing::StartsWith(
                          "NAME               USER  GPUS  IMAGE        RUNNING FOR  STATUS   GPURUN  COMMAND\n"));
  EXPECT_THAT(ps.out, HasSubstr("bob_gpu0_12345678  bob   0     bob/train:1"));
  EXPECT_THAT(ps.out, HasSubstr("running  yes     python train.py --l…\n"));  // cut to 80 columns
  Env wide = env;
  wide.emplace_back("COLUMNS", "120");
  EXPECT_THAT(gpurun({"ps"}, wide).out, HasSubstr("running  yes     python train.py --lr 0.1\n"));
  EXPECT_THAT(ps.out, HasSubstr("running  no      ?\n"));  // no command in its inspect answer
  EXPECT_THAT(ps.out, HasSubstr("legacy             ?     1     old/tf:18"));

  const auto json = nlohmann::json::parse(gpurun({"ps", "--json"}, env).out);
  ASSERT_EQ(json["containers"].size(), 2u);
  EXPECT_EQ(json.at("containers").at(0).at("gpus").at(0).at("uuid"), "GPU-a84bba07-931d-b925-306a-0799dc6ebd71");
  EXPECT_EQ(json["containers"][1]["started_by_gpurun"], false);
  EXPECT_EQ(json["containers"][0]["command"], "python train.py --lr 0.1");
  // Unknown is null, not "" or -1 (the table's "?").
  EXPECT_EQ(json["containers"][1]["user"], nullptr);
  EXPECT_EQ(json["containers"][1]["command"], nullptr);
  EXPECT_GT(json["containers"][1]["running_s"], 0);
}

// A detached job's container stays when its job ends (no --rm), so `ps -a` shows it ended, and
// `gpurun rm` removes it, never while it runs.
constexpr const char* kEndedJob = R"([
 {"Id": "c1", "Name": "/bob_gpu0_12345678", "State": {"Status": "exited", "Running": false, "ExitCode": 1,
  "StartedAt": "2026-01-01T00:00:00.5Z"}, "Path": "python", "Args": ["train.py"],
  "Config": {"Image": "bob/train:1", "Labels": {"gpurun.user": "bob", "gpurun.gpus": "0"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]}}
])";

TEST_F(ContainerAwarenessTest, AnEndedJobIsListedByPsAllAndRemovedByRm) {
  Env env = with_containers("all_free_8.json", kEndedJob);
  for (auto& [name, value] : env)
    if (name == "FAKE_DOCKER_PS_IDS") value.clear();
  env.emplace_back("FAKE_DOCKER_PS_ALL_IDS", "c1");
  env.emplace_back("COLUMNS", "200");
  const Outcome ps = gpurun({"ps", "-a"}, env);
  // How it ended: its job's exit status.
  EXPECT_THAT(ps.out, ::testing::ContainsRegex("bob_gpu0_12345678  bob +0 +bob/train:1 +- +exited \\(1\\) "));
  const auto json = nlohmann::json::parse(gpurun({"ps", "-a", "--json"}, env).out)["containers"][0];
  EXPECT_EQ(json["running_s"], nullptr);
  EXPECT_EQ(json["exit_code"], 1);
  const Outcome attach = gpurun({"attach", "bob_gpu0_12345678"}, env);  // nothing runs to attach to
  EXPECT_EQ(attach.exit_code, 125);
  EXPECT_THAT(attach.err, HasSubstr("container \"bob_gpu0_12345678\" has ended (exit status 1): gpurun logs "
                                    "bob_gpu0_12345678 prints its output"));

  const Outcome rm = gpurun({"rm", "bob_gpu0_12345678"}, env);
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "bob_gpu0_12345678\n");
  EXPECT_THAT(docker_argv(), ::testing::ElementsAre("rm", "--volumes", "--", "c1"));  // by its id: the name may move

  std::filesystem::remove(argv_file());
  std::string job = kEndedJob;
  job.replace(job.find("\"exited\", \"Running\": false"), 26, "\"running\", \"Running\": true");
  const Env running = with_containers("all_free_8.json", job);
  const Outcome refused = gpurun({"rm", "bob_gpu0_12345678"}, running);
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("container \"bob_gpu0_12345678\" still runs its job: gpurun stop "
                                     "bob_gpu0_12345678 ends it"));
  EXPECT_FALSE(docker_ran());
}

TEST_F(ContainerAwarenessTest, PsAllAsksTheEngineForStoppedContainersToo) {
  Env env = with_containers("all_free_8.json", kTwoContainers);
  for (auto& [name, value] : env)
    if (name == "FAKE_DOCKER_PS_IDS") value.clear();  // nothing running: both have stopped
  env.emplace_back("FAKE_DOCKER_PS_ALL_IDS", "c1 c2");
  EXPECT_EQ(gpurun({"ps"}, env).out, "NAME  USER  GPUS  IMAGE  RUNNING FOR  STATUS  GPURUN  COMMAND\n");
  for (const char* all : {"-a", "--all"}) {
    const Outcome ps = gpurun({"ps", all}, env);
    EXPECT_EQ(ps.exit_code, 0) << ps.err;
    EXPECT_THAT(ps.out, HasSubstr("bob_gpu0_12345678")) << all;
  }
  const Outcome elsewhere = gpurun({"status", "-a"}, env);
  EXPECT_EQ(elsewhere.exit_code, 125);
  EXPECT_THAT(elsewhere.err, HasSubstr("-a/--all is an option of `gpurun ps`, not of `gpurun status`"));
}

TEST_F(GpurunTest, DetachStartsInTheBackgroundAndSaysHowToReachIt) {
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_STDOUT", "4f2a9c0d1e");
  const Outcome run = gpurun({"--detach", "--name", "job7", "--image", "img", "1", "sleep", "100"}, env);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "job7\n");
  // gpurun's own verbs, which reach the same engine (and work under sudo).
  EXPECT_THAT(run.err,
              HasSubstr("follow its output: gpurun logs -f job7   (it stays after the job ends, until removed)"));
  EXPECT_THAT(run.err, HasSubstr("attach to it:      gpurun attach job7   (detach again with Ctrl-P Ctrl-Q)\n"));
  EXPECT_THAT(run.err, HasSubstr("stop it:           gpurun stop job7\n"));
  EXPECT_THAT(run.err, HasSubstr("once it has ended: gpurun rm job7   (removes the container and its output)\n"));
  const auto argv = docker_argv();
  ASSERT_GE(argv.size(), 5u);
  // No --rm: however the job ends (Ctrl-C in `gpurun attach` too), its output stays to read.
  EXPECT_THAT(argv, Not(::testing::Contains("--rm")));
  EXPECT_EQ(argv[1], "--init");  // docker's own init as PID 1: `gpurun stop`'s SIGTERM reaches the job
  // docker's -dit: attach has a stdin and a terminal, so Ctrl-P Ctrl-Q detaches again.
  EXPECT_EQ(argv[2], "--detach");
  EXPECT_EQ(argv[3], "--interactive");
  EXPECT_EQ(argv[4], "--tty");
}

TEST_F(GpurunTest, DetachPassesDockersFailureOn) {
  Env env = fakes("all_free_8.json", 125);
  env.emplace_back("FAKE_DOCKER_STDERR", "docker: Error response from daemon: Conflict.");
  const Outcome run = gpurun({"-d", "--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("Conflict."));
  EXPECT_EQ(run.out, "");
}

// A detached launch whose container was created but did not start (its command not found) leaves
// nothing behind, as --rm did: the next launch may take its name. Never the older container whose
// name made the launch fail.
TEST_F(GpurunTest, ADetachedContainerThatDidNotStartIsRemoved) {
  const std::string inspect = dir() + "/inspect.json";
  // Made by this launch (after it began, with its uid): an older one of that name, or another
  // user's, is never removed.
  const auto made = [&](const std::string& created, unsigned uid) {
    std::ofstream(inspect) << R"([{"Id": "c9", "Name": "/job7", "Created": ")" << created
                           << R"(", "State": {"Status": "created", "Running": false}, "Config": {"Labels":
      {"gpurun.user": "me", "gpurun.uid": ")"
                           << uid << R"(", "gpurun.gpus": "0", "gpurun.name": "job7"}}}])";
  };
  made("2099-01-01T00:00:00Z", ::getuid());
  Env env = fakes("all_free_8.json", 127);
  env.emplace_back("FAKE_DOCKER_INSPECT_AFTER_RUN", inspect);  // before the run, no container has the name
  env.emplace_back("FAKE_DOCKER_STDERR",
                   "docker: Error response from daemon: failed to create task: exec: \"trian\": "
                   "executable file not found in $PATH: unknown.");
  const Outcome run = gpurun({"-d", "--name", "job7", "--image", "img", "1", "trian"}, env);
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_THAT(docker_argv(), ::testing::ElementsAre("rm", "--volumes", "--", "c9"));  // the last thing docker was asked

  for (const auto& [created, uid] : {std::pair{std::string("2020-01-01T00:00:00Z"), ::getuid()},
                                     std::pair{std::string("2099-01-01T00:00:00Z"), ::getuid() + 1}}) {
    std::filesystem::remove(argv_file());
    std::filesystem::remove(inspect + ".ran");
    made(created, uid);
    EXPECT_EQ(gpurun({"-d", "--name", "job7", "--image", "img", "1", "trian"}, env).exit_code, 127);
    EXPECT_EQ(docker_argv().at(0), "run") << created << " " << uid;  // nothing asked after the run
  }
}

// A --name an ended detached job still has is said before the pick (and any --wait), with whose it
// is and what to type; docker is not asked to run.
TEST_F(GpurunTest, ANameAContainerHasIsRefusedBeforeThePick) {
  const std::string inspect = dir() + "/inspect.json";
  const std::string me = std::to_string(::getuid());
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_INSPECT", inspect);
  std::ofstream(inspect) << R"([{"Id": "c8", "Name": "/job7", "State": {"Status": "exited", "Running": false},
    "Config": {"Labels": {"gpurun.user": "me", "gpurun.uid": ")"
                         << me << R"(", "gpurun.gpus": "0", "gpurun.name": "job7"}}}])";
  const Outcome ended = gpurun({"-d", "--wait", "--name", "job7", "--image", "img", "1", "true"}, env);
  EXPECT_EQ(ended.exit_code, 125);
  EXPECT_THAT(ended.err, HasSubstr("--name job7: an ended job of yours has that name (gpurun logs job7 shows its "
                                   "output, gpurun rm job7 removes it); or choose another --name"));
  EXPECT_FALSE(docker_ran());
  std::ofstream(inspect) << R"([{"Id": "c8", "Name": "/job7", "State": {"Status": "running", "Running": true},
    "Config": {"Labels": {"gpurun.user": "bob", "gpurun.uid": "4242", "gpurun.gpus": "0", "gpurun.name": "job7"}}}])";
  const Outcome running = gpurun({"--name", "job7", "--image", "img", "1", "true"}, env);
  EXPECT_EQ(running.exit_code, 125);
  EXPECT_THAT(running.err, HasSubstr("--name job7: bob's job runs under that name; choose another --name"));
  EXPECT_FALSE(docker_ran());
  // inspect finds an id by its prefix too: --name c8 is free while no container has that name.
  EXPECT_EQ(gpurun({"--name", "c8", "--image", "img", "1", "true"}, env).exit_code, 0);
  EXPECT_TRUE(docker_ran());
}

// A port in use is no name in use: no word of names.
TEST_F(GpurunTest, DetachOntoAPortInUseSaysNothingOfNames) {
  Env env = fakes("all_free_8.json", 125);
  env.emplace_back("FAKE_DOCKER_STDERR",
                   "docker: Error response from daemon: driver failed programming external connectivity on endpoint "
                   "job7: Error starting userland proxy: listen tcp4 0.0.0.0:8888: bind: address already in use.");
  const Outcome run = gpurun({"-d", "--name", "job7", "-p", "8888:8888", "--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, Not(HasSubstr("a container named")));
}

// The name of an ended detached job stays taken until `gpurun rm`: said with what to type.
TEST_F(GpurunTest, DetachIntoATakenNameSaysHowToFreeIt) {
  Env env = fakes("all_free_8.json", 125);
  env.emplace_back("FAKE_DOCKER_STDERR",
                   "docker: Error response from daemon: Conflict. The container name \"/job7\" is already in use by "
                   "container \"4f2a\". You have to remove (or rename) that container to be able to reuse that name.");
  const Outcome run = gpurun({"-d", "--name", "job7", "--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("gpurun: a container named job7 is there already; if it is an ended job of yours, "
                                 "gpurun logs job7 shows its output and gpurun rm job7 removes it"));
  EXPECT_EQ(run.out, "");
}

}  // namespace
}  // namespace gpurun::testing
