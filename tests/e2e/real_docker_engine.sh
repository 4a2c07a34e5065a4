#!/usr/bin/env bash
# End-to-end test: run gpurun for real against a private, throw-away Docker engine.
#
#   bash tests/e2e/real_docker_engine.sh <path-to-gpurun> <path-to-fake-nvidia-smi> [<path-to-engine_api_probe>]
#
# It starts its own containerd + dockerd (start_private_docker of tests/e2e/lib.sh: vfs storage,
# no bridge, no iptables) with every socket, state and data directory inside one mktemp
# directory, so it never touches an engine that is already running, nor a second copy of itself
# running concurrently. A stub `nvidia-container-runtime-hook` first on the daemon's PATH makes
# dockerd register its nvidia device driver, so `--gpus '"device=…"'` is accepted and the
# container gets NVIDIA_VISIBLE_DEVICES, without any GPU. A busybox image is built with
# `docker import`.
#
# gpurun is then run (first with --dry-run, then for real) against a fake nvidia-smi
# scenario where only GPUs 2 and 5 are free, and the container reports what it got.
# With the probe (tests/e2e/engine_api_probe.cpp), containers asking for GPUs in each form this
# dockerd accepts are then listed through the Engine API and through the CLI, and compared; with
# ENGINE_QUERY_BENCH set to bench/engine_query_bench's path, that benchmark runs against them;
# with ENGINE_AWARENESS_BENCH set to bench/compare_engine_awareness.sh, that one; with
# LAUNCH_FLOOR_BENCH set to bench/compare_launch_floor.sh, a launch against its floor.
#
# Exit status: 0 all assertions hold, 1 a failure, 77 skipped (cannot run a Docker engine
# here: not root, engine packages missing, dockerd does not start). 77 is the CTest
# SKIP_RETURN_CODE.
set -uo pipefail
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

readonly IMAGE=gpurun-test/busybox:1
readonly WANT_GPUS=2,5
readonly WANT_STATUS=3
readonly RUN_TIMEOUT=60    # seconds one gpurun invocation may take

t_start=$(date +%s)

if (($# != 2 && $# != 3)); then
  say "usage: $0 <path-to-gpurun> <path-to-fake-nvidia-smi> [<path-to-engine_api_probe>]" >&2
  exit 2
fi

[[ -f $1 && -x $1 ]] || die "gpurun binary '$1' does not exist or is not executable"
[[ -f $2 && -x $2 ]] || die "fake nvidia-smi '$2' does not exist or is not executable"
gpurun=$(abspath "$1") || die "cannot resolve $1"
fake_smi=$(abspath "$2") || die "cannot resolve $2"
probe=""
if (($# == 3)); then
  [[ -f $3 && -x $3 ]] || die "engine_api_probe '$3' does not exist or is not executable"
  probe=$(abspath "$3") || die "cannot resolve $3"
fi

# ---------------------------------------------------------------------------------------
# Preconditions: things that make this test impossible here are a SKIP, not a FAIL.
# ---------------------------------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || skip "needs root to start a private dockerd (running as uid $(id -u))"

# Use the distribution's engine, never whatever happens to be first on the caller's PATH
# (e.g. an unrelated newer static client in /usr/local/bin).
docker_engine_tools
command -v python3 >/dev/null || skip "python3 not found"
busybox=$(static_busybox) || skip "no statically linked busybox found (install busybox-static)"

# ---------------------------------------------------------------------------------------
# Private scratch directory, torn down on every exit path.
# ---------------------------------------------------------------------------------------
# Unix socket paths are limited to ~108 bytes; keep the base short.
base=${TMPDIR:-/tmp}
((${#base} <= 40)) || base=/tmp
tmp=$(mktemp -d "$base/gpurun-e2e.XXXXXX") || die "mktemp failed"
tmp=$(cd "$tmp" && pwd -P) # physical path: it is bind-mounted and compared with pwd
readonly tmp

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  # A gpurund of sections 5 to 7 (and section 7's webhook receiver) still running (the test was interrupted) goes first.
  for pid in ${service_pid:-} ${idle_service:-} ${timed_service:-} ${receiver_pid:-}; do kill "$pid" 2>/dev/null; done
  stop_private_docker "$tmp"
  rm -rf -- "$tmp"
  say "elapsed: $(($(date +%s) - t_start)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------
# The private engine (hook calls in $tmp/hook-calls), with a runtime named "nvidia" (plain runc
# here) that lets the legacy `--runtime=nvidia` form be created; a busybox image from the
# host's static busybox; the memlock shim where RLIMIT_MEMLOCK cannot be raised.
# ---------------------------------------------------------------------------------------
start_private_docker "$tmp" "\"runtimes\": {\"nvidia\": {\"path\": \"$(sys_which runc)\"}}"
docker_import_busybox "$tmp" "$busybox" "$IMAGE" sh cat echo env id pwd
pass "built image $IMAGE from $busybox"
docker_memlock_shim "$tmp/docker-memlock-shim"

# ---------------------------------------------------------------------------------------
# Scenario: 8 GPUs, only 2 and 5 are free.
# ---------------------------------------------------------------------------------------
scenario=$tmp/scenario.json
cat >"$scenario" <<'EOF'
{
  "gpus": [
    {"index": 0, "uuid": "GPU-e2e00000-0000-0000-0000-000000000000", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 70000, "memory.total": 81920, "utilization.gpu": 97, "mig.mode.current": "Disabled"},
    {"index": 1, "uuid": "GPU-e2e00000-0000-0000-0000-000000000001", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 2048, "memory.total": 81920, "utilization.gpu": 100, "mig.mode.current": "Disabled"},
    {"index": 2, "uuid": "GPU-e2e00000-0000-0000-0000-000000000002", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0, "mig.mode.current": "Disabled"},
    {"index": 3, "uuid": "GPU-e2e00000-0000-0000-0000-000000000003", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 10240, "memory.total": 81920, "utilization.gpu": 35, "mig.mode.current": "Disabled"},
    {"index": 4, "uuid": "GPU-e2e00000-0000-0000-0000-000000000004", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 80000, "memory.total": 81920, "utilization.gpu": 12, "mig.mode.current": "Disabled"},
    {"index": 5, "uuid": "GPU-e2e00000-0000-0000-0000-000000000005", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0, "mig.mode.current": "Disabled"},
    {"index": 6, "uuid": "GPU-e2e00000-0000-0000-0000-000000000006", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 40960, "memory.total": 81920, "utilization.gpu": 88, "mig.mode.current": "Disabled"},
    {"index": 7, "uuid": "GPU-e2e00000-0000-0000-0000-000000000007", "name": "NVIDIA A100-SXM4-80GB", "memory.used": 20480, "memory.total": 81920, "utilization.gpu": 64, "mig.mode.current": "Disabled"}
  ],
  "processes": [
    {"gpu_uuid": "GPU-e2e00000-0000-0000-0000-000000000000", "pid": 4242, "used_memory": 70000},
    {"gpu_uuid": "GPU-e2e00000-0000-0000-0000-000000000003", "pid": 4243, "used_memory": 10240},
    {"gpu_uuid": "GPU-e2e00000-0000-0000-0000-000000000004", "pid": 4244, "used_memory": 80000},
    {"gpu_uuid": "GPU-e2e00000-0000-0000-0000-000000000006", "pid": 4245, "used_memory": 40960},
    {"gpu_uuid": "GPU-e2e00000-0000-0000-0000-000000000007", "pid": 4246, "used_memory": 20480}
  ]
}
EOF

# What the container reports, one KEY=VALUE per line, then exits with WANT_STATUS. Kept to
# one line (no newlines in the argument) so that --dry-run's output stays one line.
# shellcheck disable=SC2016  # expanded inside the container, not here
container_script='echo "NVD=${NVIDIA_VISIBLE_DEVICES-<unset>}"; '\
'if [ -r /sys/fs/cgroup/cpu.max ]; then read -r q p </sys/fs/cgroup/cpu.max; '\
'elif [ -r /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then c=/sys/fs/cgroup/cpu; q=$(cat $c/cpu.cfs_quota_us); p=$(cat $c/cpu.cfs_period_us); '\
'elif [ -r /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us ]; then c=/sys/fs/cgroup/cpu,cpuacct; q=$(cat $c/cpu.cfs_quota_us); p=$(cat $c/cpu.cfs_period_us); '\
'else q=unknown; p=unknown; fi; '\
'echo "QUOTA=$q"; echo "PERIOD=$p"; echo "UIDGID=$(id -u):$(id -g)"; echo "PWD=$(pwd)"; '\
'echo "MEMLOCK=$(ulimit -l)"; echo "STACK=$(ulimit -s)"; exit '"$WANT_STATUS"

workdir=$tmp/work
mkdir -p "$workdir"

run_gpurun() { # run_gpurun OUT ERR [extra gpurun options...]; returns gpurun's status
  local out=$1 err=$2
  shift 2
  (
    cd "$workdir" &&
      GPURUN_NVIDIA_SMI=$fake_smi FAKE_SMI_SCENARIO=$scenario GPURUN_LOCK_DIR=$tmp/locks \
        timeout -k 5 "$RUN_TIMEOUT" "$gpurun" "$@" --docker "$docker_for_gpurun" --image "$IMAGE" \
        2 -- sh -c "$container_script"
  ) >"$out" 2>"$err" </dev/null
}
show() { # show FILE LABEL
  [[ -s $1 ]] || return 0
  say "---- $2 ----"
  sed 's/^/    /' "$1"
}

# ---------------------------------------------------------------------------------------
# 1. --dry-run: the command line gpurun would exec.
# ---------------------------------------------------------------------------------------
run_gpurun "$tmp/dry.out" "$tmp/dry.err" --dry-run
dry_rc=$?
if ((dry_rc != 0)); then
  show "$tmp/dry.out" "gpurun --dry-run stdout"
  show "$tmp/dry.err" "gpurun --dry-run stderr"
  die "gpurun --dry-run exited $dry_rc"
fi
dry_line=$(grep -v '^[[:space:]]*$' "$tmp/dry.out" | tail -n 1)
say "dry-run: $dry_line"
(($(grep -cv '^[[:space:]]*$' "$tmp/dry.out") == 1)) ||
  fail "--dry-run printed $(grep -cv '^[[:space:]]*$' "$tmp/dry.out") non-empty lines on stdout, expected 1"

# Split the POSIX-shell-quoted line into words exactly as a shell would.
words=()
if ! mapfile -d '' -t words < <(printf '%s' "$dry_line" |
  python3 -c 'import shlex, sys; sys.stdout.write("".join(w + "\0" for w in shlex.split(sys.stdin.read())))'); then
  die "cannot split the --dry-run line into shell words"
fi
((${#words[@]} > 0)) || die "--dry-run printed no command"

opt_value() { # opt_value NAME: value of the first "NAME VALUE" or "NAME=VALUE" in words[]
  local i
  for ((i = 0; i < ${#words[@]}; i++)); do
    if [[ ${words[i]} == "$1" ]] && ((i + 1 < ${#words[@]})); then
      printf '%s\n' "${words[i + 1]}"
      return 0
    elif [[ ${words[i]} == "$1="* ]]; then
      printf '%s\n' "${words[i]#"$1="}"
      return 0
    fi
  done
  return 1
}
ulimit_value() { # ulimit_value TYPE: value of "--ulimit TYPE=VALUE" in words[]
  local i
  for ((i = 0; i + 1 < ${#words[@]}; i++)); do
    [[ ${words[i]} == --ulimit && ${words[i + 1]} == "$1="* ]] && {
      printf '%s\n' "${words[i + 1]#"$1="}"
      return 0
    }
  done
  return 1
}

cpus=$(opt_value --cpus) || die "--dry-run line has no --cpus"
[[ $cpus =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--cpus value '$cpus' is not a number"
say "dry-run --cpus: $cpus"

gpus_word=$(opt_value --gpus) || gpus_word="<missing>"
if [[ $gpus_word == "\"device=$WANT_GPUS\"" ]]; then
  pass "--dry-run selects GPUs $WANT_GPUS (--gpus '$gpus_word')"
else
  fail "--dry-run --gpus is '$gpus_word', expected '\"device=$WANT_GPUS\"'"
fi

n=${#words[@]}
if ((n >= 3)) && [[ ${words[n - 3]} == sh && ${words[n - 2]} == -c && ${words[n - 1]} == "$container_script" ]]; then
  pass "--dry-run line shell-quotes the container command so that it splits back exactly"
else
  fail "--dry-run line does not end with the container command (sh -c SCRIPT) after shell splitting"
fi

# ---------------------------------------------------------------------------------------
# 2. The real thing.
# ---------------------------------------------------------------------------------------
t_run=$(date +%s)
run_gpurun "$tmp/run.out" "$tmp/run.err"
run_rc=$?
say "gpurun exited $run_rc after $(($(date +%s) - t_run)) s"
show "$tmp/run.out" "container output"
show "$tmp/run.err" "gpurun/docker stderr"

get() { sed -n "s/^$1=//p" "$tmp/run.out" | head -n 1; }

if ((run_rc == WANT_STATUS)); then
  pass "gpurun exit status $run_rc equals the container command's"
else
  fail "gpurun exit status $run_rc, expected the container's $WANT_STATUS"
fi

got=$(get NVD)
if [[ $got == "$WANT_GPUS" ]]; then
  pass "NVIDIA_VISIBLE_DEVICES=$got inside the container"
else
  fail "NVIDIA_VISIBLE_DEVICES inside the container is '${got:-<no output>}', expected '$WANT_GPUS'"
fi

if [[ -s $tmp/hook-calls ]]; then
  pass "dockerd ran the nvidia prestart hook ($(head -n 1 "$tmp/hook-calls"))"
else
  fail "the nvidia-container-runtime-hook stub was never run: --gpus did not go through the nvidia driver"
fi

q=$(get QUOTA)
p=$(get PERIOD)
if [[ $q =~ ^[0-9]+$ && $p =~ ^[1-9][0-9]*$ ]] &&
  awk -v q="$q" -v p="$p" -v c="$cpus" 'BEGIN { d = q / p - c; exit !(d < 0.0005 && d > -0.0005) }'; then
  pass "CPU quota $q/$p = $cpus CPUs, as --dry-run's --cpus says"
else
  fail "CPU quota/period inside the container is '${q:-?}/${p:-?}', expected $cpus CPUs (--cpus $cpus)"
fi

want_ids="$(id -u):$(id -g)"
got=$(get UIDGID)
if [[ $got == "$want_ids" ]]; then
  pass "container runs as $got, the invoking uid:gid"
else
  fail "container runs as '${got:-<no output>}', expected the invoking $want_ids"
fi

got=$(get PWD)
if [[ $got == "$workdir" ]]; then
  pass "container working directory is $got, where gpurun was run"
else
  fail "container working directory is '${got:-<no output>}', expected $workdir"
fi

if stack=$(ulimit_value stack); then
  got=$(get STACK)
  if [[ $stack =~ ^[0-9]+$ && $got == "$((stack / 1024))" ]]; then
    pass "stack rlimit is $got KiB, as --ulimit stack=$stack asks"
  else
    fail "stack rlimit inside the container is '${got:-<no output>}' KiB, --ulimit stack=$stack asks $((stack / 1024))"
  fi
fi

if memlock=$(ulimit_value memlock); then
  got=$(get MEMLOCK)
  if [[ $memlock == -1* || $memlock == unlimited* ]]; then
    if ((memlock_shim)); then
      want=$hard_kb # clamped by the shim, see above
    else
      want=unlimited
    fi
    if [[ $got == "$want" ]]; then
      pass "memlock rlimit is $got$( ((memlock_shim)) && printf ' (clamped by the test shim)')"
    else
      fail "memlock rlimit inside the container is '${got:-<no output>}', expected $want"
    fi
  fi
fi

# ---------------------------------------------------------------------------------------
# 3. Container awareness: a detached container on GPU 2 makes the next pick avoid GPU 2,
#    although nvidia-smi (the scenario) still says GPU 2 is idle.
# ---------------------------------------------------------------------------------------
gpurun_env=(env GPURUN_NVIDIA_SMI="$fake_smi" FAKE_SMI_SCENARIO="$scenario" GPURUN_LOCK_DIR="$tmp/locks"
  GPURUN_DOCKER="$docker_for_gpurun")
detached=gpurun-e2e-detached
(cd "$workdir" && "${gpurun_env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" --detach --name "$detached" \
  --image "$IMAGE" 1 -- sh -c 'seq 1 5; exec sleep 120') >"$tmp/detach.out" 2>"$tmp/detach.err" </dev/null
detach_rc=$?
show "$tmp/detach.err" "gpurun --detach stderr"
if ((detach_rc == 0)) && [[ $(cat "$tmp/detach.out") == "$detached" ]] &&
  [[ $(dk inspect --format '{{.State.Running}}' "$detached" 2>/dev/null) == true ]]; then
  pass "gpurun --detach started $detached in the background and printed its name"
else
  fail "gpurun --detach exited $detach_rc, printed '$(cat "$tmp/detach.out")'; container running: $(dk inspect --format '{{.State.Running}}' "$detached" 2>&1)"
fi

picked=$("${gpurun_env[@]}" "$gpurun" pick 1 2>"$tmp/pick.err")
if [[ $picked == 5 ]]; then
  pass "with $detached holding GPU 2 (idle to nvidia-smi), the next pick is GPU 5"
else
  fail "the next pick is '$picked', expected 5 (GPU 2 is held by $detached)"
  show "$tmp/pick.err" "gpurun pick stderr"
fi
# --verbose: each GPU's row, then why it is busy under it (awk keeps GPU 2's lines).
if "${gpurun_env[@]}" "$gpurun" status --verbose 2>/dev/null | awk '/^ +[0-9]+  /{gpu=$1} gpu==2' |
  grep -q "why: in use by container $detached"; then
  pass "gpurun status says GPU 2 is in use by $detached"
else
  fail "gpurun status does not show GPU 2 in use by $detached"
fi
if COLUMNS=200 "${gpurun_env[@]}" "$gpurun" ps | grep -q "^$detached .* 2 .*running .*yes  *sh -c seq 1 5; exec sleep 120$"; then
  pass "gpurun ps lists $detached on GPU 2, started by gpurun, with its command"
else
  fail "gpurun ps does not list $detached on GPU 2: $(COLUMNS=200 "${gpurun_env[@]}" "$gpurun" ps 2>&1)"
fi
# The container verbs with docker's flags (issue 21): logs --tail N, stop -t SECONDS.
tail_out=$("${gpurun_env[@]}" "$gpurun" logs --tail 2 "$detached" 2>&1 | tr -d '\r' | tr '\n' ' ')
[[ $tail_out == "4 5 " ]] && pass "gpurun logs --tail 2 printed the last two lines and returned" ||
  fail "gpurun logs --tail 2 $detached printed '$tail_out', expected '4 5 '"
stop_start=$SECONDS
# -t 30, done within seconds: docker's init (--init) passed SIGTERM on to the job's sh, which as
# PID 1 itself would have ignored it until the 30 s were out.
stop_out=$("${gpurun_env[@]}" timeout -k 5 60 "$gpurun" stop -t 30 "$detached" 2>&1)
if [[ $stop_out == "$detached" ]] && ((SECONDS - stop_start < 9)) &&
  [[ $(dk inspect --format '{{.State.Running}}' "$detached" 2>/dev/null) != true ]]; then
  pass "gpurun stop -t 30 stopped $detached within seconds (SIGTERM reached it through docker's init) and echoed its name"
else
  fail "gpurun stop -t 30 $detached: '$stop_out' after $((SECONDS - stop_start)) s; running: $(dk inspect --format '{{.State.Running}}' "$detached" 2>&1)"
fi
# A detached job's output stays after it ends (no --rm), until gpurun rm removes its container.
ended_out=$("${gpurun_env[@]}" "$gpurun" logs "$detached" 2>&1 | tr -d '\r' | tr '\n' ' ')
[[ $ended_out == "1 2 3 4 5 " ]] && pass "gpurun logs still prints the output of $detached after its job ended" ||
  fail "gpurun logs $detached after stop printed '$ended_out', expected '1 2 3 4 5 '"
if COLUMNS=200 "${gpurun_env[@]}" "$gpurun" ps -a | grep -q "^$detached .*exited"; then
  pass "gpurun ps -a lists the ended $detached"
else
  fail "gpurun ps -a does not list the ended $detached: $(COLUMNS=200 "${gpurun_env[@]}" "$gpurun" ps -a 2>&1)"
fi
(cd "$workdir" && "${gpurun_env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" -d --name "$detached" --image "$IMAGE" 1 -- \
  true) >"$tmp/again.out" 2>"$tmp/again.err" </dev/null
again_rc=$?
((again_rc == 125)) && grep -q "gpurun rm $detached removes it" "$tmp/again.err" &&
  pass "a detached launch into the ended job's name stops with 125 and says gpurun rm $detached" ||
  fail "a second -d --name $detached: status $again_rc, $(cat "$tmp/again.err")"
rm_out=$("${gpurun_env[@]}" "$gpurun" rm "$detached" 2>&1)
if [[ $rm_out == "$detached" ]] && ! dk inspect "$detached" >/dev/null 2>&1; then
  pass "gpurun rm removed the ended $detached and echoed its name"
else
  fail "gpurun rm $detached: '$rm_out'; container: $(dk inspect --format '{{.State.Status}}' "$detached" 2>&1)"
fi
dk rm -f "$detached" >/dev/null 2>&1
# One whose container cannot start leaves none behind (as --rm did), so its name is free again.
# (Without docker's init: with it, the init starts and the job's end is an ended job's, to read.)
(cd "$workdir" && "${gpurun_env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" -d --name gpurun-e2e-nostart \
  --docker-opt=--init=false --image "$IMAGE" 1 -- /nonexistent/program) >"$tmp/nostart.out" 2>"$tmp/nostart.err" </dev/null
nostart_rc=$?
if ((nostart_rc != 0)) && ! dk inspect gpurun-e2e-nostart >/dev/null 2>&1; then
  pass "a detached job whose program cannot start ends with $nostart_rc and leaves no container"
else
  fail "gpurun -d of a missing program: status $nostart_rc, container: $(dk inspect --format '{{.State.Status}}' gpurun-e2e-nostart 2>&1); $(cat "$tmp/nostart.err")"
fi
dk rm -f gpurun-e2e-nostart >/dev/null 2>&1

# 3b. A detached job survives attach (issue 21): `gpurun attach` in a terminal (tmux) reaches the
#     job's stdin and terminal, and Ctrl-P Ctrl-Q leaves it running (the container has -dit).
attached=gpurun-e2e-attach
(cd "$workdir" && "${gpurun_env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" -d --name "$attached" --image "$IMAGE" 1 -- \
  sh -c 'while read -r line; do echo "got:$line"; done') >"$tmp/attach-d.out" 2>"$tmp/attach-d.err" </dev/null
grep -q "attach to it:      gpurun attach $attached   (detach again with Ctrl-P Ctrl-Q)" "$tmp/attach-d.err" &&
  pass "the detach hint is gpurun attach $attached" || fail "detach hint: $(cat "$tmp/attach-d.err")"
if command -v tmux >/dev/null; then
  tsock=$tmp/tmux.sock
  pane() { tmux -S "$tsock" capture-pane -p -t attach 2>/dev/null; }
  wait_pane() { # wait_pane REGEX: until the terminal shows it (10 s)
    local i
    for ((i = 0; i < 100; i++)); do pane | grep -q -- "$1" && return 0; sleep 0.1; done
    return 1
  }
  attach_cmd=$(printf '%q ' cd "$workdir")"&& "$(printf '%q ' "${gpurun_env[@]}" "$gpurun" attach "$attached")"; echo ATTACH-ENDED; sleep 60"
  tmux -S "$tsock" new-session -d -s attach -x 120 -y 20 "$attach_cmd"
  sleep 1
  tmux -S "$tsock" send-keys -t attach "hello" Enter
  wait_pane "got:hello" && pass "gpurun attach reaches the job's stdin through its terminal" ||
    fail "no echo from the attached job; the terminal shows: $(pane)"
  tmux -S "$tsock" send-keys -t attach C-p C-q
  wait_pane "ATTACH-ENDED" && pass "Ctrl-P Ctrl-Q detaches gpurun attach" || fail "Ctrl-P Ctrl-Q: the terminal shows: $(pane)"
  sleep 0.5
  expect_eq "the job still runs after Ctrl-P Ctrl-Q" true "$(dk inspect --format '{{.State.Running}}' "$attached" 2>&1)"
  tmux -S "$tsock" kill-server 2>/dev/null
  # From a script (no terminal): its output, not docker's "the input device is not a TTY", and
  # stdin's end never reaches the job.
  attach_rc=0
  "${gpurun_env[@]}" timeout 3 "$gpurun" attach "$attached" </dev/null >"$tmp/attach.out" 2>"$tmp/attach.err" ||
    attach_rc=$?
  if ((attach_rc == 124)) && [[ $(dk inspect --format '{{.State.Running}}' "$attached" 2>&1) == true ]]; then
    pass "gpurun attach without a terminal follows the job until stopped, and the job runs on"
  else
    fail "gpurun attach </dev/null: status $attach_rc, $(cat "$tmp/attach.err")"
  fi
else
  say "SKIP (part): tmux not found, the attach/detach check did not run (scripts/install-deps installs it)"
fi
rm_rc=0
"${gpurun_env[@]}" "$gpurun" rm "$attached" >"$tmp/rm.out" 2>"$tmp/rm.err" || rm_rc=$?
if ((rm_rc == 125)) && grep -q "still runs its job: gpurun stop $attached ends it" "$tmp/rm.err" &&
  [[ $(dk inspect --format '{{.State.Running}}' "$attached" 2>&1) == true ]]; then
  pass "gpurun rm refuses a container whose job still runs, and says gpurun stop"
else
  fail "gpurun rm of the running $attached: status $rm_rc, $(cat "$tmp/rm.err")"
fi
dk rm -f "$attached" >/dev/null 2>&1
picked=$("${gpurun_env[@]}" "$gpurun" pick 1 2>/dev/null)
if [[ $picked == 2 ]]; then
  pass "once $detached is gone, GPU 2 is picked again"
else
  fail "after removing $detached the pick is '$picked', expected 2"
fi

# ---------------------------------------------------------------------------------------
# 4. Every GPU request form this dockerd accepts, asked through the Engine API and through the
#    CLI: both must name the same holders, each as its form says. (CDI `--device
#    nvidia.com/gpu=…` needs dockerd 25+, and `--device /dev/nvidiaN` a GPU's device node on the
#    host: those forms are covered by the unit tests only.)
# ---------------------------------------------------------------------------------------
if [[ -n $probe ]]; then
  gpu3=GPU-e2e00000-0000-0000-0000-000000000003
  # name|docker run options|the holder line expected|optional (a sandbox may refuse it)
  forms=(
    "form-device|--gpus \"device=1,$gpu3\"|1,$gpu3|"
    "form-device5|--gpus device=5|5|"
    "form-all|--gpus all|all|"
    "form-count|--gpus 2|0,1|"
    "form-count1|--gpus 1|0|"
    "form-runtime|--runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=4|4|"
    "form-privileged|--privileged|all|optional"
    "form-none|||"
    "form-env-runc|-e NVIDIA_VISIBLE_DEVICES=all||"  # an NVIDIA image's CPU job: runc never reads it
  )
  want=""
  started=()
  for form in "${forms[@]}"; do
    IFS='|' read -r fname fargs fwant foptional <<<"$form"
    # shellcheck disable=SC2086  # the form's options are words
    if dk run --detach --name "$fname" $fargs "$IMAGE" sleep 300 >"$tmp/form.out" 2>&1; then
      started+=("$fname")
      [[ -n $fwant ]] && want+="$fname"$'\t'"$fwant"$'\n'
    elif [[ -n $foptional ]] && grep -q 'operation not permitted' "$tmp/form.out"; then
      say "note: this machine cannot run a $fargs container ($(grep -o 'unable to [^:]*' "$tmp/form.out" | head -n 1)); that form is left out"
      dk rm -f "$fname" >/dev/null 2>&1
    else
      fail "docker run $fargs could not start $fname: $(tail -n 1 "$tmp/form.out")"
    fi
  done
  want=$(printf '%s' "$want" | LC_ALL=C sort)
  "$probe" api "$docker_cli" >"$tmp/probe-api.out" 2>"$tmp/probe-api.err"
  api_rc=$?
  "$probe" cli "$docker_cli" >"$tmp/probe-cli.out" 2>"$tmp/probe-cli.err"
  cli_rc=$?
  say "engine query: $(cat "$tmp/probe-api.err"); $(cat "$tmp/probe-cli.err")"
  api_out=$(LC_ALL=C sort "$tmp/probe-api.out")
  cli_out=$(LC_ALL=C sort "$tmp/probe-cli.out")
  if ((api_rc == 0)) && [[ $api_out == "$want" ]]; then
    pass "the Engine API names every GPU request form's holder as its form says"
  else
    fail "the Engine API (exit $api_rc) answered:"$'\n'"$api_out"$'\n'"expected:"$'\n'"$want"
  fi
  if ((cli_rc == 0)) && [[ $cli_out == "$api_out" ]]; then
    pass "the CLI and the Engine API agree on the holders"
  else
    fail "the CLI (exit $cli_rc) answered:"$'\n'"$cli_out"$'\n'"the Engine API:"$'\n'"$api_out"
  fi
  if [[ -n ${ENGINE_QUERY_BENCH:-} ]]; then
    BENCH_DOCKER_CLI=$docker_cli "$ENGINE_QUERY_BENCH" || fail "the engine query benchmark failed"
  fi
  if [[ -n ${ENGINE_AWARENESS_BENCH:-} ]]; then
    bash "$ENGINE_AWARENESS_BENCH" "$gpurun" || fail "the container-awareness benchmark failed"
  fi
  if [[ -n ${LAUNCH_FLOOR_BENCH:-} ]]; then
    BENCH_DOCKER_CLI=$docker_cli bash "$LAUNCH_FLOOR_BENCH" "$gpurun" "${LAUNCH_FLOOR_RUNS:-200}" ||
      fail "the launch floor benchmark failed"
  fi
  ((${#started[@]} == 0)) || dk rm -f "${started[@]}" >/dev/null 2>&1
fi

# ---------------------------------------------------------------------------------------
# 5. The gpurun service (issue 22): a container on this dockerd whose process the stand-in
#    nvidia-smi lists on GPU 3 at 60 % is one run, named and owned as its labels say; a kill -9
#    and a restart continue it (no duplicate), and its end, usage and report follow.
# ---------------------------------------------------------------------------------------
gpurund=$(dirname -- "$gpurun")/gpurund
if [[ -x $gpurund ]]; then
  held=gpurun-e2e-service
  dk run -d --name "$held" --label gpurun.user=alice --gpus '"device=3"' "$IMAGE" sleep 300 >/dev/null 2>"$tmp/held.err"
  held_pid=$(dk inspect --format '{{.State.Pid}}' "$held" 2>/dev/null)
  held_id=$(dk inspect --format '{{.Id}}' "$held" 2>/dev/null)
  service_scenario() { # service_scenario PID|none: GPU 3 at 60 % held by PID, or by nobody
    python3 - "$scenario" "$1" >"$tmp/service.json.new" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
data["gpus"][3]["utilization.gpu"] = 60
data["processes"] = [] if sys.argv[2] == "none" else [
    {"gpu_uuid": data["gpus"][3]["uuid"], "pid": int(sys.argv[2]), "used_memory": 4096}]
print(json.dumps(data))
PY
    mv "$tmp/service.json.new" "$tmp/service.json"
  }
  service_scenario "$held_pid"
  start_service() {
    FAKE_SMI_SCENARIO=$tmp/service.json "$gpurund" --no-config --state-dir "$tmp/gpurund-state" \
      --socket "$tmp/gpurund.sock" --interval 0.2 --gpu-source nvidia-smi --nvidia-smi "$fake_smi" --docker "$docker_cli" \
      2>>"$tmp/gpurund.err" &
    service_pid=$!
  }
  ask() { GPURUN_SERVICE_SOCKET=$tmp/gpurund.sock timeout 20 "$gpurun" "$@" 2>>"$tmp/ask.err"; }
  runs_of_held() { ask history --json | python3 -c '
import json, sys
runs = [r for r in json.load(sys.stdin) if r["container"] == sys.argv[1]]
print(len(runs), *(f"{r[k]}" for r in runs[:1] for k in ("name", "user", "end", "ended_by", "efficiency")))' "$held_id"; }
  wait_until() { # wait_until PATTERN: the held container's runs line matches within 20 s
    local i line
    for i in $(seq 100); do
      line=$(runs_of_held 2>/dev/null)
      [[ $line =~ $1 ]] && { printf '%s' "$line"; return 0; }
      sleep 0.2
    done
    printf '%s' "$line"
    return 1
  }
  start_service
  if line=$(wait_until '^1 '"$held"' alice None None '); then
    pass "gpurund records the container on the real dockerd as one run, named $held, user alice (its label)"
  else
    fail "gpurund's run of $held: '$line'"; log_tail "$tmp/gpurund.err" 10
  fi
  kill -9 "$service_pid"; wait "$service_pid" 2>/dev/null
  start_service
  sleep 1.5
  if line=$(wait_until '^1 '"$held"' alice None None '); then
    pass "after kill -9 and a restart the container is still the same one run"
  else
    fail "after kill -9 and a restart: '$line'"
  fi
  dk rm -f "$held" >/dev/null 2>&1
  service_scenario none
  if line=$(wait_until '^1 '"$held"' alice [0-9TZ:-]+ gone (59|60|61)'); then
    pass "its end is recorded once it is gone, with 60 % efficiency"
  else
    fail "the run's end: '$line'"
  fi
  if ask report "$held" | grep -q "$held" && ask usage --by image --json | grep -q '"key": "'"$IMAGE"'"'; then
    pass "gpurun report and usage answer for it"
  else
    fail "report or usage: $(tail -3 "$tmp/ask.err")"
  fi
  kill "$service_pid"; wait "$service_pid" 2>/dev/null || fail "gpurund did not stop cleanly on SIGTERM"
else
  say "SKIP (section 5): no gpurund beside $gpurun"
fi

# A webhook receiver (python3's http.server, each POST's body a line of $tmp/webhook-bodies) and a
# sendmail stand-in (each message appended to $tmp/mail), for sections 6 and 7; $tmp/notify.json is
# the "notify" object pointing at both.
start_notification_stand_ins() {
  python3 - "$tmp/webhook-bodies" "$tmp/port" <<'PY' 2>"$tmp/receiver.err" &
import http.server, sys
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(sys.argv[1], "ab") as f:
            f.write(body + b"\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
open(sys.argv[2], "w").write(str(server.server_port))
server.serve_forever()
PY
  receiver_pid=$!
  for _ in $(seq 50); do [[ -s $tmp/port ]] && break; sleep 0.1; done
  printf '#!/bin/sh\ntest "$1" = -t || exit 9\ncat >> %s/mail\n' "$tmp" >"$tmp/sendmail"
  chmod +x "$tmp/sendmail"
  printf '{"webhook": "http://127.0.0.1:%s/hook", "mail": true, "mail_domain": "lab.example.org", "sendmail": "%s/sendmail"}\n' \
    "$(cat "$tmp/port")" "$tmp" >"$tmp/notify.json"
}
# The events the webhook got about the run named $1, in order.
webhook_events() {
  python3 -c '
import json, sys
print(*[j["event"] for j in map(json.loads, open(sys.argv[1])) if j["run"] and j["run"]["name"] == sys.argv[2]])
' "$tmp/webhook-bodies" "$1" 2>/dev/null
}

# ---------------------------------------------------------------------------------------
# 6. The idle policy (issue 23): a container gpurun started (its label) whose process the
#    stand-in nvidia-smi lists on GPU 3 at 0 % is warned, then stopped through this dockerd, and
#    its run ends with ended_by idle_policy, its user told by webhook and mail; a container of a
#    plain `docker run`, idle on GPU 5 beside it, is only reported and keeps running.
# ---------------------------------------------------------------------------------------
idle=gpurun-e2e-idle other=gpurun-e2e-other
forever='trap "exit 0" TERM; while :; do sleep 1; done'
if [[ -x $gpurund ]] &&
   ! { dk run -d --name "$idle" --label gpurun.user=alice --gpus '"device=3"' "$IMAGE" sh -c "$forever" &&
       dk run -d --name "$other" --gpus '"device=5"' "$IMAGE" sh -c "$forever"; } >/dev/null 2>"$tmp/idle-run.err"; then
  fail "section 6: the two idle containers did not start: $(tail -2 "$tmp/idle-run.err")"
elif [[ -x $gpurund ]]; then
  idle_scenario() { # idle_scenario GPU=PID...: GPUs 3 and 5 at 0 %, each GPU given held by its PID
    python3 - "$scenario" "$@" >"$tmp/idle.json.new" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for g in (3, 5):
    data["gpus"][g]["utilization.gpu"] = 0
data["processes"] = [{"gpu_uuid": data["gpus"][int(g)]["uuid"], "pid": int(p), "used_memory": 1024}
                     for g, p in (a.split("=") for a in sys.argv[2:])]
print(json.dumps(data))
PY
    mv "$tmp/idle.json.new" "$tmp/idle.json"
  }
  idle_scenario "3=$(dk inspect --format '{{.State.Pid}}' "$idle")" "5=$(dk inspect --format '{{.State.Pid}}' "$other")"
  start_notification_stand_ins
  printf '{"idle_policy": {"below": "5%%", "warn_after": 1, "stop_after": 2}, "notify": %s}\n' "$(cat "$tmp/notify.json")" \
    >"$tmp/idle-policy.json"
  GPURUN_SYSTEM_CONFIG=$tmp/idle-policy.json FAKE_SMI_SCENARIO=$tmp/idle.json "$gpurund" --no-config \
    --state-dir "$tmp/idle-state" --socket "$tmp/idle.sock" --interval 0.2 --gpu-source nvidia-smi --nvidia-smi "$fake_smi" \
    --docker "$docker_cli" 2>>"$tmp/idle.err" &
  idle_service=$!
  for _ in $(seq 150); do  # stopped, and logged as such (gpurund logs once docker stop returns)
    [[ $(dk inspect --format '{{.State.Running}}' "$idle" 2>/dev/null) == false ]] &&
      grep -q "idle policy: stopped run" "$tmp/idle.err" && break
    sleep 0.2
  done
  if [[ $(dk inspect --format '{{.State.Running}}' "$idle" 2>/dev/null) == false ]] &&
     grep -q "idle policy: run [0-9]* ($idle, user alice, GPU 3) has been idle for [0-9]*s" "$tmp/idle.err" &&
     grep -q "idle policy: stopped run [0-9]* ($idle, user alice, GPU 3)" "$tmp/idle.err"; then
    pass "the idle policy warned, then stopped $idle on the real dockerd"
  else
    fail "the idle policy did not warn and stop $idle"; log_tail "$tmp/idle.err" 10
  fi
  if [[ $(dk inspect --format '{{.State.Running}}' "$other" 2>/dev/null) == true ]] &&
     grep -q "($other, user [^,]*, GPU 5) has been idle for [0-9]*s, and is left running: not a container gpurun started" \
       "$tmp/idle.err"; then
    pass "$other, not started by gpurun, is reported and keeps running"
  else
    fail "$other: reported and left running?"; log_tail "$tmp/idle.err" 10
  fi
  idle_scenario "5=$(dk inspect --format '{{.State.Pid}}' "$other")"  # GPU 3's process is gone
  ended=
  for _ in $(seq 100); do
    ended=$(GPURUN_SERVICE_SOCKET=$tmp/idle.sock timeout 20 "$gpurun" history --json 2>/dev/null | python3 -c '
import json, sys
print(*[r["ended_by"] for r in json.load(sys.stdin) if r["name"] == sys.argv[1] and r["end"]])' "$idle")
    [[ -n $ended ]] && break
    sleep 0.2
  done
  [[ $ended == idle_policy ]] && pass "its run ended with ended_by idle_policy" || fail "its run's end: '$ended'"
  [[ $(webhook_events "$idle") == "idle_warning idle_stopped" ]] &&
    pass "the webhook got idle_warning and idle_stopped for $idle" || fail "webhook events of $idle: '$(webhook_events "$idle")'"
  grep -q "^Subject: \[gpurun\] stopped run [0-9]* ($idle, user alice" "$tmp/mail" 2>/dev/null &&
    pass "sendmail -t got the stop's mail to alice" || fail "no mail about stopping $idle: $(head -c 300 "$tmp/mail" 2>&1)"
  kill "$idle_service"; wait "$idle_service" 2>/dev/null || fail "gpurund did not stop cleanly on SIGTERM"
  dk rm -f "$idle" "$other" >/dev/null 2>&1
fi

# ---------------------------------------------------------------------------------------
# 7. Time limits and notifications (issue 23): a real `gpurun -d --time-limit 2s --notify` is
#    warned and stopped by gpurund at its limit through this dockerd; a local webhook receiver
#    (python3's http.server) gets time_warning, time_limit_stopped and run_ended, and a sendmail
#    stand-in the mails to the user.
# ---------------------------------------------------------------------------------------
timed=gpurun-e2e-timed
if [[ -x $gpurund ]]; then
  [[ -s $tmp/notify.json ]] || start_notification_stand_ins
  (cd "$workdir" && "${gpurun_env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" -d --name "$timed" --time-limit 2s \
    --notify --image "$IMAGE" 1 -- sh -c "$forever") >"$tmp/timed.out" 2>"$tmp/timed.err" </dev/null ||
    fail "gpurun -d --time-limit 2s failed: $(tail -2 "$tmp/timed.err")"
  [[ $(dk inspect --format '{{index .Config.Labels "gpurun.time-limit"}}' "$timed" 2>/dev/null) == 2 ]] &&
    pass "the container carries its time limit as the label gpurun.time-limit=2" ||
    fail "no gpurun.time-limit label on $timed"
  # An image committed from it carries the launch's labels: a later launch of it writes its own,
  # empty, so that neither the time limit nor the notification is the image's.
  untimed=gpurun-e2e-untimed
  dk commit "$timed" gpurun-e2e-limited:1 >/dev/null 2>&1 || fail "docker commit $timed failed"
  (cd "$workdir" && "${gpurun_env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" -d --name "$untimed" \
    --image gpurun-e2e-limited:1 1 -- sh -c "$forever") >/dev/null 2>"$tmp/untimed.err" </dev/null ||
    fail "gpurun -d of the committed image failed: $(tail -2 "$tmp/untimed.err")"
  labels=$(dk inspect --format '{{index .Config.Labels "gpurun.time-limit"}}|{{index .Config.Labels "gpurun.notify"}}' \
    "$untimed" 2>&1)
  [[ $labels == "|" ]] && pass "a launch of an image committed from a limited container has no time limit of its own" ||
    fail "the committed image's labels reached the next launch: $labels"
  dk rm -f "$untimed" >/dev/null 2>&1
  dk rmi gpurun-e2e-limited:1 >/dev/null 2>&1
  printf '{"notify": %s}\n' "$(cat "$tmp/notify.json")" >"$tmp/notify-policy.json"
  GPURUN_SYSTEM_CONFIG=$tmp/notify-policy.json FAKE_SMI_SCENARIO=$scenario "$gpurund" --no-config \
    --state-dir "$tmp/timed-state" --socket "$tmp/timed.sock" --interval 0.2 --gpu-source nvidia-smi --nvidia-smi "$fake_smi" \
    --docker "$docker_cli" 2>>"$tmp/timed.err" &
  timed_service=$!
  for _ in $(seq 150); do  # stopped at its limit, its end seen (two samples without it) and told
    grep -q '"event":"run_ended"' "$tmp/webhook-bodies" 2>/dev/null && break
    sleep 0.2
  done
  # (GPU 2 and perhaps another: a stand-in nvidia-smi PID the host reused inside the container counts.)
  if [[ $(dk inspect --format '{{.State.Running}}' "$timed" 2>/dev/null) != true ]] &&
     grep -q "time limit: stopped run [0-9]* ($timed, user [^,]*, GPU [0-9,]*), running for" "$tmp/timed.err"; then
    pass "gpurund stopped $timed at its time limit on the real dockerd"
  else
    fail "$timed was not stopped at its time limit"; log_tail "$tmp/timed.err" 10
  fi
  events=$(webhook_events "$timed")
  [[ $events == "time_warning time_limit_stopped run_ended" ]] &&
    pass "the webhook got time_warning, time_limit_stopped and run_ended" || fail "webhook events: '$events'"
  grep -q '"ended_by":"time_limit"' "$tmp/webhook-bodies" 2>/dev/null && pass "run_ended's run says ended_by time_limit" ||
    fail "no run with ended_by time_limit in the webhook's bodies"
  if grep -q "^To: $(id -un)@lab.example.org" "$tmp/mail" 2>/dev/null &&
     grep -q "^Subject: \[gpurun\] stopped run [0-9]* ($timed" "$tmp/mail"; then
    pass "sendmail -t got the mails to $(id -un)@lab.example.org"
  else
    fail "no mail about $timed: $(head -c 300 "$tmp/mail" 2>&1)"
  fi
  kill "$timed_service"; wait "$timed_service" 2>/dev/null || fail "gpurund did not stop cleanly on SIGTERM"
  dk rm -f "$timed" >/dev/null 2>&1
fi

# ---------------------------------------------------------------------------------------
((failures == 0)) || log_tail "$tmp/dockerd.log" 15
summary
