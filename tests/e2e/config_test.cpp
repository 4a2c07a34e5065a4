// End-to-end: configuration files, profiles, the environment and flags, as a user meets them.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

class ConfigTest : public GpurunTest {
 protected:
  void SetUp() override {
    GpurunTest::SetUp();
    project_ = dir() + "/project";
    std::filesystem::create_directories(project_ + "/src/deep");
    std::ofstream(project_ + "/.gpurun.json") << R"({
  // the lab's training setup
  "image": "lab/pytorch:24.05",
  "volumes": ["/datasets:/datasets:ro"],
  "env": ["WANDB_MODE=offline"],
  "profiles": {
    "jupyter": {"publish": ["8888:8888"], "gpus": 1, "command": ["jupyter", "lab", "--ip=0.0.0.0"]},
    "train": {"gpus": 2, "env": ["NCCL_DEBUG=WARN"]}
  }
})";
  }
  // Runs gpurun from `cwd` (a shell line after `gpurun`), with the stand-ins.
  Outcome gpurun_in(const std::string& cwd, const std::string& args, Env env = {}) const {
    Env all = fakes("all_free_8.json");
    all.insert(all.end(), env.begin(), env.end());
    return shell(fmt::format("cd '{}' && exec {} {}", cwd, GPURUN_BINARY, args), all);
  }
  std::string project_;
};

TEST_F(ConfigTest, TheProjectFileGivesImageMountsAndEnvironmentFromASubdirectory) {
  const Outcome run = gpurun_in(project_ + "/src/deep", "--dry-run -q 2 python train.py");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(
      run.out,
      HasSubstr(" --env WANDB_MODE=offline --volume /datasets:/datasets:ro lab/pytorch:24.05 python train.py\n"));
}

TEST_F(ConfigTest, EnvironmentBeatsFilesAndFlagsBeatTheEnvironment) {
  const Env env{{"GPURUN_IMAGE", "env/image:1"}};
  EXPECT_THAT(gpurun_in(project_, "--dry-run -q", env).out, EndsWith(" env/image:1\n"));
  EXPECT_THAT(gpurun_in(project_, "--dry-run -q --image flag/image:2", env).out, EndsWith(" flag/image:2\n"));
}

TEST_F(ConfigTest, AProfileSetsTheGpuCountPortsAndDefaultCommand) {
  const Outcome run = gpurun_in(project_, "--dry-run -q -P jupyter");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("--gpus '\"device=0\"'"));
  EXPECT_THAT(run.out, HasSubstr("--publish 8888:8888 lab/pytorch:24.05 jupyter lab --ip=0.0.0.0\n"));
  // N and a command on the command line win over the profile's.
  EXPECT_THAT(gpurun_in(project_, "--dry-run -q -P jupyter 2 bash").out, HasSubstr("\"device=0,1\"' "));
  EXPECT_THAT(gpurun_in(project_, "--dry-run -q -P jupyter 2 bash").out, EndsWith(" lab/pytorch:24.05 bash\n"));
}

TEST_F(ConfigTest, AnAliasWithAProfileRunsTheJobWithItsOwnFlags) {
  // As in ~/.bashrc: alias gr='gpurun -P train'; gr 2 python train.py --lr 0.1
  Env env = fakes("all_free_8.json");
  const Outcome run = shell(fmt::format("cd '{}'\nalias gr='{} -P train --dry-run -q'\ngr python train.py --lr 0.1\n",
                                        project_, GPURUN_BINARY),
                            env);
  EXPECT_EQ(run.exit_code, 125);  // `python` is not N: the profile gives the count, so use `--`
  const Outcome ok = shell(fmt::format("cd '{}'\nalias gr='{} -P train --dry-run -q --'\ngr python train.py --lr 0.1\n",
                                       project_, GPURUN_BINARY),
                           env);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("--gpus '\"device=0,1\"'"));
  EXPECT_THAT(ok.out, HasSubstr("--env WANDB_MODE=offline --env NCCL_DEBUG=WARN "));
  EXPECT_THAT(ok.out, EndsWith(" lab/pytorch:24.05 python train.py --lr 0.1\n"));
}

TEST_F(ConfigTest, AnUnknownProfileListsTheKnownOnes) {
  const Outcome run = gpurun_in(project_, "--dry-run -P jupiter");
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("jupyter"));
}

TEST_F(ConfigTest, ABrokenFileNamesFileLineAndKeyAndLaunchesNothing) {
  std::ofstream(project_ + "/.gpurun.json") << "{\n  \"image\": \"x\",\n  \"imgae\": \"y\"\n}\n";
  const Outcome run = gpurun_in(project_, "--image img 1 true");
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr(project_ + "/.gpurun.json:3"));
  EXPECT_THAT(run.err, HasSubstr("unknown key \"imgae\" (did you mean \"image\"?)"));
  EXPECT_FALSE(docker_ran());
}

TEST_F(ConfigTest, ConfigShowsEachValueAndWhereItCameFrom) {
  const Outcome table = gpurun_in(project_, "config --max-util 20", {{"GPURUN_DOCKER", fake("docker")}});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("lab/pytorch:24.05"));
  EXPECT_THAT(table.out, HasSubstr(project_ + "/.gpurun.json"));
  EXPECT_THAT(table.out, HasSubstr("GPURUN_DOCKER"));
  EXPECT_THAT(table.out, HasSubstr("--max-util"));

  const auto json = nlohmann::json::parse(gpurun_in(project_, "config --json").out);
  EXPECT_EQ(json["keys"]["image"]["value"], "lab/pytorch:24.05");
}

TEST_F(ConfigTest, ConfigInitWritesAStarterFileOnceAndItLoads) {
  const Outcome first = gpurun_in(project_, "config init");
  EXPECT_EQ(first.exit_code, 0) << first.err;
  const std::string path = dir() + "/xdg/gpurun/config.json";
  EXPECT_EQ(first.out, path + "\n");
  EXPECT_TRUE(std::filesystem::exists(path));
  const Outcome second = gpurun_in(project_, "config init");
  EXPECT_EQ(second.exit_code, 125);
  EXPECT_THAT(second.err, HasSubstr("never overwrites"));
  EXPECT_EQ(gpurun_in(project_, "--dry-run -q").exit_code, 0);  // the starter file loads
}

TEST_F(ConfigTest, NoConfigIgnoresTheFiles) {
  const Outcome run = gpurun_in(project_, "--no-config --dry-run -q");
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("no image to run"));
}

TEST_F(ConfigTest, CheckValidatesAFileWithoutInstallingIt) {
  const std::string good = dir() + "/good.json";
  std::ofstream(good) << R"({
  // a site's defaults and policy
  "image": "nvcr.io/nvidia/pytorch:24.05-py3",
  "allowed_gpus": [0, 1]
})";
  const Outcome ok = gpurun({"config", "--check", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, good + ": valid as the system file; sets image; site policy (system file only): allowed_gpus\n");

  const std::string bad = dir() + "/bad.json";
  std::ofstream(bad) << "{\n  \"image\": \"x\",\n  \"max_utl\": 5\n}\n";
  const Outcome refused = gpurun({"config", "--check", bad});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr(bad + ":3: unknown key \"max_utl\" (did you mean \"max_util\"?)"));
  EXPECT_EQ(gpurun({"config", "--check", dir() + "/none.json"}).exit_code, 125);
  EXPECT_THAT(gpurun({"config", "--check", good, "--json"}).err,
              HasSubstr("--json does not go with --check: its answer is one line"));
  // No file named: a message, not the configuration that --check left unloaded (it crashed).
  const Outcome empty = gpurun({"config", "--check", ""});
  EXPECT_EQ(empty.exit_code, 125);
  EXPECT_EQ(empty.err, "gpurun: error: --check needs the file to check: gpurun config --check FILE\n");
  // A .gpurun.json is checked as the project file it would be: it may not choose programs.
  std::filesystem::create_directories(dir() + "/repo");
  const std::string project = dir() + "/repo/.gpurun.json";
  std::ofstream(project) << "{\n  \"image\": \"x\",\n  \"docker\": \"./evil.sh\"\n}\n";
  EXPECT_THAT(gpurun({"config", "--check", project}).err,
              HasSubstr(project + ":3: key \"docker\": a project's .gpurun.json cannot choose a program"));
  std::ofstream(project) << "{\"image\": \"x\"}\n";
  EXPECT_EQ(gpurun({"config", "--check", project}).out, project + ": valid as a project file; sets image\n");
  // One a launch would skip (others may write it) is said so, not "valid".
  std::filesystem::permissions(project, std::filesystem::perms(0666));
  const Outcome skipped = gpurun({"config", "--check", project});
  EXPECT_EQ(skipped.exit_code, 125);
  EXPECT_THAT(skipped.err, HasSubstr(project + ": a launch here would ignore it ("));
  EXPECT_THAT(skipped.err, HasSubstr("chmod go-w " + project));
  std::filesystem::permissions(project, std::filesystem::perms(0644));
  // A choice that is none of its words, and CPUs per GPU outside 8..24, said at their lines: they
  // passed, then stopped every gpurun command on the machine, naming no file.
  const std::string choices = dir() + "/choices.json";
  std::ofstream(choices) << "{\n  \"engine\": \"dockr\"\n}\n";
  EXPECT_THAT(gpurun({"config", "--check", choices}).err,
              HasSubstr(choices + ":2: key \"engine\": \"dockr\" is not one of auto, docker, podman (did you mean "
                                  "\"docker\"?)"));
  std::ofstream(choices) << "{\n  \"cpus_per_gpu\": 1\n}\n";
  EXPECT_THAT(gpurun({"config", "--check", choices}).err,
              HasSubstr(choices + ":2: key \"cpus_per_gpu\": 1 is outside 8..24"));

  // It works while the user's own file is broken (it reads no configuration of its own).
  std::filesystem::create_directories(dir() + "/xdg/gpurun");
  std::ofstream(dir() + "/xdg/gpurun/config.json") << "{ broken";
  EXPECT_EQ(gpurun({"config", "--check", good}, fakes("all_free_8.json")).exit_code, 0);
  EXPECT_EQ(gpurun({"config"}, fakes("all_free_8.json")).exit_code, 125);
}

TEST_F(ConfigTest, CheckReadsTheIdlePolicyAndTheServicesSectionAsTheSystemFilesAlone) {
  const std::string good = dir() + "/idle.json";
  std::ofstream(good) << R"({
  "idle_policy": {"below": "5%", "warn_after": "1h", "stop_after": "2h", "exempt_users": ["alice"]},
  "service": {"interval": 5, "listen": "127.0.0.1:9400"}
})";
  const Outcome ok = gpurun({"config", "--check", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, good +
                        ": valid as the system file; site policy (system file only): idle_policy; the service's "
                        "settings (system file only)\n");

  const std::string bad = dir() + "/bad-idle.json";
  std::ofstream(bad) << "{\n  \"idle_policy\": {\"warn_after\": \"2h\",\n    \"stop_after\": \"1h\"}\n}\n";
  const Outcome refused = gpurun({"config", "--check", bad});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("key \"idle_policy.warn_after\": must come before stop_after"));

  // A user's file cannot set it.
  std::filesystem::create_directories(dir() + "/xdg/gpurun");
  std::ofstream(dir() + "/xdg/gpurun/config.json") << R"({"idle_policy": {"stop_after": "1h"}})";
  const Outcome user = gpurun({"config"}, fakes("all_free_8.json"));
  EXPECT_EQ(user.exit_code, 125);
  EXPECT_THAT(user.err, HasSubstr("site policy keys belong in the system file"));
}

TEST_F(ConfigTest, CheckReadsNotifyAndMaxRuntimeAsTheSystemFilesAlone) {
  const std::string good = dir() + "/notify.json";
  std::ofstream(good) << R"({
  "max_runtime": "7d",
  "notify": {"webhook": "https://chat.example.org/hooks/abc", "mail": true, "mail_domain": "lab.example.org"}
})";
  const Outcome ok = gpurun({"config", "--check", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, good + ": valid as the system file; site policy (system file only): max_runtime, notify\n");

  const std::string bad = dir() + "/bad-notify.json";
  std::ofstream(bad) << "{\n  \"notify\": {\"mail\": true,\n    \"events\": [\"run_end\"]}\n}\n";
  const Outcome refused = gpurun({"config", "--check", bad});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr(":3: key \"notify.events\": \"run_end\" is not an event"));
  std::ofstream(bad) << R"({"max_runtime": "0s"})";
  EXPECT_THAT(gpurun({"config", "--check", bad}).err, HasSubstr("key \"max_runtime\": expected a duration"));

  std::filesystem::create_directories(dir() + "/xdg/gpurun");
  std::ofstream(dir() + "/xdg/gpurun/config.json") << R"({"notify": {"mail": true}})";
  const Outcome user = gpurun({"config"}, fakes("all_free_8.json"));
  EXPECT_EQ(user.exit_code, 125);
  EXPECT_THAT(user.err, HasSubstr("site policy keys belong in the system file"));
}

TEST_F(ConfigTest, InitSystemPrintsAStarterThatPassesTheCheck) {
  const Outcome starter = gpurun({"config", "init", "--system"}, fakes("all_free_8.json"));
  ASSERT_EQ(starter.exit_code, 0) << starter.err;
  EXPECT_THAT(starter.out, HasSubstr("// gpurun system configuration: /etc/gpurun/config.json"));
  EXPECT_THAT(starter.out, HasSubstr("  // \"allowed_gpus\": [0, 1, 2, 3],"));
  EXPECT_THAT(starter.out, HasSubstr("  // \"lock_group\": \"docker\","));
  const std::string path = dir() + "/system.json";
  std::ofstream(path) << starter.out;
  EXPECT_EQ(gpurun({"config", "--check", path}).exit_code, 0);
  EXPECT_THAT(gpurun({"config", "--system"}, fakes("all_free_8.json")).err, HasSubstr("--system goes with init"));
}

}  // namespace
}  // namespace gpurun::testing
