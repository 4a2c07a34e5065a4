#pragma once
// The command-line layer: turns argv into gpurun::Options, calls one verb, and maps every error
// to one message on stderr and one exit code. It holds no logic of its own.
namespace gpurun::cli {

int main(int argc, char** argv);

}  // namespace gpurun::cli
