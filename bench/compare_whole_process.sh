#!/usr/bin/env bash
# Whole-process timing of gpurun against the floor: a minimal shell picker that runs the same
# external programs gpurun runs (the stand-in nvidia-smi twice and, for container awareness,
# `docker ps`, all at once as gpurun does) and then execs the same stand-in docker with the
# same argv.
#
#   bench/compare_whole_process.sh [path/to/gpurun] [runs]
#
# Defaults (also for an empty argument): build-bench/gpurun (else build/gpurun), 200 runs.
# All variants run the same number of times, interleaved round by round (the order rotates every
# round), each started with posix_spawn and timed with perf_counter_ns from spawn to reap;
# stdin, stdout and stderr are /dev/null. Needs python3 (the stand-in nvidia-smi needs it anyway).
#
# Variants:
#   true            /bin/true: what spawning and reaping a process costs this harness
#   docker-only     the stand-in docker run directly with gpurun's argv (no picking at all)
#   floor           sh script: both nvidia-smi queries and `docker ps` in parallel, read the first
#                   2 indices, exec the stand-in docker with gpurun's argv
#   floor-smi-only  the same without `docker ps` (the floor of --ignore-containers)
#   floor-serial    floor-smi-only with the two queries one after the other
#   gpurun          gpurun --nvidia-smi FAKE --docker FAKE --image x 2 -- true  (execs docker)
#   gpurun-nocont   the same with --ignore-containers (no `docker ps`)
#   gpurun-dry      gpurun with --dry-run (prints the command and the ranking instead)
#   csv-floor       the floor without nvidia-smi: read the first 2 indices of the 8-GPU snapshot,
#                   exec the stand-in docker with gpurun's argv
#   csv-dry         gpurun --from-csv SNAPSHOT --dry-run ... : no nvidia-smi, no docker at all
#   csv-launch      gpurun --from-csv SNAPSHOT ... : no nvidia-smi, execs the stand-in docker
#   version         gpurun --version: process start-up (dynamic linking, static init) and exit
#
# gpurun runs with --lock-dir in a scratch directory, XDG_CONFIG_HOME pointing at an empty one and
# every GPURUN_* variable unset, so that neither /run/lock nor your config files take part.
# Environment: SCENARIO (default tests/data/scenarios/all_free_8.json), GPUS (default 2),
# KEEP_WORK=1 to keep the work directory (the generated floor scripts) for inspection.
set -euo pipefail

me=compare_whole_process.sh
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${1:-} ]]; then
  gpurun=$1
elif [[ -x $root/build-bench/gpurun ]]; then
  gpurun=$root/build-bench/gpurun
else
  gpurun=$root/build/gpurun
fi
runs=${2:-200}
scenario=${SCENARIO:-$root/tests/data/scenarios/all_free_8.json}
gpus=${GPUS:-2}
smi=$root/tests/fakes/nvidia-smi
docker=$root/tests/fakes/docker

[[ -x $gpurun ]] || { echo "$me: $gpurun is not an executable (build it first)" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "$me: runs must be a positive number, not '$runs'" >&2; exit 2; }
[[ $gpus =~ ^[1-9][0-9]*$ ]] || { echo "$me: GPUS must be a positive number, not '$gpus'" >&2; exit 2; }
gpurun=$(cd "$(dirname "$gpurun")" && pwd)/$(basename "$gpurun")

work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-bench.XXXXXX")
if [[ -n ${KEEP_WORK:-} ]]; then
  echo "work directory (kept): $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi
mkdir "$work/xdg" "$work/locks"

# Same environment for every variant.
for name in "${!GPURUN_@}" "${!FAKE_@}"; do unset "$name"; done
export XDG_CONFIG_HOME=$work/xdg
# No sysfs to place GPUs by (this machine's has no NVIDIA device): no pci.bus_id field, no `topo -m`.
export GPURUN_SYSFS_ROOT=$work/no-sysfs
export FAKE_SMI_SCENARIO=$scenario
export FAKE_DOCKER_ARGV=$work/docker-argv

# The exact queries gpurun makes (src/gpu/smi/smi_query.cpp, src/engine/containers.cpp): checked below.
gpu_query='--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu,mig.mode.current'
apps_query='--query-compute-apps=gpu_uuid,pid,used_memory'
csv_format='--format=csv,noheader,nounits'
docker_ps=(ps --quiet --no-trunc)

# An 8-GPU snapshot for --from-csv, recorded from the same stand-in.
"$smi" "$gpu_query" "$csv_format" >"$work/snapshot.csv"

# gpurun's own docker argv, as a POSIX shell line (shell_join), for the floor to exec verbatim.
common=(--lock-dir "$work/locks" --docker "$docker" --image x "$gpus" -- true)
launch_args=(--nvidia-smi "$smi" "${common[@]}")
csv_args=(--from-csv "$work/snapshot.csv" "${common[@]}")
dry_line=$(cd "$work" && "$gpurun" -q --dry-run "${launch_args[@]}" 2>/dev/null) || true
[[ -n $dry_line ]] || { echo "$me: gpurun --dry-run printed nothing:" >&2; (cd "$work" && "$gpurun" --dry-run "${launch_args[@]}"); exit 1; }

# Check that gpurun runs the external programs exactly as the floor does.
# (The stand-in docker records no `ps` call, so a logging wrapper stands in for it here.)
printf '#!/bin/sh\nprintf "%%s " "$@" >>"%s"; echo >>"%s"\nexec "%s" "$@"\n' \
  "$work/docker-log" "$work/docker-log" "$docker" >"$work/logging-docker"
chmod +x "$work/logging-docker"
(cd "$work" && FAKE_SMI_LOG=$work/smi-log "$gpurun" -q --dry-run --nvidia-smi "$smi" --lock-dir "$work/locks" \
  --docker "$work/logging-docker" --image x "$gpus" -- true >/dev/null 2>&1)
expected=$(printf '["%s", "%s"]\n' "$gpu_query" "$csv_format" "$apps_query" "$csv_format" | sort)
if [[ $(sort "$work/smi-log") != "$expected" ]]; then
  echo "$me: gpurun queried nvidia-smi differently from the floor:" >&2
  cat "$work/smi-log" >&2
  exit 1
fi
if [[ $(cat "$work/docker-log") != "${docker_ps[*]} " ]]; then
  echo "$me: gpurun --dry-run ran docker otherwise than \`docker ${docker_ps[*]}\`:" >&2
  cat "$work/docker-log" >&2
  exit 1
fi

# The floor: the least a picker must do. The queries at once, output to files (a shell cannot
# collect concurrent outputs otherwise), the first $gpus indices read with builtins, then exec
# docker with the same argv gpurun builds. The scripts run under /bin/sh (dash on Debian).
quote() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }
# shellcheck disable=SC2016  # the $ in single quotes belong to the generated script
write_floor() {  # $1 = file, $2 = parallel | smi-only | serial | csv (read the snapshot)
  local input='"$t/gpus.$$"' smi_q docker_q gq aq fq
  smi_q=$(quote "$smi") docker_q=$(quote "$docker") gq=$(quote "$gpu_query") aq=$(quote "$apps_query")
  fq=$(quote "$csv_format")
  {
    echo '#!/bin/sh'
    echo "t=$(quote "$work")"
    case $2 in
      parallel | smi-only)
        echo "$smi_q $gq $fq >\"\$t/gpus.\$\$\" &"
        echo "$smi_q $aq $fq >\"\$t/apps.\$\$\" &"
        [ "$2" = smi-only ] || echo "$docker_q ${docker_ps[*]} >\"\$t/ps.\$\$\" &"
        echo 'wait' ;;
      serial)
        echo "$smi_q $gq $fq >\"\$t/gpus.\$\$\""
        echo "$smi_q $aq $fq >\"\$t/apps.\$\$\"" ;;
      csv)
        input='"$t/snapshot.csv"' ;;
    esac
    echo 'n=0 devices='
    echo "while [ \$n -lt $gpus ] && IFS=', ' read -r index rest; do devices=\${devices:+\$devices,}\$index; n=\$((n + 1)); done <$input"
    echo "[ \$n -eq $gpus ] || exit 125"
    [ "$2" = csv ] || echo 'rm -f "$t/gpus.$$" "$t/apps.$$" "$t/ps.$$"'
    echo "exec $dry_line"
  } >"$1"
  chmod +x "$1"
}
for kind in parallel smi-only serial csv; do write_floor "$work/floor-$kind.sh" "$kind"; done

# Sanity: every variant succeeds, and the launches exec docker with the same argv as the floor.
sanity() {  # $1 = name, rest = command
  local name=$1
  shift
  rm -f "$FAKE_DOCKER_ARGV"
  if ! (cd "$work" && "$@" </dev/null >/dev/null 2>"$work/stderr"); then
    echo "$me: variant $name failed: $*" >&2
    cat "$work/stderr" >&2
    exit 1
  fi
}
docker_argv() { tr '\0' '\n' <"$FAKE_DOCKER_ARGV" | grep -v -e '^--name$' -e '_gpu'; }  # less the random name
for kind in smi-only serial csv parallel; do sanity "floor-$kind" "$work/floor-$kind.sh"; done
floor_argv=$(docker_argv)
check_launch() {  # the arguments of one gpurun launch
  sanity gpurun "$gpurun" -q "$@"
  if [[ $(docker_argv) != "$floor_argv" ]]; then
    echo "$me: the floor and \`gpurun $*\` ran docker with different arguments" >&2
    exit 1
  fi
}
check_launch "${launch_args[@]}"
check_launch --ignore-containers "${launch_args[@]}"
check_launch "${csv_args[@]}"

echo "gpurun:   $gpurun ($("$gpurun" --version))"
echo "scenario: $scenario; $gpus GPUs requested; $runs runs per variant, interleaved"
echo "machine:  $(nproc) CPUs, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(uname -sr)"
echo

cd "$work"
python3 - "$runs" "$gpurun" "$work" "$dry_line" "${launch_args[@]}" <<'PY'
import os
import shlex
import statistics
import sys
import time

runs = int(sys.argv[1])
gpurun, work, dry_line = sys.argv[2:5]
launch = sys.argv[5:]
csv = ["--from-csv", os.path.join(work, "snapshot.csv")] + launch[2:]  # launch = --nvidia-smi SMI ...

variants = [
    ("true", ["/bin/true"]),
    ("docker-only", shlex.split(dry_line)),
    ("floor", [os.path.join(work, "floor-parallel.sh")]),
    ("floor-smi-only", [os.path.join(work, "floor-smi-only.sh")]),
    ("floor-serial", [os.path.join(work, "floor-serial.sh")]),
    ("gpurun", [gpurun] + launch),
    ("gpurun-nocont", [gpurun, "--ignore-containers"] + launch),
    ("gpurun-dry", [gpurun, "--dry-run"] + launch),
    ("csv-floor", [os.path.join(work, "floor-csv.sh")]),
    ("csv-dry", [gpurun, "--dry-run"] + csv),
    ("csv-launch", [gpurun] + csv),
    ("version", [gpurun, "--version"]),
]

devnull = os.open(os.devnull, os.O_RDWR)
file_actions = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
env = dict(os.environ)


def run_once(argv):
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=file_actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter_ns() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("compare_whole_process.sh: %s exited with %d" % (argv, os.waitstatus_to_exitcode(status)))
    return elapsed / 1e6, (usage.ru_utime + usage.ru_stime) * 1e3


# Warm-up: page cache, the dynamic loader's cache, the stand-ins' files.
for _ in range(3):
    for _, argv in variants:
        run_once(argv)

wall = {name: [] for name, _ in variants}
cpu = {name: [] for name, _ in variants}
for r in range(runs):
    k = r % len(variants)
    for name, argv in variants[k:] + variants[:k]:  # rotate the order: no variant always goes first
        w, c = run_once(argv)
        wall[name].append(w)
        cpu[name].append(c)


def p95(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]


print("Wall time per run, ms (CPU = user+sys of the process and the children it reaped)")
print("%-15s %8s %8s %8s %8s %9s" % ("variant", "mean", "median", "p95", "min", "CPU mean"))
for name, _ in variants:
    xs = wall[name]
    print("%-15s %8.2f %8.2f %8.2f %8.2f %9.2f" % (name, statistics.fmean(xs), statistics.median(xs), p95(xs), min(xs),
                                                   statistics.fmean(cpu[name])))


def paired(a, b):
    """Per-round differences a - b (the runs of a round are adjacent in time)."""
    return [x - y for x, y in zip(wall[a], wall[b])]


print()
print("Ratios and overheads (overhead = median of the per-round differences, ms)")
print("%-30s %8s %8s %10s" % ("comparison", "mean", "median", "overhead"))
for a, b in [("gpurun", "floor"), ("gpurun-nocont", "floor-smi-only"), ("gpurun-dry", "floor"),
             ("gpurun", "floor-serial"), ("csv-launch", "csv-floor"), ("csv-launch", "docker-only"),
             ("csv-dry", "true"), ("version", "true")]:
    ratio_mean = statistics.fmean(wall[a]) / statistics.fmean(wall[b])
    ratio_median = statistics.median(wall[a]) / statistics.median(wall[b])
    print("%-30s %7.2fx %7.2fx %+9.2f" % (a + " / " + b, ratio_mean, ratio_median, statistics.median(paired(a, b))))

ratio = statistics.median(wall["gpurun"]) / statistics.median(wall["floor"])
over = statistics.median(paired("gpurun", "floor"))
over_csv = statistics.median(paired("csv-launch", "csv-floor"))
print()
print("goal: whole process within 1.5x of the floor: gpurun / floor = %.2fx (median) -> %s"
      % (ratio, "met" if ratio <= 1.5 else "NOT met"))
print("goal: gpurun's own overhead <= 1 ms at 8 GPUs (medians of per-round differences):")
print("      gpurun - floor         = %+.2f ms -> %s (includes the stand-in nvidia-smi's noise)"
      % (over, "met" if over <= 1.0 else "NOT met"))
print("      csv-launch - csv-floor = %+.2f ms -> %s (the same comparison without nvidia-smi)"
      % (over_csv, "met" if over_csv <= 1.0 else "NOT met"))
print("      for scale: csv-launch - docker-only = %+.2f ms (all of gpurun, against running docker directly);"
      % statistics.median(paired("csv-launch", "docker-only")))
print("      version - true = %+.2f ms (gpurun's process start-up and exit alone)" % statistics.median(paired("version", "true")))
PY
