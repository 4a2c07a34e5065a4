#!/usr/bin/env bash
# Whole-process `gpurun --dry-run` through NVML vs through nvidia-smi (issue 14, point 5).
#
#   bench/compare_gpu_sources.sh [path/to/gpurun] [runs]
#
# Stand-ins (default): the stand-in libnvidia-ml (build/tests/fakes/nvml/libnvidia-ml-full.so,
# FAKE_NVML_SCENARIO idle_8.json) against the stand-in nvidia-smi (all_free_8.json, the same
# 8 idle GPUs). REAL=1: the host's own libnvidia-ml.so.1 and nvidia-smi, plus one bare
# `nvidia-smi --query-gpu` call for reference (the goal: a whole launch faster than that call).
# Variants run interleaved round by round, each timed from posix_spawn to reap (perf_counter_ns),
# stdin/stdout/stderr on /dev/null; medians and p90 in milliseconds. --ignore-containers: docker
# is not asked, so that only the GPU source differs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpurun=${1:-}
[[ -n $gpurun ]] || { [[ -x $root/build-bench/gpurun ]] && gpurun=$root/build-bench/gpurun || gpurun=$root/build/gpurun; }
runs=${2:-200}
fake_lib=${FAKE_NVML_LIB:-$root/build/tests/fakes/nvml/libnvidia-ml-full.so}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-srcbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/xdg" "$work/locks"

REAL=${REAL:-} GPURUN=$gpurun RUNS=$runs ROOT=$root FAKE_LIB=$fake_lib WORK=$work python3 - <<'PY'
import os, statistics, time
env = {k: v for k, v in os.environ.items() if not k.startswith("GPURUN_")}
g, root, work, runs = os.environ["GPURUN"], os.environ["ROOT"], os.environ["WORK"], int(os.environ["RUNS"])
env.update(XDG_CONFIG_HOME=work + "/xdg")
common = ["--dry-run", "--ignore-containers", "--lock-dir", work + "/locks", "--image", "img", "2", "--", "true"]
if os.environ.get("REAL"):
    variants = {
        "nvml (libnvidia-ml.so.1)": ([g, "--gpu-source", "nvml"] + common, {}),
        "nvidia-smi": ([g, "--gpu-source", "nvidia-smi"] + common, {}),
        "one nvidia-smi --query-gpu": (["nvidia-smi", "--query-gpu=index,uuid,memory.used,memory.total,utilization.gpu",
                                        "--format=csv,noheader,nounits"], {}),
    }
else:
    variants = {
        "nvml stand-in": ([g, "--gpu-source", "nvml", "--nvml-library", os.environ["FAKE_LIB"]] + common,
                          {"FAKE_NVML_SCENARIO": root + "/tests/data/nvml/idle_8.json"}),
        "nvidia-smi stand-in": ([g, "--gpu-source", "nvidia-smi", "--nvidia-smi", root + "/tests/fakes/nvidia-smi"] + common,
                                {"FAKE_SMI_SCENARIO": root + "/tests/data/scenarios/all_free_8.json"}),
        "version": ([g, "--version"], {}),
    }
devnull = os.open(os.devnull, os.O_RDWR)
times = {name: [] for name in variants}
names = list(variants)
for r in range(runs):
    for name in names[r % len(names):] + names[:r % len(names)]:
        argv, extra = variants[name]
        start = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, {**env, **extra},
                              file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                                            (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status = os.waitpid(pid, 0)
        times[name].append((time.perf_counter_ns() - start) / 1e6)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{name}: exit {os.waitstatus_to_exitcode(status)}: {' '.join(argv)}")
print(f"{'variant':<30} {'median ms':>10} {'p90 ms':>8}  ({runs} runs each)")
for name in names:
    t = sorted(times[name])
    print(f"{name:<30} {statistics.median(t):>10.2f} {t[int(0.9 * (len(t) - 1))]:>8.2f}")
PY
