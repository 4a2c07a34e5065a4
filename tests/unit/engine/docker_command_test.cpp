// Unit tests for the `docker run` argv: the whole vector is asserted, so any change shows here.
#include "gpurun/engine/docker_command.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

namespace gpurun {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::Not;

using Argv = std::vector<std::string>;

DockerRunRequest representative_request() {
  DockerRunRequest r;
  r.docker = "/usr/bin/docker";
  r.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  r.gpu_indices = {3, 6};
  r.gpu_uuids = {"GPU-183e1898-729a-7413-4031-7428fade2c2f", "GPU-5ed111c7-33e3-e3dc-484e-1a81a32f79de"};
  r.cpus = 32;
  r.identity = {1000, 1000, "alice", "/home/a/proj", {}, {}};
  r.name_suffix = "0123abcd";
  r.env = {"FOO=1", "WANDB_MODE=offline"};
  r.volumes = {"/data:/data:ro"};
  r.publish = {"8888:8888"};
  r.docker_opts = {"--ipc=host", "--network", "host"};
  r.command = {"python", "train.py", "--lr", "0.1", "--note", "two words", "it's \"quoted\"", ""};
  return r;
}

// Everything from --name to the last label, for a request like representative_request(): the time
// limit and notification labels are written empty where not asked for (none is the image's).
Argv fixed_part(const std::string& name, const Argv& mount, const std::string& workdir,
                const std::string& time_limit = "", const std::string& notify = "", const std::string& detached = "") {
  Argv argv{"--name", name, "--gpus", "\"device=3,6\"", "--cpus", "32", "--user", "1000:1000"};
  argv.insert(argv.end(), mount.begin(), mount.end());
  argv.insert(argv.end(),
              {"--workdir",
               workdir,
               "--shm-size=1g",
               "--ulimit",
               "memlock=-1",
               "--ulimit",
               "stack=67108864",
               "--log-opt",
               "max-size=50m",
               "--label",
               "gpurun.user=alice",
               "--label",
               "gpurun.gpus=3,6",
               "--label",
               "gpurun.gpu-uuids=GPU-183e1898-729a-7413-4031-7428fade2c2f,GPU-5ed111c7-33e3-e3dc-484e-1a81a32f79de",
               "--label",
               "gpurun.uid=1000",
               "--label",
               "gpurun.name=" + name,
               "--label",
               "gpurun.time-limit=" + time_limit,
               "--label",
               "gpurun.notify=" + notify,
               "--label",
               "gpurun.detached=" + detached});
  return argv;
}

Argv concat(std::initializer_list<Argv> parts) {
  Argv all;
  for (const Argv& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// Everything after the last label: the user's options, the image and the command, verbatim.
// clang-format off
const Argv kUserPart{"--env", "FOO=1", "--env", "WANDB_MODE=offline",
                     "--volume", "/data:/data:ro",
                     "--publish", "8888:8888",
                     "--ipc=host", "--network", "host",
                     "nvcr.io/nvidia/pytorch:24.05-py3",
                     "python", "train.py", "--lr", "0.1", "--note", "two words", "it's \"quoted\"", ""};
// clang-format on

TEST(BuildDockerArgv, RepresentativeRequestGivesExactlyThisArgv) {
  EXPECT_THAT(build_docker_argv(representative_request()),
              ElementsAreArray(concat(
                  {{"/usr/bin/docker", "run", "--rm", "--interactive"},
                   fixed_part("alice_gpu3-6_0123abcd", {"--volume", "/home/a/proj:/home/a/proj"}, "/home/a/proj"),
                   kUserPart})));
}

TEST(BuildDockerArgv, TtyAddsTtyRightAfterInteractive) {
  DockerRunRequest r = representative_request();
  r.tty = true;
  EXPECT_THAT(build_docker_argv(r),
              ElementsAreArray(concat(
                  {{"/usr/bin/docker", "run", "--rm", "--interactive", "--tty"},
                   fixed_part("alice_gpu3-6_0123abcd", {"--volume", "/home/a/proj:/home/a/proj"}, "/home/a/proj"),
                   kUserPart})));
  EXPECT_THAT(build_docker_argv(representative_request()), Not(Contains("--tty")));
}

// ... and no --rm: its output stays in its container after the job ends (`gpurun logs`), until
// `gpurun rm` removes it.
TEST(BuildDockerArgv, DetachedTheContainerGetsAnOpenStdinAndATerminalWhateverGpurunHas) {
  DockerRunRequest r = representative_request();
  r.detach = true;
  r.tty = false;  // gpurun's own stdin: no terminal; the container still gets one (docker's -dit)
  EXPECT_THAT(build_docker_argv(r),
              ElementsAreArray(concat({{"/usr/bin/docker", "run", "--detach", "--interactive", "--tty"},
                                       fixed_part("alice_gpu3-6_0123abcd", {"--volume", "/home/a/proj:/home/a/proj"},
                                                  "/home/a/proj", "", "", "true"),
                                       kUserPart})));
}

TEST(BuildDockerArgv, ATimeLimitAndNotifyBecomeLabelsAfterGpurunsOwn) {
  DockerRunRequest r = representative_request();
  r.time_limit = std::chrono::hours(8);
  r.notify = true;
  EXPECT_THAT(build_docker_argv(r),
              ElementsAreArray(concat({{"/usr/bin/docker", "run", "--rm", "--interactive"},
                                       fixed_part("alice_gpu3-6_0123abcd", {"--volume", "/home/a/proj:/home/a/proj"},
                                                  "/home/a/proj", "28800", "run_ended"),
                                       kUserPart})));
}

TEST(BuildDockerArgv, GpusValueCarriesItsOwnDoubleQuotes) {
  // Without the quotes docker reads "device=3,6" as device=3 plus a count, and fails.
  const Argv argv = build_docker_argv(representative_request());
  const auto gpus = std::find(argv.begin(), argv.end(), "--gpus");
  ASSERT_NE(gpus, argv.end());
  ASSERT_NE(gpus + 1, argv.end());
  EXPECT_EQ(*(gpus + 1), "\"device=3,6\"");

  DockerRunRequest one = representative_request();
  one.gpu_indices = {0};
  EXPECT_THAT(build_docker_argv(one), Contains("\"device=0\""));
}

TEST(BuildDockerArgv, MinimalRequestEndsWithTheImage) {
  DockerRunRequest r;
  r.image = "ubuntu:24.04";
  r.gpu_indices = {1};
  r.gpu_uuids = {"GPU-1"};
  r.cpus = 8;
  r.identity = {0, 0, "root", "/root", {}, {}};
  r.name_suffix = "ffffffff";
  EXPECT_THAT(
      build_docker_argv(r),
      ElementsAre("docker", "run", "--rm", "--interactive", "--name", "root_gpu1_ffffffff", "--gpus", "\"device=1\"",
                  "--cpus", "8", "--user", "0:0", "--volume", "/root:/root", "--workdir", "/root", "--shm-size=1g",
                  "--ulimit", "memlock=-1", "--ulimit", "stack=67108864", "--log-opt", "max-size=50m", "--label",
                  "gpurun.user=root", "--label", "gpurun.gpus=1", "--label", "gpurun.gpu-uuids=GPU-1", "--label",
                  "gpurun.uid=0", "--label", "gpurun.name=root_gpu1_ffffffff", "--label",
                  "gpurun.time-limit=", "--label", "gpurun.notify=", "--label", "gpurun.detached=", "ubuntu:24.04"));
}

TEST(BuildDockerArgv, ExplicitNameOverridesTheGeneratedOne) {
  DockerRunRequest r = representative_request();
  r.name = "my-job";
  EXPECT_THAT(build_docker_argv(r),
              ElementsAreArray(concat({{"/usr/bin/docker", "run", "--rm", "--interactive"},
                                       fixed_part("my-job", {"--volume", "/home/a/proj:/home/a/proj"}, "/home/a/proj"),
                                       kUserPart})));
}

struct MountCase {
  const char* workdir;
  Argv mount;
};

void PrintTo(const MountCase& c, std::ostream* os) { *os << '"' << c.workdir << '"'; }

class WorkdirMount : public ::testing::TestWithParam<MountCase> {};

TEST_P(WorkdirMount, MountsTheWorkdirAtTheSamePath) {
  DockerRunRequest r = representative_request();
  r.identity.workdir = GetParam().workdir;
  EXPECT_THAT(build_docker_argv(r),
              ElementsAreArray(concat({{"/usr/bin/docker", "run", "--rm", "--interactive"},
                                       fixed_part("alice_gpu3-6_0123abcd", GetParam().mount, GetParam().workdir),
                                       kUserPart})));
}

INSTANTIATE_TEST_SUITE_P(
    Paths, WorkdirMount,
    ::testing::Values(MountCase{"/home/a/my proj", {"--volume", "/home/a/my proj:/home/a/my proj"}},
                      // --volume splits on ':', so such a path needs --mount.
                      MountCase{"/data/run:1", {"--mount", "type=bind,source=/data/run:1,target=/data/run:1"}},
                      // --mount is CSV: a field holding ',' or '"' is quoted, '"' doubled.
                      MountCase{"/data/a,b:c", {"--mount", "type=bind,\"source=/data/a,b:c\",\"target=/data/a,b:c\""}},
                      MountCase{"/data/x\"y:z",
                                {"--mount", "type=bind,\"source=/data/x\"\"y:z\",\"target=/data/x\"\"y:z\""}}));

TEST(ContainerName, JoinsLoginGpusAndSuffix) {
  EXPECT_EQ(container_name("alice", {2, 3, 4, 5}, "0a1b2c3d"), "alice_gpu2-3-4-5_0a1b2c3d");
  EXPECT_EQ(container_name("alice", {0}, ""), "alice_gpu0");
}

struct NameCase {
  const char* login;
  const char* expected;
};

void PrintTo(const NameCase& c, std::ostream* os) { *os << '"' << c.login << '"'; }

class ContainerNameLogin : public ::testing::TestWithParam<NameCase> {};

TEST_P(ContainerNameLogin, IsSanitizedForDocker) {
  const std::string name = container_name(GetParam().login, {3, 6}, "abcd1234");
  EXPECT_EQ(name, GetParam().expected);
  // Docker's own rule for names.
  EXPECT_TRUE(std::regex_match(name, std::regex("[a-zA-Z0-9][a-zA-Z0-9_.-]+"))) << name;
}

INSTANTIATE_TEST_SUITE_P(
    Logins, ContainerNameLogin,
    ::testing::Values(NameCase{"first.last", "first.last_gpu3-6_abcd1234"},
                      NameCase{"a-b_c9", "a-b_c9_gpu3-6_abcd1234"},
                      NameCase{"DOMAIN\\user", "DOMAIN_user_gpu3-6_abcd1234"},
                      NameCase{"user@x", "user_x_gpu3-6_abcd1234"}, NameCase{"us er/x:y", "us_er_x_y_gpu3-6_abcd1234"},
                      NameCase{"jos\xc3\xa9", "jos___gpu3-6_abcd1234"}, NameCase{"_svc", "user_svc_gpu3-6_abcd1234"},
                      NameCase{".hidden", "user.hidden_gpu3-6_abcd1234"}, NameCase{"-x", "user-x_gpu3-6_abcd1234"},
                      NameCase{"@corp", "user_corp_gpu3-6_abcd1234"}, NameCase{"", "user_gpu3-6_abcd1234"}));

TEST(RandomSuffix, IsEightHexCharactersAndDiffersBetweenCalls) {
  const std::string a = random_suffix();
  const std::string b = random_suffix();
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9a-f]{8}"))) << a;
  EXPECT_TRUE(std::regex_match(b, std::regex("[0-9a-f]{8}"))) << b;
  EXPECT_NE(a, b);
}

TEST(CurrentIdentity, IsThisProcessesUserAndDirectory) {
  const LaunchIdentity identity = current_identity();
  EXPECT_EQ(identity.uid, ::getuid());
  EXPECT_EQ(identity.gid, ::getgid());
  EXPECT_FALSE(identity.login.empty());
  EXPECT_EQ(identity.workdir, std::filesystem::current_path().string());
}

TEST(BuildDockerArgv, CpusetOfTheGpusNodesFollowsTheQuota) {
  DockerRunRequest r = representative_request();
  r.cpuset_cpus = "16-31,48-63,144-159,176-191";
  r.cpuset_mems = "1,3";
  const std::vector<std::string> argv = build_docker_argv(r);
  const auto cpus = std::find(argv.begin(), argv.end(), "--cpus");
  ASSERT_NE(cpus, argv.end());
  EXPECT_EQ(std::vector<std::string>(cpus, cpus + 7),
            (std::vector<std::string>{"--cpus", "32", "--cpuset-cpus", "16-31,48-63,144-159,176-191", "--cpuset-mems",
                                      "1,3", "--user"}));
  r.cpuset_cpus.clear();
  r.cpuset_mems.clear();
  EXPECT_EQ(build_docker_argv(r), build_docker_argv(representative_request()));
}

}  // namespace
}  // namespace gpurun
