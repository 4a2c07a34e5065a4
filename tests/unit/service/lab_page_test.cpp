// Unit tests for the lab's page (gpurun/service/lab_page.hpp) and the listener's routes
// (src/service/web_routes.hpp): the board's JSON, escaping of every name a user chose, the
// idle mark, what history_visibility "own" hides, and the answers' types and headers.
#include "gpurun/service/lab_page.hpp"
#include "gpurun/history/time_text.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/test_support.hpp"
#include "web_routes.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

const WallTime kNow = WallTime{} + 1'764'000'000s;

// GPU 0 free; GPU 1 held by carol's container named as markup, idle for 90 s.
struct Sample {
  Inventory inventory;
  MetricsState metrics;
  Sample() {
    GpuAssessment free;
    free.gpu = test::make_gpu(0, 10, 81920, 0);
    free.free = true;
    GpuAssessment held;
    held.gpu = test::make_gpu(1, 4000, 81920, 0);
    held.reasons = {"held by a container"};
    inventory.assessed = {free, held};
    metrics.hostname = "dgx<1>";
    metrics.holders = {{.key = "container:c2",
                        .name = "<script>alert(1)</script>",
                        .user = "carol",
                        .container_id = "c2c2c2c2c2c2c2c2",
                        .image = "x",
                        .command = "sleep",
                        .gpus = {1},
                        .memory_used_mib = std::nullopt,
                        .started_by_gpurun = false}};
    RunRecord run;
    run.id = 7;
    run.key = "container:c2";
    metrics.running = {run};
    metrics.idle_since = {{1, kNow - 90s}};
    metrics.last_sample_ok = true;
    metrics.sampled_at = kNow - 5s;
  }
};

TEST(HtmlEscape, EscapesMarkupQuotesAndControlCharacters) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("a\nb\x1b"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(html_escape("GPU · 80 GiB"), "GPU · 80 GiB");
}

TEST(BoardJson, IsStatusJsonWithTheHoldersTheirRunsAndIdleTimes) {
  const Sample s;
  const auto board = board_json(s.inventory, s.metrics, kNow);
  EXPECT_EQ(board["host"], "dgx<1>");
  ASSERT_EQ(board["gpus"].size(), 2U);
  EXPECT_EQ(board["gpus"][0]["state"], "free");
  EXPECT_TRUE(board["gpus"][0]["idle_s"].is_null());
  EXPECT_TRUE(board["gpus"][0]["held_by"].empty());
  EXPECT_EQ(board["gpus"][1]["idle_s"], 90);
  ASSERT_EQ(board["gpus"][1]["held_by"].size(), 1U);
  EXPECT_EQ(board["gpus"][1]["held_by"][0]["user"], "carol");
  EXPECT_EQ(board["gpus"][1]["held_by"][0]["container"], "c2c2c2c2c2c2");
  EXPECT_EQ(board["gpus"][1]["held_by"][0]["run"], 7);
  // Anyone who reaches --listen reads the board: no command lines (they carry tokens).
  EXPECT_FALSE(board["gpus"][1]["held_by"][0].contains("command"));
}

// A process's name is its command line, which may carry a token: the board names its program.
TEST(BoardJson, NamesABareProcessByItsProgramAlone) {
  Sample s;
  s.metrics.holders.push_back({.key = "pid:4242",
                               .name = "python train.py --token=SECRET123",
                               .user = "dave",
                               .container_id = "",
                               .image = "",
                               .command = "/usr/bin/python train.py --token=SECRET123",
                               .gpus = {1},
                               .memory_used_mib = std::nullopt,
                               .started_by_gpurun = false});
  const auto board = board_json(s.inventory, s.metrics, kNow);
  ASSERT_EQ(board["gpus"][1]["held_by"].size(), 2U);
  EXPECT_EQ(board["gpus"][1]["held_by"][1]["name"], "python");
  EXPECT_THAT(board.dump(), Not(HasSubstr("SECRET123")));
}

TEST(BoardJson, CleansTheHoldersNamesForPageJsAsForTheServersRows) {
  Sample sample;
  sample.metrics.holders[0].name = "job\u202Egnp.exe" + std::string(200, 'x');  // a right-to-left override
  sample.metrics.holders[0].user = "josé\u200B";                                // a zero-width space
  const auto board = board_json(sample.inventory, sample.metrics, kNow);
  const std::string name = board["gpus"][1]["held_by"][0]["name"];
  EXPECT_THAT(name, Not(HasSubstr("\u202E")));
  EXPECT_THAT(name, HasSubstr("job\\xe2\\x80\\xaegnp.exe"));
  EXPECT_THAT(name, ::testing::EndsWith("..."));
  EXPECT_EQ(board["gpus"][1]["held_by"][0]["user"], "josé\\xe2\\x80\\x8b");
}

// Everything of a GPU's entry users named (its state, users, holders, reasons), not the holders
// alone; and a backslash as \x5c, so that a name spelling "\x0a" is not one with a line end.
TEST(BoardJson, CleansEveryNameOfAGpusEntryAndSpellsABackslashOut) {
  Sample sample;
  sample.inventory.assessed[1].holders = {{.kind = Holder::Kind::container, .user = "bob\u202Euser", .name = "c"}};
  sample.inventory.assessed[1].reasons = {"held by bob\u202Euser"};
  sample.metrics.holders[0].name = "x\\x0ay";
  const std::string text = board_json(sample.inventory, sample.metrics, kNow).dump();
  EXPECT_THAT(text, Not(HasSubstr("\u202E")));
  EXPECT_THAT(text, HasSubstr("bob\\\\xe2\\\\x80\\\\xaeuser"));  // in JSON: each backslash doubled
  const auto board = board_json(sample.inventory, sample.metrics, kNow);
  EXPECT_EQ(board["gpus"][1]["held_by"][0]["name"], "x\\x5cx0ay");
}

TEST(LabPageHtml, ShowsEveryNameAsTextAndMarksTheIdleHolder) {
  const Sample s;
  LabPage page;
  page.board = board_json(s.inventory, s.metrics, kNow);
  page.usage = std::vector<UsageRow>{{.key = "carol\"><b>", .runs = 1, .gpu_hours = 2, .busy_gpu_hours = 1}};
  const std::string html = lab_page_html(page);
  EXPECT_THAT(html, HasSubstr("<title>GPUs on dgx&lt;1&gt;</title>"));
  EXPECT_THAT(html, HasSubstr("carol · &lt;script&gt;alert(1)&lt;/script&gt; (run 7)"));
  EXPECT_THAT(html, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(html, HasSubstr(R"(<tr class="idle" data-gpu="1">)"));
  EXPECT_THAT(html, HasSubstr(R"(<td class="idle">1m 30s</td>)"));
  EXPECT_THAT(html, HasSubstr(R"(<tr class="free" data-gpu="0">)"));
  EXPECT_THAT(html, HasSubstr(R"(<a href="?user=carol%22%3E%3Cb%3E#runs">carol&quot;&gt;&lt;b&gt;</a>)"));
  EXPECT_THAT(html, HasSubstr(R"(<body data-refresh="5">)"));
  EXPECT_THAT(html, Not(HasSubstr(R"(<section id="runs">)")));
}

TEST(LabPageHtml, WithoutUsageSaysWhyAndWithAUserShowsTheirRuns) {
  LabPage page;
  page.board = board_json(Sample().inventory, Sample().metrics, kNow);
  page.hidden_why = "not shown here";
  EXPECT_THAT(lab_page_html(page), HasSubstr(R"(<p class="note">not shown here</p>)"));
  RunRecord run;
  run.id = 3;
  run.name = "<i>job</i>";
  run.gpus = {0, 1};
  run.start = kNow - 2h;
  run.last_seen = run.start;  // as the service's JSON gives a running run (it has no last_seen)
  page.now = kNow;            // a running run lasts until now
  page.user = "bob";
  page.runs = std::vector<RunRecord>{run};
  const std::string html = lab_page_html(page);
  EXPECT_THAT(html, HasSubstr("<h2>Runs of bob</h2>"));
  EXPECT_THAT(html, HasSubstr("<td>3</td><td>&lt;i&gt;job&lt;/i&gt;</td><td>0,1</td>"));
  EXPECT_THAT(html, HasSubstr("<td>2h</td>"));
  EXPECT_THAT(html, HasSubstr("<td>running</td>"));
  EXPECT_THAT(html, Not(HasSubstr("newest")));

  // A name is shown as everywhere on the page: UTF-8 whole, a backslash spelled out (a name
  // spelling "\x1b" is not one holding ESC); a list cut to one answer says so.
  page.runs->front().name = "обучение\\x1b\x1b";
  page.runs_cut = true;
  const std::string cut = lab_page_html(page);
  EXPECT_THAT(cut, HasSubstr("<td>обучение\\x5cx1b\\x1b</td>"));
  EXPECT_THAT(cut, HasSubstr(R"(<p class="note">These are the newest 1 runs, as many as one answer holds;)"));
}

class WebRoutesTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  RunStore store{dir / "gpurund.db"};
  ServedRuns runs;
  ServerSettings settings;
  WebRoutesTest() {
    runs.store_path = dir / "gpurund.db";
    const Sample s;
    runs.inventory = s.inventory;
    runs.metrics = s.metrics;
  }
  HttpReply get(const std::string& target) {
    return answer_web({.method = "GET", .target = target, .caller = ""}, runs, settings);
  }
  static std::string header(const HttpReply& reply, const std::string& name) {
    for (const auto& [key, value] : reply.headers)
      if (key == name) return value;
    return "";
  }
};

TEST_F(WebRoutesTest, ThePageAndItsAssetsCarryTheirTypesAndTheContentSecurityPolicy) {
  const HttpReply page = get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(header(page, "Content-Security-Policy"), kLabPagePolicy);
  EXPECT_THAT(header(page, "Content-Security-Policy"), HasSubstr("script-src 'self'"));
  EXPECT_THAT(page.body, HasSubstr(R"(<table class="usage">)"));
  EXPECT_EQ(get("/page.js").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(get("/page.js").body, lab_page_js());
  EXPECT_EQ(get("/page.css").content_type, "text/css; charset=utf-8");
  EXPECT_THAT(get("/?refresh=30").body, HasSubstr(R"(<body data-refresh="30">)"));
  EXPECT_THAT(get("/?refresh=0").body, HasSubstr(R"(<body data-refresh="5">)"));
  EXPECT_EQ(get("/nothing").status, 404);
  const HttpReply post = answer_web({.method = "POST", .target = "/", .caller = ""}, runs, settings);
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(header(post, "Allow"), "GET, HEAD");  // RFC 9110: a 405 says what is allowed
}

// Anyone on the network could keep every reader of the store busy, and `gpurun history` on the
// machine waited without end: the web reads with two of them at most, and says when it is busy.
TEST_F(WebRoutesTest, TheWebReadsTheStoreWithTwoReadersAtMostAndSaysWhenItIsBusy) {
  ASSERT_TRUE(runs.web_queries.try_acquire());
  ASSERT_TRUE(runs.web_queries.try_acquire());  // two page or API requests in the middle of a query
  EXPECT_EQ(get("/api/gpus").status, 200);      // the board reads no store
  const HttpReply busy = get("/api/usage");
  EXPECT_EQ(busy.status, 503);
  EXPECT_THAT(busy.body, HasSubstr("busy"));
  runs.web_queries.release(2);
  EXPECT_EQ(get("/api/usage").status, 200);
  EXPECT_TRUE(runs.web_queries.try_acquire());  // and every reader the web took is given back
  EXPECT_TRUE(runs.web_queries.try_acquire());
  runs.web_queries.release(2);
}

// The store busy as the page is made: the usage and the user's runs say they could not be read
// (and the usage chart's place is kept, for the script to fill when it can), never just missing.
TEST_F(WebRoutesTest, APageMadeWhileTheStoreIsBusySaysWhatItCouldNotRead) {
  ASSERT_TRUE(runs.web_queries.try_acquire());
  ASSERT_TRUE(runs.web_queries.try_acquire());
  const HttpReply page = get("/?user=bob");
  runs.web_queries.release(2);
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body,
              HasSubstr(R"(<section id="usage"><h2>Who used what: the last 30 days</h2><p class="note stale">)"
                        "The history could not be read just now (HTTP 503: "));
  EXPECT_THAT(page.body, HasSubstr(R"(<div id="usage-chart" class="chart"></div>)"));
  EXPECT_THAT(page.body, HasSubstr(R"(<section id="runs"><h2>Runs of bob</h2><p class="note stale">)"));
}

// While the GPU source fails, the board is what it last gave, as of then, and says so.
TEST(LabPageHtml, ABoardTheSourceDidNotRenewSaysSoAndIsAsOfItsSample) {
  Sample sample;
  sample.metrics.last_sample_ok = false;
  sample.metrics.sampled_at = kNow - 90s;
  LabPage page;
  page.board = board_json(sample.inventory, sample.metrics, kNow);
  EXPECT_EQ(page.board["time"], rfc3339(kNow - 90s));
  EXPECT_EQ(page.board["fresh"], false);
  EXPECT_THAT(lab_page_html(page), HasSubstr("the GPUs could not be looked at since: this is the last reading"));
  for (const auto& gpu : page.board["gpus"])
    EXPECT_TRUE(gpu["idle_s"].is_null());  // not counted on from a stale reading
  // Before the first sample nothing failed: no such word.
  Sample first;
  first.metrics.last_sample_ok = false;
  first.metrics.sampled_at.reset();
  EXPECT_EQ(board_json(first.inventory, first.metrics, kNow)["sample_ok"], true);
  // No reading at all since the start (no GPU, no driver): said so, with why.
  first.metrics.source_errors = 3;
  first.metrics.source_error = "nvidia-smi exited with status 6: No devices were found";
  first.inventory.assessed.clear();
  page.board = board_json(first.inventory, first.metrics, kNow);
  EXPECT_EQ(page.board["sample_ok"], false);
  EXPECT_THAT(lab_page_html(page), HasSubstr("the GPUs could not be looked at yet (nvidia-smi exited with status 6: "
                                             "No devices were found)"));
}

TEST_F(WebRoutesTest, TheApiAnswersInJsonAndRefusesBadInput) {
  const HttpReply gpus = get("/api/gpus");
  EXPECT_EQ(gpus.status, 200);
  EXPECT_EQ(nlohmann::json::parse(gpus.body)["gpus"][1]["held_by"][0]["user"], "carol");
  EXPECT_EQ(get("/api/usage").status, 200);
  EXPECT_TRUE(nlohmann::json::parse(get("/api/runs").body).is_array());
  EXPECT_EQ(nlohmann::json::parse(get("/api/minutes").body)["hours"], 24);
  EXPECT_EQ(get("/api/minutes?hours=0").status, 400);
  EXPECT_EQ(get("/api/minutes?hours=x").status, 400);
  EXPECT_EQ(get("/api/runs?since=soon").status, 400);
  EXPECT_EQ(get("/api/%zz").status, 400);
  runs.metrics.holders[0].name = "python x.py \xff";  // a command line is bytes, not always UTF-8
  EXPECT_EQ(get("/api/gpus").status, 200);
  EXPECT_EQ(get("/").status, 200);
}

// Whoever reaches the page reads its runs: a command by its program, as the board names processes
// (the socket, which knows who asks, still tells each what history_visibility lets them see).
TEST_F(WebRoutesTest, TheRunsShownOnTheWebNameTheirProgramsWithoutArguments) {
  RunRecord bare;
  bare.id = 1;
  bare.key = "process:7:1";
  bare.name = bare.command = "/usr/bin/python3 train.py --token=SECRET1";
  bare.user = "carol";
  bare.gpus = {0};
  bare.start = std::chrono::system_clock::now() - std::chrono::hours(1);
  bare.last_seen = bare.start;
  RunRecord boxed = bare;
  boxed.id = 2;
  boxed.key = "container:abc";
  boxed.container_id = "abc";
  boxed.name = "carol-train";
  boxed.command = "torchrun train.py --token=SECRET2";
  runs.fresh = {bare, boxed};
  const nlohmann::json api = nlohmann::json::parse(get("/api/runs").body);
  ASSERT_EQ(api.size(), 2U) << api.dump();
  EXPECT_EQ(api[0]["name"], "carol-train");
  EXPECT_EQ(api[0]["command"], "torchrun");
  EXPECT_EQ(api[1]["name"], "python3");
  EXPECT_EQ(api[1]["command"], "python3");
  const std::string page = get("/?user=carol").body;
  EXPECT_THAT(page, HasSubstr("<td>python3</td>"));
  for (const std::string& seen : {api.dump(), page}) EXPECT_THAT(seen, Not(HasSubstr("SECRET"))) << seen;
  const ServiceAnswer socket =
      answer_request({.target = "/v1/runs", .peer_uid = 0, .claimed_caller = ""}, runs, settings);
  EXPECT_THAT(socket.body, HasSubstr("--token=SECRET1"));  // `gpurun history`: as before
}

TEST_F(WebRoutesTest, UnderHistoryVisibilityOwnNoRunsOrUsageAreShownToAnyone) {
  settings.visibility = HistoryVisibility::own;
  EXPECT_EQ(get("/api/runs").status, 403);
  EXPECT_EQ(get("/api/usage").status, 403);
  const HttpReply page = get("/?user=carol");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, Not(HasSubstr(R"(<table class="usage">)")));
  EXPECT_THAT(page.body, Not(HasSubstr(R"(<section id="runs">)")));
  EXPECT_THAT(page.body, HasSubstr("history_visibility: own"));
  EXPECT_EQ(get("/api/gpus").status, 200);  // who holds a GPU now: `gpurun status` shows everyone that
}

}  // namespace
}  // namespace gpurun
