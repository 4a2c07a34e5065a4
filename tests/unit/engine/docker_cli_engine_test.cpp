// Unit tests for the docker-CLI container engine: its argv for run, stop, logs and attach, and
// its GPU holders as the stand-in docker client (tests/fakes/docker) answers `ps` and `inspect`.
#include "docker/docker_cli_engine.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpurun/engine/container_engine.hpp"
#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kFakeDocker = GPURUN_FAKES_DIR "/docker";
constexpr std::chrono::seconds kTimeout{10};

// Sets an environment variable for one test (the fake docker reads its answers from there).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

TEST(DockerCliEngine, RunsTheJobWithItsOwnClientAsArgvZero) {
  DockerRunRequest request;
  request.docker = "docker";
  request.image = "img";
  request.gpu_indices = {2};
  request.gpu_uuids = {"GPU-2"};
  request.cpus = 4;
  request.identity = {
      .uid = 1000, .gid = 1000, .login = "alice", .workdir = "/home/alice", .workdir_source = {}, .groups = {}};
  request.name = "job";
  request.command = {"true"};
  const DockerCliEngine engine("/opt/docker/bin/docker");
  request.init = true;  // docker's: its init as the job's PID 1
  std::vector<std::string> expected = build_docker_argv(request);
  expected.front() = "/opt/docker/bin/docker";
  EXPECT_EQ(engine.run_argv(request), expected);
  EXPECT_EQ(engine.run_argv(request).at(3), "--init");
  // podman's needs catatonit, which a host may lack: none, nor through a script named docker
  // (podman-docker's), which may run podman.
  const DockerCliEngine podman("/usr/bin/podman", "podman");
  EXPECT_THAT(podman.run_argv(request), ::testing::Not(::testing::Contains("--init")));
  const test::TempDir dir("podman-docker");
  const std::string podman_docker = dir / "docker";  // its name, as installed
  std::ofstream(podman_docker) << "#!/bin/sh\nexec /usr/bin/podman \"$@\"\n";
  std::filesystem::permissions(podman_docker, std::filesystem::perms::owner_all);
  EXPECT_THAT(make_container_engine(podman_docker)->run_argv(request), ::testing::Not(::testing::Contains("--init")));
  EXPECT_THAT(make_container_engine(kFakeDocker)->run_argv(request), ::testing::Contains("--init"));  // a wrapper
}

TEST(DockerCliEngine, StopsFollowsAndAttachesByName) {
  const DockerCliEngine engine("docker");
  EXPECT_EQ(engine.name(), "docker");
  EXPECT_THAT(engine.stop_argv("job7", std::nullopt), ElementsAre("docker", "stop", "--", "job7"));
  EXPECT_THAT(engine.stop_argv("job7", 30), ElementsAre("docker", "stop", "--time", "30", "--", "job7"));
  EXPECT_THAT(engine.logs_argv("job7", {}), ElementsAre("docker", "logs", "--", "job7"));
  EXPECT_THAT(engine.logs_argv("job7", {.follow = true, .tail = "100"}),
              ElementsAre("docker", "logs", "--follow", "--tail", "100", "--", "job7"));
  EXPECT_THAT(engine.attach_argv("job7"),
              ElementsAre("docker", "attach", "--sig-proxy=false", "--detach-keys=ctrl-p,ctrl-q", "--", "job7"));
}

TEST(DockerCliEngine, HoldersAreTheInspectedContainersThatHoldGpus) {
  const std::string inspect = (std::filesystem::temp_directory_path() / "gpurun_engine_test_inspect.json").string();
  std::ofstream(inspect) << R"([
    {"Id": "aaa", "Name": "/alice_gpu1_1a2b3c4d", "Config": {"Image": "me/torch:1", "Labels": {"gpurun.user": "alice"}},
     "State": {"Status": "running"},
     "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["1"], "Capabilities": [["gpu"]]}]}},
    {"Id": "bbb", "Name": "/web", "Config": {"Image": "nginx"}, "HostConfig": {"DeviceRequests": null}}
  ])";
  const ScopedEnv ids("FAKE_DOCKER_PS_IDS", "aaa bbb");
  const ScopedEnv answer("FAKE_DOCKER_INSPECT", inspect);
  DockerCliEngine engine(kFakeDocker);
  const std::vector<GpuContainer> holders = engine.gpu_holders(kTimeout, Listing::running);
  std::remove(inspect.c_str());
  ASSERT_EQ(holders.size(), 1U);
  EXPECT_EQ(holders[0].id, "aaa");
  EXPECT_EQ(holders[0].name, "alice_gpu1_1a2b3c4d");
  EXPECT_EQ(holders[0].user, "alice");
  EXPECT_THAT(holders[0].devices, ElementsAre("1"));
}

TEST(DockerCliEngine, NoRunningContainersHoldNothing) {
  DockerCliEngine engine(kFakeDocker);
  EXPECT_THAT(engine.gpu_holders(kTimeout, Listing::running), IsEmpty());
}

TEST(DockerCliEngine, AnEngineOutOfReachThrowsSayingWhatItAnswered) {
  const ScopedEnv error("FAKE_DOCKER_PS_ERROR", "Cannot connect to the Docker daemon");
  DockerCliEngine engine(kFakeDocker);
  try {
    engine.gpu_holders(kTimeout, Listing::running);
    FAIL() << "no Error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "`" + kFakeDocker + " ps` exited with status 1: Cannot connect to the Docker daemon");
  }
}

TEST(ContainerEngineFactory, MakesTheDockerCliEngineForTheClient) {
  const auto engine = make_container_engine("/usr/local/bin/docker");
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->name(), "docker");
  EXPECT_THAT(engine->stop_argv("x", std::nullopt), ElementsAre("/usr/local/bin/docker", "stop", "--", "x"));
}

TEST(DockerCliEngine, CdiAsDockerInfoSaysIt) {
  DockerCliEngine engine(kFakeDocker);
  EXPECT_FALSE(engine.cdi_support(kTimeout).available);  // the stand-in's default: null
  ScopedEnv dirs("FAKE_DOCKER_CDI_SPEC_DIRS", R"(["/etc/cdi","/var/run/cdi"])");
  const CdiSupport cdi = engine.cdi_support(kTimeout);
  EXPECT_TRUE(cdi.available);
  EXPECT_EQ(cdi.why, "`" + kFakeDocker + " info` lists CDI spec directories /etc/cdi, /var/run/cdi");
}

TEST(DockerCliEngine, AClientThatCannotBeRunHasNoCdi) {
  DockerCliEngine engine("/nonexistent/docker");
  EXPECT_FALSE(engine.cdi_support(kTimeout).available);
}

TEST(DockerCliEngine, PodmansCliAlwaysHasCdiAndIsNamedSo) {
  DockerCliEngine engine("/nonexistent/podman", "podman");
  EXPECT_EQ(engine.name(), "podman");
  const CdiSupport cdi = engine.cdi_support(kTimeout);
  EXPECT_TRUE(cdi.available);
  EXPECT_EQ(cdi.why, "podman always resolves CDI devices");
}

}  // namespace
}  // namespace gpurun
