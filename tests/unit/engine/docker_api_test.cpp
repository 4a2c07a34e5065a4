// Unit tests for the Engine API client: where the docker CLI would connect, the version asked
// in, and the queries against a stand-in engine on a unix socket of the test's own.
#include "docker/docker_api.hpp"

#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpurun/util/error.hpp"
#include "stand_in_engine.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

TEST(DockerSocketPath, TheDefaultSocketWithoutDockerHostOrContext) {
  std::string why;
  EXPECT_EQ(docker_socket_path({}, why), "/var/run/docker.sock");
  EXPECT_EQ(docker_socket_path({std::nullopt, "default", std::nullopt, std::nullopt}, why), "/var/run/docker.sock");
}

// Under sudo, root's config.json read as the caller: its context is not known, so the engine is
// asked through the CLI (which runs as root), not on the default socket, which may be another engine.
TEST(DockerSocketPath, AConfigJsonThatMayNotBeReadLeavesTheEngineToTheCli) {
  std::string pattern = (fs::path(::testing::TempDir()) / "gpurun-dockercfg-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  fs::permissions(dir, fs::perms::owner_all | fs::perms::others_exec);
  std::ofstream(dir / "config.json") << R"({"currentContext": "remote"})";
  fs::permissions(dir / "config.json", fs::perms::none);  // nobody's to read, but root's
  // Asked as nobody (root reads any file), in a child: the ids are the whole process's.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                             ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(3);
    std::string why;
    const bool unknown = !docker_socket_path({std::nullopt, std::nullopt, dir.string(), std::nullopt}, why) &&
                         why == "docker's config.json cannot be read here, so its current context is not known";
    ::_exit(unknown ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  fs::remove_all(dir);
}

// An admin's wrapper (a script that sets DOCKER_HOST, as docs/sudo.md suggests) runs the job on
// its own engine: asked on the default socket, another engine's containers were the GPU holders.
TEST(DockerApiEngine, AWrapperScriptIsAskedThroughNotAroundOnTheDefaultSocket) {
  std::string pattern = (fs::path(::testing::TempDir()) / "gpurun-wrapper-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path wrapper = fs::path(pattern) / "docker";
  std::ofstream(wrapper) << "#!/bin/sh\nDOCKER_HOST=unix:///run/other.sock exec /usr/bin/docker \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  std::string why;
  EXPECT_EQ(make_docker_api_engine(wrapper.string(), why), nullptr);
  EXPECT_EQ(why, wrapper.string() + " is a script, which chooses its own engine");
  fs::remove_all(pattern);
}

TEST(DockerSocketPath, AUnixDockerHostIsFollowed) {
  std::string why;
  EXPECT_EQ(docker_socket_path({"unix:///run/user/1000/docker.sock", std::nullopt, std::nullopt, std::nullopt}, why),
            "/run/user/1000/docker.sock");
}

TEST(DockerSocketPath, TcpSshAndContextsAreLeftToTheCli) {
  std::string why;
  EXPECT_EQ(docker_socket_path({"tcp://10.0.0.5:2376", std::nullopt, std::nullopt, std::nullopt}, why), std::nullopt);
  EXPECT_EQ(why, "DOCKER_HOST is tcp://10.0.0.5:2376, not a unix socket");
  EXPECT_EQ(docker_socket_path({"ssh://gpu-box", std::nullopt, std::nullopt, std::nullopt}, why), std::nullopt);
  EXPECT_EQ(docker_socket_path({std::nullopt, "remote", std::nullopt, std::nullopt}, why), std::nullopt);
  EXPECT_EQ(why, "the docker context \"remote\" is in use");
  // DOCKER_HOST wins over a context, as in the docker CLI.
  EXPECT_EQ(docker_socket_path({"unix:///tmp/d.sock", "remote", std::nullopt, std::nullopt}, why), "/tmp/d.sock");
}

TEST(DockerSocketPath, ConfigJsonsCurrentContext) {
  std::string pattern = (fs::path(::testing::TempDir()) / "gpurun-dockercfg-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  std::string why;
  std::ofstream(dir / "config.json") << R"({"auths": {}, "currentContext": "rootless"})";
  EXPECT_EQ(docker_socket_path({std::nullopt, std::nullopt, dir.string(), std::nullopt}, why), std::nullopt);
  EXPECT_EQ(why, "the docker context \"rootless\" is in use");
  fs::create_directories(dir / "home/.docker");
  std::ofstream(dir / "home/.docker/config.json") << R"({"currentContext": "default"})";
  EXPECT_EQ(docker_socket_path({std::nullopt, std::nullopt, std::nullopt, (dir / "home").string()}, why),
            "/var/run/docker.sock");
  std::ofstream(dir / "home/.docker/config.json") << "not json";
  EXPECT_EQ(docker_socket_path({std::nullopt, std::nullopt, std::nullopt, (dir / "home").string()}, why),
            "/var/run/docker.sock");
  // What is no file is read as no file, as the docker CLI does; a FIFO nobody writes hung every launch.
  fs::remove(dir / "home/.docker/config.json");
  ASSERT_EQ(::mkfifo((dir / "home/.docker/config.json").c_str(), 0600), 0);
  EXPECT_EQ(docker_socket_path({std::nullopt, std::nullopt, std::nullopt, (dir / "home").string()}, why),
            "/var/run/docker.sock");
  fs::remove_all(dir);
}

const std::string kA = "aaaa000000000000000000000000000000000000000000000000000000000001";
const std::string kB = "bbbb000000000000000000000000000000000000000000000000000000000002";
const std::string kC = "cccc000000000000000000000000000000000000000000000000000000000003";

TEST(DockerApiGpuHolders, ListsThenInspectsEachRunningContainerInTheEnginesOwnVersion) {
  StandInEngine engine({
      {"/containers/json",
       {200, R"([{"Id": ")" + kA + R"(", "Names": ["/gpu-job"]}, {"Id": ")" + kB + R"("}, {"Id": ")" + kC +
                 R"("}, {"Id": "../../x"}])"}},
      {"/containers/" + kA + "/json",
       {200,
        R"({"Id": ")" + kA + R"(", "Name": "/gpu-job", "Config": {"Image": "cuda"}, "HostConfig": {"DeviceRequests": [
          {"Driver": "", "Count": 0, "DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}})"}},
      {"/containers/" + kB + "/json", {200, R"({"Id": ")" + kB + R"(", "Name": "/web", "HostConfig": {}})"}},
      // kC is gone between the list and its inspect: a 404, left out.
  });
  const auto holders = docker_api_gpu_holders(engine.path(), std::chrono::seconds(5));
  ASSERT_EQ(holders.size(), 1U);
  EXPECT_EQ(holders[0].name, "gpu-job");
  EXPECT_THAT(holders[0].devices, ElementsAre("2"));
  // The inspects are asked at once, so in any order after the list.
  const auto requests = engine.requests();
  ASSERT_EQ(requests.size(), 4U);  // no /_ping: unversioned paths are answered in the engine's own version
  EXPECT_EQ(requests[0], "GET /containers/json HTTP/1.1");
  EXPECT_THAT(
      std::vector(requests.begin() + 1, requests.end()),
      UnorderedElementsAre("GET /containers/" + kA + "/json HTTP/1.1", "GET /containers/" + kB + "/json HTTP/1.1",
                           "GET /containers/" + kC + "/json HTTP/1.1"));
}

TEST(DockerApiGpuHolders, InspectsAtOnceAndKeepsTheListsOrder) {
  const auto gpu_job = [](const std::string& id, const std::string& name, const std::string& device) {
    return R"({"Id": ")" + id + R"(", "Name": "/)" + name + R"(", "HostConfig": {"DeviceRequests": [
        {"Driver": "", "Count": 0, "DeviceIDs": [")" +
           device + R"("], "Capabilities": [["gpu"]]}]}})";
  };
  StandInEngine engine({
      {"/containers/json", {200, R"([{"Id": ")" + kA + R"("}, {"Id": ")" + kB + R"("}, {"Id": ")" + kC + R"("}])"}},
      // The first answers last; kB is gone (404) between list and inspect.
      {"/containers/" + kA + "/json", {200, gpu_job(kA, "first", "0"), std::chrono::milliseconds(150)}},
      {"/containers/" + kC + "/json", {200, gpu_job(kC, "third", "3")}},
  });
  const auto holders = docker_api_gpu_holders(engine.path(), std::chrono::seconds(5));
  ASSERT_EQ(holders.size(), 2U);
  EXPECT_EQ(holders[0].name, "first");
  EXPECT_EQ(holders[1].name, "third");
  EXPECT_THAT(holders[1].devices, ElementsAre("3"));
  EXPECT_EQ(engine.connections(), 3U);  // the list's, then one more per inspect asked at once
}

TEST(DockerApiGpuHolders, AnInspectRefusedIsAnError) {
  StandInEngine engine({
      {"/containers/json", {200, R"([{"Id": ")" + kA + R"("}, {"Id": ")" + kB + R"("}])"}},
      {"/containers/" + kA + "/json", {200, R"({"Id": ")" + kA + R"("})"}},
      {"/containers/" + kB + "/json", {500, R"({"message":"inspect failed"})"}},
  });
  EXPECT_THAT([&] { docker_api_gpu_holders(engine.path(), std::chrono::seconds(5)); },
              ::testing::ThrowsMessage<Error>("the Docker engine at " + engine.path() +
                                              " refused to inspect a container (HTTP 500): inspect failed"));
}

TEST(DockerApiGpuHolders, NoContainersIsNoHolders) {
  StandInEngine engine({{"/containers/json", {200, "[]"}}});
  EXPECT_TRUE(docker_api_gpu_holders(engine.path(), std::chrono::seconds(5)).empty());
}

TEST(DockerApiGpuHolders, TheEnginesRefusalIsAnError) {
  StandInEngine engine({{"/containers/json", {500, R"({"message":"database is locked"})"}}});
  try {
    docker_api_gpu_holders(engine.path(), std::chrono::seconds(5));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "the Docker engine at " + engine.path() + " refused the container list (HTTP 500): database is locked");
  }
}

TEST(DockerApiGpuHolders, AnEngineThatDoesNotAnswerTimesOut) {
  StandInEngine engine({}, /*silent=*/true);
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  try {
    docker_api_gpu_holders(engine.path(), std::chrono::milliseconds(200));
  } catch (const Error& e) {
    error = e.what();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(error, "the Docker engine at " + engine.path() + " did not answer in time");
  EXPECT_LT(took, std::chrono::seconds(2));
}

TEST(DockerApiGpuHolders, NoSocketIsAnError) {
  EXPECT_THAT([] { docker_api_gpu_holders("/nonexistent/gpurun/d.sock", std::chrono::seconds(1)); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("the Docker engine at /nonexistent/gpurun/d.sock cannot be reached: ")));
}

TEST(DockerApiEngine, PodmansClientAndAMissingSocketAreLeftToTheCli) {
  std::string why;
  EXPECT_EQ(make_docker_api_engine("/usr/bin/podman", why), nullptr);
  EXPECT_EQ(why, "/usr/bin/podman is not docker's client");
  ::setenv("DOCKER_HOST", "unix:///nonexistent/gpurun/d.sock", 1);
  EXPECT_EQ(make_docker_api_engine("docker", why), nullptr);
  EXPECT_EQ(why, "no socket at /nonexistent/gpurun/d.sock");
  ::setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
  EXPECT_EQ(make_docker_api_engine("docker", why), nullptr);
  EXPECT_EQ(why, "DOCKER_HOST is tcp://127.0.0.1:2375, not a unix socket");
  ::unsetenv("DOCKER_HOST");
}

// A launch sends the list request before it starts nvidia-smi: the engine lists meanwhile, and
// gpu_holders() reads that answer instead of asking again.
TEST(DockerApiEngine, TheListAskedAheadIsTheOneRead) {
  StandInEngine engine({{"/containers/json", {200, R"([{"Id": ")" + kA + R"("}, {"Id": ")" + kB + R"("}])"}},
                        {"/containers/" + kA + "/json",
                         {200, R"({"Id": ")" + kA + R"(", "Name": "/gpu-job", "HostConfig": {"DeviceRequests": [
                           {"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]}})"}},
                        {"/containers/" + kB + "/json", {200, R"({"Id": ")" + kB + R"(", "Name": "/web"})"}},
                        {"/containers/json?all=1", {200, "[]"}}});
  ::setenv("DOCKER_HOST", ("unix://" + engine.path()).c_str(), 1);
  std::string why;
  const auto api = make_docker_api_engine("/usr/bin/docker", why);
  ::unsetenv("DOCKER_HOST");
  ASSERT_NE(api, nullptr) << why;
  api->ask_gpu_holders_ahead(std::chrono::seconds(5), Listing::running);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (engine.requests().empty() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_THAT(engine.requests(), ElementsAre("GET /containers/json HTTP/1.1"));  // before gpu_holders()
  const auto holders = api->gpu_holders(std::chrono::seconds(5), Listing::running);
  ASSERT_EQ(holders.size(), 1U);
  EXPECT_TRUE(holders[0].all_gpus);
  EXPECT_EQ(engine.requests().size(), 3U);                                        // the list once, then both inspects
  EXPECT_EQ(api->gpu_holders(std::chrono::seconds(5), Listing::all).size(), 0U);  // nothing ahead: asked anew
  EXPECT_EQ(engine.requests()[3], "GET /containers/json?all=1 HTTP/1.1");
}

TEST(DockerApiEngine, AsksTheSocketAndRunsTheDockerCli) {
  StandInEngine engine({{"/containers/json", {200, "[]"}}});
  ::setenv("DOCKER_HOST", ("unix://" + engine.path()).c_str(), 1);
  std::string why;
  const auto api = make_docker_api_engine("/usr/bin/docker", why);
  ::unsetenv("DOCKER_HOST");
  ASSERT_NE(api, nullptr) << why;
  EXPECT_EQ(api->name(), "docker");
  EXPECT_TRUE(api->gpu_holders(std::chrono::seconds(5), Listing::running).empty());
  EXPECT_THAT(api->stop_argv("job1", 5), ElementsAre("/usr/bin/docker", "stop", "--time", "5", "--", "job1"));
  EXPECT_THAT(api->logs_argv("job1", {.follow = true, .tail = ""}),
              ElementsAre("/usr/bin/docker", "logs", "--follow", "--", "job1"));
  EXPECT_THAT(api->attach_argv("job1"), ElementsAre("/usr/bin/docker", "attach", "--sig-proxy=false",
                                                    "--detach-keys=ctrl-p,ctrl-q", "--", "job1"));
  DockerRunRequest request;
  request.image = "img";
  request.gpu_indices = {1};
  request.gpu_uuids = {"GPU-1"};
  EXPECT_EQ(api->run_argv(request).front(), "/usr/bin/docker");
}

}  // namespace
}  // namespace gpurun
