// End-to-end: `gpurun completion bash|zsh`, exercised in real shells. The bash script runs as bash
// runs it on TAB (tests/e2e/complete.bash), with and without the bash-completion package; the zsh
// script is loaded by compinit in an interactive zsh on a pseudo-terminal (tests/e2e/complete.zsh).
#include <fmt/format.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  return lines;
}

class CompletionTest : public GpurunTest {
 protected:
  void SetUp() override {
    GpurunTest::SetUp();
    // A user file and a project file with profiles; gpurun and a docker that lists images on PATH.
    std::filesystem::create_directories(dir() + "/xdg/gpurun");
    // Names with a line break or a space cannot be one candidate a line: never offered.
    std::ofstream(dir() + "/xdg/gpurun/config.json")
        << R"({"profiles": {"train": {"gpus": 2}, "debug": {}, "nl\nx": {}, "with space": {}}})";
    std::filesystem::create_directories(dir() + "/project");
    std::ofstream(dir() + "/project/.gpurun.json") << R"({"profiles": {"jupyter": {"gpus": 1}}})";
    std::filesystem::create_directories(dir() + "/bin");
    std::filesystem::create_symlink(GPURUN_BINARY, dir() + "/bin/gpurun");
    std::filesystem::create_symlink(fake("docker"), dir() + "/bin/docker");
    for (const auto& [shell, file] : {std::pair{"bash", "/gpurun.bash"}, std::pair{"zsh", "/zsh/_gpurun"}}) {
      const Outcome script = gpurun({"completion", shell});
      ASSERT_EQ(script.exit_code, 0) << script.err;
      std::filesystem::create_directories(std::filesystem::path(dir() + file).parent_path());
      std::ofstream(dir() + file) << script.out;
    }
  }
  Env shell_env(Env extra = {}) const {
    Env env{{"PATH", dir() + "/bin:" + std::getenv("PATH")},
            {"XDG_CONFIG_HOME", dir() + "/xdg"},
            {"FAKE_DOCKER_STDOUT", "me/pytorch:24.05\nme/pytorch:23.10\n<none>:<none>\nbusybox:latest"}};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }
  // What bash offers for `line` + TAB, in `cwd`; `mode` full loads bash-completion, plain does not.
  std::vector<std::string> bash(const std::string& line, const std::string& mode = "full", const std::string& cwd = ".",
                                Env extra = {}) const {
    const Outcome run = shell(
        fmt::format("cd '{}' && exec bash --norc --noprofile '{}/tests/e2e/complete.bash' '{}' {} '{}' 2>/dev/null",
                    cwd, GPURUN_SOURCE_DIR, dir() + "/gpurun.bash", mode, line),
        shell_env(std::move(extra)));
    EXPECT_EQ(run.exit_code, 0) << line;
    return sorted_lines(run.out);
  }
  std::vector<std::string> zsh(const std::string& line, const std::string& cwd = ".") const {
    const Outcome run = shell(fmt::format("cd '{}' && exec zsh -f '{}/tests/e2e/complete.zsh' '{}' '{}'", cwd,
                                          GPURUN_SOURCE_DIR, dir() + "/zsh", line),
                              shell_env());
    EXPECT_EQ(run.exit_code, 0) << line << ": " << run.err;
    return sorted_lines(run.out);
  }
};

TEST_F(CompletionTest, ScriptsAreValidShell) {
  EXPECT_EQ(shell(fmt::format("bash -n '{}/gpurun.bash'", dir())).exit_code, 0);
  EXPECT_EQ(shell(fmt::format("zsh -n '{}/zsh/_gpurun'", dir())).exit_code, 0);
}

TEST_F(CompletionTest, UnknownShellIsAUsageError) {
  const Outcome fish = gpurun({"completion", "fish"});
  EXPECT_EQ(fish.exit_code, 125);
  EXPECT_EQ(fish.err, "gpurun: error: gpurun completion knows bash and zsh, not \"fish\"\n");
  EXPECT_EQ(gpurun({"completion"}).exit_code, 125);
  EXPECT_EQ(gpurun({"completion", "bash", "extra"}).exit_code, 125);
}

TEST_F(CompletionTest, ProfilesListsEveryProfileOfTheFilesSeenHere) {
  const Env env{{"XDG_CONFIG_HOME", dir() + "/xdg"}};
  EXPECT_EQ(shell(fmt::format("cd '{}/project' && {} completion profiles", dir(), GPURUN_BINARY), env).out,
            "debug\njupyter\ntrain\n");
  // A broken config file is an error (the scripts hide it and offer nothing).
  std::ofstream(dir() + "/project/.gpurun.json") << "{ nope";
  EXPECT_EQ(shell(fmt::format("cd '{}/project' && {} completion profiles", dir(), GPURUN_BINARY), env).exit_code, 125);
}

TEST_F(CompletionTest, BashOffersVerbsOptionsAndWhatFollowsAVerb) {
  for (const std::string mode : {"full", "plain"}) {
    SCOPED_TRACE(mode);
    EXPECT_THAT(bash("gpurun ", mode), ElementsAre("attach", "completion", "config", "history", "logs", "pick", "ps",
                                                   "report", "rm", "status", "stop", "usage"));
    EXPECT_THAT(bash("gpurun --dry", mode), ElementsAre("--dry-run"));
    EXPECT_THAT(bash("gpurun -", mode), Contains("--profile"));
    EXPECT_THAT(bash("gpurun config ", mode), ElementsAre("init"));
    EXPECT_THAT(bash("gpurun completion ", mode), ElementsAre("bash", "zsh"));
    EXPECT_THAT(bash("gpurun --json status --wa", mode), ElementsAre("--wait", "--watch"));
  }
}

TEST_F(CompletionTest, BashOffersProfileNamesFromTheConfigFiles) {
  EXPECT_THAT(bash("gpurun -P "), ElementsAre("debug", "train"));
  EXPECT_THAT(bash("gpurun --profile j", "full", dir() + "/project"), ElementsAre("jupyter"));
  EXPECT_THAT(bash("gpurun --profile=j", "full", dir() + "/project"), ElementsAre("jupyter"));
  EXPECT_THAT(bash("gpurun -P ", "plain"), ElementsAre("debug", "train"));
  // --config files given earlier on the line count too.
  std::ofstream(dir() + "/extra.json") << R"({"profiles": {"sweep": {}}})";
  EXPECT_THAT(bash(fmt::format("gpurun --config {}/extra.json -P s", dir())), ElementsAre("sweep"));
}

TEST_F(CompletionTest, BashCompletesTheJobAsACommandOfItsOwn) {
  for (const std::string mode : {"full", "plain"}) {
    SCOPED_TRACE(mode);
    EXPECT_THAT(bash("gpurun 2 ech", mode), Contains("echo"));
    EXPECT_THAT(bash("gpurun -e FOO=1 -v /a:/b --image=x 2 ech", mode), Contains("echo"));
    EXPECT_THAT(bash("gpurun -- ech", mode), Contains("echo"));
    // Options stop at the first word after N: gpurun's own are not offered to the job.
    EXPECT_THAT(bash("gpurun 2 cat --ima", mode), IsEmpty());
    EXPECT_THAT(bash("gpurun -P train 2 cat --ima", mode), IsEmpty());
  }
}

TEST_F(CompletionTest, BashCompletesOptionValuesByKind) {
  EXPECT_THAT(bash("gpurun --from-csv tests/da", "full", GPURUN_SOURCE_DIR), ElementsAre("tests/data"));
  EXPECT_THAT(bash("gpurun --lock-dir tests/fa", "full", GPURUN_SOURCE_DIR), ElementsAre("tests/fakes"));
  EXPECT_THAT(bash("gpurun --image me/"), ElementsAre("me/pytorch:23.10", "me/pytorch:24.05"));
  // Readline completes after the last ':', so the part before it is left out.
  EXPECT_THAT(bash("gpurun --image me/pytorch:24"), ElementsAre("24.05"));
  EXPECT_THAT(bash("gpurun --image b", "plain"), ElementsAre("busybox:latest"));
  EXPECT_THAT(bash("gpurun --max-util "), IsEmpty());
}

TEST_F(CompletionTest, BashCompletesAnAliasOnceToldTo) {
  // README: alias gr='gpurun -P train' and `complete -F _gpurun gr`.
  EXPECT_THAT(bash("gr ", "full", ".", {{"GPURUN_COMPLETE_ALIAS", "gr"}}), Contains("pick"));
  EXPECT_THAT(bash("gr 2 ech", "full", ".", {{"GPURUN_COMPLETE_ALIAS", "gr"}}), Contains("echo"));
}

TEST_F(CompletionTest, ZshOffersVerbsOptionsProfilesAndTheJobsCommand) {
  EXPECT_THAT(zsh("gpurun "), ElementsAre("attach", "completion", "config", "history", "logs", "pick", "ps", "report",
                                          "rm", "status", "stop", "usage"));
  EXPECT_THAT(zsh("gpurun --dry"), ElementsAre("--dry-run"));
  EXPECT_THAT(zsh("gpurun config "), ElementsAre("init"));
  EXPECT_THAT(zsh("gpurun completion "), ElementsAre("bash", "zsh"));
  EXPECT_THAT(zsh("gpurun -P ", dir() + "/project"), ElementsAre("debug", "jupyter", "train"));
  EXPECT_THAT(zsh("gpurun --image me/"), ElementsAre("me/pytorch:23.10", "me/pytorch:24.05"));
  EXPECT_THAT(zsh("gpurun 2 ech"), Contains("echo"));
  EXPECT_THAT(zsh("gpurun 2 cat --ima"), Not(Contains("--image")));
}

}  // namespace
}  // namespace gpurun::testing
