// End-to-end: every failure of gpurun is one clear message on stderr and a documented exit code.
#include <gmock/gmock.h>
#include <sys/stat.h>

#include <algorithm>
#include <sstream>

#include "gpurun_fixture.hpp"
#include "support/test_support.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(GpurunTest, TooFewFreeGpusExit125ListingEachGpuAndWhy) {
  const Outcome run = gpurun({"--image", "img", "3", "python"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_FALSE(docker_ran());
  EXPECT_THAT(run.err, HasSubstr("gpurun: error: need 3 free GPUs but 2 of 8 are free:"));
  EXPECT_THAT(run.err, HasSubstr("GPU 3  NVIDIA A100-SXM4-80GB    busy: 1 compute process (pid 52771)"));
  EXPECT_THAT(
      run.err,
      HasSubstr("GPU 6  NVIDIA A100-SXM4-80GB    busy: 1 compute process (pid 50310); utilization 30% > limit 10%"));
  EXPECT_THAT(run.err, HasSubstr("GPU 5  NVIDIA A100-SXM4-80GB    free"));
  EXPECT_THAT(run.err, HasSubstr("--allow-busy"));
  EXPECT_EQ(run.out, "");
}

TEST_F(GpurunTest, ASlurmOciCacheThatIsNoCacheSaysWhatToRemoveOrSet) {
  // A FIFO for the bundle's config.json hung the launch; a file cut short was the JSON parser's
  // words, and a cache that is a file the filesystem library's.
  test::write_script(dir() + "/bin/srun", "exit 0");
  test::write_script(dir() + "/bin/sinfo", "echo gpu:8");
  const std::string bundle = dir() + "/cache/images/img-img/bundle";
  std::filesystem::create_directories(bundle);
  ASSERT_EQ(::mkfifo((bundle + "/config.json").c_str(), 0600), 0);
  Env env = fakes("all_free_8.json");
  env.insert(env.end(), {{"PATH", dir() + "/bin:/usr/bin:/bin"}, {"SLURM_JOB_ID", "77"}, {"SLURM_JOB_GPUS", "0"}});
  const std::vector<std::string> launch{"--backend",
                                        "slurm",
                                        "--slurm-container",
                                        "oci",
                                        "--cpus-per-gpu",
                                        "8",
                                        "--slurm-oci-cache",
                                        dir() + "/cache",
                                        "--image",
                                        "img",
                                        "1",
                                        "true"};
  Outcome run = gpurun(launch, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("the cached bundle's " + bundle +
                                 "/config.json is unusable (it is not a regular "
                                 "file); remove " +
                                 dir() + "/cache/images/img-img and it is built again"));
  std::filesystem::remove(bundle + "/config.json");
  test::write_file(bundle + "/config.json", "{\"ociVersion\": ");
  run = gpurun(launch, env);
  EXPECT_THAT(run.err, HasSubstr("is unusable (it is not a JSON object)"));
  test::write_file(dir() + "/a-file", "");
  std::vector<std::string> in_a_file = launch;
  in_a_file[7] = dir() + "/a-file";
  run = gpurun(in_a_file, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("cannot make the bundle cache " + dir() +
                                 "/a-file/images/img-img: Not a directory; set "
                                 "slurm_oci_cache"));
}

// A build that a killed launch left (Ctrl-C in an hour's pull) is removed by the next build of
// its image once it is older than any build can take; a build under way is not.
TEST_F(GpurunTest, ASlurmOciBuildALaunchAbandonedIsRemovedByTheNext) {
  test::write_script(dir() + "/bin/srun", "exit 0");
  test::write_script(dir() + "/bin/sinfo", "echo gpu:8");
  test::write_script(dir() + "/bin/skopeo", "echo 'skopeo: no registry here' >&2; exit 1");
  const std::string image_dir = dir() + "/cache/images/img-img";
  std::filesystem::create_directories(image_dir + "/building.abandoned/layout");
  std::filesystem::create_directories(image_dir + "/building.underway/layout");
  std::filesystem::last_write_time(image_dir + "/building.abandoned",
                                   std::filesystem::file_time_type::clock::now() - std::chrono::hours(4));
  Env env = fakes("all_free_8.json");
  env.insert(env.end(), {{"PATH", dir() + "/bin:/usr/bin:/bin"}, {"SLURM_JOB_ID", "77"}, {"SLURM_JOB_GPUS", "0"}});
  const Outcome run = gpurun({"--backend", "slurm", "--slurm-container", "oci", "--cpus-per-gpu", "8",
                              "--slurm-oci-cache", dir() + "/cache", "--image", "img", "1", "true"},
                             env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("skopeo: no registry here"));
  EXPECT_FALSE(std::filesystem::exists(image_dir + "/building.abandoned"));
  EXPECT_TRUE(std::filesystem::exists(image_dir + "/building.underway"));
  int builds = 0;  // this launch's own, removed as it failed
  for (const auto& entry : std::filesystem::directory_iterator(image_dir))
    builds += entry.path().filename().string().starts_with("building.") ? 1 : 0;
  EXPECT_EQ(builds, 1);
}

TEST_F(GpurunTest, MissingImageIsAClearError) {
  const Outcome run = gpurun({"2", "python"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("gpurun: error: no image to run: pass --image IMAGE"));
  EXPECT_THAT(run.err, HasSubstr("GPURUN_IMAGE"));
}

TEST_F(GpurunTest, AnErrorNeverWritesAControlCharacterItQuotes) {
  // A path (or key, or name) the message quotes may hold an escape sequence: shown as \x1b.
  const Outcome run = gpurun({"--config", "/nonexistent/a\x1b]0;owned\x07.json"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("configuration file /nonexistent/a\\x1b]0;owned\\x07.json does not exist"));
  EXPECT_EQ(run.err.find('\x1b'), std::string::npos);
  // A line end in a name keeps the message on one line: a second line could pass for another message.
  for (const char* flag : {"--config", "--from-csv"}) {
    const Outcome split = gpurun({flag, "/nonexistent/a\ngpurun: error: b", "status"}, fakes("busy_dgx.json"));
    EXPECT_EQ(split.exit_code, 125) << flag;
    EXPECT_THAT(split.err, HasSubstr("/nonexistent/a\\x0agpurun: error: b")) << flag;
    EXPECT_EQ(std::count(split.err.begin(), split.err.end(), '\n'), 1) << split.err;
  }
}

TEST_F(GpurunTest, DockerNotFoundExits127) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_DOCKER", dir() + "/no-such-docker");
  const Outcome run = gpurun({"--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_THAT(run.err, HasSubstr("no-such-docker not found"));
}

// logs, attach, stop and rm ask docker about the container first: a missing client is 127 there too.
TEST_F(GpurunTest, DockerNotFoundIs127ForLogsAttachStopAndRmToo) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_DOCKER", dir() + "/no-such-docker");
  for (const char* verb : {"logs", "attach", "stop", "rm"}) {
    const Outcome run = gpurun({verb, "job7"}, env);
    EXPECT_EQ(run.exit_code, 127) << verb;
    EXPECT_THAT(run.err, HasSubstr("no-such-docker not found")) << verb;
  }
}

TEST_F(GpurunTest, DockerNotOnPathExits127) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_DOCKER", "gpurun-no-such-docker");
  const Outcome run = gpurun({"--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_THAT(run.err, HasSubstr("gpurun-no-such-docker not found on PATH"));
}

TEST_F(GpurunTest, DockerNotExecutableExits126) {
  const std::string plain = dir() + "/docker";
  std::ofstream(plain) << "#!/bin/sh\n";
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_DOCKER", plain);
  const Outcome run = gpurun({"--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 126);
  EXPECT_THAT(run.err, HasSubstr("cannot execute " + plain));
}

TEST_F(GpurunTest, DockerThatIsNoProgramIsNotRunThroughAShell) {
  // execvp would hand a file without #! to /bin/sh; gpurun must not.
  const std::string text = dir() + "/docker";
  std::ofstream(text) << "echo ran-by-a-shell > " << dir() << "/ran\n";
  std::filesystem::permissions(text, std::filesystem::perms::owner_all);
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_DOCKER", text);
  const Outcome run = gpurun({"--image", "img"}, env);
  EXPECT_EQ(run.exit_code, 126);
  EXPECT_FALSE(std::filesystem::exists(dir() + "/ran"));
}

struct DriverFailure {
  const char* scenario;
  const char* relayed;  // nvidia-smi's own words, which gpurun must pass on
};

void PrintTo(const DriverFailure& failure, std::ostream* out) { *out << failure.scenario; }

class NvidiaSmiFailure : public GpurunTest, public ::testing::WithParamInterface<DriverFailure> {};

TEST_P(NvidiaSmiFailure, RelaysTheDriversOwnMessageAndExits125) {
  const Outcome run = gpurun({"--image", "img", "--dry-run"}, fakes(GetParam().scenario));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("gpurun: error: "));
  EXPECT_THAT(run.err, HasSubstr(GetParam().relayed));
  EXPECT_EQ(run.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    DriverStates, NvidiaSmiFailure,
    ::testing::Values(
        DriverFailure{"no_devices.json",
                      "exited with status 6: No devices were found. No NVIDIA GPU is visible on this machine."},
        DriverFailure{
            "driver_not_loaded.json",
            "exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
        DriverFailure{"mismatch.json",
                      "exited with status 18: Failed to initialize NVML: Driver/library version mismatch"}));

TEST_F(GpurunTest, NvidiaSmiNotFoundSaysWhatToDo) {
  Env env = fakes("busy_dgx.json");
  env.emplace_back("GPURUN_NVIDIA_SMI", dir() + "/nvidia-smi");
  const Outcome run = gpurun({"status"}, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("nvidia-smi not found"));
  EXPECT_THAT(run.err, HasSubstr("--from-csv"));
}

// A parent that ignores SIGCHLD passes that on through exec: the kernel then reaps our children
// itself, and without setting it back gpurun waited for nvidia-smi until its timeout.
TEST_F(GpurunTest, AParentThatIgnoresSigchldDoesNotMakeNvidiaSmiLookHung) {
  const Outcome run = shell(
      "python3 -c 'import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
      "os.execv(sys.argv[1], sys.argv[1:])' " +
          std::string(GPURUN_BINARY) + " --smi-timeout 20 status",
      fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, Not(HasSubstr("did not answer")));
}

TEST_F(GpurunTest, SlowNvidiaSmiIsKilledAtTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const Outcome run = gpurun({"--smi-timeout", "0.5", "status"}, fakes("slow.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("did not answer within 0.5 s and was killed. A busy or hung driver answers late: "
                                 "--smi-timeout SECONDS waits longer."));
  // A guard against hanging on the 30 s stand-in, not a speed measurement.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(GpurunTest, GarbledNvidiaSmiOutputNamesTheLine) {
  const std::string csv = dir() + "/bad.csv";
  std::ofstream(csv) << "0, GPU-a, A100, 10, 81920, 0, Disabled\n1, GPU-b, A100, lots, 81920, 0, Disabled\n";
  const Outcome run = gpurun({"--from-csv", csv, "status"});
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("line 2: memory.used is \"lots\", not an amount of memory"));
}

struct UsageCase {
  std::vector<std::string> args;
  const char* message;
};

void PrintTo(const UsageCase& usage, std::ostream* out) {
  for (const auto& arg : usage.args) *out << arg << ' ';
}

class UsageError : public GpurunTest, public ::testing::WithParamInterface<UsageCase> {};

TEST_P(UsageError, Exits125WithAMessage) {
  const Outcome run = gpurun(GetParam().args, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr(GetParam().message));
  EXPECT_FALSE(docker_ran());
}

INSTANTIATE_TEST_SUITE_P(
    BadInvocations, UsageError,
    ::testing::Values(
        UsageCase{{"--image", "img", "0"}, "expected the number of GPUs, a whole number from 1 to 4096, got 0"},
        UsageCase{{"--image", "img", "-3"}, "got -3"}, UsageCase{{"--image", "img", "2.5"}, "got 2.5"},
        UsageCase{{"--image", "img", "two"}, "got \"two\""},
        UsageCase{{"help"}, "\"help\" is no verb of gpurun's: gpurun --help"},
        UsageCase{{"kill", "job"}, "\"kill\" is no verb of gpurun's: gpurun stop NAME"},
        // (A new user's mistakes, from a review.) After N, a duration after --wait is its value
        // still; a bare number is the job's first word or the wait's.
        UsageCase{{"--image", "img", "4", "--wait", "5", "python"},
                  "\"--wait 5\" could mean either: write --wait=5 to wait up to 5 seconds, or --wait -- 5"},
        UsageCase{{"--image", "img", "--wait", "30min", "1"}, "--wait 30min: not a duration"},
        // `--wait=$LIMIT` with the variable unset is no wait without limit.
        UsageCase{{"--image", "img", "--wait=", "1"},
                  "--wait= has nothing after the '=': write --wait=VALUE, or --wait alone (as --wait=forever)"},
        // docker run would take an -e "" for the image, and run "img" as the command.
        UsageCase{{"--image", "img", "-e", "A=1", "-e", "", "1"},
                  "--env: an empty item would reach docker run (or srun) as a word of its own; leave it out"},
        UsageCase{{"--image", "img", "-p", "", "1"}, "--publish: an empty item would reach docker run"},
        UsageCase{{"2", "python", "train.py", "--image", "img"},
                  "no image to run: --image is in the job's command, which begins after N; put it before N"},
        UsageCase{{"--image", "img", "--time-limit", "90", "1"},
                  "--time-limit: expected a duration with its unit, such as \"90m\" or \"90s\", got \"90\""},
        UsageCase{{"--image", "img", "--name", "bad name", "1"}, "--name \"bad name\": a container name is letters"},
        UsageCase{{"--image", "img", "--name", "_job", "1"}, "--name \"_job\": a container name is letters"},
        UsageCase{{"--image", "img", "--name", "/", "1"}, "--name \"/\": a container name is letters"},
        UsageCase{{"--image", "img", "--name", "job\xc3\xa9", "1"}, "a container name is letters"},
        UsageCase{{"--backend", "slurm", "--mig=1g.10gb", "--image", "img", "1"},
                  "--mig picks MIG instances on this server"},
        UsageCase{{"--image", "img", "-v", "data/in:/in", "1"},
                  "--volume \"data/in:/in\": a host path must be absolute (docker reads data/in as a volume's name)"},
        UsageCase{{"stop", "a", "b"}, "gpurun stop takes one name, but got \"b\" after \"a\": run it once for each"},
        UsageCase{{"--image", "img", "--allow-busy=2", "1"},
                  "--allow-busy is a switch and takes no value: write --allow-busy alone"},
        UsageCase{{"--image", "img", "--", "2", "python"},
                  "to run it on 2 GPUs, put the number before the \"--\" (gpurun 2 -- python)"},
        UsageCase{{"--image", "img", "python", "train.py"}, "`gpurun 1 python` or `gpurun -- python`"},
        UsageCase{{"--no-such-flag"}, "--no-such-flag"},
        UsageCase{{"--image", "img", "--cpus-per-gpu", "30"}, "--cpus-per-gpu: 30 is outside 8..24"},
        UsageCase{{"--image", "img", "--max-memory", "lots"}, "--max-memory \"lots\""},
        UsageCase{{"--image", "img", "--max-util", "150"}, "--max-util \"150\""},
        UsageCase{{"--image", "img", "--smi-timeout", "abc"}, "--smi-timeout"},
        UsageCase{{"--image", "img", "--smi-timeout", "0"},
                  "--smi-timeout: expected a number of seconds of at least 0.001"},
        UsageCase{{"status", "2"}, "gpurun status takes no N"},
        UsageCase{{"status", "--count", "2"}, "--count 2 counts the frames of status --watch"},
        UsageCase{{"history", "alice"},
                  "gpurun history takes no N, but got \"alice\"; for a user's runs write --user alice"},
        UsageCase{{"pick", "2", "python"}, "gpurun pick takes no command"},
        UsageCase{{"completion"}, "gpurun completion needs the shell"},
        UsageCase{{"--image", "-it"}, "starts with '-'"},
        // The first command's traps (issue 21): each answered with what to type.
        UsageCase{{"--wait", "3", "--image", "img"},
                  "\"--wait 3\" could mean either: write --wait=3 to wait up to 3 seconds, or --wait=forever 3"},
        UsageCase{{"--gpus", "all", "--image", "img"}, "gpurun chooses the GPUs itself: write `gpurun N ...`"},
        UsageCase{{"--image", "img", "3", "--gpus", "2"}, "--gpus 2 and N 3 disagree"},
        UsageCase{{"config", "ini"}, "gpurun config takes init or nothing, not \"ini\" (did you mean \"init\"?)"},
        UsageCase{{"--name", "--dry-run", "--image", "img", "1"},
                  "--name needs a value, but the option --dry-run follows it: write --name=VALUE"},
        UsageCase{{"-it", "--image", "img"},
                  "-it is an option of docker run, not of gpurun: pass it as --docker-opt=-it"},
        UsageCase{{"--ipc=host", "--image", "img"}, "pass it as --docker-opt=--ipc=host"},
        UsageCase{{"--shm-size", "8g", "--image", "img"}, "pass it as --docker-opt=--shm-size=8g"},
        UsageCase{{"--imgae", "img"}, "unknown option --imgae (did you mean \"--image\"?)"},
        UsageCase{{"statsu"}, "unknown verb \"statsu\" (did you mean \"status\"?)"},
        // An option without its value: what it is, and a value of its kind.
        UsageCase{{"status", "-v"},
                  "-v (short for --volume) needs a value, as in `-v /data:/data:ro`; for more diagnostics on stderr, "
                  "write --verbose"},
        UsageCase{{"--image"}, "--image needs a value, as in `--image nvcr.io/nvidia/pytorch:24.05-py3`"},
        UsageCase{{"--image", "img", "--config"}, "--config needs a value, as in `--config FILE`"},
        UsageCase{{"--image="}, "--image needs a value, as in `--image nvcr.io/nvidia/pytorch:24.05-py3`"},
        // -v is docker's --volume: `gpurun -v status` meant --verbose, and would have started a job.
        UsageCase{{"--image", "img", "-v", "status"},
                  "--volume \"status\": expected SOURCE:TARGET[:OPTIONS] as docker's -v, such as /data:/data:ro "
                  "(-v is short for --volume; for more diagnostics on stderr, write --verbose)"},
        UsageCase{{"pick", "-v", "2"}, "--volume \"2\": expected SOURCE:TARGET[:OPTIONS]"},
        // status's own options on a launch were ignored (`gpurun --watch 3 status` ran `status` in a job).
        UsageCase{{"--image", "img", "--watch", "3", "status"},
                  "--watch is an option of `gpurun status`, not of `gpurun`"},
        UsageCase{{"--image", "img", "--topology", "1"}, "--topology is an option of `gpurun status`, not of `gpurun`"},
        UsageCase{{"--image", "img", "--json", "1"},
                  "--json is for pick, status, ps, config, history, usage and report"},
        UsageCase{{"--image", "img", "99999"}, "expected the number of GPUs, a whole number from 1 to 4096, got 99999"},
        // docker would take the image for the uid.
        UsageCase{{"--image", "img", "--docker-opt=--user", "1", "--", "id"},
                  "--docker-opt \"--user\": it needs a value: write --docker-opt=--user=VALUE"},
        UsageCase{{"--image", "img", "--user", "1000:1000", "1"},
                  "--user is an option of `gpurun history` here; for docker run, pass it as "
                  "--docker-opt=--user=1000:1000"},
        // A program named "" would run nothing (or look for "" on PATH).
        UsageCase{{"--image", "img", "--docker", ""}, "--docker: expected a name or path, not empty, got \"\""},
        UsageCase{{"--image", "img", "--podman", " "}, "--podman: expected a name or path, not empty, got \" \""}));

TEST_F(GpurunTest, WaitWithASpaceTakesADurationAndGpusTakesN) {
  const Outcome run =
      gpurun({"--wait", "30m", "--dry-run", "--host-cpus", "64", "--image", "img", "2"}, fakes("all_free_8.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--gpus '\"device=0,1\"'"));
  const Outcome gpus =
      gpurun({"--gpus", "2", "--dry-run", "--host-cpus", "64", "--image", "img"}, fakes("all_free_8.json"));
  EXPECT_EQ(gpus.exit_code, 0) << gpus.err;
  EXPECT_THAT(gpus.out, HasSubstr("--gpus '\"device=0,1\"'"));
}

// After N as before it (`trainrun --wait 30m python train.py`): the duration is the wait's, not the
// job's first word, and the wait is not without limit.
TEST_F(GpurunTest, WaitAfterNTakesItsDurationStill) {
  const Outcome run =
      gpurun({"--dry-run", "--image", "img", "4", "--wait", "30m", "python", "train.py"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("a real launch would wait up to 30m 00s until 4 are free"));
  const Outcome free_now =
      gpurun({"--dry-run", "--image", "img", "1", "--wait", "30m", "python", "train.py"}, fakes("busy_dgx.json"));
  EXPECT_THAT(free_now.out, HasSubstr(" img python train.py\n"));
}

// The working directory is mounted at its own path: from / (docker refuses it) or /usr (the
// image's own Python hidden) the launch is refused before anything is asked, saying what to do.
TEST_F(GpurunTest, AWorkingDirectoryThatWouldHideTheImageIsRefused) {
  for (const std::string dir : {"/", "/usr", "/etc/"}) {
    const Outcome run = shell("cd " + dir + " && " + std::string(GPURUN_BINARY) + " --dry-run --image img 1 true",
                              fakes("all_free_8.json"));
    EXPECT_EQ(run.exit_code, 125) << dir;
    EXPECT_THAT(run.err, HasSubstr("cd to your project's directory first")) << dir;
    EXPECT_EQ(run.out, "");
  }
  const Outcome deeper = shell("cd /usr/share/doc && " + std::string(GPURUN_BINARY) + " --dry-run --image img 1 true",
                               fakes("all_free_8.json"));
  EXPECT_EQ(deeper.exit_code, 0) << deeper.err;
}

// What docker and podman take stays gpurun's to pass: a source that begins with '.' (docker 23
// makes it absolute), a named volume, a two-letter name, docker's leading '/'.
TEST_F(GpurunTest, WhatTheEngineTakesIsNotRefused) {
  for (const std::vector<std::string>& more : {std::vector<std::string>{"-v", ".cache/hf:/root/.cache/hf"},
                                               {"-v", "my.vol:/d"},
                                               {"-v", ".:/w"},
                                               {"--name", "ab"},
                                               {"--name", "/job.1"},
                                               {"--name", "J0b_2.x-y"}}) {
    std::vector<std::string> args{"--dry-run", "--image", "img"};
    args.insert(args.end(), more.begin(), more.end());
    args.emplace_back("1");
    const Outcome run = gpurun(args, fakes("all_free_8.json"));
    EXPECT_EQ(run.exit_code, 0) << more[1] << ": " << run.err;
  }
}

// `alias trainrun='gpurun --image me/pytorch:24.05 2'`, then `trainrun --image other ...`.
TEST_F(GpurunTest, AnOptionGivenTwiceTakesTheLastValue) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--dry-run", "--host-cpus", "64", "--image", "me/pytorch:24.05", "2", "--image",
                                 "other", "--", "python"},
        std::vector<std::string>{"--dry-run", "--host-cpus", "64", "--image=me/pytorch:24.05", "--name", "aa", "2",
                                 "--image=other", "--name=bb", "--wait=5", "--", "python"}}) {
    const Outcome run = gpurun(args, fakes("all_free_8.json"));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr(" other python\n"));
  }
}

// CLI11 reads a short option's attached value; the check of unknown options must too.
// podman's booleans that docker lacks (--replace) are not taken for an option missing its value.
TEST_F(GpurunTest, AnUnknownDockerOptionAloneInDockerOptsIsPassedOn) {
  const Outcome run = gpurun({"--dry-run", "--host-cpus", "64", "--image", "img", "--docker-opt=--replace", "1"},
                             fakes("all_free_8.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--replace img"));
}

TEST_F(GpurunTest, AShortOptionTakesItsValueAttached) {
  const Outcome run =
      gpurun({"--dry-run", "--host-cpus", "64", "--image", "img", "-eFOO=1", "-p8080:80", "-v/d:/d", "1"},
             fakes("all_free_8.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--env FOO=1 --volume /d:/d --publish 8080:80 img"));
}

TEST_F(GpurunTest, AGpurunOptionAsTheJobsFirstWordIsWarnedOf) {
  const Outcome run = gpurun({"--dry-run", "--host-cpus", "64", "--image", "img", "1", "--", "--dry-run", "python"},
                             fakes("all_free_8.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("the job's command starts with --dry-run, which is a gpurun option"));
  EXPECT_THAT(run.out, HasSubstr("img --dry-run python"));
}

TEST_F(GpurunTest, HelpOpensWithTheSynopsis) {
  const Outcome help = gpurun({"--help"});
  EXPECT_THAT(help.out, ::testing::StartsWith("Usage: gpurun [OPTIONS] N [--] [COMMAND [ARGS...]]\n"));
}

TEST_F(GpurunTest, EachVerbHasAShortHelpOfItsOwn) {
  const Outcome logs = gpurun({"logs", "--help"});
  EXPECT_EQ(logs.exit_code, 0);
  EXPECT_THAT(logs.out, ::testing::StartsWith("Usage: gpurun logs [-f] [--tail N] NAME\n"));
  EXPECT_THAT(logs.out, HasSubstr("-f,--follow"));
  EXPECT_THAT(logs.out, Not(HasSubstr("--allow-busy")));
  EXPECT_LT(std::count(logs.out.begin(), logs.out.end(), '\n'), 15);
  // Wherever the verb stands among the options.
  EXPECT_THAT(gpurun({"--image", "x", "status", "--help"}).out, ::testing::StartsWith("Usage: gpurun status "));
  EXPECT_THAT(gpurun({"-h", "stop"}).out, ::testing::StartsWith("Usage: gpurun stop [-t SECONDS] NAME\n"));
}

// CLI11 wrote each option on one line, up to 130 columns, and --wait{forever} for a switch that
// may take a value.
TEST_F(GpurunTest, HelpFitsEightyColumnsAndSaysWhatAnOptionalValueIs) {
  const Outcome help = gpurun({"--help"}, {{"COLUMNS", "80"}});
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(' ', line.find_first_not_of(' ')) != std::string::npos) {  // a longer word stands alone
      EXPECT_LE(line.size(), 80U) << line;
    }
  }
  EXPECT_THAT(help.out, HasSubstr("  --wait[=DURATION]  "));
  EXPECT_THAT(help.out, HasSubstr("  --mig[=PROFILE]  "));
  EXPECT_THAT(help.out, Not(HasSubstr("{forever}")));
}

TEST_F(GpurunTest, HelpAndVersionExitZeroOnStdout) {
  const Outcome help = gpurun({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--allow-busy"));
  EXPECT_THAT(help.out, HasSubstr("Exit status"));
  const Outcome version = gpurun({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.out, ::testing::StartsWith("gpurun "));
}

}  // namespace
}  // namespace gpurun::testing
