#!/usr/bin/env bash
# End-to-end test: run gpurun for real against a private, throw-away Docker engine.
#
#   bash tests/e2e/real_docker_engine.sh <path-to-gpurun> <path-to-fake-nvidia-smi> [<path-to-engine_api_probe>]
#
# It starts its own containerd + dockerd (vfs storage, no bridge, no iptables) with every
# socket, state and data directory inside one mktemp directory, so it never touches an
# engine that is already running, nor a second copy of itself running concurrently.
# A stub `nvidia-container-runtime-hook` first on the daemon's PATH makes dockerd register
# its nvidia device driver, so `--gpus '"device=…"'` is accepted and the container gets
# NVIDIA_VISIBLE_DEVICES, without any GPU. A busybox image is built with `docker import`.
#
# gpurun is then run (first with --dry-run, then for real) against a fake nvidia-smi
# scenario where only GPUs 2 and 5 are free, and the container reports what it got.
# With the probe (tests/e2e/engine_api_probe.cpp), containers asking for GPUs in each form this
# dockerd accepts are then listed through the Engine API and through the CLI, and compared; with
# ENGINE_QUERY_BENCH set to bench/engine_query_bench's path, that benchmark runs against them;
# with ENGINE_AWARENESS_BENCH set to bench/compare_engine_awareness.sh, that one.
#
# Exit status: 0 all assertions hold, 1 a failure, 77 skipped (cannot run a Docker engine
# here: not root, engine packages missing, dockerd does not start). 77 is the CTest
# SKIP_RETURN_CODE.
set -uo pipefail

readonly SKIP=77
readonly IMAGE=gpurun-test/busybox:1
readonly WANT_GPUS=2,5
readonly WANT_STATUS=3
readonly START_TIMEOUT=60  # seconds to wait for containerd / dockerd
readonly RUN_TIMEOUT=60    # seconds one gpurun invocation may take

t_start=$(date +%s)
failures=0
passes=0
say() { printf '%s\n' "$*"; }
pass() { passes=$((passes + 1)); say "PASS: $*"; }
fail() { failures=$((failures + 1)); say "FAIL: $*"; }
skip() { say "SKIP: $*"; exit "$SKIP"; }
die() { say "FAIL: $*"; exit 1; }

if (($# != 2 && $# != 3)); then
  say "usage: $0 <path-to-gpurun> <path-to-fake-nvidia-smi> [<path-to-engine_api_probe>]" >&2
  exit 2
fi

abspath() { # absolute path of an existing file, without needing realpath(1)
  local d
  d=$(cd "$(dirname -- "$1")" && pwd -P) || return 1
  printf '%s/%s\n' "$d" "$(basename -- "$1")"
}
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
readonly SYS_PATH=/usr/sbin:/usr/bin:/sbin:/bin
sys_which() { PATH=$SYS_PATH command -v -- "$1"; }
docker_cli=${GPURUN_E2E_DOCKER:-/usr/bin/docker}
[[ -x $docker_cli ]] || skip "docker client $docker_cli not found (install docker.io)"
for tool in dockerd containerd runc containerd-shim-runc-v2; do
  sys_which "$tool" >/dev/null || skip "$tool not found in $SYS_PATH (install docker.io)"
done
dockerd_bin=$(sys_which dockerd)
containerd_bin=$(sys_which containerd)
command -v python3 >/dev/null || skip "python3 not found"

busybox=""
for c in /bin/busybox /usr/bin/busybox "$(sys_which busybox || true)"; do
  [[ -n $c && -x $c ]] || continue
  # The image has no libc: only a statically linked busybox will do.
  ldd_out=$(LC_ALL=C ldd "$c" 2>&1)
  if [[ $ldd_out == *"not a dynamic executable"* || $ldd_out == *"statically linked"* ]]; then
    busybox=$c
    break
  fi
done
[[ -n $busybox ]] || skip "no statically linked busybox found (install busybox-static)"

# ---------------------------------------------------------------------------------------
# Private scratch directory, torn down on every exit path.
# ---------------------------------------------------------------------------------------
# Unix socket paths are limited to ~108 bytes; keep the base short.
base=${TMPDIR:-/tmp}
((${#base} <= 40)) || base=/tmp
tmp=$(mktemp -d "$base/gpurun-e2e.XXXXXX") || die "mktemp failed"
tmp=$(cd "$tmp" && pwd -P) # physical path: it is bind-mounted and compared with pwd
readonly tmp
containerd_pid=""
dockerd_pid=""

# shellcheck disable=SC2317  # only reached from the EXIT trap
stop_pid() { # stop_pid PID NAME: SIGTERM, wait up to 30 s, then SIGKILL; reaps the child
  local pid=$1 name=$2 i
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "note: $name (pid $pid) ignored SIGTERM for 30 s, killing it"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local rc=$? mp
  set +e
  trap - EXIT INT TERM
  stop_pid "$dockerd_pid" dockerd
  stop_pid "$containerd_pid" containerd
  # dockerd unmounts its data root when it shuts down cleanly; after a crash or a SIGKILL
  # mounts may be left under $tmp. Unmount deepest first, lazily, before removing anything.
  while read -r mp; do
    umount -l "$mp" 2>/dev/null || umount -R -l "$mp" 2>/dev/null
  done < <(awk -v t="$tmp" 'index($2, t "/") == 1 || $2 == t { print $2 }' /proc/self/mounts | sort -r)
  rm -rf -- "$tmp"
  say "elapsed: $(($(date +%s) - t_start)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------
# Private containerd. dockerd 20.10 would otherwise adopt a system containerd it finds at
# /run/containerd/containerd.sock (sharing its "moby" namespace with the host engine), and
# only starts its own supervisor when there is none; an explicit one is never shared.
# ---------------------------------------------------------------------------------------
hooks=$tmp/hooks
mkdir -p "$hooks" "$tmp/cli"
# runc runs this as an OCI prestart hook in every --gpus container; it only leaves a trace.
cat >"$hooks/nvidia-container-runtime-hook" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/hook-calls"
exit 0
EOF
chmod 755 "$hooks/nvidia-container-runtime-hook"
daemon_path=$hooks:$SYS_PATH

cat >"$tmp/containerd.toml" <<EOF
version = 2
root = "$tmp/containerd/root"
state = "$tmp/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$tmp/c.sock"
[ttrpc]
  address = "$tmp/c.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
PATH=$daemon_path "$containerd_bin" --config "$tmp/containerd.toml" \
  >"$tmp/containerd.log" 2>&1 </dev/null &
containerd_pid=$!

log_tail() { say "---- last lines of $1 ----"; tail -n "${2:-25}" "$1" 2>/dev/null | sed 's/^/    /'; }

for ((i = 0; i < START_TIMEOUT * 10; i++)); do
  [[ -S $tmp/c.sock ]] && break
  kill -0 "$containerd_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ ! -S $tmp/c.sock ]]; then
  log_tail "$tmp/containerd.log"
  skip "private containerd did not come up (see its log above)"
fi

# ---------------------------------------------------------------------------------------
# Private dockerd.
# ---------------------------------------------------------------------------------------
# Our own (nearly empty) daemon.json, so /etc/docker/daemon.json is never read. dockerd
# 20.10 also writes an identity key to /etc/docker/key.json unless the (flag-less, config
# file only) "deprecated-key-path" setting points elsewhere; newer dockerds have no such key.
# A runtime named "nvidia" (plain runc here) lets the legacy `--runtime=nvidia` form be created.
runtimes="\"runtimes\": {\"nvidia\": {\"path\": \"$(sys_which runc)\"}}"
if grep -qa -- 'json:"deprecated-key-path' "$dockerd_bin"; then
  printf '{"deprecated-key-path": "%s", %s}\n' "$tmp/key.json" "$runtimes" >"$tmp/daemon.json"
else
  printf '{%s}\n' "$runtimes" >"$tmp/daemon.json"
fi
dockerd_args=(
  --config-file "$tmp/daemon.json"
  --containerd "$tmp/c.sock"
  --host "unix://$tmp/d.sock"
  --data-root "$tmp/data"
  --exec-root "$tmp/x"
  --pidfile "$tmp/dockerd.pid"
  --storage-driver=vfs
  --bridge=none
  --iptables=false
  --ip-forward=false # do not flip the host's net.ipv4.ip_forward
  --ip-masq=false
)
PATH=$daemon_path "$dockerd_bin" "${dockerd_args[@]}" >"$tmp/dockerd.log" 2>&1 </dev/null &
dockerd_pid=$!

export DOCKER_HOST=unix://$tmp/d.sock
export DOCKER_CONFIG=$tmp/cli # keep the client away from ~/.docker
unset DOCKER_CONTEXT DOCKER_TLS_VERIFY DOCKER_CERT_PATH DOCKER_API_VERSION
dk() { "$docker_cli" "$@"; }

up=0
for ((i = 0; i < START_TIMEOUT * 5; i++)); do
  if dk version >/dev/null 2>&1; then
    up=1
    break
  fi
  kill -0 "$dockerd_pid" 2>/dev/null || break
  sleep 0.2
done
if ((!up)); then
  log_tail "$tmp/dockerd.log"
  kill -0 "$dockerd_pid" 2>/dev/null && why="did not answer within ${START_TIMEOUT} s" || why="exited"
  skip "private dockerd $why (see its log above)"
fi
say "engine: $(dk version --format 'dockerd {{.Server.Version}}, API {{.Server.APIVersion}}') at $DOCKER_HOST"

# ---------------------------------------------------------------------------------------
# Busybox image from the host's static busybox.
# ---------------------------------------------------------------------------------------
rootfs=$tmp/rootfs
mkdir -p "$rootfs"/{bin,dev,etc,proc,sys,tmp}
chmod 1777 "$rootfs/tmp"
cp "$busybox" "$rootfs/bin/busybox"
applets=$("$busybox" --list) || die "$busybox --list failed"
for a in $applets; do
  [[ $a == busybox || -e $rootfs/bin/$a ]] || ln -s busybox "$rootfs/bin/$a"
done
for a in sh cat echo env id pwd; do
  [[ -e $rootfs/bin/$a ]] || skip "$busybox lacks the '$a' applet"
done
printf 'root:x:0:0:root:/:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\n' >"$rootfs/etc/group"
if ! tar --numeric-owner -C "$rootfs" -cf - . | dk import - "$IMAGE" >"$tmp/import.log" 2>&1; then
  cat "$tmp/import.log"
  die "docker import of the busybox rootfs failed"
fi
pass "built image $IMAGE from $busybox"

# ---------------------------------------------------------------------------------------
# RLIMIT_MEMLOCK. gpurun passes `--ulimit memlock=-1`; runc can only raise the hard limit
# with CAP_SYS_RESOURCE. Some sandboxes (this project's CI VM included) withhold that
# capability even from root, and then every such container fails with "error setting
# rlimits for ready process: error setting rlimit type 8: operation not permitted". There,
# and only there, gpurun is pointed at a tiny shim that rewrites memlock to the current hard
# limit before exec'ing the real client; everything else is passed through untouched.
# ---------------------------------------------------------------------------------------
docker_for_gpurun=$docker_cli
memlock_shim=0
if ! (ulimit -l unlimited) 2>/dev/null; then
  hard_kb=$(ulimit -H -l)
  memlock_shim=1
  docker_for_gpurun=$tmp/docker-memlock-shim
  cat >"$docker_for_gpurun" <<EOF
#!/usr/bin/env bash
# Test shim: RLIMIT_MEMLOCK cannot be raised here; clamp gpurun's memlock=-1 to the hard limit.
args=()
for a in "\$@"; do
  case \$a in
    memlock=-1* | memlock=unlimited*) a=memlock=$((hard_kb * 1024)) ;;
    --ulimit=memlock=-1* | --ulimit=memlock=unlimited*) a=--ulimit=memlock=$((hard_kb * 1024)) ;;
  esac
  args+=("\$a")
done
exec "$docker_cli" "\${args[@]}"
EOF
  chmod 755 "$docker_for_gpurun"
  say "note: RLIMIT_MEMLOCK cannot be raised here (no CAP_SYS_RESOURCE; hard limit ${hard_kb} KiB);"
  say "      running gpurun with --docker $docker_for_gpurun, which clamps memlock=-1 and execs $docker_cli"
fi

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
  --image "$IMAGE" 1 -- sleep 120) >"$tmp/detach.out" 2>"$tmp/detach.err" </dev/null
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
if "${gpurun_env[@]}" "$gpurun" status | grep -q "^  2 .*busy: in use by container $detached"; then
  pass "gpurun status says GPU 2 is in use by $detached"
else
  fail "gpurun status does not show GPU 2 in use by $detached"
fi
if "${gpurun_env[@]}" "$gpurun" ps | grep -q "^$detached .* 2 .*running .*yes$"; then
  pass "gpurun ps lists $detached on GPU 2, started by gpurun"
else
  fail "gpurun ps does not list $detached on GPU 2: $("${gpurun_env[@]}" "$gpurun" ps 2>&1)"
fi
dk rm -f "$detached" >/dev/null 2>&1
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
  ((${#started[@]} == 0)) || dk rm -f "${started[@]}" >/dev/null 2>&1
fi

# ---------------------------------------------------------------------------------------
if ((failures > 0)); then
  log_tail "$tmp/dockerd.log" 15
  say "FAIL: $failures assertion(s) failed, $passes passed"
  exit 1
fi
say "PASS: all $passes assertions hold"
exit 0
