// Unit tests for the layered configuration: precedence, lists, profiles, site policy, error
// messages, the report and the starter file. Every file lives in a temporary directory or in
// tests/data/config; the real /etc and $HOME are never read.
#include "gpurun/config/config.hpp"
#include "gpurun/config/explain.hpp"
#include "gpurun/config/starter.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/config/options.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Kind = ConfigSource::Kind;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kData = std::string(GPURUN_TEST_DATA_DIR) + "/config/";

// The message of the Error that `load` throws; fails the test when it throws none.
template <typename F>
std::string error_of(F&& load) {
  const auto e = test::caught_error(std::forward<F>(load));
  if (e.thrown) {
    EXPECT_EQ(e.exit_code, 125);
  }
  return e.message;
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "etc");
    fs::create_directories(root_ / "home");
    fs::create_directories(root_ / "work/proj/src/deep");
  }
  std::string write(const std::string& relative, const std::string& text) {
    return test::write_file(root_ / relative, text);
  }

  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

  // System and user file paths inside the temporary directory (they need not exist), no project
  // search: a test that wants one sets cwd and puts a .gpurun.json inside the temporary directory.
  ConfigInputs inputs() const {
    ConfigInputs in;
    in.system_file = path("etc/config.json");
    in.user_file = path("home/config.json");
    return in;
  }

  test::TempDir dir_{"gpurun-config"};
  fs::path root_ = dir_.path();
};

// ---------------------------------------------------------------------------------------------
// Precedence

struct PrecedenceCase {
  int layers;  // how many layers, from the lowest, set "image"
  Kind winner;
  std::string image;
};

void PrintTo(const PrecedenceCase& c, std::ostream* os) { *os << c.layers << " layers set image"; }

class Precedence : public ConfigTest, public ::testing::WithParamInterface<PrecedenceCase> {};

// Each layer sets image (and the profile layer its profile); the highest one present wins.
TEST_P(Precedence, TheHighestLayerThatSetsAKeyWins) {
  const PrecedenceCase& c = GetParam();
  ConfigInputs in = inputs();
  in.cwd = path("work/proj/src");
  write("work/proj/.gpurun.json", "{}");
  const auto layer_file = [&](const std::string& file, const std::string& value, int layer) {
    const std::string image = c.layers >= layer ? fmt::format(R"("image": "{}", )", value) : "";
    return write(file, fmt::format(R"({{ {}"profiles": {{"p": {{{}}}}} }})", image,
                                   c.layers >= 6 && layer == 1 ? R"("image": "profile")" : ""));
  };
  layer_file("etc/config.json", "system", 1);
  layer_file("home/config.json", "user", 2);
  layer_file("work/proj/.gpurun.json", "project", 3);
  in.extra_files = {layer_file("extra.json", "extra", 4)};
  in.profile = "p";
  if (c.layers >= 7) in.environment["GPURUN_IMAGE"] = "env";
  if (c.layers >= 8) in.flags.emplace_back("image", "flag");

  const Config config = load_config(in);
  EXPECT_EQ(config.at("image").value, c.layers == 0 ? json(nullptr) : json(c.image));
  EXPECT_EQ(config.at("image").source.kind, c.winner);
}

INSTANTIATE_TEST_SUITE_P(
    Layers, Precedence,
    ::testing::Values(PrecedenceCase{0, Kind::defaults, ""}, PrecedenceCase{1, Kind::system, "system"},
                      PrecedenceCase{2, Kind::user, "user"}, PrecedenceCase{3, Kind::project, "project"},
                      PrecedenceCase{4, Kind::extra_file, "extra"},
                      PrecedenceCase{5, Kind::extra_file, "extra"},  // profile sets none
                      PrecedenceCase{6, Kind::profile, "profile"}, PrecedenceCase{7, Kind::environment, "env"},
                      PrecedenceCase{8, Kind::flag, "flag"}));

TEST_F(ConfigTest, EachKeyComesFromItsOwnHighestLayer) {
  write("etc/config.json", R"({"max_util": 20, "image": "sys", "smi_timeout": 5})");
  write("home/config.json", R"({"image": "user", "detach": true})");
  ConfigInputs in = inputs();
  in.environment = {{"GPURUN_SMI_TIMEOUT", "2.5"}};
  in.flags = {{"gpus", 3}};
  const Config config = load_config(in);

  EXPECT_EQ(config.at("max_util").source.describe(), "system " + path("etc/config.json") + ":1");
  EXPECT_EQ(config.at("image").value, "user");
  EXPECT_EQ(config.at("image").source.kind, Kind::user);
  EXPECT_EQ(config.at("detach").value, true);
  EXPECT_EQ(config.at("smi_timeout").value, 2.5);
  EXPECT_EQ(config.at("smi_timeout").source.describe(), "env GPURUN_SMI_TIMEOUT");
  EXPECT_EQ(config.at("gpus").value, 3);
  EXPECT_EQ(config.at("gpus").source.describe(), "command line N");
  EXPECT_EQ(config.at("docker").value, "docker");
  EXPECT_EQ(config.at("docker").source.describe(), "default");
}

TEST_F(ConfigTest, LinesOfKeysAreRecorded) {
  write("home/config.json", "{\n  \"image\": \"a\",\n\n  \"gpus\": 2\n}\n");
  const Config config = load_config(inputs());
  EXPECT_EQ(config.at("image").source.line, 2U);
  EXPECT_EQ(config.at("gpus").source.line, 4U);
}

// ---------------------------------------------------------------------------------------------
// Lists

TEST_F(ConfigTest, ListsAddUpAcrossLayersInPrecedenceOrder) {
  write("etc/config.json", R"({"volumes": ["/datasets:/datasets:ro"], "env": ["A=1"]})");
  write("home/config.json", R"({"volumes": ["/home/a/cache:/cache"], "profiles": {"p": {"volumes": ["/p:/p"]}}})");
  write("work/.gpurun.json", R"({"volumes": ["/scratch:/scratch", "/datasets:/datasets:ro"]})");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  in.profile = "p";
  in.environment = {{"GPURUN_VOLUMES", R"(["/env:/env"])"}, {"GPURUN_ENV", "MSG=two words"}};
  in.flags = {{"volumes", json::array({"/flag:/flag"})}, {"env", "B=2"}};
  const Config config = load_config(in);

  const ConfigValue& volumes = config.at("volumes");
  EXPECT_EQ(volumes.value, json::array({"/datasets:/datasets:ro", "/home/a/cache:/cache", "/scratch:/scratch", "/p:/p",
                                        "/env:/env", "/flag:/flag"}));  // the repeated one once, from the system
  ASSERT_EQ(volumes.item_sources.size(), 6U);
  EXPECT_EQ(volumes.item_sources[0].kind, Kind::system);
  EXPECT_EQ(volumes.item_sources[1].kind, Kind::user);
  EXPECT_EQ(volumes.item_sources[2].kind, Kind::project);
  EXPECT_EQ(volumes.item_sources[3].kind, Kind::profile);
  EXPECT_EQ(volumes.item_sources[4].kind, Kind::environment);
  EXPECT_EQ(volumes.item_sources[5].describe(), "flag --volume");
  EXPECT_EQ(volumes.source.kind, Kind::flag);
  EXPECT_EQ(config.at("env").value, json::array({"A=1", "MSG=two words", "B=2"}));  // env: one item, not split
}

// A file's ./data is the file's neighbour, wherever gpurun starts (compose reads it so); docker
// would take it from the working directory, a subdirectory of the project.
TEST_F(ConfigTest, AFilesRelativeVolumeIsTakenFromTheFilesDirectory) {
  write("work/.gpurun.json",
        R"({"volumes": ["./data:/data:ro", ".:/w", "../shared:/s", "/abs:/abs", ".cache/hf:/hf"],
            "profiles": {"p": {"volumes": ["./p:/p"]}}})");
  write("work/sub/deeper/keep", "");
  ConfigInputs in = inputs();
  in.cwd = path("work/sub/deeper");
  in.profile = "p";
  const Config config = load_config(in);
  const std::string work = path("work");
  EXPECT_EQ(config.at("volumes").value, json::array({work + "/data:/data:ro", work + ":/w", path("") + "shared:/s",
                                                     "/abs:/abs", work + "/.cache/hf:/hf", work + "/p:/p"}));
}

// A project's "./run-link" is the link beside its file, to /var/run where the engine's socket is:
// checked as that, not as a path from wherever the test runs (where no such link is).
TEST_F(ConfigTest, AProjectsRelativeVolumeIsCheckedAsThePathItNames) {
  fs::create_directories(path("work"));
  fs::create_directory_symlink("/var/run", path("work/run-link"));
  write("work/.gpurun.json", R"({"volumes": ["./run-link:/r"]})");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  ASSERT_FALSE(fs::exists("run-link"));  // the process's own working directory has none
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("cannot give its job power over the host"));
}

// docker takes the last `--env A=`: the higher layer's A, once; and a repeated docker word stays,
// or `--label a=1 --label b=2` would lose its second --label and docker take b=2 for the image.
TEST_F(ConfigTest, AVariableSetAgainIsTheHigherLayersAndRepeatedDockerWordsAllStay) {
  write("home/config.json",
        R"({"env": ["A=1", "KEEP=1"], "docker_opts": ["--ulimit", "nofile=1024:1024", "--ulimit", "core=0"]})");
  write("work/.gpurun.json", R"({"env": ["A=2"]})");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  in.flags = {{"env", "A=1"}, {"docker_opts", json::array({"--label", "a=1", "--label", "b=2"})}};
  const Config config = load_config(in);
  EXPECT_EQ(config.at("env").value, json::array({"KEEP=1", "A=1"}));
  ASSERT_EQ(config.at("env").item_sources.size(), 2U);
  EXPECT_EQ(config.at("env").item_sources[1].kind, Kind::flag);
  EXPECT_EQ(config.at("docker_opts").value,
            json::array({"--ulimit", "nofile=1024:1024", "--ulimit", "core=0", "--label", "a=1", "--label", "b=2"}));
  EXPECT_EQ(config.at("docker_opts").item_sources.size(), 8U);
}

TEST_F(ConfigTest, NullResetsAKeyAndDropsTheItemsOfLowerLayers) {
  write("etc/config.json", R"({"volumes": ["/datasets:/datasets"], "image": "sys"})");
  write("home/config.json", R"({"volumes": null, "image": null})");
  const Config config = load_config(inputs());
  EXPECT_EQ(config.at("volumes").value, json::array());
  EXPECT_EQ(config.at("volumes").source.kind, Kind::user);
  EXPECT_EQ(config.at("image").value, nullptr);
}

TEST_F(ConfigTest, CommandIsReplacedNotAppended) {
  write("etc/config.json", R"({"command": ["python", "a.py"]})");
  write("home/config.json", R"({"command": ["python", "b.py"]})");
  EXPECT_EQ(load_config(inputs()).at("command").value, json::array({"python", "b.py"}));
}

// ---------------------------------------------------------------------------------------------
// Profiles

TEST_F(ConfigTest, ProfileSetsCountAndCommand) {
  ConfigInputs in = inputs();
  in.system_file = kData + "profiles-system.json";
  in.profile = "train";
  EXPECT_EQ(load_config(in).at("gpus").value, 4);

  in.profile = "jupyter";
  const Config config = load_config(in);
  EXPECT_EQ(config.at("gpus").value, 1);
  EXPECT_EQ(config.at("command").value, json::array({"jupyter", "lab", "--ip=0.0.0.0"}));
  EXPECT_EQ(config.at("command").source.describe(), "profile jupyter in " + kData + "profiles-system.json:6");
  ASSERT_TRUE(config.profile.has_value());
  EXPECT_EQ(config.profile->chosen_by, "--profile");
}

TEST_F(ConfigTest, ProfileDefinedInSeveralFilesMergesInFileOrder) {
  ConfigInputs in = inputs();
  in.system_file = kData + "profiles-system.json";
  in.user_file = kData + "profiles-user.json";
  in.profile = "jupyter";
  const Config config = load_config(in);
  EXPECT_EQ(config.at("gpus").value, 2);                                           // the user's wins
  EXPECT_EQ(config.at("publish").value, json::array({"8888:8888", "6006:6006"}));  // lists add up
  EXPECT_EQ(config.at("env").value, json::array({"JUPYTER_TOKEN=lab"}));
  EXPECT_EQ(config.at("command").value[0], "jupyter");  // only the system's sets it
  ASSERT_EQ(config.profile->defined_in.size(), 2U);
  EXPECT_EQ(config.profile->defined_in[0].kind, Kind::system);
  EXPECT_EQ(config.profile->defined_in[1].kind, Kind::user);
}

TEST_F(ConfigTest, ProfileSitsAboveFilesButBelowEnvironmentAndFlags) {
  write("etc/config.json", R"({"profiles": {"p": {"gpus": 2, "image": "profile", "detach": true}}})");
  write("work/.gpurun.json", R"({"gpus": 8, "image": "project", "detach": false})");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  in.profile = "p";
  in.environment = {{"GPURUN_IMAGE", "env"}};
  in.flags = {{"gpus", 3}};
  const Config config = load_config(in);
  EXPECT_EQ(config.at("detach").value, true);  // profile over project
  EXPECT_EQ(config.at("image").value, "env");
  EXPECT_EQ(config.at("gpus").value, 3);
}

TEST_F(ConfigTest, GpurunProfileChoosesAProfileAndTheFlagOverridesIt) {
  write("home/config.json", R"({"profiles": {"a": {"gpus": 2}, "b": {"gpus": 3}}})");
  ConfigInputs in = inputs();
  in.environment = {{"GPURUN_PROFILE", "a"}};
  Config config = load_config(in);
  EXPECT_EQ(config.at("gpus").value, 2);
  EXPECT_EQ(config.profile->chosen_by, "GPURUN_PROFILE");
  EXPECT_TRUE(config.warnings.empty());

  in.profile = "b";
  EXPECT_EQ(load_config(in).at("gpus").value, 3);

  // The `gpurun --no-config` a Slurm step runs inherits GPURUN_PROFILE, and reads no file that
  // defines it: it failed with "unknown profile".
  in.profile.reset();
  in.no_config = true;
  const Config step = load_config(in);
  EXPECT_FALSE(step.profile.has_value());
  EXPECT_EQ(step.at("gpus").value, 1);
}

TEST_F(ConfigTest, UnknownProfileListsTheKnownOnes) {
  ConfigInputs in = inputs();
  in.system_file = kData + "profiles-system.json";
  in.profile = "jupiter";
  EXPECT_EQ(error_of([&] { load_config(in); }),
            "unknown profile \"jupiter\" (chosen by --profile) (did you mean \"jupyter\"?); "
            "known profiles: jupyter, train");

  in.system_file = path("etc/none.json");
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("no configuration file defines any profile"));
}

TEST_F(ConfigTest, AProfileCannotHoldProfilesOrPolicy) {
  write("etc/config.json", R"({"profiles": {"p": {"allowed_gpus": [0]}}})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              AllOf(HasSubstr("key \"profiles.p.allowed_gpus\""), HasSubstr("top level of the system file")));
  write("etc/config.json", R"({"profiles": {"p": {"profiles": {}}}})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("unknown key \"profiles.p.profiles\""));
}

// ---------------------------------------------------------------------------------------------
// Site policy

class PolicyTest : public ConfigTest {
 protected:
  Config policy_config() {
    ConfigInputs in = inputs();
    in.system_file = kData + "policy-system.json";
    return load_config(in);
  }
};

struct RefusalCase {
  std::vector<std::string> docker_opts;
  std::vector<std::string> volumes;
  bool refused;
  std::string rule;  // the rule named in the message
};

void PrintTo(const RefusalCase& c, std::ostream* os) {
  for (const auto& o : c.docker_opts) *os << o << ' ';
  for (const auto& v : c.volumes) *os << "-v " << v << ' ';
}

class Refusal : public PolicyTest, public ::testing::WithParamInterface<RefusalCase> {};

TEST_P(Refusal, EverySpellingOfARefusedOptionIsRefused) {
  const RefusalCase& c = GetParam();
  Options options;
  options.docker_opts = c.docker_opts;
  options.volumes = c.volumes;
  const Config config = policy_config();
  if (!c.refused) {
    EXPECT_NO_THROW(check_docker_options(config, options));
    return;
  }
  EXPECT_THAT(error_of([&] { check_docker_options(config, options); }),
              AllOf(HasSubstr("is refused by the site policy \"refused_docker_options\""),
                    HasSubstr(fmt::format("(rule \"{}\") in {}policy-system.json:6", c.rule, kData))));
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, Refusal,
    ::testing::Values(
        RefusalCase{{"--privileged"}, {}, true, "--privileged"},
        RefusalCase{{"--privileged=true"}, {}, true, "--privileged"},
        RefusalCase{{"--privileged=1"}, {}, true, "--privileged"}, RefusalCase{{"--privileged=false"}, {}, false, ""},
        RefusalCase{{"--ipc=host"}, {}, false, ""}, RefusalCase{{"--pid=host"}, {}, true, "--pid=host"},
        RefusalCase{{"--pid", "host"}, {}, true, "--pid=host"}, RefusalCase{{"--pid=container:web"}, {}, false, ""},
        RefusalCase{{"--network=host"}, {}, true, "--network host"},
        RefusalCase{{"--net", "host"}, {}, true, "--network host"},  // the old alias
        RefusalCase{{"--network", "bridge"}, {}, false, ""},
        RefusalCase{
            {"-it", "--rm", "-v", "/var/run/docker.sock:/var/run/docker.sock"}, {}, true, "-v /var/run/docker.sock"},
        RefusalCase{{"-v/var/run/docker.sock:/d.sock"}, {}, true, "-v /var/run/docker.sock"},
        RefusalCase{{"--volume=/var/run/docker.sock:/s:ro"}, {}, true, "-v /var/run/docker.sock"},
        RefusalCase{{}, {"/var/run/docker.sock:/var/run/docker.sock"}, true, "-v /var/run/docker.sock"},
        RefusalCase{{}, {"/var/run:/host-run"}, true, "-v /var/run/docker.sock"},  // exposes it
        RefusalCase{{}, {"/:/host:ro"}, true, "-v /var/run/docker.sock"},
        RefusalCase{{}, {"/var/lib/data:/data", "cache:/cache"}, false, ""},
        RefusalCase{{"--mount", "type=bind,src=/var/run/docker.sock,dst=/s"}, {}, true, "-v /var/run/docker.sock"},
        RefusalCase{{"--mount=type=bind,source=/var/run/,target=/r"}, {}, true, "-v /var/run/docker.sock"},
        // /var/run is a link to /run (Debian since 7): the socket by its other name.
        RefusalCase{{"-v", "/run/docker.sock:/s"}, {}, true, "-v /var/run/docker.sock"},
        RefusalCase{{"--mount", "type=volume,src=data,dst=/data"}, {}, false, ""},
        RefusalCase{{"--cap-add=cap_sys_admin"}, {}, true, "--cap-add SYS_ADMIN"},
        RefusalCase{{"--cap-add", "NET_ADMIN"}, {}, false, ""},
        RefusalCase{{"--cap-add=ALL"}, {}, true, "--cap-add SYS_ADMIN"},
        RefusalCase{{"--cap-add", "all"}, {}, true, "--cap-add SYS_ADMIN"},
        RefusalCase{{"--shm-size", "--privileged"}, {}, false, ""}));  // a value, not an option

TEST_F(PolicyTest, RefusalNamesWhereTheOptionCameFrom) {
  write("home/config.json", "{\n  \"docker_opts\": [\"--pid=host\"]\n}\n");
  ConfigInputs in = inputs();
  in.system_file = kData + "policy-system.json";
  Config config = load_config(in);
  Options options;
  apply_to(config, options);
  EXPECT_EQ(error_of([&] { check_policy(config, options); }),
            fmt::format("docker option \"--pid=host\" (from user {}:2) is refused by the site policy "
                        "\"refused_docker_options\" (rule \"--pid=host\") in {}policy-system.json:6",
                        path("home/config.json"), kData));

  in.flags = {{"docker_opts", json::array({"--privileged"})}};
  config = load_config(in);
  apply_to(config, options);
  EXPECT_THAT(error_of([&] { check_policy(config, options); }), HasSubstr("\"--privileged\" (from flag --docker-opt)"));

  // "--label" from the user file and from a flag: neither is named as the refused one's origin.
  write("home/config.json", R"({"docker_opts": ["--label", "a=1"]})");
  in.flags = {{"docker_opts", json::array({"--label", "b=2", "--pid=host"})}};
  config = load_config(in);
  apply_to(config, options);
  EXPECT_THAT(error_of([&] { check_policy(config, options); }), HasSubstr("\"--pid=host\" (from flag --docker-opt)"));
  EXPECT_EQ(item_origins(config).at("docker_opts").at("--label"), "");
}

TEST_F(PolicyTest, GpuCountIsCappedByMaxGpusPerLaunchAndAllowedGpus) {
  const Config config = policy_config();
  EXPECT_NO_THROW(check_gpu_count(config, 2));
  EXPECT_EQ(error_of([&] { check_gpu_count(config, 3); }),
            fmt::format("3 GPUs asked for, but the site policy \"max_gpus_per_launch\" in {}policy-system.json:5 "
                        "allows at most 2 per launch",
                        kData));

  write("etc/config.json", R"({"allowed_gpus": [2, 5]})");
  const Config two = load_config(inputs());
  EXPECT_THAT(error_of([&] { check_gpu_count(two, 3); }),
              HasSubstr("the site policy \"allowed_gpus\" in " + path("etc/config.json") + ":1 offers only 2: 2, 5"));
  // Three MIG instances may sit on one allowed GPU: not refused for the count of GPUs listed.
  EXPECT_NO_THROW(check_gpu_count(two, 3, /*mig_instances=*/true));

  // [2, 2, 2] is one GPU, which passed a three-GPU launch here and failed it later.
  write("etc/config.json", R"({"allowed_gpus": [2, 2, 2]})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("GPU 2 is listed twice; list each GPU once"));
}

TEST_F(PolicyTest, AllowSharingFalseRefusesAllowBusyAndMinFreeMemory) {
  write("etc/config.json", "{\n  \"allow_sharing\": false\n}\n");
  ConfigInputs in = inputs();
  in.flags = {{"min_free_memory", "20GiB"}};
  Config config = load_config(in);
  Options options;
  apply_to(config, options);
  ASSERT_TRUE(options.min_free_memory_mib);
  EXPECT_DOUBLE_EQ(*options.min_free_memory_mib, 20480.0);
  EXPECT_EQ(error_of([&] { check_policy(config, options); }),
            fmt::format("--min-free-memory is refused: the site policy \"allow_sharing\" in {}:2 forbids sharing a "
                        "busy GPU; leave it out, and add --wait (--wait 30m) to wait for a free one",
                        path("etc/config.json")));
  in.flags = {{"allow_busy", true}};
  config = load_config(in);
  Options busy;
  apply_to(config, busy);
  EXPECT_THAT(error_of([&] { check_policy(config, busy); }), HasSubstr("--allow-busy is refused"));

  write("etc/config.json", "{}");
  config = load_config(in);
  Options allowed;
  apply_to(config, allowed);
  EXPECT_NO_THROW(check_policy(config, allowed));
}

TEST_F(PolicyTest, AllowedGpusFilter) {
  const Config config = policy_config();
  EXPECT_TRUE(gpu_allowed(config, 0));
  EXPECT_TRUE(gpu_allowed(config, 3));
  EXPECT_FALSE(gpu_allowed(config, 4));
  EXPECT_EQ(gpu_not_allowed_reason(config),
            fmt::format("not offered by the site policy \"allowed_gpus\" in {}policy-system.json:4", kData));
  EXPECT_TRUE(gpu_allowed(load_config(inputs()), 7));  // no policy: every GPU
}

TEST_F(PolicyTest, UserAndProjectFilesCannotSetPolicy) {
  write("home/config.json", "{\n  \"allowed_gpus\": [0, 1, 2, 3, 4, 5, 6, 7]\n}");
  EXPECT_EQ(error_of([&] { load_config(inputs()); }),
            path("home/config.json") +
                ":2: key \"allowed_gpus\": site policy keys belong in the system file /etc/gpurun/config.json; a user "
                "file cannot set them");

  fs::remove(path("home/config.json"));
  write("work/.gpurun.json", R"({"max_gpus_per_launch": 8})");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("a project file cannot set them"));

  in.cwd.clear();
  in.extra_files = {write("extra.json", R"({"refused_docker_options": []})")};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("a --config file cannot set them"));

  // "notify": true meant --notify: the error says which key that is.
  in.extra_files = {write("extra.json", R"({"notify": true})")};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("(for --notify, the key is notify_end)"));
}

TEST_F(PolicyTest, PolicyHoldsUnderNoConfigAndCannotComeFromTheEnvironment) {
  ConfigInputs in = inputs();
  in.system_file = kData + "policy-system.json";
  in.no_config = true;
  in.environment = {{"GPURUN_MAX_GPUS_PER_LAUNCH", "8"}};
  const Config config = load_config(in);
  EXPECT_EQ(config.policy.max_gpus_per_launch, 2);
  EXPECT_EQ(config.at("image").value, nullptr);  // the system file's options do not count
  EXPECT_THAT(config.warnings, ElementsAre(HasSubstr("ignoring GPURUN_MAX_GPUS_PER_LAUNCH")));
}

TEST_F(PolicyTest, TheServiceSectionIsReadFromTheSystemFileAloneAndCheckedKeyByKey) {
  write("etc/config.json",
        "{\n  \"service\": {\"interval\": 5, \"state_dir\": \"/srv/gpurun\", \"keep_ended_containers_days\": 0.5}\n}");
  const Config config = load_config(inputs());
  EXPECT_EQ(config.service.interval_s, 5);
  EXPECT_EQ(config.service.keep_ended_containers_days, 0.5);
  EXPECT_EQ(config.service.state_dir, "/srv/gpurun");
  EXPECT_EQ(config.service.keep_samples_days, std::nullopt);
  ConfigInputs ignored = inputs();
  ignored.no_config = true;
  EXPECT_EQ(load_config(ignored).service.interval_s, std::nullopt);  // as the file's option values

  write("etc/config.json", "{\n  \"service\": {\n    \"intervall\": 5\n  }\n}");
  EXPECT_EQ(error_of([&] { load_config(inputs()); }),
            path("etc/config.json") +
                ":3: key \"service.intervall\": not a setting of the service (did you mean \"interval\"?)");
  write("etc/config.json", R"({"service": {"keep_ended_containers_days": -1}})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              HasSubstr("key \"service.keep_ended_containers_days\": expected a number of days from 0 to 36500"));
  write("etc/config.json", R"({"service": {"idle_threshold": 100}})");  // every GPU idle
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              HasSubstr("key \"service.idle_threshold\": expected a number of percent from 0 to 99"));
  write("etc/config.json", R"({"service": {"state_dir": "var/lib"}})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("expected an absolute path"));
  write("etc/config.json", R"({"service": {"web_names": ["gpus.lab.example.org", "dgx-7"]}})");
  EXPECT_EQ(load_config(inputs()).service.web_names, (std::vector<std::string>{"gpus.lab.example.org", "dgx-7"}));
  for (const char* names : {R"("gpus")", R"(["gpus lab"])", R"([""])", R"([7])", R"(["a/b"])"}) {
    write("etc/config.json", fmt::format(R"({{"service": {{"web_names": {}}}}})", names));
    EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("expected a list of host names")) << names;
  }
  write("etc/config.json", R"({"service": {"trusted_peers": ["10.0.0.5", "10.1.0.0/16", "2001:db8::/64"]}})");
  EXPECT_EQ(load_config(inputs()).service.trusted_peers,
            (std::vector<std::string>{"10.0.0.5", "10.1.0.0/16", "2001:db8::/64"}));
  for (const char* peers : {R"("10.0.0.5")", R"(["prometheus.lab"])", R"(["10.0.0.0/40"])", R"([5])"}) {
    write("etc/config.json", fmt::format(R"({{"service": {{"trusted_peers": {}}}}})", peers));
    EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("expected a list of addresses or networks"))
        << peers;
  }
  // A listen address is checked with the file, at its line, not when gpurund first listens.
  write("etc/config.json", R"({"service": {"listen": "[::1]:9400"}})");
  EXPECT_EQ(load_config(inputs()).service.listen, "[::1]:9400");
  for (const char* listen : {"9400", "::1:9400", "host:http", "host:70000"}) {
    write("etc/config.json", fmt::format(R"({{"service": {{"listen": "{}"}}}})", listen));
    EXPECT_THAT(error_of([&] { load_config(inputs()); }),
                HasSubstr("key \"service.listen\": " +
                          std::string(std::string_view(listen) == "9400"       ? "no host and port"
                                      : std::string_view(listen) == "::1:9400" ? "an IPv6 address goes in brackets"
                                                                               : "the port must be a number")))
        << listen;
  }
  write("etc/config.json", R"({"service": 10})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("key \"service\": expected an object"));
  fs::remove(path("etc/config.json"));
  write("home/config.json", R"({"service": {"interval": 1}})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              HasSubstr("key \"service\": the service's settings belong in the system file"));
}

TEST_F(PolicyTest, AMalformedRuleIsRefusedAtLoad) {
  write("etc/config.json", "{\n  \"refused_docker_options\": [\"privileged\"]\n}");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              AllOf(HasSubstr(path("etc/config.json") + ":2: key \"refused_docker_options\""),
                    HasSubstr("\"privileged\" is not one docker option")));
}

// ---------------------------------------------------------------------------------------------
// Broken files

TEST_F(ConfigTest, SyntaxErrorNamesFileLineAndColumn) {
  ConfigInputs in = inputs();
  in.user_file = kData + "syntax-error.json";
  const std::string message = error_of([&] { load_config(in); });
  // The position is where the parser stopped: the end of the token it could not take.
  EXPECT_THAT(message, HasSubstr(kData + "syntax-error.json:4:8: syntax error while parsing object - "
                                         "unexpected string literal"));
  EXPECT_THAT(message, Not(HasSubstr("json.exception")));
}

// nlohmann counts a bad literal that ends a line as "line 4, column 0"; the line of the literal is meant.
TEST_F(ConfigTest, SyntaxErrorPointsAtTheLineOfTheBadToken) {
  write("home/config.json", "{\n  \"image\": \"x\",\n  \"gpus\": tru\n}\n");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              HasSubstr("config.json:3:14: syntax error while parsing value - invalid literal"));
}

TEST_F(ConfigTest, TrailingCommaIsASyntaxError) {
  write("home/config.json", "{\n  \"image\": \"x\",\n}\n");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("config.json:3:1: syntax error"));
}

TEST_F(ConfigTest, UnknownKeyNamesLineAndSuggests) {
  ConfigInputs in = inputs();
  in.user_file = kData + "unknown-key.json";
  EXPECT_EQ(error_of([&] { load_config(in); }),
            kData + "unknown-key.json:4: unknown key \"imgae\" (did you mean \"image\"?)");
}

TEST_F(ConfigTest, SuggestionsCoverFlagSpellingsAndPlurals) {
  write("home/config.json", R"({"cpus-per-gpu": 8})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("(did you mean \"cpus_per_gpu\"?)"));
  write("home/config.json", R"({"volume": ["/a:/a"]})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr("(did you mean \"volumes\"?)"));
  write("home/config.json", R"({"colour": "blue"})");
  EXPECT_THAT(error_of([&] { load_config(inputs()); }),
              AllOf(HasSubstr("unknown key \"colour\""), Not(HasSubstr("mean"))));
}

TEST_F(ConfigTest, WrongTypeNamesKeyAndLine) {
  ConfigInputs in = inputs();
  in.system_file = kData + "wrong-type.json";
  EXPECT_EQ(error_of([&] { load_config(in); }),
            kData + "wrong-type.json:3: key \"allow_busy\": expected true or false, got \"yes\"");
}

TEST_F(ConfigTest, WrongTypeInAProfileNamesTheNestedKeyAndItsOwnLine) {
  ConfigInputs in = inputs();
  in.user_file = kData + "wrong-type-in-profile.json";
  EXPECT_EQ(
      error_of([&] { load_config(in); }),
      kData +
          "wrong-type-in-profile.json:4: key \"profiles.big.gpus\": expected a whole number from 1 to 2147483647, "
          "got \"four\"");
}

struct BadValueCase {
  std::string file_text;
  std::string expected;
};

void PrintTo(const BadValueCase& c, std::ostream* os) { *os << c.file_text; }

class BadValue : public ConfigTest, public ::testing::WithParamInterface<BadValueCase> {};

TEST_P(BadValue, IsRefusedWithKeyAndReason) {
  write("home/config.json", GetParam().file_text);
  EXPECT_THAT(error_of([&] { load_config(inputs()); }), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadValue,
    ::testing::Values(
        BadValueCase{R"({"max_memory": "2 parsecs"})", "key \"max_memory\": --max-memory \"2 parsecs\""},
        BadValueCase{R"({"max_util": 150})", "key \"max_util\": expected a percentage"},
        BadValueCase{R"({"max_util": "lots"})", "key \"max_util\": --max-util \"lots\""},
        BadValueCase{R"({"wait": "soon"})", "key \"wait\": --wait=soon"},
        BadValueCase{R"({"gpus": 0})", "key \"gpus\": expected a whole number from 1 to 2147483647, got 0"},
        BadValueCase{R"({"gpus": 2.5})", "key \"gpus\": expected a whole number"},
        BadValueCase{R"({"cpus_per_gpu": 99999999999})", "key \"cpus_per_gpu\": 99999999999 is outside 8..24"},
        BadValueCase{R"({"smi_timeout": -1})", "key \"smi_timeout\": expected a number of seconds"},
        BadValueCase{R"({"volumes": "/a:/a"})", "key \"volumes\": expected a list of strings"},
        BadValueCase{R"({"env": ["A=1", 2]})", "key \"env\": expected a list of strings"},
        BadValueCase{R"({"profiles": []})", "key \"profiles\": expected an object of named profiles"},
        BadValueCase{R"({"profiles": {"p": 1}})", "key \"profiles.p\": expected an object"},
        BadValueCase{R"(["image"])", "config.json:1: expected a JSON object"}));

TEST_F(ConfigTest, MissingFilesAreSkippedButAMissingConfigFileIsAnError) {
  const Config config = load_config(inputs());
  ASSERT_EQ(config.files.size(), 2U);
  EXPECT_EQ(config.files[0].state, ConfigFile::State::not_found);
  EXPECT_EQ(config.files[1].state, ConfigFile::State::not_found);

  ConfigInputs in = inputs();
  in.extra_files = {path("nowhere.json")};
  EXPECT_EQ(error_of([&] { load_config(in); }), "configuration file " + path("nowhere.json") + " does not exist");
  in.extra_files = {path("etc")};
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr("cannot read configuration file " + path("etc") + ": it is a directory"));
  const std::string fifo = path("fifo.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  in.extra_files = {fifo};  // refused at once, not waited on
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("it is not a regular file"));
}

// ---------------------------------------------------------------------------------------------
// Comments

TEST_F(ConfigTest, CommentsAreIgnoredOutsideStrings) {
  ConfigInputs in = inputs();
  in.user_file = kData + "commented.json";
  const Config config = load_config(in);
  EXPECT_EQ(config.at("image").value, "registry.lab//mirror/pytorch:24.05");
  EXPECT_EQ(config.at("image").source.line, 5U);
  EXPECT_EQ(config.at("gpus").value, 1);  // commented out
  EXPECT_EQ(config.at("env").value, json::array({"NOTE=see http://wiki.lab/gpus /* not a comment */"}));
}

TEST_F(ConfigTest, ABlankOrCommentOnlyFileSetsNothing) {
  write("etc/config.json", "");
  write("home/config.json", "// nothing yet\n/* later */\n");
  const Config config = load_config(inputs());
  EXPECT_EQ(config.files[1].state, ConfigFile::State::loaded);
  EXPECT_EQ(config.at("image").source.kind, Kind::defaults);
}

// ---------------------------------------------------------------------------------------------
// Project files

TEST_F(ConfigTest, ProjectFileIsFoundInTheNearestParent) {
  write("work/.gpurun.json", R"({"image": "outer"})");
  const std::string inner = write("work/proj/.gpurun.json", R"({"image": "inner"})");
  EXPECT_EQ(find_project_file(path("work/proj/src/deep")), inner);
  EXPECT_EQ(find_project_file(path("work/proj/src/deep/")), inner);
  EXPECT_EQ(find_project_file(path("work/proj")), inner);
  EXPECT_EQ(find_project_file(path("work")), path("work/.gpurun.json"));

  ConfigInputs in = inputs();
  in.cwd = path("work/proj/src/deep");
  const Config config = load_config(in);
  EXPECT_EQ(config.at("image").value, "inner");
  EXPECT_EQ(config.at("image").source.describe(), "project " + inner + ":1");
}

TEST_F(ConfigTest, NoProjectFileWhenNoneIsAbove) {
  // Outside the temporary directory the search is the machine's: skip if some ancestor has one.
  for (fs::path p = root_;; p = p.parent_path()) {
    if (fs::exists(p / ".gpurun.json")) GTEST_SKIP() << "this machine has " << (p / ".gpurun.json");
    if (p == p.root_path()) break;
  }
  EXPECT_EQ(find_project_file(path("work/proj/src")), std::nullopt);
}

TEST_F(ConfigTest, ProjectFileOfAnotherUserOrWritableByAnyoneIsIgnored) {
  const std::string file = write("work/.gpurun.json", R"({"image": "planted"})");
  ConfigInputs in = inputs();
  in.cwd = path("work/proj");
  // Owned by someone else: as root, give the file away; otherwise, claim to be the next uid.
  if (::geteuid() == 0)
    ASSERT_EQ(::chown(file.c_str(), 12345, 12345), 0);
  else
    in.user_id = ::geteuid() + 1;
  Config config = load_config(in);
  EXPECT_EQ(config.at("image").value, nullptr);
  EXPECT_THAT(config.warnings, ElementsAre(AllOf(HasSubstr("ignoring " + file), HasSubstr("belongs to uid"))));
  EXPECT_EQ(config.files.back().state, ConfigFile::State::untrusted);

  // Our own, but anyone may write it.
  in.user_id.reset();
  ASSERT_EQ(::chown(file.c_str(), ::geteuid(), ::getegid()), 0);
  ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
  config = load_config(in);
  EXPECT_EQ(config.at("image").value, nullptr);
  EXPECT_THAT(config.warnings, ElementsAre(HasSubstr("anyone may write it")));

  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  EXPECT_EQ(load_config(in).at("image").value, "planted");
}

TEST_F(ConfigTest, ProjectFileWritableByAGroupWithOthersInItIsIgnored) {
  // Group write is the owner's alone only in their private group (tests/e2e/sudo_real.sh checks
  // that one with real accounts); nobody's group has nobody in it, who is not us.
  const struct passwd* nobody = ::getpwnam("nobody");
  if (::geteuid() == 0 && nobody != nullptr && nobody->pw_uid != 0 && nobody->pw_gid != 0) {
    const gid_t shared = nobody->pw_gid;
    const std::string file = write("work/.gpurun.json", R"({"image": "planted"})");
    ASSERT_EQ(::chown(file.c_str(), 0, shared), 0);
    ASSERT_EQ(::chmod(file.c_str(), 0664), 0);
    ConfigInputs in = inputs();
    in.cwd = path("work/proj");
    const Config config = load_config(in);
    EXPECT_EQ(config.at("image").value, nullptr);
    EXPECT_THAT(config.warnings, ElementsAre(HasSubstr("may write it")));
  } else {
    GTEST_SKIP() << "needs root and a user nobody with a group of its own";
  }
}

TEST_F(ConfigTest, AnUntrustedProjectFileIsNotReadAtAllWhateverItsSizeOrMode) {
  // Anyone may put a .gpurun.json above a shared directory (/tmp): read before the trust check, a
  // 3 GB one broke gpurun for everyone below it, and an unreadable one was an error.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  const std::string file = write("work/.gpurun.json", "");
  ASSERT_EQ(::truncate(file.c_str(), off_t{3} << 30), 0);
  ASSERT_EQ(::chown(file.c_str(), 12345, 12345), 0);
  ConfigInputs in = inputs();
  in.cwd = path("work/proj");
  in.user_id = 23456;
  Config config = load_config(in);
  EXPECT_THAT(config.warnings, ElementsAre(HasSubstr("belongs to uid 12345")));
  ASSERT_EQ(::chmod(file.c_str(), 0), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);  // the rest may be read by uid 23456
  pid_t child = ::fork();                      // as uid 23456, for whom the file cannot be opened
  if (child == 0) {
    if (::setgid(23456) != 0 || ::setuid(23456) != 0) ::_exit(2);
    try {
      ::_exit(load_config(in).files.back().state == ConfigFile::State::untrusted ? 0 : 3);
    } catch (const std::exception& e) {
      (void)!::write(2, e.what(), std::strlen(e.what()));
      ::_exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST_F(ConfigTest, AProjectFileThatIsAnotherUsersSymlinkIsIgnoredWhereverItPoints) {
  // The target's owner (root) passed the check: anyone could plant a link to a root-owned file.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a link away";
  const std::string target = write("etc/settings.json", R"({"image": "planted"})");
  const std::string link = path("work/.gpurun.json");
  fs::create_directories(path("work"));
  fs::create_symlink(target, link);
  ASSERT_EQ(::lchown(link.c_str(), 12345, 12345), 0);
  ConfigInputs in = inputs();
  in.cwd = path("work/proj");
  in.user_id = 23456;
  const Config config = load_config(in);
  EXPECT_EQ(config.at("image").value, nullptr);
  EXPECT_THAT(config.warnings, ElementsAre(HasSubstr("it is a symlink of uid 12345's, not yours (uid 23456)")));
  ASSERT_EQ(::lchown(link.c_str(), 23456, 23456), 0);  // the user's own link to a file root owns: followed
  EXPECT_EQ(load_config(in).at("image").value, "planted");
}

TEST_F(ConfigTest, AFileTooLargeTooDeepOrWithNulBytesIsRefusedSayingWhy) {
  const std::string large = write("large.json", "");
  ASSERT_EQ(::truncate(large.c_str(), off_t{3} << 30), 0);
  ConfigInputs in = inputs();
  in.extra_files = {large};
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr("cannot read configuration file " + large + ": it is 3221225472 bytes, over the 1 MiB"));
  // Memory grew as the square of the depth: 40 KB of brackets took 600 MB.
  const std::string deep =
      write("deep.json", "{\"image\":\n" + std::string(100'000, '[') + std::string(100'000, ']') + "}");
  in.extra_files = {deep};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr(deep + ":2: nested deeper than 32 levels"));
  // What followed a NUL was silently left out.
  const std::string nul = write("nul.json", std::string("{\"image\": \"a\"}") + '\0' + "{\"imgae\": \"b\"");
  in.extra_files = {nul};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr(nul + ":1:15: a NUL byte"));
}

TEST_F(ConfigTest, AKeyGivenTwiceInOneObjectIsRefusedWithBothLines) {
  // JSON keeps the last of the two without a word: a policy written twice was decided by its order.
  ConfigInputs in = inputs();
  in.extra_files = {
      write("twice.json", "{\n  \"max_util\": \"10%\",\n  \"image\": \"a\",\n  \"max_util\": \"90%\"\n}")};
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr(in.extra_files[0] + ":4: key \"max_util\" is given twice (first on line 2): keep one"));
  in.extra_files = {write("nested.json", R"({"profiles": {"a": {"gpus": 1, "image": "x", "gpus": 2}}})")};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr(":1: key \"profiles.a.gpus\" is given twice"));
  // The same key in two objects is no repetition.
  in.extra_files = {write("apart.json", R"({"profiles": {"a": {"gpus": 1}, "b": {"gpus": 2}}, "gpus": 3})")};
  EXPECT_EQ(load_config(in).at("gpus").value, 3);
  // A key written with escapes is the same key: "im\u0061ge" is "image".
  in.extra_files = {write("escaped.json", "{\n  \"image\": \"a\",\n  \"im\\u0061ge\": \"b\"\n}")};
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr(in.extra_files[0] + ":3: key \"image\" is given twice (first on line 2)"));
}

TEST_F(ConfigTest, ANumberBeyondADoubleIsRefusedAtItsLine) {
  // nlohmann says "number overflow" with no position; a string holding the same text is no number.
  ConfigInputs in = inputs();
  in.extra_files = {write("huge.json", "{\n  \"image\": \"1e400\",\n  \"gpus\": 1e400\n}")};
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr(in.extra_files[0] + ":3: the number 1e400 is beyond what any setting takes"));
  in.extra_files = {write("tiny.json", "{\"max_util\": 1e-400}")};  // underflow reads as 0, as JSON allows
  EXPECT_EQ(load_config(in).at("max_util").value, 0.0);
}

TEST_F(ConfigTest, AFoundProjectFileCannotChooseProgramsButAConfigFileCan) {
  write("work/.gpurun.json", "{\n  \"image\": \"x\",\n  \"docker\": \"./evil.sh\"\n}");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  EXPECT_THAT(error_of([&] { load_config(in); }),
              AllOf(HasSubstr(path("work/.gpurun.json") + ":3: key \"docker\": a project's .gpurun.json cannot"),
                    HasSubstr("GPURUN_DOCKER or --docker")));

  in.cwd.clear();
  in.extra_files = {path("work/.gpurun.json")};
  EXPECT_EQ(load_config(in).at("docker").value, "./evil.sh");
}

TEST_F(ConfigTest, AFoundProjectFileCannotMoveTheMachinesReservations) {
  // A cloned repository's private lock directory would double-book GPUs with everyone else.
  for (const char* key : {"lock_dir", "lock_group"}) {
    write("work/.gpurun.json", fmt::format("{{\"image\": \"x\",\n \"{}\": \"/tmp/elsewhere\"}}", key));
    ConfigInputs in = inputs();
    in.cwd = path("work");
    EXPECT_THAT(error_of([&] { load_config(in); }),
                AllOf(HasSubstr(path("work/.gpurun.json") + ":2: key \"" + key +
                                "\": a project's .gpurun.json cannot move the machine's reservations"),
                      HasSubstr("set it in your user file")))
        << key;
  }
}

// srun's --prolog and --task-prolog run a program at every launch (the submit host's, the node's):
// a cloned repository's file choosing one is refused, as `docker` or `nvidia_smi` is.
TEST_F(ConfigTest, AFoundProjectFileCannotChooseAProgramSrunRuns) {
  ConfigInputs in = inputs();
  in.cwd = path("work");
  for (const char* given : {R"({"slurm_srun_opts": ["--prolog=./p.sh"]})", R"({"slurm_srun_opts": ["--task-pro=x"]})",
                            R"({"slurm_srun_opts": ["--epilog", "./e.sh"]})"}) {
    write("work/.gpurun.json", given);
    EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("cannot choose a program srun runs")) << given;
  }
  write("work/.gpurun.json", R"({"slurm_srun_opts": ["--constraint=h100", "--exclusive"]})");
  EXPECT_EQ(load_config(in).at("slurm_srun_opts").value, json({"--constraint=h100", "--exclusive"}));
}

TEST_F(ConfigTest, AFoundProjectFileCannotGiveItsJobPowerOverTheHost) {
  // A cloned repository's code runs in the job: --privileged, or the engine's socket, is root on the host.
  ConfigInputs in = inputs();
  in.cwd = path("work");
  for (
      const char* given :
      {R"({"docker_opts": ["--privileged"]})", R"({"docker_opts": ["--cap-add", "SYS_ADMIN"]})",
       R"({"docker_opts": ["--user=0:0"]})", R"({"docker_opts": ["--security-opt=seccomp=unconfined"]})",
       R"({"volumes": ["/var/run/docker.sock:/var/run/docker.sock"]})", R"({"volumes": ["/:/host"]})",
       R"({"docker_opts": ["--mount", "type=bind,src=/run,dst=/r"]})",
       R"({"docker_opts": ["--mount", "type=volume,dst=/h,volume-opt=type=none,volume-opt=device=/run,volume-opt=o=bind"]})",
       // docker reads --mount as CSV, its keys in any case.
       R"({"docker_opts": ["--mount", "type=bind,\"src=/run/docker.sock\",dst=/s"]})",
       R"({"docker_opts": ["--mount=type=bind,SRC=/var/run,dst=/s"]})",
       R"({"profiles": {"p": {"docker_opts": ["--pid=host"]}}})"}) {
    write("work/.gpurun.json", given);
    EXPECT_THAT(error_of([&] { load_config(in); }),
                AllOf(HasSubstr(path("work/.gpurun.json") + ":1: key"),
                      HasSubstr("a project's .gpurun.json cannot give its job power over the host"),
                      HasSubstr("give it with --docker-opt or in your user file")))
        << given;
  }
  // A link the repository ships, leading to the engine's socket's directory: docker follows it.
  fs::create_directories(path("work"));
  fs::create_directory_symlink("/var/run", path("work/run-link"));
  write("work/.gpurun.json", R"({"volumes": [")" + path("work/run-link") + R"(:/r"]})");
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr("a project's .gpurun.json cannot give its job power over the host"));
  // What ML projects do ask for stays theirs to ask.
  write("work/.gpurun.json",
        R"({"docker_opts": ["--ipc=host", "--shm-size=8g", "--security-opt=no-new-privileges"],
            "volumes": ["/datasets:/datasets:ro", "./data:/data"]})");
  EXPECT_EQ(load_config(in).at("docker_opts").value,
            json({"--ipc=host", "--shm-size=8g", "--security-opt=no-new-privileges"}));
  // The same from the user's own file is theirs to give.
  in.cwd.clear();
  write("home/config.json", R"({"docker_opts": ["--privileged"]})");
  EXPECT_EQ(load_config(in).at("docker_opts").value, json({"--privileged"}));
}

// ---------------------------------------------------------------------------------------------
// --no-config, environment, flags

TEST_F(ConfigTest, NoConfigIgnoresEveryFileButConfigFilesGivenWithIt) {
  write("etc/config.json", R"({"image": "sys", "profiles": {"p": {"gpus": 2}}})");
  write("home/config.json", R"({"image": "user"})");
  write("work/.gpurun.json", R"({"image": "project"})");
  ConfigInputs in = inputs();
  in.cwd = path("work");
  in.no_config = true;
  in.environment = {{"GPURUN_DETACH", "yes"}};
  Config config = load_config(in);
  EXPECT_EQ(config.at("image").value, nullptr);
  EXPECT_EQ(config.at("detach").value, true);  // the environment still counts
  EXPECT_EQ(config.files[0].state, ConfigFile::State::ignored);
  EXPECT_EQ(config.files[1].state, ConfigFile::State::ignored);
  EXPECT_TRUE(config.profiles.empty());

  in.extra_files = {write("ci.json", R"({"image": "ci"})")};
  EXPECT_EQ(load_config(in).at("image").value, "ci");
}

TEST_F(ConfigTest, EnvironmentValuesAreReadByType) {
  ConfigInputs in = inputs();
  in.environment = {{"GPURUN_ALLOW_BUSY", "on"},
                    {"GPURUN_CPUS_PER_GPU", "12"},
                    {"GPURUN_WAIT", "forever"},
                    {"GPURUN_MAX_UTIL", "25%"},
                    {"GPURUN_DOCKER_OPTS", R"(["--ipc=host", "--shm-size", "8g"])"},
                    {"GPURUN_NAME", ""}};  // empty: unset
  const Config config = load_config(in);
  EXPECT_EQ(config.at("allow_busy").value, true);
  EXPECT_EQ(config.at("cpus_per_gpu").value, 12);
  EXPECT_EQ(config.at("wait").value, true);
  EXPECT_EQ(config.at("max_util").value, "25%");
  EXPECT_EQ(config.at("docker_opts").value, json::array({"--ipc=host", "--shm-size", "8g"}));
  EXPECT_EQ(config.at("name").source.kind, Kind::defaults);
}

TEST_F(ConfigTest, BadEnvironmentValuesNameTheVariable) {
  ConfigInputs in = inputs();
  in.environment = {{"GPURUN_GPUS", "two"}};
  EXPECT_EQ(error_of([&] { load_config(in); }),
            "GPURUN_GPUS=\"two\": expected a whole number from 1 to 2147483647, got \"two\"");
  in.environment = {{"GPURUN_VOLUMES", "[\"/a:/a\""}};
  EXPECT_THAT(error_of([&] { load_config(in); }),
              HasSubstr("GPURUN_VOLUMES: a value that starts with '[' is read as a JSON list of strings"));
  // docker's -p for an IPv6 address begins with '[': the message gives the form that works.
  in.environment = {{"GPURUN_PUBLISH", "[::1]:8080:80"}};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr(R"(write it as a list of one: '["[::1]:8080:80"]')"));
  in.environment = {{"GPURUN_PUBLISH", R"(["[::1]:8080:80"])"}};
  EXPECT_EQ(load_config(in).at("publish").value, json({"[::1]:8080:80"}));
}

TEST_F(ConfigTest, UnknownEnvironmentVariablesAreWarnedAbout) {
  ConfigInputs in = inputs();
  in.environment = {{"GPURUN_IMGAE", "x"}};
  EXPECT_THAT(load_config(in).warnings,
              ElementsAre("ignoring GPURUN_IMGAE: gpurun has no such setting (did you mean \"GPURUN_IMAGE\"?)"));
  // Taken for --dry-run's, a warning would let a real launch go ahead.
  in.environment = {{"GPURUN_DRY_RUN", "1"}};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("GPURUN_DRY_RUN is not read: a dry run is asked for on "
                                                            "the command line alone; pass --dry-run"));
  in.environment = {{"GPURUN_DRY_RUN", "0"}};  // asks for none: a warning, as any unknown variable
  EXPECT_THAT(load_config(in).warnings, ElementsAre(HasSubstr("ignoring GPURUN_DRY_RUN")));
}

TEST_F(ConfigTest, BadFlagValuesNameTheFlag) {
  ConfigInputs in = inputs();
  in.flags = {{"max_util", "lots"}};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("--max-util \"lots\": expected a percentage"));
  EXPECT_THAT(error_of([&] { load_config(in); }), Not(HasSubstr("--max-util: --max-util")));  // named once
  in.flags = {{"dry_run", true}};
  EXPECT_THAT(error_of([&] { load_config(in); }), HasSubstr("\"dry_run\""));
}

TEST(ConfigPaths, UserFileFollowsXdgThenHome) {
  EXPECT_EQ(default_user_config_path("/x/cfg", "/home/a"), "/x/cfg/gpurun/config.json");
  EXPECT_EQ(default_user_config_path(std::nullopt, "/home/a"), "/home/a/.config/gpurun/config.json");
  EXPECT_EQ(default_user_config_path("relative/cfg", "/home/a"), "/home/a/.config/gpurun/config.json");
  EXPECT_EQ(default_user_config_path("", "/home/a"), "/home/a/.config/gpurun/config.json");
  EXPECT_EQ(default_user_config_path(std::nullopt, std::nullopt), std::nullopt);
}

TEST(ConfigPaths, GpurunEnvironmentTakesOnlyGpurunVariables) {
  const char* envp[] = {"HOME=/home/a", "GPURUN_IMAGE=me/x:1", "GPURUN_ENV=A=1", "XGPURUN_IMAGE=no", nullptr};
  EXPECT_EQ(gpurun_environment(envp),
            (std::map<std::string, std::string>{{"GPURUN_ENV", "A=1"}, {"GPURUN_IMAGE", "me/x:1"}}));
}

// ---------------------------------------------------------------------------------------------
// Options, report, starter

TEST_F(ConfigTest, ApplyToFillsOptions) {
  write("home/config.json", R"({"max_util": 20, "ignore_containers": true, "wait": true, "cpus_per_gpu": 12,
                               "image": "me/x", "volumes": ["/a:/a"], "command": ["python", "t.py"], "gpus": 2})");
  Options options;
  options.dry_run = true;
  apply_to(load_config(inputs()), options);
  EXPECT_EQ(options.max_util, Percent{20});
  EXPECT_TRUE(options.ignore_containers);
  EXPECT_EQ(options.wait, (WaitLimit{true, std::nullopt}));
  EXPECT_EQ(options.cpus_per_gpu, 12);
  EXPECT_EQ(options.host_cpus, std::nullopt);
  EXPECT_EQ(options.image, "me/x");
  EXPECT_EQ(options.volumes, std::vector<std::string>{"/a:/a"});
  EXPECT_THAT(options.command, ElementsAre("python", "t.py"));
  EXPECT_EQ(options.gpus, 2);
  EXPECT_TRUE(options.dry_run);  // not a config key: left alone
}

TEST_F(ConfigTest, DefaultsEqualTheOptionsDefaults) {
  Options from_config;
  from_config.lock_dir = "changed";
  apply_to(load_config(inputs()), from_config);
  const Options plain;
  EXPECT_EQ(from_config.nvidia_smi, plain.nvidia_smi);
  EXPECT_EQ(from_config.smi_timeout, plain.smi_timeout);
  EXPECT_EQ(from_config.max_util, plain.max_util);
  EXPECT_EQ(from_config.max_memory, plain.max_memory);
  EXPECT_EQ(from_config.docker, plain.docker);
  EXPECT_EQ(from_config.lock_dir, plain.lock_dir);
  EXPECT_EQ(from_config.gpus, plain.gpus);
  EXPECT_EQ(from_config.ignore_containers, plain.ignore_containers);
  EXPECT_EQ(from_config.wait, plain.wait);
  EXPECT_EQ(from_config.cpus_per_gpu, plain.cpus_per_gpu);
}

TEST_F(ConfigTest, ReportListsEveryKeyWithItsSource) {
  write("home/config.json", "{\n  \"image\": \"me/x\",\n  \"volumes\": [\"/a:/a\"]\n}");
  ConfigInputs in = inputs();
  in.system_file = kData + "policy-system.json";
  in.flags = {{"volumes", "/b:/b"}};
  const Config config = load_config(in);

  const std::string table = config_table(config);
  for (const ConfigKey& key : config_keys()) EXPECT_THAT(table, HasSubstr(key.name)) << key.name;
  EXPECT_THAT(table, HasSubstr("\"me/x\""));
  EXPECT_THAT(table, HasSubstr("user " + path("home/config.json") + ":2"));
  EXPECT_THAT(table, HasSubstr("user " + path("home/config.json") + ":3 + flag --volume"));
  EXPECT_THAT(table, HasSubstr("site policy, system " + kData + "policy-system.json:5"));
  EXPECT_THAT(table, HasSubstr("loaded"));

  const json report = config_json(config);
  for (const ConfigKey& key : config_keys()) {
    if (key.site_policy) {
      EXPECT_TRUE(report["policy"].contains(key.name)) << key.name;
    } else {
      EXPECT_TRUE(report.at("keys").contains(key.name) && report["keys"][key.name].contains("source")) << key.name;
    }
  }
  EXPECT_EQ(report["keys"]["image"]["source"],
            (json{{"layer", "user"}, {"where", path("home/config.json")}, {"line", 2}}));
  EXPECT_EQ(report["keys"]["docker"]["source"], (json{{"layer", "default"}}));
  EXPECT_EQ(report.at("keys").at("volumes").at("items").at(1).at("source").at("layer"), "flag");
  EXPECT_EQ(report["policy"]["max_gpus_per_launch"]["value"], 2);
  EXPECT_EQ(report.at("files").at(0).at("state"), "loaded");
}

// Only a typed --time-limit (or its variable) needs a unit: a file's "86400" is seconds, as it was.
TEST_F(ConfigTest, ADurationInAFileMayBeSecondsWithoutAUnit) {
  write("etc/config.json", R"({"max_runtime": "86400"})");
  write("home/config.json", R"({"time_limit": "3600"})");
  ConfigInputs in = inputs();
  EXPECT_EQ(load_config(in).at("time_limit").value, "3600");
  EXPECT_THAT(error_of([] { value_from_text(ValueType::duration, "90", "--time-limit"); }),
              HasSubstr("--time-limit: expected a duration with its unit, such as \"90m\" or \"90s\""));
  EXPECT_EQ(value_from_text(ValueType::duration, "90m", "--time-limit"), "90m");
}

// A rule the system file sets is shown with its value, never "(not set)" while it is enforced.
TEST_F(ConfigTest, TheTableShowsEverySitePolicyRuleTheSystemFileSets) {
  write("etc/config.json", R"({"allowed_gpus": [0], "max_gpus_per_launch": 1, "max_runtime": "7d",
    "refused_docker_options": ["--privileged"], "allowed_images": ["lab/*"], "allowed_docker_options": ["--ipc=host"],
    "admin_group": "wheel", "allow_sharing": false, "history_visibility": "own"})");
  const Config config = load_config(inputs());
  const std::string table = config_table(config);
  const json report = config_json(config);
  for (const ConfigKey& key : config_keys()) {
    if (!key.site_policy || report["policy"][key.name].is_null()) continue;
    const std::size_t row = table.find(key.name + " ");
    ASSERT_NE(row, std::string::npos) << key.name;
    EXPECT_THAT(table.substr(row, table.find('\n', row) - row), Not(HasSubstr("(not set)"))) << key.name;
  }
  EXPECT_THAT(table, HasSubstr("\"7d\""));
}

TEST_F(ConfigTest, StarterFileParsesAndChangesNothing) {
  ConfigInputs in = inputs();
  in.user_file = write("home/starter.json", starter_user_config());
  const Config config = load_config(in);
  for (const ConfigKey& key : config_keys()) {
    if (!key.site_policy) {
      EXPECT_EQ(config.at(key.name).source.kind, Kind::defaults) << key.name;
    }
  }
}

TEST_F(ConfigTest, StarterFileStillParsesWithEveryExampleUncommented) {
  std::istringstream starter(starter_user_config());
  std::string uncommented;
  for (std::string line; std::getline(starter, line);) {
    if (line.starts_with("  // \"") || line.starts_with("    // \"")) line.erase(line.find("// "), 3);
    uncommented += line + "\n";
  }
  ConfigInputs in = inputs();
  in.user_file = write("home/uncommented.json", uncommented);
  in.profile = "jupyter";
  const Config config = load_config(in);
  for (const ConfigKey& key : config_keys()) {
    if (!key.site_policy) {
      EXPECT_NE(config.at(key.name).source.kind, Kind::defaults) << key.name;
    }
  }
}

TEST(SettleOptions, WhatFollowsFromOtherSettingsIsSettledOnce) {
  Options o;
  o.report_json = "r.json";
  settle_options(o);
  EXPECT_TRUE(o.report);  // --report-json implies --report
  o.watch_s = 0.05;
  EXPECT_EQ(test::caught_error([&] { settle_options(o); }).message, "--watch 0.05: give 0.1 to 86400 seconds");
  o.watch_s = 2;
  EXPECT_NO_THROW(settle_options(o));
}

TEST(Choices, EveryWordSettingIsTypedAndOffersItsWords) {
  for (const auto* key : {"backend", "engine", "gpu_source", "gpu_request", "slurm_container"}) {
    const Setting* setting = find_setting(key);
    ASSERT_NE(setting, nullptr) << key;
    EXPECT_EQ(setting->completion, CompletionHint::choice) << key;
    EXPECT_FALSE(setting->words.empty()) << key;
    Options o;
    for (std::string_view word : setting->words) EXPECT_NO_THROW(setting->apply(json(std::string(word)), o)) << word;
  }
  Options o;
  find_setting("gpu_source")->apply(json("nvidia-smi"), o);
  EXPECT_EQ(o.gpu_source, GpuSourceSetting::nvidia_smi);
  EXPECT_EQ(word_of(GpuSourceSetting::nvidia_smi), "nvidia-smi");
  EXPECT_THAT(
      test::caught_error([&] { find_setting("engine")->apply(json("dokcer"), o); }).message,
      ::testing::HasSubstr("engine \"dokcer\": expected one of auto, docker, podman (did you mean \"docker\"?)"));
}

}  // namespace
}  // namespace gpurun
