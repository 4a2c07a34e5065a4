#!/usr/bin/env bash
# A launch against its floor on a real engine (issue 25, point 2): whole-process, interleaved,
# medians. The floor (bench/floor/launch_floor.c) does only what no container-aware picker can
# skip: both nvidia-smi queries at once and, beside them, the engine's container list and every
# container's inspect (over the socket, all inspects at once; or through the CLI, `docker ps` then
# one `docker inspect`), then it execs docker. gpurun does the same launch its own way.
#
#   DOCKER_HOST=unix:///… bench/compare_launch_floor.sh [path/to/gpurun] [runs]
#
# Needs a real dockerd whose socket DOCKER_HOST names, holding GPU containers:
# tests/e2e/real_docker_engine.sh runs this against its private dockerd (with its GPU-request-form
# containers running) when LAUNCH_FLOOR_BENCH names this script. nvidia-smi is a C stand-in that
# prints a recorded 8-GPU answer (bench/floor/fast_nvidia_smi.c), so that the engine's share and
# gpurun's own show; `docker run` is a no-op (bench/floor/noop_run_docker.c), every other docker
# command the real client's.
#
# Variants, each a pair (gpurun, its floor):
#   socket  the engine reached on its socket (DOCKER_HOST)
#   cli     the engine reached only through its CLI (a docker context: gpurun leaves contexts to the CLI)
#   plain   no engine asked: gpurun --ignore-containers --gpu-request gpus
#           (and, for reference, against floor-safe: the same floor that also reads the system
#           file, locks, looks the caller up, keeps a reservation and sends an audit line)
#   version gpurun --version, against /bin/true
set -euo pipefail
me=compare_launch_floor.sh
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpurun=$(cd "$(dirname "${1:-$root/build/gpurun}")" && pwd)/$(basename "${1:-$root/build/gpurun}")
runs=${2:-200}
[[ ${DOCKER_HOST:-} == unix://* ]] || { echo "$me: DOCKER_HOST must name the engine's unix socket" >&2; exit 2; }
socket=${DOCKER_HOST#unix://}
real_docker=${BENCH_DOCKER_CLI:-$(command -v docker)} || { echo "$me: no docker client" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-floorbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/xdg" "$work/locks" "$work/safe-locks" "$work/bin" "$work/cli"

# Every program runs from a copy, as installed (`cmake --install` and packages copy): a program the
# linker has just written starts slower than a copy of it until its pages leave the page cache
# (gpurun, 5 MB: 0.07-0.09 ms a launch on this machine; after drop_caches both ran alike;
# docs/performance.md), and users run the copy.
mkdir -p "$work/cc"
cc -O2 -o "$work/cc/launch_floor" "$root/bench/floor/launch_floor.c"
cc -O2 -o "$work/cc/nvidia-smi" "$root/bench/floor/fast_nvidia_smi.c"
cc -O2 -DREAL_DOCKER="\"$real_docker\"" -o "$work/cc/docker" "$root/bench/floor/noop_run_docker.c"
install -m 0755 "$work/cc/launch_floor" "$work/launch_floor"
install -m 0755 "$work/cc/nvidia-smi" "$work/cc/docker" "$work/bin/"
built_gpurun=$gpurun
gpurun=$work/installed/gpurun
install -D -m 0755 "$built_gpurun" "$gpurun"

# The answers gpurun asks for (no sysfs to place GPUs by: no pci.bus_id, no topo -m), recorded once.
fmt=--format=csv,noheader,nounits
export FAKE_SMI_SCENARIO=$root/tests/data/scenarios/all_free_8.json
"$root/tests/fakes/nvidia-smi" --query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu,mig.mode.current \
  "$fmt" >"$work/gpus.csv"
"$root/tests/fakes/nvidia-smi" --query-compute-apps=gpu_uuid,pid,used_memory "$fmt" >"$work/apps.csv"
# A docker context on the same socket: the CLI reaches the engine, gpurun does not ask the socket.
DOCKER_CONFIG=$work/cli "$real_docker" context create gpurun-bench --docker "host=unix://$socket" >/dev/null

containers=$("$real_docker" ps --quiet | wc -l)
echo "engine:   $("$real_docker" version --format 'dockerd {{.Server.Version}}') at $DOCKER_HOST, $containers containers running"
echo "gpurun:   $built_gpurun ($("$gpurun" --version)), run from a copy; $runs runs per variant, interleaved"
echo "machine:  $(nproc) CPUs, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(uname -sr)"
echo

GPURUN=$gpurun RUNS=$runs WORK=$work SOCKET=$socket python3 - <<'PY'
import os, statistics, time
g, work, runs, sock = os.environ["GPURUN"], os.environ["WORK"], int(os.environ["RUNS"]), os.environ["SOCKET"]
base = {k: v for k, v in os.environ.items() if not k.startswith(("GPURUN_", "DOCKER_", "FAKE_"))}
base.update(XDG_CONFIG_HOME=work + "/xdg", GPURUN_SYSFS_ROOT=work + "/no-sysfs",
            FAST_SMI_GPUS=work + "/gpus.csv", FAST_SMI_APPS=work + "/apps.csv")
on_socket = dict(base, DOCKER_HOST="unix://" + sock, DOCKER_CONFIG=work + "/cli")
by_cli = dict(base, DOCKER_CONFIG=work + "/cli", DOCKER_CONTEXT="gpurun-bench")
smi, docker, floor = work + "/bin/nvidia-smi", work + "/bin/docker", work + "/launch_floor"
launch = [g, "--gpu-source", "nvidia-smi", "--nvidia-smi", smi, "--docker", docker, "--lock-dir", work + "/locks", "--image", "img",
          "--allow-busy", "1", "--", "true"]  # --allow-busy: a --gpus all container holds every GPU
run_line = [docker, "run", "--gpus", "device=0", "img", "true"]
variants = {
    "floor-socket": ([floor, smi, "--socket", sock, "--"] + run_line, on_socket),
    "gpurun-socket": (launch, on_socket),
    "floor-cli": ([floor, smi, "--cli", docker, "--"] + run_line, by_cli),
    "gpurun-cli": (launch, by_cli),
    "floor-plain": ([floor, smi, "--none", "--"] + run_line, base),
    "floor-safe": ([floor, smi, "--safe", work + "/safe-locks", "--"] + run_line, base),
    "gpurun-plain": (launch[:1] + ["--ignore-containers", "--gpu-request", "gpus"] + launch[1:], base),
    "true": (["/bin/true"], base),
    "version": ([g, "--version"], base),
}
devnull = os.open(os.devnull, os.O_RDWR)
def spawn(name):
    argv, env = variants[name]
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                         (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{name}: exit {os.waitstatus_to_exitcode(status)}: {' '.join(argv)}")
    return (time.perf_counter_ns() - start) / 1e6
names = list(variants)
for name in names:
    spawn(name)  # each works, and its files are in the page cache
times = {name: [] for name in names}
for r in range(runs):
    for name in names[r % len(names):] + names[:r % len(names)]:
        times[name].append(spawn(name))
print(f"{'variant':<15} {'median ms':>10} {'p90 ms':>8}")
for name in names:
    t = sorted(times[name])
    print(f"{name:<15} {statistics.median(t):>10.2f} {t[int(0.9 * (len(t) - 1))]:>8.2f}")
print()
for pair, goal in (("socket", 1.3), ("cli", 1.3), ("plain", 1.2)):
    g_t, f_t = times["gpurun-" + pair], times["floor-" + pair]
    ratio = statistics.median(g_t) / statistics.median(f_t)
    diff = statistics.median(a - b for a, b in zip(g_t, f_t))
    print(f"gpurun-{pair} / floor-{pair}: {ratio:.2f}x (goal <= {goal}x: {'met' if ratio <= goal else 'NOT met'}); "
          f"median per-round difference {diff:+.2f} ms")
ratio = statistics.median(times["gpurun-plain"]) / statistics.median(times["floor-safe"])
print(f"gpurun-plain / floor-safe: {ratio:.2f}x (a reference, no goal: the floor with a shared picker's own work)")
diff = statistics.median(a - b for a, b in zip(times["version"], times["true"]))
print(f"version - true: {diff:+.2f} ms (goal <= +0.3 ms: {'met' if diff <= 0.3 else 'NOT met'})")
PY
