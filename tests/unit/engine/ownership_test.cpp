// Unit tests for whose a container is (gpurun/engine/ownership.hpp): its labels, and whether its
// image could have set them.
#include "gpurun/engine/ownership.hpp"

#include <gtest/gtest.h>

#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

TEST(ContainerOwner, ReadsGpurunsLabelsAndTheImage) {
  const auto owner = parse_container_owner(
      R"([{"Id":"abc","Image":"sha256:1","Config":{"Labels":{"gpurun.user":"alice","gpurun.uid":"1000","gpurun.gpus":"0"}}}])");
  ASSERT_TRUE(owner.has_value());
  EXPECT_TRUE(owner->started_by_gpurun);
  EXPECT_EQ(owner->user, "alice");
  EXPECT_EQ(owner->uid, 1000U);
  EXPECT_EQ(owner->image, "sha256:1");
}

// `gpurun rm` removes only a container that has ended: docker and podman both say State.Running
// (true for a paused one too), and a restarting one runs again soon.
TEST(ContainerOwner, ReadsWhetherTheContainerRuns) {
  const auto state = [](const char* json) { return parse_container_owner(json).value().running; };
  EXPECT_TRUE(state(R"([{"Id":"a","State":{"Status":"running","Running":true}}])"));
  EXPECT_TRUE(state(R"([{"Id":"a","State":{"Status":"paused","Running":true,"Paused":true}}])"));
  EXPECT_TRUE(state(R"([{"Id":"a","State":{"Status":"restarting","Running":false,"Restarting":true}}])"));
  EXPECT_FALSE(state(R"([{"Id":"a","State":{"Status":"exited","Running":false,"ExitCode":1}}])"));
  EXPECT_FALSE(state(R"([{"Id":"a","State":{"Status":"created","Running":false}}])"));
  EXPECT_EQ(parse_container_owner(R"([{"Id":"a","State":{"Status":"created","Running":false}}])")->status, "created");
  // Its name and making, whatever its labels (null ones too).
  const auto plain = parse_container_owner(
      R"([{"Id":"a","Name":"/quirky","Created":"2026-11-29T10:00:00.5Z","Config":{"Labels":null}}])");
  EXPECT_EQ(plain->container_name, "quirky");
  EXPECT_EQ(plain->created_at, "2026-11-29T10:00:00.5Z");
  // How it ended, where it has: docker says 0 of a running one too.
  EXPECT_EQ(parse_container_owner(R"([{"Id":"a","State":{"Status":"exited","ExitCode":137}}])")->exit_code, 137);
  EXPECT_FALSE(parse_container_owner(R"([{"Id":"a","State":{"Status":"running","Running":true,"ExitCode":0}}])")
                   ->exit_code.has_value());
  EXPECT_FALSE(
      parse_container_owner(R"([{"Id":"a","State":{"Status":"created","ExitCode":0}}])")->exit_code.has_value());
  EXPECT_TRUE(state(R"([{"Id":"a","State":{"Status":"running"}}])"));  // a status alone says it too
  EXPECT_FALSE(state(R"([{"Id":"a","State":{"Running":"yes","Status":1}}])"));
  EXPECT_FALSE(state(R"([{"Id":"a","State":"running"}])"));  // not docker's shape: not said to run
  EXPECT_FALSE(state(R"([{"Id":"a"}])"));
}

// An image committed from a gpurun container carries that launch's labels, its gpurun.name with
// them: a container of another name started from it (plain `docker run`) is nobody's.
TEST(ContainerOwner, LabelsNamingAnotherContainerAreTheImagesAndNobodysWord) {
  const auto plain = parse_container_owner(
      R"([{"Id":"abc","Name":"/quirky_turing","Image":"sha256:1","Config":{"Labels":{"gpurun.user":"alice",
          "gpurun.uid":"1000","gpurun.gpus":"0","gpurun.name":"alice_gpu0_1a2b3c4d"}}}])");
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->started_by_gpurun);
  EXPECT_EQ(plain->user, "");
  EXPECT_FALSE(plain->uid.has_value());
  const auto launched = parse_container_owner(
      R"([{"Id":"abc","Name":"/alice_gpu0_1a2b3c4d","Image":"sha256:1","Config":{"Labels":{"gpurun.user":"alice",
          "gpurun.uid":"1000","gpurun.gpus":"0","gpurun.name":"alice_gpu0_1a2b3c4d"}}}])");
  ASSERT_TRUE(launched.has_value());
  EXPECT_TRUE(launched->started_by_gpurun);
  EXPECT_EQ(launched->uid, 1000U);
  // Her own image, committed from her container: its uid is hers, but its name label is not this
  // container's, so the launch wrote them all; hers to manage.
  EXPECT_FALSE(owner_from_image(
      *launched, R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.uid":"1000","gpurun.name":"alice_gpu0_old"}}}])"));
  EXPECT_TRUE(owner_from_image(
      *launched,
      R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.uid":"1000","gpurun.name":"alice_gpu0_1a2b3c4d"}}}])"));
}

// An image's labels are every container's of it: an image that sets the label that says whose a
// container is could make anyone's container look like the caller's. A launch's own --label,
// which differs from the image's, is the launch's word.
TEST(ContainerOwner, AnOwnerTheImageCouldHaveSetIsToldApart) {
  ContainerOwner by_uid;
  by_uid.user = "alice";
  by_uid.uid = 1000;
  EXPECT_FALSE(owner_from_image(by_uid, R"([{"Id":"sha256:1","Config":{"Labels":{"team":"ml"}}}])"));
  EXPECT_FALSE(owner_from_image(by_uid, R"([{"Id":"sha256:1","Config":{"Labels":null}}])"));
  EXPECT_TRUE(owner_from_image(by_uid, R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.uid":"1000"}}}])"));
  EXPECT_TRUE(owner_from_image(by_uid, R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.uid":"01000"}}}])"));
  EXPECT_TRUE(owner_from_image(by_uid, R"([{"Id":"sha256:1","Labels":{"gpurun.uid":"1000"}}])"));  // podman
  // An image committed from someone else's container, launched by alice: her launch's label holds.
  EXPECT_FALSE(owner_from_image(by_uid, R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.uid":"1001"}}}])"));
  ContainerOwner by_name;  // launched without sudo: no uid label, the login decides
  by_name.user = "alice";
  EXPECT_TRUE(owner_from_image(by_name, R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.user":"alice"}}}])"));
  EXPECT_FALSE(owner_from_image(by_name, R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.user":"bob"}}}])"));
  EXPECT_THROW(owner_from_image(by_uid, "[]"), Error);
  EXPECT_THROW(owner_from_image(by_uid, "not json"), Error);
}

}  // namespace
}  // namespace gpurun
