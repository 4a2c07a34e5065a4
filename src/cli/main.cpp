// The gpurun executable: a trampoline into the CLI layer.
#include "cli.hpp"

int main(int argc, char** argv) { return gpurun::cli::main(argc, argv); }
