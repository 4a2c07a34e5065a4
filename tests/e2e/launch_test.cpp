// End-to-end: gpurun picks GPUs from the stand-in nvidia-smi and execs (or prints) docker run.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <cstring>

#include "gpurun/engine/docker_command.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kUuid2 = "GPU-ce9da201-e0c0-d1a0-dc00-f0e71a714a16";
constexpr const char* kUuid5 = "GPU-171b2f3a-9f88-9eea-f77e-e09a4496e0ed";

// What gpurun must run for `--name job --host-cpus 64 2 -- python train.py --lr 0.1` on the busy DGX:
// GPUs 2 and 5 are the only free ones; 64 CPUs / 8 GPUs = 8 per GPU, so --cpus 16.
std::vector<std::string> expected_busy_dgx_args() {
  const std::string cwd = current_directory();
  const LaunchIdentity me = current_identity();
  return {"run",
          "--rm",
          "--init",
          "--interactive",
          "--name",
          "job",
          "--gpus",
          "\"device=2,5\"",
          "--cpus",
          "16",
          "--user",
          fmt::format("{}:{}", ::getuid(), ::getgid()),
          "--volume",
          cwd + ":" + cwd,
          "--workdir",
          cwd,
          "--shm-size=1g",
          "--ulimit",
          "memlock=-1",
          "--ulimit",
          "stack=67108864",
          "--log-opt",
          "max-size=50m",
          "--label",
          "gpurun.user=" + me.login,
          "--label",
          "gpurun.gpus=2,5",
          "--label",
          fmt::format("gpurun.gpu-uuids={},{}", kUuid2, kUuid5),
          "--label",
          fmt::format("gpurun.uid={}", ::getuid()),
          "--label",
          "gpurun.name=job",
          "--label",
          "gpurun.time-limit=",
          "--label",
          "gpurun.notify=",
          "--label",
          "gpurun.detached=",
          "me/torch:24.05",
          "python",
          "train.py",
          "--lr",
          "0.1"};
}

const std::vector<std::string> kBusyDgxLaunch{"--image", "me/torch:24.05", "--name",   "job",  "--host-cpus", "64", "2",
                                              "--",      "python",         "train.py", "--lr", "0.1"};

TEST_F(GpurunTest, LaunchExecsDockerOnTheTwoFreeGpusWithTheWholeCommand) {
  const Outcome run = gpurun(kBusyDgxLaunch, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(docker_argv(), ElementsAreArray(expected_busy_dgx_args()));
  EXPECT_EQ(run.out, "");
}

TEST_F(GpurunTest, DockerExitStatusIsGpurunsExitStatus) {
  const Outcome run = gpurun(kBusyDgxLaunch, fakes("busy_dgx.json", 42));
  EXPECT_EQ(run.exit_code, 42);
  EXPECT_TRUE(docker_ran());
}

TEST_F(GpurunTest, DryRunPrintsTheQuotedCommandOnStdoutAndRunsNothing) {
  std::vector<std::string> args{"--dry-run"};
  args.insert(args.end(), kBusyDgxLaunch.begin(), kBusyDgxLaunch.end());
  const Outcome run = gpurun(args, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_FALSE(docker_ran());
  const std::string cwd = current_directory();
  EXPECT_EQ(
      run.out,
      fmt::format(
          "{} run --rm --init --interactive --name job --gpus '\"device=2,5\"' --cpus 16 --user {}:{} "
          "--volume {}:{} --workdir {} --shm-size=1g --ulimit memlock=-1 --ulimit stack=67108864 "
          "--log-opt max-size=50m --label gpurun.user={} --label gpurun.gpus=2,5 "
          "--label gpurun.gpu-uuids={},{} --label gpurun.uid={} --label gpurun.name=job --label gpurun.time-limit= "
          "--label gpurun.notify= --label gpurun.detached= me/torch:24.05 python train.py --lr 0.1\n",
          fake("docker"), ::getuid(), ::getgid(), cwd, cwd, cwd, current_identity().login, kUuid2, kUuid5, ::getuid()));
  // The ranking and the reasons go to stderr.
  EXPECT_THAT(run.err, HasSubstr("busy: 1 compute process (pid 52771)"));
  EXPECT_THAT(run.err, HasSubstr("picked GPUs 2,5 of 8"));
}

TEST_F(GpurunTest, PastingTheDryRunLineRunsExactlyTheSameArgv) {
  const std::vector<std::string> args{"--dry-run",
                                      "--image",
                                      "me/torch:24.05",
                                      "--name",
                                      "job",
                                      "2",
                                      "--",
                                      "python",
                                      "-c",
                                      "print('it''s $HOME'); import sys",
                                      "a b",
                                      "*",
                                      "",
                                      "\\n"};
  const Outcome dry = gpurun(args, fakes("busy_dgx.json"));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  ASSERT_FALSE(docker_ran());
  const Outcome pasted = shell(dry.out, fakes("busy_dgx.json"));
  ASSERT_EQ(pasted.exit_code, 0) << pasted.err;
  const std::vector<std::string> argv = docker_argv();
  ASSERT_GE(argv.size(), 7u);
  EXPECT_THAT(std::vector<std::string>(argv.end() - 7, argv.end()),
              ElementsAreArray({"python", "-c", "print('it''s $HOME'); import sys", "a b", "*", "", "\\n"}));
  EXPECT_THAT(argv, ::testing::Contains("\"device=2,5\""));
}

TEST_F(GpurunTest, WordsAfterTheCommandAreTheJobsEvenWithoutDoubleDash) {
  const Outcome run = gpurun({"--image", "img", "2", "--dry-run", "python", "train.py", "--dry-run", "--image", "x"},
                             fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ::testing::EndsWith(" img python train.py --dry-run --image x\n"));
}

TEST_F(GpurunTest, WithoutNOneGpuAndTheImagesOwnCommand) {
  const Outcome run = gpurun({"--dry-run", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--gpus '\"device=5\"'"));  // GPU 5 has the lowest score
  EXPECT_THAT(run.out, ::testing::EndsWith(" img\n"));
}

TEST_F(GpurunTest, DoubleDashAloneStartsTheCommandOnOneGpu) {
  const Outcome run = gpurun({"--dry-run", "--image", "img", "--", "python", "x.py"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--gpus '\"device=5\"'"));
  EXPECT_THAT(run.out, ::testing::EndsWith(" img python x.py\n"));
}

// Where gpurund listens, a time limit draws no warning; where nothing does, it is said, and a
// launch without one asks nothing of the socket.
TEST_F(GpurunTest, ATimeLimitWithoutTheServiceIsSaid) {
  const std::string socket_path = dir() + "/gpurund.sock";
  const Fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes a sockaddr*
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  const std::vector<std::string> limited{"--image", "img", "--time-limit", "90m", "1", "--", "true"};
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_SERVICE_SOCKET", socket_path);
  const Outcome served = gpurun(limited, env);
  EXPECT_EQ(served.exit_code, 0) << served.err;
  EXPECT_THAT(served.err, Not(HasSubstr("does not answer")));
  const Outcome unserved = gpurun(limited, fakes("busy_dgx.json"));
  EXPECT_EQ(unserved.exit_code, 0) << unserved.err;
  EXPECT_THAT(unserved.err, HasSubstr("the gpurun service does not answer on " + dir() +
                                      "/no-gpurund.sock, so its time limit is not acted on"));
  const Outcome plain = gpurun({"--image", "img", "1", "--", "true"}, fakes("busy_dgx.json"));
  EXPECT_THAT(plain.err, Not(HasSubstr("does not answer")));
}

TEST_F(GpurunTest, ATimeLimitIsALabelCappedByMaxRuntimeAndOneAboveItIsRefused) {
  const Outcome limited =
      gpurun({"--dry-run", "--image", "img", "--time-limit", "90m", "--notify", "1"}, fakes("busy_dgx.json"));
  EXPECT_EQ(limited.exit_code, 0) << limited.err;
  EXPECT_THAT(limited.out, HasSubstr(" --label gpurun.time-limit=5400 --label gpurun.notify=run_ended "));
  EXPECT_THAT(limited.err, HasSubstr("--notify: this server's system file sets no \"notify\""));
  EXPECT_THAT(limited.err, HasSubstr("the gpurun service does not answer on " + dir() +
                                     "/no-gpurund.sock, so its time limit and --notify are not acted on"));

  std::ofstream(system_config()) << "{\n  \"max_runtime\": \"8h\"\n}\n";
  const Outcome capped = gpurun({"--dry-run", "--image", "img", "1"}, fakes("busy_dgx.json"));
  EXPECT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_THAT(capped.out, HasSubstr(" --label gpurun.time-limit=28800 "));
  EXPECT_THAT(capped.out, HasSubstr(" --label gpurun.notify= "));  // empty: not the image's
  const Outcome refused = gpurun({"--dry-run", "--image", "img", "--time-limit", "2d", "1"}, fakes("busy_dgx.json"));
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_EQ(refused.out, "");
  EXPECT_THAT(refused.err, HasSubstr("--time-limit 2d is refused: the site policy \"max_runtime\" in " +
                                     system_config() + ":2 allows at most 8h"));
  const Outcome bad = gpurun({"--dry-run", "--image", "img", "--time-limit", "soon", "1"}, fakes("busy_dgx.json"));
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_THAT(bad.err, HasSubstr("a duration such as \"90m\", \"8h\" or \"2d\""));
}

TEST_F(GpurunTest, ExtraDockerOptionsComeInOrderBeforeTheImage) {
  const Outcome run =
      gpurun({"--dry-run", "--image", "img", "--name", "nn", "-e", "A=1", "--env=B=2 3", "-v", "/data:/data", "-p",
              "8888:8888", "--docker-opt", "--ipc=host", "--docker-opt", "--network=none", "1"},
             fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(
      run.out,
      HasSubstr("--label gpurun.gpus=5 --label gpurun.gpu-uuids=" + std::string(kUuid5) +
                " --label gpurun.uid=" + std::to_string(::getuid()) +
                " --label gpurun.name=nn --label gpurun.time-limit= --label gpurun.notify=" +
                " --label gpurun.detached= --env A=1 --env 'B=2 3' --volume /data:/data --publish 8888:8888 --ipc=host "
                "--network=none img\n"));
  // docker keeps "/nn" as "nn": so does the label, or it would not match and the container would
  // not count as gpurun's (its time limit and its user's stop lost).
  const Outcome slashed = gpurun({"--dry-run", "--image", "img", "--name", "/nn", "1"}, fakes("busy_dgx.json"));
  EXPECT_THAT(slashed.out, HasSubstr(" --name nn "));
  EXPECT_THAT(slashed.out, HasSubstr("--label gpurun.name=nn "));
}

TEST_F(GpurunTest, NoTtyFlagWhenStdinIsNotATerminal) {
  const Outcome run = gpurun({"--dry-run", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_THAT(run.out, Not(HasSubstr("--tty")));
}

TEST_F(GpurunTest, TtyFlagWhenStdinAndStdoutAreTerminals) {
  // script(1) gives the command a pseudo-terminal for stdin and stdout.
  if (::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  const Outcome run =
      shell(fmt::format("script -qec '{} --dry-run -q --image img' /dev/null", GPURUN_BINARY), fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("docker run --rm --init --interactive --tty --name "));
}

TEST_F(GpurunTest, GeneratedContainerNameStartsWithTheLoginAndIsUniquePerLaunch) {
  const Outcome first = gpurun({"--dry-run", "--image", "img", "2"}, fakes("busy_dgx.json"));
  const Outcome second = gpurun({"--dry-run", "--image", "img", "2"}, fakes("busy_dgx.json"));
  const std::string prefix = "--name " + container_name(current_identity().login, {2, 5}, "");
  EXPECT_THAT(first.out, HasSubstr(prefix + "_"));
  EXPECT_THAT(second.out, HasSubstr(prefix + "_"));
  EXPECT_NE(first.out, second.out);
}

TEST_F(GpurunTest, ImageAndDockerComeFromTheEnvironment) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_IMAGE", "env/image:1");
  const Outcome run = gpurun({"--dry-run"}, env);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ::testing::StartsWith(fake("docker") + " run "));
  EXPECT_THAT(run.out, ::testing::EndsWith(" env/image:1\n"));
}

TEST_F(GpurunTest, ImageFlagBeatsTheEnvironment) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_IMAGE", "env/image:1");
  const Outcome run = gpurun({"--dry-run", "--image", "flag/image:2"}, env);
  EXPECT_THAT(run.out, ::testing::EndsWith(" flag/image:2\n"));
}

TEST_F(GpurunTest, NvidiaSmiAndDockerAreFoundOnPath) {
  // A PATH holding only the stand-ins' directory (and the system's, for sh and python3).
  Env env{{"PATH", std::string(GPURUN_FAKES_DIR) + ":/usr/bin:/bin"},
          {"FAKE_SMI_SCENARIO", scenario("busy_dgx.json")},
          {"FAKE_DOCKER_ARGV", argv_file()}};
  const Outcome run = gpurun({"--image", "img", "2", "true"}, env);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto argv = docker_argv();
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv.front(), "run");
  EXPECT_EQ(argv.back(), "true");
}

TEST_F(GpurunTest, CpusAreTheFairSharePerGpuClampedToTheHost) {
  const auto cpus_for = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--dry-run", "-q", "--image", "img"});
    const Outcome run = gpurun(args, fakes("all_free_8.json"));
    const auto at = run.out.find("--cpus ");
    return at == std::string::npos ? std::string("none: " + run.err)
                                   : run.out.substr(at + 7, run.out.find(' ', at + 7) - at - 7);
  };
  EXPECT_EQ(cpus_for({"--host-cpus", "128", "2"}), "32");  // 128/8 = 16 per GPU
  EXPECT_EQ(cpus_for({"--host-cpus", "256", "2"}), "48");  // 32 per GPU, clamped to 24
  EXPECT_EQ(cpus_for({"--host-cpus", "32", "2"}), "16");   // 4 per GPU, raised to 8
  EXPECT_EQ(cpus_for({"--host-cpus", "128", "--cpus-per-gpu", "10", "3"}), "30");
  EXPECT_EQ(cpus_for({"--host-cpus", "12", "2"}), "12");  // 16 wanted, the host has 12
}

TEST_F(GpurunTest, CpusCutToTheHostAreANoteOfTheDryRunAndOfVerboseNotAWarningAtEachLaunch) {
  const std::string note = "8 CPUs per GPU x 2 GPUs = 16 CPUs, but the host has 12: using --cpus 12";
  const Outcome dry = gpurun({"--dry-run", "--image", "img", "--host-cpus", "12", "2"}, fakes("all_free_8.json"));
  EXPECT_EQ(dry.exit_code, 0);
  EXPECT_THAT(dry.err, HasSubstr("info: " + note));
  const Outcome quiet =
      gpurun({"--dry-run", "-q", "--image", "img", "--host-cpus", "12", "2"}, fakes("all_free_8.json"));
  EXPECT_THAT(quiet.err, Not(HasSubstr(note)));
  const Outcome launch = gpurun({"--image", "img", "--host-cpus", "12", "2", "--", "true"}, fakes("all_free_8.json"));
  EXPECT_EQ(launch.exit_code, 0) << launch.err;
  EXPECT_THAT(launch.err, Not(HasSubstr(note)));
  const Outcome verbose =
      gpurun({"--verbose", "--image", "img", "--host-cpus", "12", "2", "--", "true"}, fakes("all_free_8.json"));
  EXPECT_THAT(verbose.err, HasSubstr(note));
}

TEST_F(GpurunTest, AllowBusyTakesTheLowestScoresAmongAllGpus) {
  const Outcome run = gpurun({"--dry-run", "--image", "img", "--allow-busy", "4"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--gpus '\"device=2,3,5,6\"'"));
}

TEST_F(GpurunTest, CwdWithAColonIsMountedWithMountSyntax) {
  const std::string odd = dir() + "/a:b";
  std::filesystem::create_directory(odd);
  const Outcome run =
      shell(fmt::format("cd '{}' && exec {} --dry-run --image img", odd, GPURUN_BINARY), fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(fmt::format("--mount type=bind,source={}/a:b,target={}/a:b --workdir {}/a:b ", dir(),
                                             dir(), dir())));
}

}  // namespace
}  // namespace gpurun::testing
