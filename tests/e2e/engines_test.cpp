// End-to-end tests of container engines beyond docker's own answer: GPU processes traced to their
// containers through a fake /proc (GPURUN_SYSFS_ROOT), how GPUs are requested (gpu_request), and
// podman as the engine, with the stand-in docker client playing each engine's CLI.
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpurun_fixture.hpp"
#include "support/test_support.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kUuid0 = "GPU-a84bba07-931d-b925-306a-0799dc6ebd71";
constexpr const char* kUuid1 = "GPU-8b8c764d-1c0a-cb3d-ea13-519a60a077bb";

class EnginesTest : public GpurunTest {
 protected:
  // Two idle GPUs; pid 4242 runs on GPU 0 (busy by that process alone, with no container named).
  Env two_gpus_one_process() const {
    test::write_file(
        dir() + "/two.json", std::string(R"({"gpus": [
      {"index": 0, "uuid": ")") + kUuid0 +
                                 R"(", "name": "A100", "memory.used": 4, "memory.total": 81920, "utilization.gpu": 0},
      {"index": 1, "uuid": ")" + kUuid1 +
                                 R"(", "name": "A100", "memory.used": 4, "memory.total": 81920, "utilization.gpu": 0}],
      "processes": [{"gpu_uuid": ")" +
                                 kUuid0 + R"(", "pid": 4242, "process_name": "python3", "used_memory": 2}]})");
    Env env = fakes("all_free_8.json");
    for (auto& [name, value] : env)
      if (name == "FAKE_SMI_SCENARIO") value = dir() + "/two.json";
    return env;
  }
  // pid 4242 in a fake /proc: a process of another user's rootless podman container.
  void rootless_container_process() const {
    const std::string root = dir() + "/root";
    test::write_file(root + "/proc/4242/status", "Name:\tpython3\nUid:\t4100000\t4100000\t4100000\t4100000\n");
    test::write_file(root + "/proc/4242/cgroup",
                     "0::/user.slice/user-3999999.slice/user@3999999.service/user.slice/libpod-" +
                         std::string(64, 'c') + ".scope/container\n");
  }
  static Env with(Env env, const Env& more) {
    env.insert(env.end(), more.begin(), more.end());
    return env;
  }
};

TEST_F(EnginesTest, AnotherUsersRootlessContainerSteersThePickAway) {
  rootless_container_process();
  const Env env = with(two_gpus_one_process(), {{"GPURUN_SYSFS_ROOT", dir() + "/root"}});
  const Outcome run = gpurun({"--dry-run", "--image", "img", "1", "--", "true"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(" --gpus '\"device=1\"' "));
  EXPECT_THAT(run.err, HasSubstr("in use by container cccccccccccc (uid 3999999, rootless podman container)"));

  const Outcome ps = gpurun({"ps"}, env);
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_THAT(ps.out, HasSubstr("cccccccccccc"));
  EXPECT_THAT(ps.out, HasSubstr("uid 3999999"));
  EXPECT_THAT(ps.out, HasSubstr("rootless podman container"));
}

TEST_F(EnginesTest, IgnoreContainersTracesNoProcess) {
  rootless_container_process();
  const Env env = with(two_gpus_one_process(), {{"GPURUN_SYSFS_ROOT", dir() + "/root"}});
  const Outcome run = gpurun({"--dry-run", "--ignore-containers", "--image", "img", "1", "--", "true"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, Not(HasSubstr("cccccccccccc")));
}

TEST_F(EnginesTest, DryRunSaysAutoTakesGpusWithoutCdiAndNeverAsksTheEngineWithoutAnNvidiaSpec) {
  // docker would say it does CDI, but no NVIDIA spec exists: it is not even asked (issue 25).
  std::filesystem::create_directories(dir() + "/calls");
  const Env env = with(two_gpus_one_process(), {{"FAKE_DOCKER_CDI_SPEC_DIRS", R"(["/etc/cdi","/var/run/cdi"])"},
                                                {"FAKE_DOCKER_ARGV_DIR", dir() + "/calls"}});
  const Outcome run = gpurun({"--dry-run", "--image", "img", "1", "--", "true"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(" --gpus '\"device="));
  EXPECT_THAT(run.err, HasSubstr("GPUs requested as gpus (gpu_request auto: no NVIDIA CDI spec in " + dir() +
                                 "/no-sysfs/etc/cdi or " + dir() + "/no-sysfs/var/run/cdi)"));
  for (const auto& call : std::filesystem::directory_iterator(dir() + "/calls"))
    EXPECT_THAT(read_file(call.path()), Not(HasSubstr("info"))) << "the launch asked docker info";
  // A spec of another vendor's devices changes nothing.
  std::filesystem::create_directories(dir() + "/no-sysfs/etc/cdi");
  std::ofstream(dir() + "/no-sysfs/etc/cdi/vendor.yaml") << "cdiVersion: 0.5.0\nkind: example.com/fpga\n";
  EXPECT_THAT(gpurun({"--dry-run", "--image", "img", "1", "--", "true"}, env).err, HasSubstr("no NVIDIA CDI spec"));
}

TEST_F(EnginesTest, DryRunAsksDockerWhereAnNvidiaSpecExistsAndSaysAutoTakesGpusWhereItHasNoCdi) {
  std::filesystem::create_directories(dir() + "/no-sysfs/var/run/cdi");
  std::ofstream(dir() + "/no-sysfs/var/run/cdi/nvidia.yaml") << "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n";
  const Outcome run = gpurun({"--dry-run", "--image", "img", "1", "--", "true"}, two_gpus_one_process());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("GPUs requested as gpus (gpu_request auto: `" + fake("docker") +
                                 " info` lists no CDI spec directory)"));
}

TEST_F(EnginesTest, DryRunSaysAutoTakesCdiWhereDockerHasIt) {
  std::filesystem::create_directories(dir() + "/no-sysfs/etc/cdi");
  std::ofstream(dir() + "/no-sysfs/etc/cdi/nvidia.json") << R"({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu"})";
  const Env env = with(two_gpus_one_process(), {{"FAKE_DOCKER_CDI_SPEC_DIRS", R"(["/etc/cdi","/var/run/cdi"])"}});
  const Outcome run = gpurun({"--dry-run", "--allow-busy", "--image", "img", "2", "--", "true"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(std::string(" --device nvidia.com/gpu=") + kUuid0 +
                                 " --device nvidia.com/gpu=" + kUuid1 + " --cpus "));
  EXPECT_THAT(run.out, Not(HasSubstr("--gpus")));
  EXPECT_THAT(run.err, HasSubstr("GPUs requested as cdi (gpu_request auto: `" + fake("docker") +
                                 " info` lists CDI spec directories /etc/cdi, /var/run/cdi)"));
}

TEST_F(EnginesTest, TheRuntimeFormAsked) {
  const Outcome run =
      gpurun({"--dry-run", "--gpu-request", "runtime", "--image", "img", "1", "--", "true"}, two_gpus_one_process());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(std::string(" --runtime=nvidia --env NVIDIA_VISIBLE_DEVICES=") + kUuid1 + " --cpus "));
  EXPECT_THAT(run.err, HasSubstr("GPUs requested as runtime (gpu_request is runtime)"));
}

TEST_F(EnginesTest, PodmanLaunchesWithCdiDevicesByUuid) {
  // The stand-in plays podman's CLI; no podman socket is in reach.
  const Env env = with(two_gpus_one_process(), {{"GPURUN_ENGINE", "podman"},
                                                {"GPURUN_PODMAN", fake("docker")},
                                                {"CONTAINER_HOST", "unix:///nonexistent/podman.sock"}});
  const Outcome run = gpurun({"--dry-run", "--image", "img", "1", "--", "true"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ::testing::StartsWith(fake("docker") + " run --rm "));
  EXPECT_THAT(run.out, HasSubstr(std::string(" --device nvidia.com/gpu=") + kUuid1 + " --cpus "));
  EXPECT_THAT(run.err, HasSubstr("GPUs requested as cdi (gpu_request auto: podman always resolves CDI devices)"));

  const Outcome refused = gpurun({"--dry-run", "--gpu-request", "gpus", "--image", "img", "1", "--", "true"}, env);
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("podman's --gpus 2 means GPU index 2"));
}

// docker names a container with two characters at least, podman with one: each engine's own rule,
// said before the pick rather than by the engine after it.
TEST_F(EnginesTest, AOneLetterNameIsPodmansNotDockers) {
  const Env podman = with(two_gpus_one_process(), {{"GPURUN_ENGINE", "podman"},
                                                   {"GPURUN_PODMAN", fake("docker")},
                                                   {"CONTAINER_HOST", "unix:///nonexistent/podman.sock"}});
  const Outcome named = gpurun({"--dry-run", "--name", "a", "--image", "img", "1", "--", "true"}, podman);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_THAT(named.out, HasSubstr(" --name a "));
  const Outcome refused =
      gpurun({"--dry-run", "--name", "/a", "--image", "img", "1", "--", "true"}, two_gpus_one_process());
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_THAT(refused.err, HasSubstr("--name \"/a\": docker takes a container name of two characters or more"));
}

}  // namespace
}  // namespace gpurun::testing
