// Which containers hold GPUs: asked through the Engine API's socket against asked through the
// docker CLI (`docker ps` + `docker inspect`), against the engine DOCKER_HOST names (issue 13's
// figure: a real dockerd holding six GPU containers; tests/e2e/real_docker_engine.sh runs this
// against its private one when ENGINE_QUERY_BENCH names this binary).
//
//   BENCH_DOCKER_CLI=/usr/bin/docker DOCKER_HOST=unix:///… build/gpurun_engine_bench
//
// Each benchmark is skipped (with the reason) when its way cannot reach an engine.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "docker/docker_api.hpp"
#include "docker/docker_cli_engine.hpp"
#include "gpurun/util/error.hpp"

namespace {

constexpr std::chrono::seconds kTimeout{10};

std::string docker_cli() {
  const char* docker = std::getenv("BENCH_DOCKER_CLI");
  return docker != nullptr && *docker != '\0' ? docker : "docker";
}

void BM_GpuHoldersThroughTheEngineApi(benchmark::State& state) {
  std::string why_not;
  const auto engine = gpurun::make_docker_api_engine(docker_cli(), why_not);
  if (!engine) {
    state.SkipWithError(("no Engine API socket: " + why_not).c_str());
    return;
  }
  try {
    std::size_t holders = 0;
    for (auto _ : state) holders = engine->gpu_holders(kTimeout, gpurun::Listing::running).size();
    state.counters["holders"] = static_cast<double>(holders);
  } catch (const gpurun::Error& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_GpuHoldersThroughTheEngineApi)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

void BM_GpuHoldersThroughTheCli(benchmark::State& state) {
  try {
    std::size_t holders = 0;
    gpurun::DockerCliEngine engine(docker_cli());
    for (auto _ : state) holders = engine.gpu_holders(kTimeout, gpurun::Listing::running).size();
    state.counters["holders"] = static_cast<double>(holders);
  } catch (const gpurun::Error& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_GpuHoldersThroughTheCli)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace
