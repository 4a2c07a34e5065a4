// The man pages gpurun(1) and gpurund(8) in docs/ stay true: they render without warnings, and name
// every option that `gpurun --help` and `gpurund --help` list, every verb and every configuration key.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "gpurun/config/config.hpp"
#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

class ManPageTest : public GpurunTest {
 protected:
  // The page's source with roff's escaped hyphens made plain, so "\-\-dry\-run" reads "--dry-run".
  static std::string page_text(const std::string& page = "gpurun.1") {
    std::string text = read_file(std::string(GPURUN_SOURCE_DIR) + "/docs/" + page);
    for (std::size_t at; (at = text.find("\\-")) != std::string::npos;) text.erase(at, 1);
    return text;
  }
  // Whether `name` is a word of a bold macro line (.B, .BI, .BR): the page's way to name an option.
  static bool in_bold(const std::string& page, const std::string& name) {
    std::istringstream lines(page);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with(".B")) continue;
      std::istringstream words(line);
      for (std::string word; words >> word;)
        if (word == name) return true;
    }
    return false;
  }
  // Checks that each option `help` lists is in bold on `page` (docs/NAME); returns how many.
  static std::size_t expect_options_on_page(const std::string& help, const std::string& name) {
    const std::string page = page_text(name);
    // An option's line begins two spaces in; a wrapped description's further lines, further in.
    const std::regex option(R"(^  (?:(-[A-Za-z]),)?(--[a-z][a-z0-9-]*))");
    std::set<std::string> seen;
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
      std::smatch match;
      if (!std::regex_search(line, match, option)) continue;
      for (const std::size_t group : {std::size_t{1}, std::size_t{2}}) {
        if (!match[group].matched) continue;
        seen.insert(match[group]);
        EXPECT_TRUE(in_bold(page, match[group])) << match[group] << " is not in docs/" << name;
      }
    }
    return seen.size();
  }
};

TEST_F(ManPageTest, RendersWithoutWarnings) {
  const Outcome render = shell(fmt::format("groff -man -Tutf8 -ww -z '{}/docs/gpurun.1'", GPURUN_SOURCE_DIR));
  EXPECT_EQ(render.exit_code, 0);
  EXPECT_EQ(render.err, "");
}

TEST_F(ManPageTest, CarriesTheVersionOfTheProgram) {
  const Outcome version = gpurun({"--version"});  // "gpurun 0.1.0\n"
  ASSERT_EQ(version.exit_code, 0);
  const std::string version_text = version.out.substr(0, version.out.size() - 1);
  EXPECT_NE(page_text().find("\" \"" + version_text + "\" \"User Commands\""), std::string::npos)
      << "the .TH line of docs/gpurun.1 should say \"" << version_text << "\"";
}

TEST_F(ManPageTest, NamesEveryOptionOfTheHelp) {
  const Outcome help = gpurun({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_GT(expect_options_on_page(help.out, "gpurun.1"), 35U);  // the help was read
}

TEST_F(ManPageTest, TheServicePageRendersAndNamesEveryOptionOfItsHelp) {
  const Outcome render = shell(fmt::format("groff -man -Tutf8 -ww -z '{}/docs/gpurund.8'", GPURUN_SOURCE_DIR));
  EXPECT_EQ(render.exit_code, 0);
  EXPECT_EQ(render.err, "");
  const Outcome help = shell(std::string(GPURUND_BINARY) + " --help");
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_GT(expect_options_on_page(help.out, "gpurund.8"), 12U);  // the help was read
  const std::string page = page_text("gpurund.8");
  const Outcome version = shell(std::string(GPURUND_BINARY) + " --version");  // "gpurund 0.1.0\n"
  ASSERT_EQ(version.exit_code, 0);
  EXPECT_NE(page.find("\" \"gpurun " + version.out.substr(8, version.out.size() - 9) + "\" \""), std::string::npos)
      << "the .TH line of docs/gpurund.8 should carry the version";
}

TEST_F(ManPageTest, NamesEveryVerbAndConfigKey) {
  const std::string page = page_text();
  for (const std::string verb : {"pick", "status", "ps", "config", "completion"})
    EXPECT_TRUE(in_bold(page, verb)) << verb << " is not in docs/gpurun.1";
  for (const ConfigKey& key : config_keys())
    EXPECT_TRUE(in_bold(page, key.name)) << key.name << " is not in docs/gpurun.1";
}

}  // namespace
}  // namespace gpurun::testing
