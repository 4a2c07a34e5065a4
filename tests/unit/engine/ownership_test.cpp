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

// An image's labels are every container's of it: an image that sets these could make anyone's
// container look like the caller's.
TEST(ContainerOwner, AnImageThatSetsTheOwnersLabelsIsToldApart) {
  EXPECT_FALSE(image_sets_owner_labels(R"([{"Id":"sha256:1","Config":{"Labels":{"team":"ml"}}}])"));
  EXPECT_FALSE(image_sets_owner_labels(R"([{"Id":"sha256:1","Config":{"Labels":null}}])"));
  EXPECT_TRUE(image_sets_owner_labels(R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.uid":"1000"}}}])"));
  EXPECT_TRUE(image_sets_owner_labels(R"([{"Id":"sha256:1","Config":{"Labels":{"gpurun.user":"alice"}}}])"));
  EXPECT_TRUE(image_sets_owner_labels(R"([{"Id":"sha256:1","Labels":{"gpurun.gpus":"0"}}])"));  // podman
  EXPECT_THROW(image_sets_owner_labels("[]"), Error);
  EXPECT_THROW(image_sets_owner_labels("not json"), Error);
}

}  // namespace
}  // namespace gpurun
