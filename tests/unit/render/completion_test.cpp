// Unit tests for the completion script generator: what each kind of option turns into. The
// scripts' behaviour in real shells is tested end to end (e2e/completion_test.cpp).
#include "gpurun/render/completion.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

CompletionSpec sample_spec() {
  CompletionSpec spec;
  spec.verbs = {{"pick", "print the chosen GPUs", {}, true}, {"config", "show settings [all]", {"init"}, false}};
  spec.options = {{{"-P", "--profile"}, CompletionValue::profile, "use a profile", false, {}},
                  {{"--wait"}, CompletionValue::optional_word, "wait: 30s, 5m", false, {}},
                  {{"-e", "--env"}, CompletionValue::word, "set a variable (it's [repeatable])", true, {}},
                  {{"--dry-run"}, CompletionValue::none, "print only", false, {}},
                  {{"--lock-dir"}, CompletionValue::directory, "lock directory", false, {}}};
  return spec;
}

TEST(Completion, AChoiceOffersItsWords) {
  CompletionSpec spec = sample_spec();
  spec.options.push_back(
      {{"--engine"}, CompletionValue::choice, "container engine", false, {"auto", "docker", "podman"}});
  EXPECT_THAT(bash_completion(spec),
              HasSubstr(R"(--engine) COMPREPLY=($(compgen -W "auto docker podman" -- "$cur")) ;;)"));
  EXPECT_THAT(zsh_completion(spec), HasSubstr("'(--engine)--engine=[container engine]:value:(auto docker podman)'"));
}

TEST(BashCompletion, OnlyOptionsThatTakeTheNextWordConsumeIt) {
  const std::string script = bash_completion(sample_spec());
  EXPECT_THAT(script, HasSubstr("      -P | --profile | -e | --env | --lock-dir) expect=$word ;;\n"));
  EXPECT_THAT(script, HasSubstr("compgen -W \"-P --profile --wait -e --env --dry-run --lock-dir\""));
  EXPECT_THAT(script, HasSubstr("    --lock-dir) _gpurun_files -d ;;\n"));
  EXPECT_THAT(
      script,
      HasSubstr("-P | --profile) _gpurun_reply_lines < <(_gpurun_ask \"${configs[@]}\" completion profiles) ;;"));
  EXPECT_THAT(script, HasSubstr("      config) COMPREPLY=($(compgen -W \"init\" -- \"$cur\")) ;;\n"));
  EXPECT_THAT(script, HasSubstr(" \" pick config \" == "));
  EXPECT_THAT(script, HasSubstr("complete -F _gpurun gpurun\n"));
}

TEST(ZshCompletion, SpecsEscapeHelpAndKnowRepeatsAndOptionalValues) {
  const std::string script = zsh_completion(sample_spec());
  EXPECT_THAT(script, HasSubstr("    '(-P --profile)-P+[use a profile]:profile:_gpurun_profiles'\n"));
  EXPECT_THAT(script, HasSubstr("    '(-P --profile)--profile=[use a profile]:profile:_gpurun_profiles'\n"));
  EXPECT_THAT(script, HasSubstr("    '(--wait)--wait=-[wait\\: 30s, 5m]:value: '\n"));
  EXPECT_THAT(script, HasSubstr("    '*--env=[set a variable (it'\\''s \\[repeatable\\])]:value: '\n"));
  EXPECT_THAT(script, HasSubstr("    '(--dry-run)--dry-run[print only]'\n"));
  EXPECT_THAT(script, HasSubstr("    'config:show settings \\[all\\]'\n"));
  EXPECT_THAT(script, HasSubstr("        pick) _arguments -s -S : $options ':N (the number of GPUs): ' && ret=0 ;;\n"));
  EXPECT_THAT(script, HasSubstr("        config) _arguments -s -S : $options ':config:(init)' && ret=0 ;;\n"));
  EXPECT_THAT(script, Not(HasSubstr("{program}")));
}

TEST(RunCompletion, NamesTheShellsItKnows) {
  std::ostringstream out;
  EXPECT_EQ(run_completion("zsh", sample_spec(), {}, out), 0);
  EXPECT_THAT(out.str(), ::testing::StartsWith("#compdef gpurun\n"));
  const auto e = test::caught_error([&] { run_completion("fish", sample_spec(), {}, out); });
  EXPECT_EQ(e.message, "gpurun completion knows bash and zsh, not \"fish\"");
  EXPECT_EQ(e.exit_code, 125);
}

}  // namespace
}  // namespace gpurun
