// Unit tests for gpurun's user and group lookups (every system has root, user and group 0).
#include "gpurun/util/accounts.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace gpurun {
namespace {

TEST(Accounts, FindsRootByIdAndByName) {
  EXPECT_EQ(user_name(0), "root");
  const std::string root_group = group_name(0);
  EXPECT_EQ(root_group, "root");
  EXPECT_EQ(group_id(root_group), 0u);
}

TEST(Accounts, GivesTheNumberOrNothingForWhatDoesNotExist) {
  EXPECT_EQ(user_name(4'000'000'001u), "4000000001");
  EXPECT_EQ(group_name(4'000'000'001u), "4000000001");
  EXPECT_EQ(group_id("no-such-group-gpurun-test"), std::nullopt);
  EXPECT_EQ(group_id(""), std::nullopt);
}

TEST(Accounts, GroupsOfAUserStartWithTheirPrimaryGroup) {
  const std::vector<gid_t> groups = group_ids_of("root");
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups.front(), 0u);
  EXPECT_TRUE(group_ids_of("no-such-user-gpurun-test").empty());
  EXPECT_TRUE(group_ids_of("").empty());
}

TEST(Accounts, OwnLoginNameIsTheRealUsersLookedUpOnce) {
  const auto& name = own_login_name();
  EXPECT_EQ(name.value_or(std::to_string(::getuid())), user_name(::getuid()));
  EXPECT_EQ(&own_login_name(), &name);
}

TEST(Accounts, HostNameIsOneLine) {
  const std::string name = host_name();
  EXPECT_EQ(name.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace gpurun
