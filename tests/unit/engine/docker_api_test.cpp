// Unit tests for the Engine API client: where the docker CLI would connect, the version asked
// in, and the queries against a stand-in engine on a unix socket of the test's own.
#include "engine/docker_api.hpp"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/error.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DockerSocketPath, TheDefaultSocketWithoutDockerHostOrContext) {
  std::string why;
  EXPECT_EQ(docker_socket_path({}, why), "/var/run/docker.sock");
  EXPECT_EQ(docker_socket_path({std::nullopt, "default", std::nullopt, std::nullopt}, why), "/var/run/docker.sock");
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
  fs::remove_all(dir);
}

TEST(DockerApiVersion, TheLowerOfTheEnginesAndOurs) {
  EXPECT_EQ(docker_api_version("1.41"), "1.41");
  EXPECT_EQ(docker_api_version("1.43"), "1.43");
  EXPECT_EQ(docker_api_version("1.51"), "1.43");
  EXPECT_EQ(docker_api_version("2.0"), "1.43");
  EXPECT_EQ(docker_api_version("1.9"), "1.9");
  EXPECT_EQ(docker_api_version(""), "");
  EXPECT_EQ(docker_api_version("v1"), "");
}

// A stand-in engine: answers GETs on one keep-alive connection at a time from a table.
class FakeEngine {
 public:
  struct Answer {
    int status = 200;
    std::string body;
  };
  explicit FakeEngine(std::map<std::string, Answer> answers, bool silent = false)
      : answers_(std::move(answers)), silent_(silent) {
    std::string pattern = (fs::path(::testing::TempDir()) / "gpurun-engine-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = pattern;
    path_ = dir_ + "/d.sock";
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path_.copy(address.sun_path, sizeof address.sun_path - 1);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 4) != 0)
      throw std::runtime_error("bind/listen");
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeEngine() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
    fs::remove_all(dir_);
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      const int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) return;
      std::string pending;
      char buffer[4096];
      for (;;) {
        const auto end = pending.find("\r\n\r\n");
        if (end == std::string::npos) {
          const ssize_t n = ::read(connection, buffer, sizeof buffer);
          if (n <= 0) break;
          pending.append(buffer, static_cast<std::size_t>(n));
          continue;
        }
        const std::string head = pending.substr(0, end);
        pending.erase(0, end + 4);
        const std::string line = head.substr(0, head.find("\r\n"));
        {
          std::lock_guard lock(mutex_);
          requests_.push_back(line);
        }
        if (silent_) continue;
        const std::string target = line.substr(4, line.rfind(' ') - 4);
        const auto it = answers_.find(target);
        const Answer answer = it != answers_.end() ? it->second : Answer{404, R"({"message":"page not found"})"};
        const std::string response = "HTTP/1.1 " + std::to_string(answer.status) +
                                     " X\r\nApi-Version: 1.41\r\nContent-Type: application/json\r\nContent-Length: " +
                                     std::to_string(answer.body.size()) + "\r\n\r\n" + answer.body;
        if (::write(connection, response.data(), response.size()) < 0) break;
      }
      ::close(connection);
    }
  }

  std::map<std::string, Answer> answers_;
  bool silent_;
  std::string dir_, path_;
  int listener_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

const std::string kA = "aaaa000000000000000000000000000000000000000000000000000000000001";
const std::string kB = "bbbb000000000000000000000000000000000000000000000000000000000002";
const std::string kC = "cccc000000000000000000000000000000000000000000000000000000000003";

TEST(DockerApiGpuHolders, ListsThenInspectsEachRunningContainerInTheNegotiatedVersion) {
  FakeEngine engine({
      {"/_ping", {200, "OK"}},
      {"/v1.41/containers/json", {200, R"([{"Id": ")" + kA + R"(", "Names": ["/gpu-job"]}, {"Id": ")" + kB +
                                             R"("}, {"Id": ")" + kC + R"("}, {"Id": "../../x"}])"}},
      {"/v1.41/containers/" + kA + "/json",
       {200, R"({"Id": ")" + kA + R"(", "Name": "/gpu-job", "Config": {"Image": "cuda"}, "HostConfig": {"DeviceRequests": [
          {"Driver": "", "Count": 0, "DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}})"}},
      {"/v1.41/containers/" + kB + "/json", {200, R"({"Id": ")" + kB + R"(", "Name": "/web", "HostConfig": {}})"}},
      // kC is gone between the list and its inspect: a 404, left out.
  });
  const auto holders = docker_api_gpu_holders(engine.path(), std::chrono::seconds(5));
  ASSERT_EQ(holders.size(), 1U);
  EXPECT_EQ(holders[0].name, "gpu-job");
  EXPECT_THAT(holders[0].devices, ElementsAre("2"));
  EXPECT_THAT(engine.requests(),
              ElementsAre("GET /_ping HTTP/1.1", "GET /v1.41/containers/json HTTP/1.1",
                          "GET /v1.41/containers/" + kA + "/json HTTP/1.1", "GET /v1.41/containers/" + kB + "/json HTTP/1.1",
                          "GET /v1.41/containers/" + kC + "/json HTTP/1.1"));
}

TEST(DockerApiGpuHolders, NoContainersIsNoHolders) {
  FakeEngine engine({{"/_ping", {200, "OK"}}, {"/v1.41/containers/json", {200, "[]"}}});
  EXPECT_TRUE(docker_api_gpu_holders(engine.path(), std::chrono::seconds(5)).empty());
}

TEST(DockerApiGpuHolders, TheEnginesRefusalIsAnError) {
  FakeEngine engine({{"/_ping", {200, "OK"}}, {"/v1.41/containers/json", {500, R"({"message":"database is locked"})"}}});
  try {
    docker_api_gpu_holders(engine.path(), std::chrono::seconds(5));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the Docker engine at " + engine.path() +
                                         " refused the container list (HTTP 500): database is locked");
  }
}

TEST(DockerApiGpuHolders, AnEngineThatDoesNotAnswerTimesOut) {
  FakeEngine engine({}, /*silent=*/true);
  const auto start = std::chrono::steady_clock::now();
  try {
    docker_api_gpu_holders(engine.path(), std::chrono::milliseconds(200));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the Docker engine at " + engine.path() + " did not answer in time");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(DockerApiGpuHolders, NoSocketIsAnError) {
  EXPECT_THAT([] { docker_api_gpu_holders("/nonexistent/gpurun/d.sock", std::chrono::seconds(1)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("the Docker engine at /nonexistent/gpurun/d.sock cannot be reached: ")));
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

TEST(DockerApiEngine, AsksTheSocketAndRunsTheDockerCli) {
  FakeEngine engine({{"/_ping", {200, "OK"}}, {"/v1.41/containers/json", {200, "[]"}}});
  ::setenv("DOCKER_HOST", ("unix://" + engine.path()).c_str(), 1);
  std::string why;
  const auto api = make_docker_api_engine("/usr/bin/docker", why);
  ::unsetenv("DOCKER_HOST");
  ASSERT_NE(api, nullptr) << why;
  EXPECT_EQ(api->name(), "docker");
  EXPECT_TRUE(api->gpu_holders(std::chrono::seconds(5)).empty());
  EXPECT_THAT(api->stop_argv("job1"), ElementsAre("/usr/bin/docker", "stop", "job1"));
  EXPECT_THAT(api->attach_argv("job1"), ElementsAre("/usr/bin/docker", "attach", "job1"));
  DockerRunRequest request;
  request.image = "img";
  request.gpu_indices = {1};
  request.gpu_uuids = {"GPU-1"};
  EXPECT_EQ(api->run_argv(request).front(), "/usr/bin/docker");
}

}  // namespace
}  // namespace gpurun
