#include "gpurun/verbs/verb_table.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/util/error.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/verbs/backends.hpp"
#include "gpurun/verbs/verbs.hpp"

namespace gpurun {

// Each row names only the fields it sets; GCC 12 warns about every designated initializer that
// leaves a field out, which is the point here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
const std::vector<Verb>& verb_table() {
  // Each row's function adapts the invocation to the verb's own function (gpurun/verbs/verbs.hpp).
  static const std::vector<Verb> table{
      {.name = "",
       .help = "pick N GPUs and run IMAGE [COMMAND...] on them with docker run",
       .synopsis = "[OPTIONS] N [--] [COMMAND [ARGS...]]",
       .takes_count = true,
       .run = [](const Invocation& i,
                 std::ostream& out) { return backend_table(i.options.backend).launch(i.options, out); }},
      {.name = "pick",
       .help = "print the N chosen GPUs' indices (nvidia-smi's, PCI order: CUDA_DEVICE_ORDER=PCI_BUS_ID)",
       .synopsis = "pick [OPTIONS] N",
       .takes_count = true,
       .refused_flags = {{"wait",
                          "pick holds nothing it finds, so it does not wait either; a launch with --wait waits "
                          "for the GPUs and holds them (gpurun --wait 30m 2 -- CMD)"}},
       .run = [](const Invocation& i,
                 std::ostream& out) { return backend_table(i.options.backend).pick(i.options, out); }},
      {.name = "status",
       .help = "show every GPU: memory, utilization, who holds it, free or busy (--verbose: why)",
       .synopsis = "status [--verbose] [--json] [--watch[=SECONDS]] [--topology] [OPTIONS]",
       .own_flags = {"watch", "count", "topology"},
       .run = [](const Invocation& i,
                 std::ostream& out) { return backend_table(i.options.backend).status(i.options, out); }},
      {.name = "ps",
       .help = "list the running containers that hold GPUs, whoever started them (-a: stopped ones too)",
       .synopsis = "ps [-a] [--json] [OPTIONS]",
       .own_flags = {"all"},
       .run = [](const Invocation& i,
                 std::ostream& out) { return backend_table(i.options.backend).ps(i.options, out); }},
      {.name = "config",
       .help = "show every setting and where it comes from; `config init` writes a starter user file; "
               "`config --check FILE` checks one",
       .synopsis = "config [--json] | config init [--system] | config --check FILE",
       .words = {"init"},
       .takes_argument = true,
       .own_flags = {"check", "system"},
       .unconfigured_with = "check",
       .run =
           [](const Invocation& i, std::ostream& out) {
             if (!i.argument.empty() && i.argument != "init")
               throw Error(fmt::format("gpurun config takes init or nothing, not \"{}\"{}", text::printable(i.argument),
                                       suggestion(i.argument, {"init"})));
             if (!i.options.config_check.empty()) {
               if (i.options.json)
                 throw Error(
                     "--json does not go with --check: its answer is one line, and its exit status says it (0: "
                     "valid; 125: the error, with the file's line and key)");
               return run_config_check(i.options.config_check, out);
             }
             if (i.options.config_system && i.argument != "init")
               throw Error("--system goes with init: gpurun config init --system > config.json");
             if (i.config == nullptr)  // left unloaded for --check (unconfigured_with)
               throw Error("--check needs the file to check: gpurun config --check FILE");
             return run_config(*i.config, i.inputs, i.argument == "init", i.options, out);
           }},
      {.name = "completion",
       .help = "print the bash or zsh completion script: `completion bash`",
       .synopsis = "completion bash|zsh",
       .words = {"bash", "zsh"},
       .takes_argument = true,
       .configured = false,
       .run = [](const Invocation& i,
                 std::ostream& out) { return run_completion(i.argument, i.describe_cli(), i.inputs, out); }},
      {.name = "logs",
       .help = "print the output of a container gpurun started (-f follows, --tail N; under sudo: one of yours)",
       .synopsis = "logs [-f] [--tail N] NAME",
       .takes_argument = true,
       .own_flags = {"follow", "tail"},
       .run =
           [](const Invocation& i, std::ostream& out) {
             return backend_table(i.options.backend).manage("logs", i.argument, i.options, out);
           }},
      {.name = "attach",
       .help = "attach to a container gpurun started (under sudo: one of yours)",
       .synopsis = "attach NAME",
       .takes_argument = true,
       .run =
           [](const Invocation& i, std::ostream& out) {
             return backend_table(i.options.backend).manage("attach", i.argument, i.options, out);
           }},
      {.name = "stop",
       .help = "stop a container gpurun started (-t SECONDS before it is killed; under sudo: one of yours)",
       .synopsis = "stop [-t SECONDS] NAME",
       .takes_argument = true,
       .own_flags = {"stop_time"},
       .run =
           [](const Invocation& i, std::ostream& out) {
             return backend_table(i.options.backend).manage("stop", i.argument, i.options, out);
           }},
      {.name = "rm",
       .help = "remove a detached job's container once it has ended, and its output with it (under sudo: one of "
               "yours)",
       .synopsis = "rm NAME",
       .takes_argument = true,
       .run =
           [](const Invocation& i, std::ostream& out) {
             return backend_table(i.options.backend).manage("rm", i.argument, i.options, out);
           }},
      {.name = "history",
       .help = "the runs the gpurun service recorded, newest first: GPU-hours, efficiency, idle time",
       .synopsis = "history [--since DURATION|DATE] [--user NAME] [--json]",
       .own_flags = {"since", "user"},
       .run = [](const Invocation& i, std::ostream& out) { return run_history(i.options, out); }},
      {.name = "usage",
       .help = "GPU-hours, busy GPU-hours, efficiency and idle GPU-hours per user, image or GPU (default: 30 days)",
       .synopsis = "usage [--since DURATION|DATE] [--by user|image|gpu] [--user NAME] [--json]",
       .own_flags = {"since", "user", "by"},
       .run = [](const Invocation& i, std::ostream& out) { return run_usage(i.options, out); }},
      {.name = "report",
       .help = "how well one run the service saw used its GPUs (like --report, for detached and ended runs too)",
       .synopsis = "report NAME|ID [--json]",
       .takes_argument = true,
       .run = [](const Invocation& i, std::ostream& out) { return run_report(i.argument, i.options, out); }},
  };
  return table;
}
#pragma GCC diagnostic pop

const Verb* find_verb(std::string_view name) {
  const auto& table = verb_table();
  const auto verb = std::find_if(table.begin(), table.end(), [&](const Verb& v) { return v.name == name; });
  return verb != table.end() ? &*verb : nullptr;
}

}  // namespace gpurun
