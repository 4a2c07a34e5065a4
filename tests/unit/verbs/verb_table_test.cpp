// Unit tests for the verb table: one row per verb, found by its name, the launch as the row
// without one.
#include "gpurun/verbs/verb_table.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpurun {
namespace {

TEST(VerbTable, EveryRowHasAUniqueNameHelpSynopsisAndAFunction) {
  std::set<std::string_view> names;
  for (const Verb& verb : verb_table()) {
    EXPECT_TRUE(names.insert(verb.name).second) << verb.name;
    EXPECT_FALSE(verb.help.empty()) << verb.name;
    // Its --help opens with the synopsis, which starts with the verb itself.
    EXPECT_TRUE(verb.synopsis.starts_with(verb.name.empty() ? "[OPTIONS]" : verb.name)) << verb.name;
    EXPECT_NE(verb.run, nullptr) << verb.name;
  }
  EXPECT_TRUE(names.contains(""));  // the launch
}

TEST(VerbTable, FindsARowByNameAndNothingElse) {
  ASSERT_NE(find_verb("pick"), nullptr);
  EXPECT_TRUE(find_verb("pick")->takes_count);
  EXPECT_TRUE(find_verb("stop")->takes_argument);
  EXPECT_FALSE(find_verb("completion")->configured);  // it runs before any file is read
  EXPECT_EQ(find_verb("")->name, "");
  EXPECT_EQ(find_verb("statsu"), nullptr);
}

}  // namespace
}  // namespace gpurun
