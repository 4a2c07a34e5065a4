// docs/sudo.md stays true: it lists every docker option the sudo rules decide, with the verdict
// the code gives (gpurun/config/sudo_rules.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpurun/config/sudo_rules.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

TEST(SudoDocs, ListEveryDockerOptionRuleWithItsVerdict) {
  const std::string doc = test::read_file(std::string(GPURUN_SOURCE_DIR) + "/docs/sudo.md");
  for (const DockerOptionRule& rule : sudo_docker_rules()) {
    const std::string row =
        fmt::format("| `--{}` | {} | {} |", rule.name, rule.allowed ? "allowed" : "**refused**", rule.why);
    EXPECT_NE(doc.find(row), std::string::npos) << row << " is not in docs/sudo.md";
  }
}

}  // namespace
}  // namespace gpurun
