// Unit tests for the service's socket (gpurun/service/service_server.hpp): the answers, with a
// real store in a scratch directory, and one exchange over a real socket with gpurun's client.
#include "gpurun/service/service_server.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "gpurun/history/run_json.hpp"
#include "gpurun/history/time_text.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/unix_http.hpp"
#include "http_loop.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using json = nlohmann::json;

const WallTime kT0 = WallTime{} + std::chrono::seconds(1'795'953'600);

RunRecord record(std::int64_t id, const std::string& user, std::chrono::seconds start) {
  RunRecord run;
  run.id = id;
  run.key = "process:" + std::to_string(id) + ":1";
  run.name = "job-" + std::to_string(id);
  run.user = user;
  run.gpus = {0};
  run.start = kT0 + start;
  run.last_seen = run.start + 60s;
  run.gpu_seconds = 60;
  run.busy_gpu_seconds = 30;
  return run;
}

std::vector<std::int64_t> ids(const json& runs) {
  std::vector<std::int64_t> out;
  for (const auto& r : runs) out.push_back(r["id"].get<std::int64_t>());
  return out;
}

class ServiceServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpurun-server-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    store_ = std::make_unique<RunStore>(dir_ + "/gpurund.db");
    served_.store_path = dir_ + "/gpurund.db";
    RunRecord ended = record(1, "alice", 0s);
    ended.end = ended.last_seen;
    ended.ended_by = "gone";
    RunRecord open = record(2, "bob", 100s);
    store_->save({open}, {ended});
    // The tracker's view of run 2 is fresher than the store's; run 3 is not written yet.
    RunRecord fresher = open;
    fresher.gpu_seconds = 120;
    served_.fresh = {fresher, record(3, "alice", 200s)};
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Runs 4 to 999, each named and run by 4 KiB of control bytes (each written \u0001): 24 MiB of JSON.
  void add_runs_of_4_kib_control_bytes() {
    const std::string controls(4096, '\x01');
    for (std::int64_t id = 4; id < 1000; ++id) {
      RunRecord run = record(id, "carol", std::chrono::seconds(200 + id));
      run.name = run.command = controls;
      served_.fresh.push_back(run);
    }
  }
  ServiceAnswer ask(const std::string& target, uid_t uid = 0, const std::string& caller = "") {
    return answer_request({.target = target, .peer_uid = uid, .claimed_caller = caller}, served_, settings_);
  }
  std::string dir_;
  std::unique_ptr<RunStore> store_;
  ServedRuns served_;
  ServerSettings settings_;
};

TEST_F(ServiceServerTest, RunsAreNewestFirstWithTheFreshFiguresAndFilters) {
  const ServiceAnswer all = ask("/v1/runs");
  ASSERT_EQ(all.status, 200) << all.body;
  const json runs = json::parse(all.body);
  EXPECT_THAT(ids(runs), ::testing::ElementsAre(3, 2, 1));
  EXPECT_DOUBLE_EQ(runs.at(1).at("gpu_seconds").get<double>(), 120);  // from the tracker, not the store
  EXPECT_THAT(ids(json::parse(ask("/v1/runs?user=alice").body)), ::testing::ElementsAre(3, 1));
  // Run 1 ended 60 s after kT0: a window from kT0 + 61 s leaves it out, the open ones stay.
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>((kT0 + 61s).time_since_epoch()).count();
  EXPECT_THAT(ids(json::parse(ask("/v1/runs?since=" + std::to_string(since)).body)), ::testing::ElementsAre(3, 2));
  EXPECT_EQ(ask("/v1/runs?since=yesterday").status, 400);
  EXPECT_EQ(ask("/v1/runs?since=99999999999999999").status, 400);  // would overflow the clock
  EXPECT_EQ(ask("/v1/nothing").status, 404);
  EXPECT_EQ(ask("/v1/runs?user=%zz").status, 400);
}

TEST_F(ServiceServerTest, TheWindowHoldsForRunsNotWrittenYet) {
  // The tracker ended run 2 (stored open) at kT0 + 160 s and run 3 (never written) at kT0 + 260 s;
  // a disk that stays full keeps them fresh only.
  served_.fresh[0].end = kT0 + 160s;
  served_.fresh[1].end = kT0 + 260s;
  const auto ms = [](WallTime t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
  };
  EXPECT_THAT(ids(json::parse(ask("/v1/runs?since=" + ms(kT0 + 200s)).body)), ::testing::ElementsAre(3));
  EXPECT_THAT(ids(json::parse(ask("/v1/runs?since=" + ms(kT0 + 300s)).body)), ::testing::ElementsAre());
  const json usage = json::parse(ask("/v1/usage?since=" + ms(kT0 + 300s)).body);
  EXPECT_TRUE(usage.empty()) << usage.dump();
}

// One request must not make the root service hold a year of runs: the newest kMostRunsAnAnswer.
TEST_F(ServiceServerTest, AnAnswerHoldsTheNewestRunsUpToItsLimit) {
  EXPECT_THAT(ids(json::parse(ask("/v1/runs?limit=2").body)), ::testing::ElementsAre(3, 2));
  EXPECT_THAT(ids(json::parse(ask("/v1/runs?limit=1&user=alice").body)), ::testing::ElementsAre(3));
  for (const char* bad : {"0", "-1", "x", "10001"}) {
    const ServiceAnswer refused = ask(std::string("/v1/runs?limit=") + bad);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_THAT(refused.body, HasSubstr("limit: expected a whole number from 1 to 10000"));
  }
  for (std::int64_t id = 4; id <= static_cast<std::int64_t>(kMostRunsAnAnswer) + 2; ++id)
    served_.fresh.push_back(record(id, "carol", std::chrono::seconds(200 + id)));
  const json runs = json::parse(ask("/v1/runs?fields=table").body).at("rows");
  ASSERT_EQ(runs.size(), kMostRunsAnAnswer);
  EXPECT_EQ(runs.front().at(0), kMostRunsAnAnswer + 2);  // the newest first
  // usage sums every run of its window: no limit there.
  const json usage = json::parse(ask("/v1/usage").body);
  double counted = 0;
  for (const auto& row : usage) counted += row.at("runs").get<double>();
  EXPECT_EQ(counted, kMostRunsAnAnswer + 2);
}

// 10 000 runs of 4 KiB commands of control bytes (each written \u0001) were half a gigabyte in
// the root service, more than gpurun reads: the newest that fit in kMostAnswerBytes, and a note.
TEST_F(ServiceServerTest, AnAnswerTooLargeHoldsTheNewestRunsThatFitAndSaysSo) {
  add_runs_of_4_kib_control_bytes();
  for (const char* target : {"/v1/runs", "/v1/runs?fields=table"}) {
    const ServiceAnswer answer = ask(target);
    ASSERT_EQ(answer.status, 200);
    EXPECT_LE(answer.body.size(), kMostAnswerBytes);
    const json parsed = json::parse(answer.body);
    const json& runs = parsed.is_array() ? parsed : parsed.at("rows");
    ASSERT_GT(runs.size(), 100U) << target;
    ASSERT_LT(runs.size(), 999U) << target;
    const json& newest = parsed.is_array() ? runs.front().at("id") : runs.front().at(0);
    EXPECT_EQ(newest, 999) << target;
    EXPECT_THAT(answer.note, HasSubstr(fmt::format("these are the newest {} of the runs asked for", runs.size())));
  }
  EXPECT_EQ(ask("/v1/runs?limit=100").note, "");  // all of them fit
  // gpurun's client is given the note (and says it on stderr).
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  // 60 s: under ASan on two loaded vCPUs, 16 MiB of answer took the server over 10 s (CI, session 43).
  UnixHttpClient client(
      settings_.socket_path, std::chrono::steady_clock::now() + 60s,
      {.name = "the gpurun service", .access_hint = nullptr, .headers = {}, .note_header = "X-Gpurun-Note"});
  const HttpResponse response = client.get("/v1/runs?fields=table");
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.note, HasSubstr("narrow them with --since or --user"));
  EXPECT_EQ(client.get("/v1/runs?limit=3").note, "");
}

// Four readers for everyone: one user's queries on four connections kept everyone else's waiting.
TEST_F(ServiceServerTest, OneUserHasTwoQueriesOfTheStoreGoingAtMost) {
  store_.reset();
  std::optional<SQLite::Database> holder(std::in_place, dir_ + "/gpurund.db", SQLite::OPEN_READWRITE);
  holder->exec("PRAGMA locking_mode=EXCLUSIVE");
  holder->exec("BEGIN EXCLUSIVE");  // each read waits on this
  std::vector<std::thread> going;
  for (int i = 0; i < 2; ++i) going.emplace_back([&] { EXPECT_EQ(ask("/v1/runs", 0, "alice").status, 200); });
  going.emplace_back([&] { EXPECT_EQ(ask("/v1/usage", 0, "bob").status, 200); });  // someone else's
  std::this_thread::sleep_for(300ms);
  const ServiceAnswer third = ask("/v1/usage", 0, "alice");
  EXPECT_EQ(third.status, 503);
  EXPECT_THAT(third.body, HasSubstr("you have 2 queries of the history going already"));
  EXPECT_EQ(ask("/v1/gpus", 0, "alice").status, 200);  // reads no store
  holder.reset();
  for (std::thread& t : going) t.join();
  EXPECT_EQ(ask("/v1/runs", 0, "alice").status, 200);  // given back
}

// usage over a year of runs: the root service sums them as the store hands them over, holding
// one at a time (12 000 runs of 4 KB commands: about 50 MB if held at once). Measured in a child,
// whose peak resident set is its own.
TEST_F(ServiceServerTest, UsageOverManyStoredRunsHoldsOneRunAtATime) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory aside (its quarantine): the peak grows either way";
#endif
  EXPECT_TRUE(test::passes_in_child([&] {
    std::int64_t id = 10;
    for (int batch = 0; batch < 24; ++batch) {
      std::vector<RunRecord> ended;
      for (int i = 0; i < 500; ++i, ++id) {
        RunRecord run = record(id, "carol", std::chrono::seconds(id));
        run.command = std::string(4096, 'x');
        run.end = run.last_seen;
        run.ended_by = "gone";
        ended.push_back(std::move(run));
      }
      store_->save({}, ended);
    }
    ServiceAnswer answer;
    const long grown_kib = test::peak_growth_kib([&] { answer = ask("/v1/usage"); });
    const json rows = json::parse(answer.body);
    const bool counted = rows.size() == 3 && rows[0]["key"] == "carol" && rows[0]["runs"] == 12'000;
    std::fprintf(stderr, "usage over 12 000 runs: peak resident set grew %ld KiB\n", grown_kib);
    return counted && grown_kib < 16 * 1024;
  }));
}

TEST_F(ServiceServerTest, TheTablesFieldsLeaveOutWhatTheHistoryTableDoesNotShow) {
  const std::string table = ask("/v1/runs?fields=table").body;
  const std::vector<RunRecord> runs = runs_from_table_json(nlohmann::json::parse(table));
  ASSERT_EQ(runs.size(), 3U);
  EXPECT_TRUE(runs[0].command.empty());
  EXPECT_TRUE(runs[0].image.empty());
  EXPECT_EQ(runs[1].gpu_seconds, 120);
  EXPECT_TRUE(json::parse(ask("/v1/runs").body)[0].contains("command"));
  EXPECT_LT(table.size(), ask("/v1/runs").body.size() / 2);
}

TEST_F(ServiceServerTest, UsageSumsPerKeyAndRefusesAnUnknownKey) {
  const ServiceAnswer answer = ask("/v1/usage?by=user");
  ASSERT_EQ(answer.status, 200) << answer.body;
  const json rows = json::parse(answer.body);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["key"], "alice");
  EXPECT_EQ(rows[0]["runs"], 2);
  // bob's run counts as the tracker holds it now (120 GPU-s), not as it was written (60).
  EXPECT_EQ(rows[1]["key"], "bob");
  EXPECT_DOUBLE_EQ(rows[1]["gpu_hours"].get<double>(), 120.0 / 3600);
  EXPECT_EQ(ask("/v1/usage?by=colour").status, 400);
}

TEST_F(ServiceServerTest, OneRunByIdOrNameAndNotFoundSaysSo) {
  EXPECT_EQ(json::parse(ask("/v1/runs/3").body)["name"], "job-3");  // only in the tracker yet
  EXPECT_EQ(json::parse(ask("/v1/runs/job-2").body)["gpu_seconds"], 120);
  const ServiceAnswer missing = ask("/v1/runs/job-9");
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.body, HasSubstr("no run named job-9"));
}

TEST_F(ServiceServerTest, AnIdNamesItsRunBeforeANewerContainerWhoseIdBeginsWithIt) {
  RunRecord stored = record(1234, "alice", 0s);
  stored.end = stored.last_seen;
  store_->save({}, {stored});
  RunRecord live = record(2000, "bob", 300s);  // in the tracker alone, newer
  live.container_id = "1234abcdef56";
  served_.fresh.push_back(live);
  EXPECT_EQ(json::parse(ask("/v1/runs/1234").body)["id"], 1234);
  EXPECT_EQ(json::parse(ask("/v1/runs/1234a").body)["id"], 2000);
  // Asked by the owner of that container: the id still names run 1234, the prefix bob's own.
  EXPECT_EQ(json::parse(ask("/v1/runs/1234", 0, "bob").body)["id"], 1234);
  EXPECT_EQ(json::parse(ask("/v1/runs/1234a", 0, "bob").body)["id"], 2000);
}

TEST_F(ServiceServerTest, ANameTwoUsersGaveIsTheCallersOwnRunFirst) {
  // bob's run 4 "train" is newer than alice's run 5 "train" (runs in the store and in the tracker).
  RunRecord alices = record(5, "alice", 50s);
  alices.name = "train";
  alices.end = alices.last_seen;
  store_->save({}, {alices});
  RunRecord bobs = record(4, "bob", 300s);
  bobs.name = "train";
  served_.fresh.push_back(bobs);
  for (const HistoryVisibility visibility : {HistoryVisibility::own, HistoryVisibility::all}) {
    settings_.visibility = visibility;
    EXPECT_EQ(json::parse(ask("/v1/runs/train", 0, "alice").body)["id"], 5);  // hers, not bob's newer one
    EXPECT_EQ(json::parse(ask("/v1/runs/train", 0, "bob").body)["id"], 4);
  }
  EXPECT_EQ(json::parse(ask("/v1/runs/train", 0, "carol").body)["id"], 4);  // under all: the newest
  settings_.visibility = HistoryVisibility::own;
  EXPECT_EQ(ask("/v1/runs/train", 0, "carol").status, 404);
}

TEST_F(ServiceServerTest, IdleGpusSayHowLongAndSinceWhen) {
  const WallTime since = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now()) - 3600s;
  served_.metrics.idle_since = {{3, since}, {0, since}};
  served_.metrics.sampled_at = std::chrono::system_clock::now();
  // GPU 3 a process's; GPU 0 an exempt container's alone (dcgm-exporter), so not held idle.
  served_.metrics.holders = {HolderSample{.key = "process:9:1",
                                          .name = "python",
                                          .user = "alice",
                                          .container_id = "",
                                          .image = "",
                                          .command = "python",
                                          .gpus = {3},
                                          .memory_used_mib = std::nullopt},
                             HolderSample{.key = "container:d",
                                          .name = "dcgm-exporter",
                                          .user = "",
                                          .container_id = "d",
                                          .image = "nvcr.io/nvidia/k8s/dcgm-exporter",
                                          .command = "",
                                          .gpus = {0},
                                          .memory_used_mib = std::nullopt}};
  served_.metrics.idle_exempt_containers = {"dcgm-exporter"};
  const ServiceAnswer answer = ask("/v1/gpus", 65534);  // anyone: status shows GPUs to everyone
  ASSERT_EQ(answer.status, 200) << answer.body;
  const json gpus = json::parse(answer.body)["gpus"];
  ASSERT_EQ(gpus.size(), 1U);
  EXPECT_EQ(gpus[0]["index"], 3);
  EXPECT_EQ(gpus[0]["idle_since"], rfc3339(since));
  EXPECT_NEAR(gpus[0]["idle_s"].get<double>(), 3600, 5);
  // A holder whose run began after the GPU went idle has held it idle since its start.
  RunRecord started = record(9, "alice", 0s);
  started.key = "process:9:1";
  started.start = since + 3000s;
  served_.metrics.running = {started};
  EXPECT_EQ(json::parse(ask("/v1/gpus").body)["gpus"][0]["idle_since"], rfc3339(since + 3000s));
  served_.metrics.running.clear();
  served_.metrics.idle_since = {{3, std::chrono::system_clock::now() + 3600s}};  // the clock stepped back
  EXPECT_EQ(json::parse(ask("/v1/gpus").body)["gpus"][0]["idle_s"], 0);
  served_.metrics.sampled_at = std::chrono::system_clock::now() - 3600s;  // no reading since: none counted on
  EXPECT_TRUE(json::parse(ask("/v1/gpus").body)["gpus"].empty());
}

TEST_F(ServiceServerTest, UnderOwnVisibilityAUserSeesOnlyTheirRunsAndRootMayNameTheCaller) {
  settings_.visibility = HistoryVisibility::own;
  // root asking for itself sees all; root naming alice (sudo gpurun) sees alice's.
  EXPECT_THAT(ids(json::parse(ask("/v1/runs", 0).body)), ::testing::ElementsAre(3, 2, 1));
  EXPECT_THAT(ids(json::parse(ask("/v1/runs", 0, "alice").body)), ::testing::ElementsAre(3, 1));
  EXPECT_EQ(ask("/v1/runs?user=bob", 0, "alice").status, 403);
  EXPECT_EQ(ask("/v1/runs/job-2", 0, "alice").status, 404);  // bob's: not told it exists
  EXPECT_EQ(ask("/v1/runs/job-1", 0, "alice").status, 200);
  // Nobody but root may name a caller: uid 65534 asking "as alice" is still nobody.
  const uid_t nobody = 65534;
  EXPECT_THAT(ids(json::parse(ask("/v1/runs", nobody, "alice").body)), ::testing::IsEmpty());
  // Under "all" everyone sees everything.
  settings_.visibility = HistoryVisibility::all;
  EXPECT_THAT(ids(json::parse(ask("/v1/runs", nobody).body)), ::testing::ElementsAre(3, 2, 1));
}

// Under "all" everyone sees every run, but another user's command by its program alone: its
// arguments may carry tokens, kept in the history long after the run. Its user, root and the
// admin group see it whole.
TEST_F(ServiceServerTest, AnotherUsersCommandIsShownByItsProgramAlone) {
  served_.fresh[0].command = "python train.py --hf-token hf_secret";  // bob's run 2
  served_.fresh[1].command = "python eval.py --key k";                // alice's run 3
  settings_.visibility = HistoryVisibility::all;
  const auto commands = [&](uid_t uid, const std::string& caller) {
    std::map<std::int64_t, std::string> out;
    for (const auto& r : json::parse(ask("/v1/runs", uid, caller).body))
      out[r["id"].get<std::int64_t>()] = r["command"].get<std::string>();
    return out;
  };
  const auto as_alice = commands(0, "alice");
  EXPECT_EQ(as_alice.at(2), "python");  // bob's
  EXPECT_EQ(as_alice.at(3), "python eval.py --key k");
  EXPECT_EQ(commands(0, "").at(2), "python train.py --hf-token hf_secret");  // root
  EXPECT_EQ(json::parse(ask("/v1/runs/job-2", 0, "alice").body)["command"], "python");
  EXPECT_EQ(json::parse(ask("/v1/runs/job-2", 0, "bob").body)["command"], "python train.py --hf-token hf_secret");
  // A bare process is named by its command line: asking for it by that name would confirm a guess
  // of its arguments. By its id it is found.
  served_.fresh[0].name = served_.fresh[0].command;
  EXPECT_EQ(ask("/v1/runs/python%20train.py%20--hf-token%20hf_secret", 0, "alice").status, 404);
  EXPECT_EQ(ask("/v1/runs/2", 0, "alice").status, 200);
  EXPECT_EQ(ask("/v1/runs/python%20train.py%20--hf-token%20hf_secret", 0, "bob").status, 200);  // his own
}

TEST_F(ServiceServerTest, AnswersGpurunsClientOverARealSocketAndRemovesItWhenDone) {
  settings_.socket_path = dir_ + "/run/gpurund.sock";  // its folder is created
  {
    const ServiceServer server(settings_, served_);
    UnixHttpClient client(settings_.socket_path, std::chrono::steady_clock::now() + 10s,
                          {.name = "the gpurun service", .access_hint = nullptr, .headers = {}});
    const HttpResponse first = client.get("/v1/runs");
    EXPECT_EQ(first.status, 200);
    EXPECT_THAT(ids(json::parse(first.body)), ::testing::ElementsAre(3, 2, 1));
    EXPECT_EQ(client.get("/v1/runs/job-9").status, 404);  // the same connection, kept alive
    EXPECT_EQ(std::filesystem::status(settings_.socket_path).permissions() & std::filesystem::perms::others_write,
              std::filesystem::perms::others_write);
  }
  EXPECT_FALSE(std::filesystem::exists(settings_.socket_path));
}

// A connection to the socket that says nothing (a stalled client, or one a user holds open).
Fd silent_connection(const std::string& path) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  return fd;
}

TEST_F(ServiceServerTest, AQueryReadsTheStoreWithoutHoldingWhatTheSamplingNeeds) {
  // A query held the recorder's lock while SQLite read: one user's year-long usage, asked in a
  // loop, starved the sampling and /metrics for seconds.
  store_.reset();  // the writer idle, as between two flushes
  std::optional<SQLite::Database> holder(std::in_place, dir_ + "/gpurund.db", SQLite::OPEN_READWRITE);
  holder->exec("PRAGMA locking_mode=EXCLUSIVE");
  holder->exec("BEGIN EXCLUSIVE");  // the store's read waits on this, as on a long one
  std::thread query([&] { EXPECT_EQ(ask("/v1/runs").status, 200); });
  std::this_thread::sleep_for(300ms);
  const bool free = served_.mutex.try_lock();
  if (free) served_.mutex.unlock();
  holder.reset();  // closed: the read goes on
  query.join();
  EXPECT_TRUE(free) << "the query held ServedRuns::mutex while it waited for the store";
}

// What `fd` receives until it is closed, or nothing comes for `quiet_ms`.
std::string read_to_close(const Fd& fd, int quiet_ms) {
  std::string answer;
  std::vector<char> buffer(65536);
  pollfd ready{.fd = fd.get(), .events = POLLIN, .revents = 0};
  while (::poll(&ready, 1, quiet_ms) == 1) {
    const ssize_t n = ::recv(fd.get(), buffer.data(), buffer.size(), 0);
    if (n <= 0) break;
    answer.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return answer;
}

// What one request, sent whole on a fresh connection, is answered (the whole answer, to its close).
std::string answer_to(const std::string& path, const std::string& request) {
  const Fd fd = silent_connection(path);
  EXPECT_EQ(::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  return read_to_close(fd, 3000);
}

// A client that asks for a large answer and stops reading held it (16 MiB, and its thread) for
// the 4 minutes a slow link may take; it must take some of it every 5 s.
TEST_F(ServiceServerTest, AClientThatStopsReadingALargeAnswerIsLetGoWithinFiveSeconds) {
  add_runs_of_4_kib_control_bytes();
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  const Fd fd = silent_connection(settings_.socket_path);
  static constexpr char kRequest[] = "GET /v1/runs HTTP/1.1\r\nHost: gpurund\r\n\r\n";
  ASSERT_EQ(::send(fd.get(), kRequest, sizeof kRequest - 1, MSG_NOSIGNAL), sizeof kRequest - 1);
  // Once the answer comes (its 16 MiB take seconds to write under the sanitizers), read nothing.
  pollfd first{.fd = fd.get(), .events = POLLIN, .revents = 0};
  ASSERT_EQ(::poll(&first, 1, 120'000), 1);
  std::this_thread::sleep_for(7s);
  const std::string answer = read_to_close(fd, 1000);
  ASSERT_THAT(answer, HasSubstr("HTTP/1.1 200"));
  const std::size_t length = std::stoul(answer.substr(answer.find("Content-Length: ") + 16));
  EXPECT_LT(answer.size() - answer.find("\r\n\r\n") - 4, length);  // what the socket held, then the close
}

TEST_F(ServiceServerTest, ARequestThatCannotBeReadIsToldWhyAndAnAbsoluteTargetIsAnswered) {
  // Each was a connection closed without a word.
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  EXPECT_THAT(answer_to(settings_.socket_path, "GARBAGE\r\n\r\n"), ::testing::StartsWith("HTTP/1.1 400 Bad Request"));
  EXPECT_THAT(answer_to(settings_.socket_path, "GET /v1/runs HTTP/9.9\r\n\r\n"),
              ::testing::StartsWith("HTTP/1.1 400 Bad Request"));
  EXPECT_THAT(
      answer_to(settings_.socket_path, "GET /v1/runs?" + std::string(20'000, 'x') + " HTTP/1.1\r\nHost: g\r\n\r\n"),
      ::testing::StartsWith("HTTP/1.1 431 Request Header Fields Too Large"));
  EXPECT_THAT(
      answer_to(settings_.socket_path, "GET http://gpurund/v1/runs HTTP/1.1\r\nHost: g\r\nConnection: close\r\n\r\n"),
      ::testing::StartsWith("HTTP/1.1 200 OK"));
}

TEST_F(ServiceServerTest, HeadIsAnsweredAsGetWithoutItsBodyAndAnotherMethodIsToldWhatIsAllowed) {
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  const std::string head =
      answer_to(settings_.socket_path, "HEAD /v1/runs HTTP/1.1\r\nHost: g\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(head, ::testing::StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(head, ::testing::EndsWith("\r\n\r\n"));  // no body
  const std::string post =
      answer_to(settings_.socket_path, "POST /v1/runs HTTP/1.1\r\nHost: g\r\nContent-Length: 0\r\n\r\n");
  EXPECT_THAT(post, ::testing::StartsWith("HTTP/1.1 405 Method Not Allowed"));
  EXPECT_THAT(post, ::testing::HasSubstr("Allow: GET, HEAD\r\n"));
}

// A chunked body's chunk extension (or trailer) sent without end: the parser sets no limit of its
// own there, and the request's buffer grew with it for the whole 5 s the read may take.
TEST_F(ServiceServerTest, AChunkExtensionWithoutEndIsRefusedNotBuffered) {
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  const std::string request =
      "GET /v1/gpus HTTP/1.1\r\nHost: g\r\nTransfer-Encoding: chunked\r\n\r\n1;a=" + std::string(100'000, 'b');
  EXPECT_THAT(answer_to(settings_.socket_path, request), ::testing::StartsWith("HTTP/1.1 400 Bad Request"));
}

// Eight peers of four connections each took the listener's 32, and the proxy in front of the
// page, a Prometheus on the host and root's gpurun got none: 8 are kept for those.
TEST(ConnectionShares, EightOfTheThirtyTwoAreKeptForThePeersThatShareTheWhole) {
  ConnectionShares shares;
  int others = 0;
  for (int peer = 0; peer < 8; ++peer)
    for (int i = 0; i < ConnectionShares::kPerPeer; ++i)
      others += shares.admit("10.0.0." + std::to_string(peer)) ? 1 : 0;
  EXPECT_EQ(others, 24);
  EXPECT_FALSE(shares.admit("10.0.0.99"));
  EXPECT_FALSE(shares.admit("uid 1000 on this host"));
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(shares.admit(i % 2 == 0 ? "this host" : "uid 0")) << i;
  EXPECT_FALSE(shares.admit("this host"));  // 32 in all
  shares.release("10.0.0.0");
  EXPECT_TRUE(shares.admit("10.0.0.0"));
  EXPECT_FALSE(shares.admit("10.0.0.0"));  // four of its own again
  shares.release("uid 0");
  EXPECT_FALSE(shares.admit("10.0.0.50"));  // a slot of the 8 kept is not a new peer's
  EXPECT_TRUE(shares.admit("uid 0"));
  EXPECT_EQ(shares.open(), 32);
}

// Every sudo caller's gpurun asks as root: one caller's stalled sudo launches hold at most half,
// and the people on the socket keep theirs.
TEST(ConnectionShares, RootHoldsHalfAtMost) {
  ConnectionShares shares;
  int root = 0;
  for (int i = 0; i < ConnectionShares::kMost; ++i) root += shares.admit("uid 0") ? 1 : 0;
  EXPECT_EQ(root, ConnectionShares::kMostForRoot);
  for (int i = 0; i < ConnectionShares::kPerPeer; ++i) EXPECT_TRUE(shares.admit("uid 1000")) << i;
  EXPECT_TRUE(shares.admit("uid 1001"));
  shares.release("uid 0");
  EXPECT_TRUE(shares.admit("uid 0"));
}

TEST_F(ServiceServerTest, ClientsThatSayNothingKeepNobodyElseWaitingAndOneUserGetsFourConnections) {
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  std::vector<Fd> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(silent_connection(settings_.socket_path));
  std::this_thread::sleep_for(200ms);  // accepted, each waiting up to 5 s for a request
  // One at a time, this request would wait behind them for 15 s.
  const auto asked = std::chrono::steady_clock::now();
  UnixHttpClient client(settings_.socket_path, asked + 10s,
                        {.name = "the gpurun service", .access_hint = nullptr, .headers = {}});
  EXPECT_EQ(client.get("/v1/runs").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s);
  if (::geteuid() != 0) GTEST_SKIP() << "the per-user share needs root to connect as another user";
  // uid 65534 holds four; its fifth is told 503 at once (root, which asks for sudo's callers, is not capped).
  ::chmod(dir_.c_str(), 0755);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  settings_.socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
  const pid_t child = ::fork();
  if (child == 0) {  // no allocation here: the parent has other threads
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    int fds[5] = {};
    for (int& fd : fds) {
      fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) ::_exit(3);
      if (&fd == &fds[3]) ::usleep(200'000);  // the four accepted before the fifth comes
    }
    // It asks as gpurun does, a moment after connecting: told, not a broken pipe.
    ::usleep(20'000);
    static constexpr char kRequest[] = "GET /v1/runs HTTP/1.1\r\nHost: gpurund\r\n\r\n";
    if (::send(fds[4], kRequest, sizeof kRequest - 1, MSG_NOSIGNAL) != sizeof kRequest - 1) ::_exit(4);
    pollfd told{.fd = fds[4], .events = POLLIN, .revents = 0};
    char head[12] = {};
    ::_exit(::poll(&told, 1, 2000) == 1 && ::read(fds[4], head, sizeof head) == sizeof head &&
                    std::memcmp(head, "HTTP/1.1 503", sizeof head) == 0
                ? 0
                : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST_F(ServiceServerTest, AUserWhoFloodsTheSocketWithIdleConnectionsKeepsNobodyElseOut) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  settings_.socket_path = dir_ + "/s.sock";
  const ServiceServer server(settings_, served_);
  ::chmod(dir_.c_str(), 0755);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  settings_.socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
  // Each turned-away connection was waited for (50 ms) on the accept loop: 20 a second filled
  // the listen backlog, and everyone else's connect failed.
  const pid_t child = ::fork();
  if (child == 0) {  // no allocation here: the parent has other threads
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    static int fds[400];
    for (int& fd : fds) {
      fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
      (void)::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
    }
    ::sleep(4);  // held, saying nothing
    ::_exit(0);
  }
  std::this_thread::sleep_for(300ms);
  const auto asked = std::chrono::steady_clock::now();
  UnixHttpClient client(settings_.socket_path, asked + 3s,
                        {.name = "the gpurun service", .access_hint = nullptr, .headers = {}});
  EXPECT_EQ(client.get("/v1/runs").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
  int status = 0;
  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
}

// A directory another user may write, and rename in (not sticky): they could swap the socket for
// a link to any file between its bind and its chmod, which root would make 0666.
TEST_F(ServiceServerTest, RefusesADirectoryAnotherUserMayWrite) {
  const std::string shared = dir_ + "/shared";
  std::filesystem::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  settings_.socket_path = shared + "/gpurund.sock";
  try {
    const ServiceServer server(settings_, served_);
    ADD_FAILURE() << "it listened in a directory anyone may write";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("another user may write " + shared + " (owner uid 0, mode 777)"));
  }
  // A directory of root's inside it: the outer one may rename it away and put another in its place.
  std::filesystem::create_directory(shared + "/inner");
  settings_.socket_path = shared + "/inner/gpurund.sock";
  try {
    const ServiceServer server(settings_, served_);
    ADD_FAILURE() << "it listened below a directory anyone may write";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("another user may write " + shared + " "));
  }
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // sticky, as /tmp: nobody renames another's file
  const ServiceServer server(settings_, served_);
  EXPECT_TRUE(std::filesystem::is_socket(settings_.socket_path));
}

// A gpurund of another --state-dir on the same --socket (a test run beside the system's): the
// socket others answer on is not taken over, and one that replaced a server's is not removed by it.
TEST_F(ServiceServerTest, NeitherTakesOverNorRemovesASocketAnotherServiceAnswersOn) {
  settings_.socket_path = dir_ + "/gpurund.sock";
  auto first = std::make_unique<ServiceServer>(settings_, served_);
  try {
    const ServiceServer second(settings_, served_);
    ADD_FAILURE() << "it took over the socket a service answers on";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("another gpurund answers on " + settings_.socket_path));
  }
  ASSERT_EQ(::unlink(settings_.socket_path.c_str()), 0);  // removed by hand: a new one may come
  const ServiceServer replacement(settings_, served_);
  first.reset();
  EXPECT_TRUE(std::filesystem::is_socket(settings_.socket_path));  // the replacement's, kept
}

// Another user listening first on the socket's path (in a sticky directory such as /tmp) is no
// service: it is replaced, not a reason to stay down.
TEST_F(ServiceServerTest, AnotherUsersSocketOnThePathIsReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the socket another owner";
  settings_.socket_path = dir_ + "/gpurund.sock";
  const Fd squatter(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  settings_.socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::bind(squatter.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(squatter.get(), 4), 0);
  ASSERT_EQ(::chown(settings_.socket_path.c_str(), 65534, 65534), 0);
  const ServiceServer server(settings_, served_);
  struct stat info {};
  ASSERT_EQ(::stat(settings_.socket_path.c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, ::geteuid());
}

TEST_F(ServiceServerTest, RefusesToReplaceAFileThatIsNotASocket) {
  settings_.socket_path = dir_ + "/not-a-socket";
  { std::ofstream(settings_.socket_path) << "data"; }
  try {
    const ServiceServer server(settings_, served_);
    ADD_FAILURE() << "it listened over a file";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not a socket"));
  }
}

}  // namespace
}  // namespace gpurun
