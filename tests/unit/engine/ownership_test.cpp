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
