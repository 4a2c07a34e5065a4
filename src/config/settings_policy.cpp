// Site policy: the system file only (gpurun/config/policy.hpp). One part of the settings table (settings.cpp joins
// them, in this order).
#include "settings_table.hpp"

namespace gpurun::settings_table {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // each entry names only the fields it sets
std::vector<Setting> policy_settings() {
  return {
      {.key = "allowed_gpus",
       .type = T::gpu_indices,
       .scope = Scope::policy,
       .help = "GPUs gpurun may hand out",
       .fallback = "null",
       .example = R"([0, 1, 2, 3])"},
      {.key = "max_gpus_per_launch",
       .type = T::count,
       .scope = Scope::policy,
       .help = "most GPUs one launch may take",
       .fallback = "null",
       .example = R"(4)"},
      {.key = "max_runtime",
       .type = T::duration,
       .scope = Scope::policy,
       .help = "longest a launch may run (the gpurun service stops it then); --time-limit above it is refused",
       .fallback = "null",
       .example = R"("7d")"},
      {.key = "refused_docker_options",
       .type = T::list,
       .scope = Scope::policy,
       .help = "docker options that are refused",
       .fallback = "null",
       .example = R"(["--privileged", "--pid=host"])"},
      {.key = "allowed_images",
       .type = T::list,
       .scope = Scope::policy,
       .help = "image patterns a launch may run (shell wildcards: \"nvcr.io/nvidia/*\")",
       .fallback = "null",
       .example = R"(["nvcr.io/nvidia/*", "lab/*"])"},
      {.key = "allowed_docker_options",
       .type = T::list,
       .scope = Scope::policy,
       .help = "under sudo: docker options allowed beyond the built-in list (\"--ulimit\", \"--network=mynet\")",
       .fallback = "null",
       .example = R"(["--ulimit"])"},
      {.key = "allow_sharing",
       .type = T::boolean,
       .scope = Scope::policy,
       .help = "whether a launch may share a busy GPU (--allow-busy, --min-free-memory); false forbids it",
       .fallback = "true",
       .example = "false"},
      {.key = "history_visibility",
       .scope = Scope::policy,
       .help = "whose runs history, usage and report show a user: all (everyone's) or own (root and "
               "admin_group see all)",
       .fallback = R"("all")",
       .example = R"("own")",
       .words = Choices<HistoryVisibility>::words},
      {.key = "admin_group",
       .scope = Scope::policy,
       .help = "under sudo: members of this group may stop, attach to and read the logs of any gpurun container",
       .fallback = "null",
       .example = R"("gpu-admins")"},
  };
}
#pragma GCC diagnostic pop

}  // namespace gpurun::settings_table
