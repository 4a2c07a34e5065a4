#!/usr/bin/env bash
# gpurund's cost as a whole process, and `gpurun history`/`usage` over a year of history (issue 22).
#
#   bench/compare_service.sh [build-dir] [seconds]
#
# 1. gpurund with the stand-in NVML (tests/data/nvml/busy_8.json: 8 GPUs, 9 GPU processes) and a
#    private dockerd's socket absent (the engine is not asked: --engine docker with an unreachable
#    DOCKER_HOST costs one failed connect a sample), sampling every second for SECONDS (default
#    60): CPU time per sample from /proc/PID/stat, scaled to the default 10 s interval, and the
#    resident set at the end.
# 2. gpurund serving the year's database that `gpurun_service_bench` (BM_RecorderOverDays/365)
#    wrote: `gpurun history --since 365d` and `gpurun usage --since 365d`, 20 runs each, medians
#    from posix_spawn to reap, stdout to /dev/null.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-bench}
seconds=${2:-60}
fake_lib=${FAKE_NVML_LIB:-$root/build/tests/fakes/nvml/libnvidia-ml-full.so}
[[ -f $fake_lib ]] || { echo "the stand-in NVML is built with the tests: cmake --build build" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-servicebench.XXXXXX")
pid=
cleanup() { [[ -z $pid ]] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export GPURUN_SYSTEM_CONFIG=$work/none.json DOCKER_HOST=unix://$work/no-docker.sock
export FAKE_NVML_SCENARIO=$root/tests/data/nvml/busy_8.json
common=(--gpu-source nvml --nvml-library "$fake_lib" --engine docker --docker /nonexistent --no-config)

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
"$build/gpurund" "${common[@]}" --state-dir "$work/state" --socket "$work/s.sock" --interval 1 2>"$work/d.err" &
pid=$!
sleep 3  # started, NVML loaded, first runs written
start=$(cpu_ticks "$pid")
sleep "$seconds"
end=$(cpu_ticks "$pid")
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
kill "$pid"; wait "$pid" || true; pid=
python3 - "$start" "$end" "$ticks" "$seconds" "$rss" <<'PY'
import sys
start, end, ticks, seconds, rss = (float(x) for x in sys.argv[1:])
per_sample_ms = (end - start) / ticks / seconds * 1000
print(f"gpurund, 8 GPUs (NVML stand-in), {seconds:.0f} samples: {per_sample_ms:.2f} ms CPU a sample"
      f" -> {per_sample_ms / 10000 * 100:.4f} % of a core at the default 10 s; resident {rss / 1024:.1f} MiB")
PY

year=/var/tmp/gpurun-service-bench-365d
if [[ ! -f $year/gpurund.db ]]; then
  echo "no year of history at $year: run $build/gpurun_service_bench --benchmark_filter=RecorderOverDays/365 first" >&2
  exit 0
fi
"$build/gpurund" "${common[@]}" --state-dir "$year" --socket "$work/y.sock" --interval 10 2>"$work/y.err" &
pid=$!
for _ in $(seq 50); do [[ -S $work/y.sock ]] && break; sleep 0.1; done
GPURUN=$build/gpurun SOCK=$work/y.sock python3 - <<'PY'
import os, statistics, subprocess, time
env = dict(os.environ, GPURUN_SERVICE_SOCKET=os.environ["SOCK"])
for verb in (["history", "--since", "365d"], ["usage", "--since", "365d"], ["history", "--since", "1d"]):
    times = []
    for _ in range(20):
        t = time.perf_counter_ns()
        subprocess.run([os.environ["GPURUN"]] + verb, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=env, check=True)
        times.append((time.perf_counter_ns() - t) / 1e6)
    print(f"gpurun {' '.join(verb)}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms")
PY
