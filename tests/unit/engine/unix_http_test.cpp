// Unit tests for the unix-socket HTTP client's concurrent GETs, against a stand-in engine.
#include "gpurun/util/unix_http.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/stop_request.hpp"
#include "stand_in_engine.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> bodies(const std::vector<HttpResponse>& answers) {
  std::vector<std::string> out;
  for (const HttpResponse& a : answers) out.push_back(std::to_string(a.status) + " " + a.body);
  return out;
}

TEST(UnixHttpGetAll, AnswersInTheOrderAskedWhateverOrderTheyCome) {
  StandInEngine engine({{"/a", {200, "A", 200ms}},
                        {"/b", {200, "B", 100ms}},
                        {"/d", {200, "D"}},
                        {"/e", {200, "E"}},
                        {"/f", {200, "F"}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  // "/c" is not there: its 404 is an answer like any other.
  const auto answers = client.get_all({"/a", "/b", "/c", "/d", "/e", "/f"}, 4);
  EXPECT_THAT(bodies(answers),
              ElementsAre("200 A", "200 B", R"(404 {"message":"page not found"})", "200 D", "200 E", "200 F"));
  EXPECT_EQ(engine.connections(), 4U);  // no more than asked, kept alive for the rest
}

// The caller reads each answer while the engine works on the others: handed over as it comes,
// once its connection has asked for the next target.
TEST(UnixHttpGetEach, HandsEachAnswerOverAsItComesAfterAskingTheNext) {
  StandInEngine engine({{"/a", {200, "A", 600ms}}, {"/b", {200, "B"}}, {"/c", {200, "C", 300ms}}, {"/d", {200, "D"}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  std::vector<std::string> handed;
  bool next_asked_first = false;
  client.get_each({"/a", "/b", "/c", "/d"}, 3, [&](std::size_t i, HttpResponse&& answer) {
    handed.push_back(std::to_string(i) + " " + answer.body);
    // /d goes out on /b's connection before B is handed over (afterwards, this would wait in vain).
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    while (i == 1 && !next_asked_first && std::chrono::steady_clock::now() < give_up) {
      next_asked_first = engine.requests().size() == 4;
      std::this_thread::sleep_for(1ms);
    }
  });
  EXPECT_THAT(handed, ElementsAre("1 B", "3 D", "2 C", "0 A"));
  EXPECT_TRUE(next_asked_first);
}

// A request sent ahead is on its way before get() is called, and get() reads its answer.
TEST(UnixHttpGetAll, ASocketPathLongerThanTheKernelTakesIsSaidSo) {
  // It was "unexpected failure: File name too long [system:36]".
  const std::string path = "/run/" + std::string(120, 'x') + "/gpurund.sock";
  UnixHttpClient client(path, std::chrono::steady_clock::now() + 1s,
                        {.name = "the gpurun service", .access_hint = nullptr, .headers = {}});
  client.send_ahead("/v1/runs");  // not sent, and no failure: get says why
  EXPECT_THAT(test::caught_error([&] { client.get("/v1/runs"); }).message,
              ::testing::HasSubstr("the gpurun service's socket path " + path +
                                   " is 138 bytes, longer than the 107 a unix socket's path may be"));
}

TEST(UnixHttpSendAhead, GetReadsTheAnswerOfTheRequestSentAhead) {
  StandInEngine engine({{"/a", {200, "A"}}, {"/b", {200, "B"}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  client.send_ahead("/a");
  const auto give_up = std::chrono::steady_clock::now() + 2s;
  while (engine.requests().empty() && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(engine.requests().size(), 1U);  // sent before any get()
  EXPECT_EQ(client.get("/a").body, "A");
  EXPECT_EQ(client.get("/b").body, "B");
  EXPECT_EQ(engine.requests().size(), 2U);  // "/a" asked once
  EXPECT_EQ(engine.connections(), 1U);
}

TEST(UnixHttpSendAhead, AnotherTargetNeverGetsTheAnswerSentAheadFor) {
  StandInEngine engine({{"/a", {200, "A"}}, {"/b", {200, "B"}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  client.send_ahead("/a");
  EXPECT_THAT(bodies(client.get_all({"/b", "/a"}, 1)), ElementsAre("200 B", "200 A"));
}

// A peer that accepts no more connections (its backlog full) must not hold send_ahead: connect(2)
// would block there, past any deadline. get() then fails at once, saying the engine cannot be
// reached (asio takes such a connect for done; the request cannot be written).
TEST(UnixHttpSendAhead, AFullBacklogNeverBlocks) {
  const test::TempDir dir{"gpurun-backlog"};
  const std::string path = dir / "full.sock";
  const Fd listening(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(listening.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listening.get(), 0), 0);  // never accepts
  std::vector<Fd> fillers;
  for (int i = 0; i < 8; ++i) {  // until the backlog is full
    fillers.emplace_back(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (::connect(fillers.back().get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) break;
  }
  ASSERT_EQ(errno, EAGAIN);
  UnixHttpClient client(path, std::chrono::steady_clock::now() + 300ms);
  const auto start = std::chrono::steady_clock::now();
  client.send_ahead("/a");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms);
  try {
    client.get("/a");
    ADD_FAILURE() << "get() answered";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot be reached"));
  }
}

// The sockets of the process that are inherited by a program it starts.
std::vector<int> sockets_kept_across_exec() {
  std::vector<int> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && (::fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0) found.push_back(fd);
  }
  return found;
}

// No program gpurun starts (nvidia-smi, docker) may hold a connection to the engine: under sudo
// it is root's.
TEST(UnixHttpClient, NoConnectionIsInheritedByAProgramStarted) {
  StandInEngine engine({{"/a", {200, "A"}}, {"/b", {200, "B"}}});
  UnixHttpClient ahead(engine.path(), std::chrono::steady_clock::now() + 5s);
  ahead.send_ahead("/a");
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(client.get_all({"/a", "/b"}, 2).size(), 2U);  // both connections kept open
  EXPECT_GE(engine.connections(), 3U);
  EXPECT_THAT(sockets_kept_across_exec(), IsEmpty());
}

TEST(UnixHttpSendAhead, NoSocketIsNoErrorUntilGet) {
  UnixHttpClient client("/nonexistent/gpurun-test.sock", std::chrono::steady_clock::now() + 5s);
  EXPECT_NO_THROW(client.send_ahead("/a"));
  EXPECT_THROW(client.get("/a"), Error);
}

TEST(UnixHttpGetAll, AskedAtOnceTheyTakeAboutTheLongestNotTheSum) {
  StandInEngine engine(
      {{"/a", {200, "A", 300ms}}, {"/b", {200, "B", 300ms}}, {"/c", {200, "C", 300ms}}, {"/d", {200, "D", 300ms}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(bodies(client.get_all({"/a", "/b", "/c", "/d"}, 4)), ElementsAre("200 A", "200 B", "200 C", "200 D"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);  // one after another: 1200 ms
}

TEST(UnixHttpGetAll, TheFirstConnectionIsGetsAndStaysInUse) {
  StandInEngine engine({{"/_ping", {200, "OK"}}, {"/a", {200, "A"}}, {"/b", {200, "B"}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(client.get("/_ping").body, "OK");
  EXPECT_THAT(bodies(client.get_all({"/a", "/b"}, 4)), ElementsAre("200 A", "200 B"));
  EXPECT_THAT(bodies(client.get_all({}, 4)), ElementsAre());
  EXPECT_EQ(client.get("/a").body, "A");
  EXPECT_EQ(engine.connections(), 2U);
}

TEST(UnixHttpGetAll, OneSlowAnswerPastTheDeadlineEndsThemAll) {
  StandInEngine engine({{"/a", {200, "A"}}, {"/slow", {200, "S", 1000ms}}, {"/b", {200, "B"}}});
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 200ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(
      [&] {
        client.get_all({"/a", "/slow", "/b"}, 4);
      },
      ::testing::ThrowsMessage<Error>("the Docker engine at " + engine.path() + " did not answer in time"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 800ms);
}

// gpurund asked to stop gives up a hung engine at once, not at the deadline.
TEST(UnixHttpGetAll, AStopRequestTheThreadWatchesEndsTheExchangesAsTheDeadlineWould) {
  StandInEngine engine({{"/a", {200, "A"}}, {"/slow", {200, "S", 5000ms}}});
  StopRequest stop;
  const WaitsEndOnStop watched(stop);
  UnixHttpClient client(engine.path(), std::chrono::steady_clock::now() + 30s);
  EXPECT_EQ(client.get("/a").body, "A");  // not requested yet: answered as ever
  std::thread requester([&] {
    std::this_thread::sleep_for(200ms);
    stop.request(SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT([&] { client.get_all({"/slow"}, 1); },
              ::testing::ThrowsMessage<Error>("the Docker engine at " + engine.path() + ": asked to stop"));
  requester.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s) << "the exchange went on after the stop request";
}

TEST(UnixHttpGetAll, NoSocketIsAnError) {
  UnixHttpClient client("/nonexistent/gpurun/d.sock", std::chrono::steady_clock::now() + 1s);
  EXPECT_THAT(
      [&] {
        client.get_all({"/a", "/b"}, 4);
      },
      ::testing::ThrowsMessage<Error>(
          "the Docker engine at /nonexistent/gpurun/d.sock cannot be reached: No such file or directory"));
}

}  // namespace
}  // namespace gpurun
