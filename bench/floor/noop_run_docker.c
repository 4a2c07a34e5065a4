// The docker client for a launch benchmark: `run …` does nothing and exits 0 (the floor and gpurun
// both exec it as the last step), anything else (`ps`, `inspect`, `info`) is the real client's.
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "run") == 0) return 0;
  argv[0] = REAL_DOCKER;
  execv(REAL_DOCKER, argv);
  return 127;
}
