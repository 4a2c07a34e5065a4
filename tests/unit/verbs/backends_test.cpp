// Unit tests for the backend tables: each backend is one table, chosen by the backend setting.
#include "gpurun/verbs/backends.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::HasSubstr;

TEST(BackendTable, EachBackendHasItsTableWithEveryFunction) {
  for (const Backend backend : {Backend::local, Backend::slurm}) {
    const BackendTable& table = backend_table(backend);
    EXPECT_EQ(table.name, word_of(backend));
    EXPECT_NE(table.launch, nullptr);
    EXPECT_NE(table.pick, nullptr);
    EXPECT_NE(table.status, nullptr);
    EXPECT_NE(table.ps, nullptr);
    EXPECT_NE(table.manage, nullptr);
  }
}

TEST(BackendTable, SlurmSendsContainerVerbsToSlurmsOwnTools) {
  const BackendTable& slurm = backend_table(Backend::slurm);
  const Options options;
  EXPECT_THAT(test::caught_error([&] { slurm.manage("stop", "4711", options, std::cout); }).message,
              HasSubstr("scancel 4711"));
  EXPECT_THAT(test::caught_error([&] { slurm.manage("attach", "4711", options, std::cout); }).message,
              HasSubstr("sattach 4711.0"));
  std::ostringstream out;
  EXPECT_THAT(test::caught_error([&] { slurm.pick(options, out); }).message, HasSubstr("Slurm picks them"));
}

}  // namespace
}  // namespace gpurun
