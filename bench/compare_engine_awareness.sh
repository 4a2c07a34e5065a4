#!/usr/bin/env bash
# The cost of container awareness (issue 13, point 6): whole-process
# `gpurun --dry-run --image img 1 -- true` asking the engine which containers hold GPUs (its API
# socket, the GPU processes' cgroups, and /info for gpu_request auto) against the same launch with
# --ignore-containers, interleaved round by round (--allow-busy: a `--gpus all` container holds
# every GPU, and the pick must still succeed).
#
#   DOCKER_HOST=unix:///… bench/compare_engine_awareness.sh [path/to/gpurun] [runs]
#
# Needs a real engine holding GPU containers: tests/e2e/real_docker_engine.sh runs this against its
# private dockerd (with its seven GPU-request-form containers running) when ENGINE_AWARENESS_BENCH
# names this script. The GPU source is the stand-in libnvidia-ml (fast, so that the engine's share
# shows); each run is timed from posix_spawn to reap, stdio on /dev/null; medians and p90 in ms.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpurun=${1:-$root/build/gpurun}
runs=${2:-100}
fake_lib=${FAKE_NVML_LIB:-$root/build/tests/fakes/nvml/libnvidia-ml-full.so}
[[ -r $fake_lib ]] || { echo "no stand-in NVML library at $fake_lib (build the tests)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-awarebench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/xdg" "$work/locks"

GPURUN=$gpurun RUNS=$runs ROOT=$root FAKE_LIB=$fake_lib WORK=$work python3 - <<'PY'
import os, statistics, time
env = {k: v for k, v in os.environ.items() if not k.startswith("GPURUN_")}
g, root, work, runs = os.environ["GPURUN"], os.environ["ROOT"], os.environ["WORK"], int(os.environ["RUNS"])
env.update(XDG_CONFIG_HOME=work + "/xdg", FAKE_NVML_SCENARIO=root + "/tests/data/nvml/idle_8.json")
common = [g, "--gpu-source", "nvml", "--nvml-library", os.environ["FAKE_LIB"], "--lock-dir", work + "/locks",
          "--dry-run", "--allow-busy", "--image", "img"]  # --gpus all holds every GPU
variants = {
    "container-aware": common + ["1", "--", "true"],
    "--ignore-containers": common + ["--ignore-containers", "1", "--", "true"],
}
devnull = os.open(os.devnull, os.O_RDWR)
times = {name: [] for name in variants}
names = list(variants)
for r in range(runs):
    for name in names[r % len(names):] + names[:r % len(names)]:
        argv = variants[name]
        start = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                              (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status = os.waitpid(pid, 0)
        times[name].append((time.perf_counter_ns() - start) / 1e6)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{name}: exit {os.waitstatus_to_exitcode(status)}: {' '.join(argv)}")
print(f"{'variant':<22} {'median ms':>10} {'p90 ms':>8}  ({runs} runs each, engine at {env.get('DOCKER_HOST', 'default')})")
for name in names:
    t = sorted(times[name])
    print(f"{name:<22} {statistics.median(t):>10.2f} {t[int(0.9 * (len(t) - 1))]:>8.2f}")
ratio = statistics.median(times["container-aware"]) / statistics.median(times["--ignore-containers"])
diffs = [a - b for a, b in zip(times["container-aware"], times["--ignore-containers"])]
print(f"ratio of medians: {ratio:.2f}x (goal <= 1.3x); median per-round difference {statistics.median(diffs):+.2f} ms")
PY
