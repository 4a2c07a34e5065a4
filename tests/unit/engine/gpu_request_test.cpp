// Unit tests for how a container asks for its GPUs: each form's exact argv, and the choice of auto.
#include "gpurun/engine/gpu_request.hpp"

#include "gpurun/config/options.hpp"
#include "gpurun/config/settings.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpurun/engine/docker_command.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kUuid3 = "GPU-183e1898-729a-7413-4031-7428fade2c2f";
const std::string kUuid6 = "GPU-5ed111c7-33e3-e3dc-484e-1a81a32f79de";
const std::string kMig = "MIG-4e4c1cc5-4b1d-5e7f-9d0b-8d9a3c6f0a11";

TEST(GpuRequestArgs, GpusKeepsDockersIndexForm) {
  EXPECT_THAT(gpu_request_args(GpuRequestForm::gpus, {3, 6}, {kUuid3, kUuid6}),
              ElementsAre("--gpus", "\"device=3,6\""));
  EXPECT_THAT(gpu_request_args(GpuRequestForm::gpus, {2}, {kMig}), ElementsAre("--gpus", "\"device=" + kMig + "\""));
}

TEST(GpuRequestArgs, CdiNamesEachGpuByUuid) {
  EXPECT_THAT(gpu_request_args(GpuRequestForm::cdi, {3, 6}, {kUuid3, kUuid6}),
              ElementsAre("--device", "nvidia.com/gpu=" + kUuid3, "--device", "nvidia.com/gpu=" + kUuid6));
}

TEST(GpuRequestArgs, CdiNamesAMigInstanceByItsMigUuid) {
  EXPECT_THAT(gpu_request_args(GpuRequestForm::cdi, {2}, {kMig}), ElementsAre("--device", "nvidia.com/gpu=" + kMig));
}

TEST(GpuRequestArgs, RuntimeSetsTheNvidiaRuntimeAndVisibleDevicesByUuid) {
  EXPECT_THAT(gpu_request_args(GpuRequestForm::runtime, {3, 6}, {kUuid3, kUuid6}),
              ElementsAre("--runtime=nvidia", "--env", "NVIDIA_VISIBLE_DEVICES=" + kUuid3 + "," + kUuid6));
}

TEST(GpuRequestArgs, AGpuWithoutUuidIsNamedByIndex) {
  EXPECT_THAT(gpu_request_args(GpuRequestForm::cdi, {3, 6}, {"", kUuid6}),
              ElementsAre("--device", "nvidia.com/gpu=3", "--device", "nvidia.com/gpu=" + kUuid6));
  EXPECT_THAT(gpu_request_args(GpuRequestForm::runtime, {3}, {}),
              ElementsAre("--runtime=nvidia", "--env", "NVIDIA_VISIBLE_DEVICES=3"));
}

TEST(BuildDockerArgv, TheGpuFormTakesTheGpusPlaceBeforeCpus) {
  DockerRunRequest r;
  r.image = "img";
  r.gpu_indices = {3, 6};
  r.gpu_uuids = {kUuid3, kUuid6};
  r.cpus = 8;
  r.identity = {.uid = 1000, .gid = 1000, .login = "alice", .workdir = "/w", .workdir_source = {}, .groups = {}};
  r.name = "job";
  r.gpu_request = GpuRequestForm::cdi;
  const auto argv = build_docker_argv(r);
  ASSERT_GE(argv.size(), 13U);
  EXPECT_THAT(std::vector<std::string>(argv.begin() + 4, argv.begin() + 13),
              ElementsAre("--name", "job", "--device", "nvidia.com/gpu=" + kUuid3, "--device",
                          "nvidia.com/gpu=" + kUuid6, "--cpus", "8", "--user"));
  // The nvidia runtime as the engine's default reads the variable over CDI: pinned to the same GPUs.
  EXPECT_THAT(argv, ::testing::Contains("NVIDIA_VISIBLE_DEVICES=" + kUuid3 + "," + kUuid6));
}

TEST(CdiFromSpecDirs, DockerInfosAnswer) {
  const CdiSupport on = cdi_from_spec_dirs(R"(["/etc/cdi","/var/run/cdi"])", "docker info");
  EXPECT_TRUE(on.available);
  EXPECT_EQ(on.why, "docker info lists CDI spec directories /etc/cdi, /var/run/cdi");
  for (const char* off : {"null", "[]", "", "template: :1:7: executing \"\" at <.CDISpecDirs>", "[\"\"]"}) {
    const CdiSupport none = cdi_from_spec_dirs(off, "docker info");
    EXPECT_FALSE(none.available) << off;
    EXPECT_EQ(none.why, "docker info lists no CDI spec directory");
  }
}

TEST(ChooseGpuRequest, AutoTakesCdiWhereTheEngineHasItElseGpus) {
  const GpuRequestChoice cdi = choose_gpu_request(GpuRequestSetting::automatic, "docker",
                                                  {true, "docker info lists CDI spec directories /etc/cdi"});
  EXPECT_EQ(cdi.form, GpuRequestForm::cdi);
  EXPECT_EQ(cdi.why, "gpu_request auto: docker info lists CDI spec directories /etc/cdi");
  const GpuRequestChoice gpus =
      choose_gpu_request(GpuRequestSetting::automatic, "docker", {false, "docker info lists no CDI spec directory"});
  EXPECT_EQ(gpus.form, GpuRequestForm::gpus);
  EXPECT_EQ(gpus.why, "gpu_request auto: docker info lists no CDI spec directory");
}

TEST(ChooseGpuRequest, AnExplicitFormIsTakenAsSaid) {
  EXPECT_EQ(choose_gpu_request(GpuRequestSetting::gpus, "docker", {true, ""}).form, GpuRequestForm::gpus);
  EXPECT_EQ(choose_gpu_request(GpuRequestSetting::cdi, "docker", {false, ""}).form, GpuRequestForm::cdi);
  EXPECT_EQ(choose_gpu_request(GpuRequestSetting::runtime, "podman", {true, ""}).form, GpuRequestForm::runtime);
  EXPECT_EQ(choose_gpu_request(GpuRequestSetting::runtime, "docker", {}).why, "gpu_request is runtime");
}

TEST(ChooseGpuRequest, PodmanNeverTakesGpus) {
  const auto refused = test::caught_error([] { choose_gpu_request(GpuRequestSetting::gpus, "podman", {true, ""}); });
  EXPECT_THAT(refused.message, HasSubstr("podman's --gpus 2 means GPU index 2"));
  EXPECT_EQ(
      choose_gpu_request(GpuRequestSetting::automatic, "podman", {true, "podman always resolves CDI devices"}).form,
      GpuRequestForm::cdi);
}

TEST(ChooseGpuRequest, AnyOtherWordIsAnErrorOfTheSetting) {
  // The word is typed where it is read: the registry refuses it, naming the words it takes.
  Options o;
  EXPECT_THAT(test::caught_error([&] { find_setting("gpu_request")->apply(nlohmann::json("legacy"), o); }).message,
              HasSubstr("expected one of auto, gpus, cdi, runtime"));
  EXPECT_THAT(test::caught_error([&] { find_setting("gpu_request")->apply(nlohmann::json("cid"), o); }).message,
              HasSubstr("(did you mean \"cdi\"?)"));
}

}  // namespace
}  // namespace gpurun
