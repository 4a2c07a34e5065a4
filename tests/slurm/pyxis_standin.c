/* A stand-in for NVIDIA's pyxis SPANK plugin (pyxis is not in Debian), for the Slurm tests:
 * it registers pyxis's srun options and appends what srun passed to a record file, one
 * "name=value" line each, so a test can check the container options gpurun gives srun.
 * The job then runs on the node itself; no container is made.
 *   plugstack.conf: required /path/pyxis_standin.so /path/record-file
 * Built by tests/slurm/real_slurm.sh against Slurm's spank.h (Debian's libslurm-dev). */
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPANK_PLUGIN(pyxis, 1);

static char record_path[4096];

static int record(int val, const char* optarg, int remote) {
  static const char* const names[] = {"container-image", "container-mounts", "container-workdir", "container-env",
                                      "container-name"};
  (void)remote;
  /* srun parses the options in its own (local) context: one line per option there. */
  if (spank_context() != S_CTX_LOCAL || record_path[0] == '\0') return 0;
  FILE* f = fopen(record_path, "a");
  if (f == NULL) return -1;
  fprintf(f, "%s=%s\n", names[val], optarg ? optarg : "");
  /* --container-env names variables whose values pyxis takes from srun's environment. */
  if (val == 3 && optarg) {
    char *copy = strdup(optarg), *save = NULL;
    for (char* name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
      const char* value = getenv(name);
      fprintf(f, "env %s=%s\n", name, value ? value : "(unset)");
    }
    free(copy);
  }
  fclose(f);
  return 0;
}

static struct spank_option options[] = {
    {"container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH", "pyxis stand-in: image", 1, 0, record},
    {"container-mounts", "SRC:DST[:FLAGS][,...]", "pyxis stand-in: mounts", 1, 1, record},
    {"container-workdir", "PATH", "pyxis stand-in: working directory", 1, 2, record},
    {"container-env", "NAME[,NAME...]", "pyxis stand-in: environment names", 1, 3, record},
    {"container-name", "NAME", "pyxis stand-in: container name", 1, 4, record},
    SPANK_OPTIONS_TABLE_END};

int slurm_spank_init(spank_t sp, int ac, char** av) {
  (void)sp;
  if (ac > 0) snprintf(record_path, sizeof record_path, "%s", av[0]);
  for (int i = 0; options[i].name != NULL; ++i)
    if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS) return -1;
  return 0;
}
