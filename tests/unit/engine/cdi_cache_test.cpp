// Unit tests for the docker engine's CDI answer remembered between launches (docker/cdi_cache.hpp):
// /info asked once while the engine runs, again when its socket is made anew, and never taken from
// a file another user could have written.
#include "docker/cdi_cache.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "docker/docker_api.hpp"
#include "gpurun/util/privileges.hpp"
#include "stand_in_engine.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::size_t info_requests(StandInEngine& engine) {
  std::size_t n = 0;
  for (const std::string& line : engine.requests()) n += line.starts_with("GET /info ") ? 1U : 0U;
  return n;
}

class CdiCacheTest : public ::testing::Test {
 protected:
  test::TempDir temp{"cdi-cache"};
  std::string cache = temp / "cache/gpurun/engine-cdi.json";
  StandInEngine::Answer info{200, R"({"CDISpecDirs": ["/etc/cdi", "/var/run/cdi"]})"};
};

TEST_F(CdiCacheTest, TheEnginesAnswerIsAskedOnceWhileItsSocketStaysTheSame) {
  StandInEngine engine({{"/info", info}});
  const CdiSupport first = docker_api_cdi_support(engine.path(), 5s, cache);
  EXPECT_TRUE(first.available) << first.why;
  const CdiSupport second = docker_api_cdi_support(engine.path(), 5s, cache);
  EXPECT_TRUE(second.available);
  EXPECT_THAT(second.why, HasSubstr("remembered while the engine runs"));
  EXPECT_EQ(info_requests(engine), 1U);
  struct stat st {};
  ASSERT_EQ(::stat((temp / "cache/gpurun").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);  // private: it names the user's engines
}

// A unix socket bound at `path`, as an engine makes it when it starts.
void bind_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
}

TEST_F(CdiCacheTest, AnEngineRestartedAtTheSamePathIsAskedAgain) {
  const std::string path = temp / "docker.sock";
  bind_socket(path);
  const auto before = socket_mark(path);
  ASSERT_TRUE(before);
  remember_cdi(cache, path, *before, {true, "the engine's /info lists CDI spec directories /etc/cdi"});
  EXPECT_TRUE(cached_cdi(cache, path, *before));
  std::filesystem::remove(path);  // the engine stops; it starts again and makes its socket anew
  bind_socket(path);
  const auto after = socket_mark(path);
  ASSERT_TRUE(after);
  EXPECT_NE(*after, *before);
  EXPECT_FALSE(cached_cdi(cache, path, *after));
}

TEST_F(CdiCacheTest, AFileOthersMayWriteIsNotBelieved) {
  StandInEngine engine({{"/info", info}});
  docker_api_cdi_support(engine.path(), 5s, cache);
  const auto mark = socket_mark(engine.path());
  ASSERT_TRUE(mark);
  ASSERT_TRUE(cached_cdi(cache, engine.path(), *mark));
  ::chmod(cache.c_str(), 0666);
  EXPECT_FALSE(cached_cdi(cache, engine.path(), *mark));
  ::chmod(cache.c_str(), 0600);
  ::chmod((temp / "cache/gpurun").c_str(), 0777);
  EXPECT_FALSE(cached_cdi(cache, engine.path(), *mark));
  ::chmod((temp / "cache/gpurun").c_str(), 0700);
  std::ofstream(cache) << "not json";
  EXPECT_FALSE(cached_cdi(cache, engine.path(), *mark));
  docker_api_cdi_support(engine.path(), 5s, cache);  // asked again, and remembered again
  EXPECT_EQ(info_requests(engine), 2U);
  EXPECT_TRUE(cached_cdi(cache, engine.path(), *mark));
}

TEST_F(CdiCacheTest, AnEntryOfAnotherShapeIsAMissNeverAThrow) {
  StandInEngine engine({{"/info", info}});
  docker_api_cdi_support(engine.path(), 5s, cache);
  const auto mark = socket_mark(engine.path());
  ASSERT_TRUE(mark);
  const std::vector<std::string> entries{R"({"mark": 5, "cdi": true, "why": "x"})", R"({"mark": null})", R"("text")",
                                         R"({"cdi": true, "why": "x"})",
                                         R"({"mark": ")" + *mark + R"(", "cdi": "yes"})"};
  for (const std::string& entry : entries) {
    std::ofstream(cache) << R"({")" << engine.path() << R"(": )" << entry << "}";
    EXPECT_FALSE(cached_cdi(cache, engine.path(), *mark)) << entry;
  }
  EXPECT_TRUE(docker_api_cdi_support(engine.path(), 5s, cache).available);  // asked again, not thrown
  EXPECT_EQ(info_requests(engine), 2U);
}

TEST_F(CdiCacheTest, AnEngineThatCannotBeAskedIsNotRemembered) {
  StandInEngine engine({{"/info", {500, R"({"message": "busy"})"}}});
  EXPECT_FALSE(docker_api_cdi_support(engine.path(), 5s, cache).available);
  EXPECT_FALSE(std::filesystem::exists(cache));
  EXPECT_FALSE(socket_mark(temp / "no-such.sock"));
}

// Under sudo gpurun acts with the caller's ids, and asks root's engine: its answer is kept in root's
// file, raised, not in a cache under the HOME sudo set (root's), which the caller could never trust.
TEST_F(CdiCacheTest, UnderSudoRootsEnginesAnswerIsRememberedInRootsFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  StandInEngine engine({{"/info", info}});
  // As /var/run/docker.sock is, its socket may be looked at by anyone (connected to as root).
  ::chmod(std::filesystem::path(engine.path()).parent_path().c_str(), 0755);
  const pid_t child = ::fork();
  if (child == 0) {
    act_as(UserIds{.uid = 65534, .gid = 65534, .groups = {}});
    const bool chosen = default_cdi_cache_file() == "/var/cache/gpurun/engine-cdi.json";
    docker_api_cdi_support(engine.path(), 5s, cache);
    const CdiSupport second = docker_api_cdi_support(engine.path(), 5s, cache);
    ::_exit(chosen && second.why.find("remembered") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(info_requests(engine), 1U);
  struct stat st {};
  ASSERT_EQ(::stat(cache.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0U);
}

}  // namespace
}  // namespace gpurun
