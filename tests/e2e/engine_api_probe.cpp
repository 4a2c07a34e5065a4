// Asks a real docker engine which containers hold GPUs, through the Engine API or through the
// docker CLI, and prints one line per holder ("name<TAB>all" or "name<TAB>dev,dev"), sorted, so
// that tests/e2e/real_docker_engine.sh can compare the two ways against its private dockerd.
//
//   engine_api_probe api|cli DOCKER_CLI     (the engine is the one DOCKER_HOST names)
//
// Exit status: 0 answered, 1 the engine could not be asked, 2 usage, 3 the API does not apply.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "docker/docker_api.hpp"
#include "docker/docker_cli_engine.hpp"
#include "gpurun/util/error.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s api|cli DOCKER_CLI\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const std::string docker = argv[2];
  const auto timeout = std::chrono::seconds(10);
  try {
    std::vector<gpurun::GpuContainer> holders;
    const auto start = std::chrono::steady_clock::now();
    if (mode == "api") {
      std::string why_not;
      const auto engine = gpurun::make_docker_api_engine(docker, why_not);
      if (!engine) {
        std::fprintf(stderr, "the Engine API does not apply: %s\n", why_not.c_str());
        return 3;
      }
      holders = engine->gpu_holders(timeout, gpurun::Listing::running);
    } else if (mode == "cli") {
      holders = gpurun::DockerCliEngine(docker).gpu_holders(timeout, gpurun::Listing::running);
    } else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
    const auto took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::vector<std::string> lines;
    for (const auto& c : holders) {
      std::string devices;
      for (const auto& d : c.devices) devices += (devices.empty() ? "" : ",") + d;
      lines.push_back(c.name + "\t" + (c.all_gpus ? std::string("all") : devices));
    }
    std::sort(lines.begin(), lines.end());
    for (const auto& line : lines) std::printf("%s\n", line.c_str());
    std::fprintf(stderr, "%s: %zu holders in %.2f ms\n", mode.c_str(), holders.size(), took);
    return 0;
  } catch (const gpurun::Error& e) {
    std::fprintf(stderr, "%s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
