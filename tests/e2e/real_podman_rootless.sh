#!/usr/bin/env bash
# End-to-end test: gpurun with a real rootless podman, run by an ordinary user the test creates.
#
#   bash tests/e2e/real_podman_rootless.sh <path-to-gpurun> <path-to-fake-nvidia-smi>
#
# The user (gpurun-e2e-rl, with subordinate ids; removed with its home at exit) runs podman
# without systemd: XDG_RUNTIME_DIR a 0700 directory the test makes for it, the cgroupfs driver,
# file events, storage under its home (overlay where rootless overlay works here, else vfs).
# A stand-in CDI spec in /var/run/cdi (rootless podman reads /etc/cdi and /var/run/cdi) names
# four GPUs by the scenario's UUIDs; rootless runc bind-mounts a device node from the host at
# the same path, so each device is a node the test makes (/dev/gpurun-e2e-rl-gpuN, a copy of
# /dev/null; removed at exit).
# Checked, gpurun run as that user: the dry run's CDI argv; a detached launch through its
# rootless podman gets its CDI device; gpurun's holder query through the user's podman CLI and
# through its API socket (a `podman system service` of the user's) sees that container, and
# --verbose says which was asked. Checked as root: the stand-in nvidia-smi reports the rootless
# container's process on its GPU; root's gpurun (whose podman knows nothing of it) traces it
# through /proc (on cgroup v1 rootless podman gives the container no cgroup: its conmon ancestor
# names it) and names the user as the owner, and its pick avoids that GPU.
#
# Exit status: 0 all assertions hold, 1 a failure, 77 skipped (not root, podman, newuidmap
# (package uidmap) or a static busybox missing, or rootless podman cannot run a container here:
# the podman error is printed).
set -uo pipefail
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

readonly IMAGE=gpurun-test/busybox:1 RUN_TIMEOUT=60 USER_NAME=gpurun-e2e-rl
readonly MARK="gpurun e2e rootless podman test"  # the test user's GECOS: a stale one is ours to remove

(($# == 2)) || { say "usage: $0 <path-to-gpurun> <path-to-fake-nvidia-smi>" >&2; exit 2; }
gpurun_src=$(abspath "$1")
fake_smi_src=$(abspath "$2")
[[ -x $gpurun_src && -x $fake_smi_src ]] || die "gpurun or the fake nvidia-smi is missing"

[[ $(id -u) -eq 0 ]] || skip "needs root to create a user, its subordinate ids and /var/run/cdi (running as uid $(id -u))"
export PATH=$SYS_PATH
podman_bin=$(command -v podman) || skip "podman not found (install podman)"
for t in newuidmap newgidmap; do command -v "$t" >/dev/null || skip "$t not found (install uidmap): rootless podman needs it"; done
for t in useradd userdel runuser; do command -v "$t" >/dev/null || skip "$t not found (install passwd, util-linux)"; done
busybox=$(static_busybox) || skip "no statically linked busybox found (install busybox-static)"

# Processes of the test's own user (and only of it) that a failed run may leave behind.
kill_user_processes() {
  local pid
  for pid in $(ps -o pid= -u "$USER_NAME" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  for ((i = 0; i < 50; i++)); do [[ -z $(ps -o pid= -u "$USER_NAME" 2>/dev/null) ]] && break; sleep 0.1; done
}
remove_user() {
  kill_user_processes
  userdel -r "$USER_NAME" >/dev/null 2>&1
  sed -i "/^$USER_NAME:/d" /etc/subuid /etc/subgid 2>/dev/null
}
if entry=$(getent passwd "$USER_NAME"); then
  [[ $(cut -d: -f5 <<<"$entry") == "$MARK" ]] || skip "a user $USER_NAME exists that this test did not create"
  say "note: removing $USER_NAME left by an earlier run"
  remove_user
fi

tmp=$(mktemp -d /tmp/gpurun-podman-rl.XXXXXX) || die "mktemp failed"
chmod 755 "$tmp"
readonly tmp spec=/var/run/cdi/gpurun-e2e-rl-$$.json
user_created="" service_pid="" nodes=() home=""
rt=$tmp/run work=$tmp/work utmp=$tmp/user
as_user() { # as_user COMMAND...: run as the test user with a clean login-like environment
  (cd "$work" && runuser -u "$USER_NAME" -- env -i PATH="$PATH" HOME="$home" USER="$USER_NAME" LOGNAME="$USER_NAME" \
    GPURUN_SYSTEM_CONFIG="$GPURUN_SYSTEM_CONFIG" \
    XDG_RUNTIME_DIR="$rt" "$@") </dev/null
}
cleanup() {
  local rc=$?
  set +e
  trap - EXIT
  if [[ -n $user_created ]]; then
    [[ -x $tmp/bin/podman ]] && as_user timeout 60 "$tmp/bin/podman" rm -f -a -t 0 >/dev/null 2>&1
    [[ -n $service_pid ]] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
    [[ -x $tmp/bin/podman ]] && as_user timeout 60 "$tmp/bin/podman" system reset -f >/dev/null 2>&1
    remove_user
  fi
  rm -f -- "$spec" "${nodes[@]}"
  rm -rf -- "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The user, its home, its subordinate ids (useradd adds them where login.defs says so).
useradd -m -c "$MARK" -s /bin/sh "$USER_NAME" >"$tmp/useradd.log" 2>&1 || { cat "$tmp/useradd.log"; skip "useradd failed"; }
user_created=1
uid=$(id -u "$USER_NAME") home=$(getent passwd "$USER_NAME" | cut -d: -f6)
for f in /etc/subuid /etc/subgid; do
  grep -q "^$USER_NAME:" "$f" 2>/dev/null && continue
  # After every range already given, so that no two users share ids.
  start=$(awk -F: 'BEGIN { m = 100000 } { if ($2 + $3 > m) m = $2 + $3 } END { print m }' /etc/subuid /etc/subgid 2>/dev/null)
  printf '%s:%s:65536\n' "$USER_NAME" "$start" >>"$f"
done
install -d -m 700 -o "$USER_NAME" -g "$USER_NAME" "$rt" "$work" "$utmp"

# What the user runs: copies it may read wherever the build is.
mkdir -p "$tmp/bin"
cp "$gpurun_src" "$tmp/bin/gpurun"
cp "$fake_smi_src" "$tmp/bin/nvidia-smi"
chmod 755 "$tmp/bin" "$tmp/bin/gpurun" "$tmp/bin/nvidia-smi"

# The user's podman: no systemd, storage under its home. An ordinary user may not raise its hard
# rlimits: gpurun's memlock=-1 is clamped to the user's hard limit where that is not unlimited.
make_podman() { # make_podman DRIVER
  cat >"$tmp/bin/podman" <<W
#!/usr/bin/env bash
g=(--root "$home/storage" --runroot "$rt/containers" --storage-driver "$1" --cgroup-manager cgroupfs --events-backend file)
if [[ \${1:-} == run && \$(ulimit -H -l) != unlimited ]]; then
  shift; a=()
  for x in "\$@"; do [[ \$x == memlock=-1 ]] && x=memlock=\$((\$(ulimit -H -l) * 1024)); a+=("\$x"); done
  exec "$podman_bin" "\${g[@]}" run "\${a[@]}"
fi
exec "$podman_bin" "\${g[@]}" "\$@"
W
  chmod 755 "$tmp/bin/podman"
}

rootfs=$tmp/rootfs
busybox_rootfs "$rootfs" "$busybox" sh env sleep cat true test || die "cannot make a root file system of $busybox"
tar --numeric-owner -C "$rootfs" -cf "$tmp/rootfs.tar" .
chmod 644 "$tmp/rootfs.tar"

# Overlay where rootless overlay works here, else vfs: the first driver that imports and runs.
driver="" why=""
for d in overlay vfs; do
  make_podman "$d"
  if as_user "$tmp/bin/podman" import "$tmp/rootfs.tar" "$IMAGE" >"$tmp/import.log" 2>&1 &&
    as_user "$tmp/bin/podman" run --rm --network none "$IMAGE" true >"$tmp/probe.log" 2>&1; then
    driver=$d
    break
  fi
  why+="$d: $(cat "$tmp/import.log" "$tmp/probe.log" 2>/dev/null | grep -v '^Getting\|^Copying\|^Writing\|^Storing\|^sha256' | tail -3)"$'\n'
  as_user "$tmp/bin/podman" system reset -f >/dev/null 2>&1
  kill_user_processes
  rm -f "$tmp/import.log" "$tmp/probe.log"
done
[[ -n $driver ]] || { printf '%s' "$why"; skip "rootless podman cannot run a container here (as $USER_NAME, uid $uid): ${why//$'\n'/; }"; }
say "note: rootless podman runs as $USER_NAME (uid $uid) with the $driver storage driver"

# The stand-in CDI spec: device nodes the test makes (rootless runc bind-mounts the host's node
# at the device's path, so that path must exist on the host).
uuid() { printf 'GPU-e2e1f000-0000-0000-0000-00000000000%s' "$1"; }
node() { printf '/dev/gpurun-e2e-rl-gpu%s' "$1"; }
for i in 0 1 2 3; do
  rm -f "$(node "$i")"
  mknod -m 666 "$(node "$i")" c 1 3 || skip "cannot make the device node $(node "$i") (mknod c 1 3)"
  nodes+=("$(node "$i")")
done
mkdir -p /var/run/cdi
remove_stale_cdi_specs
{
  printf '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": ['
  for i in 0 1 2 3; do
    ((i)) && printf ','
    printf '{"name": "%s", "containerEdits": {"env": ["GPURUN_CDI_GPU=%s"], "deviceNodes": [{"path": "%s"}]}}' "$(uuid $i)" "$(uuid $i)" "$(node $i)"
  done
  printf '], "containerEdits": {}}\n'
} >"$spec"
chmod 644 "$spec"
as_user "$tmp/bin/podman" run --rm --network none --device "nvidia.com/gpu=$(uuid 0)" "$IMAGE" test -c "$(node 0)" >"$tmp/probe.log" 2>&1 ||
  { cat "$tmp/probe.log"; die "rootless podman runs containers (above) but not one with the stand-in CDI device: $(tail -1 "$tmp/probe.log")"; }

scenario() { # scenario [PID_ON_GPU_0]
  printf '{"gpus": ['
  for i in 0 1 2 3; do
    ((i)) && printf ','
    printf '{"index": %s, "uuid": "%s", "name": "A100", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0}' "$i" "$(uuid "$i")"
  done
  printf '], "processes": [%s]}\n' "${1:+{\"gpu_uuid\": \"$(uuid 0)\", \"pid\": $1, \"used_memory\": 1\}}"
}
scenario >"$tmp/scenario.json"
chmod 644 "$tmp/scenario.json"
common=(GPURUN_GPU_SOURCE=nvidia-smi GPURUN_NVIDIA_SMI="$tmp/bin/nvidia-smi" FAKE_SMI_SCENARIO="$tmp/scenario.json" GPURUN_ENGINE=podman)
gp_user() { # gp_user gpurun args, as the user with its podman and a lock dir of its own
  as_user "${common[@]}" GPURUN_PODMAN="$tmp/bin/podman" GPURUN_LOCK_DIR="$utmp/locks" XDG_CONFIG_HOME="$utmp/xdg" \
    timeout -k 5 "$RUN_TIMEOUT" "$tmp/bin/gpurun" "$@"
}
# Root's gpurun asks a rootful podman of its own (storage in $tmp: it knows no container).
cat >"$tmp/bin/podman-root" <<W
#!/usr/bin/env bash
unset CONTAINER_HOST  # it would make this podman a remote client
exec "$podman_bin" --root "$tmp/root-podman/root" --runroot "$tmp/root-podman/run" --storage-driver vfs --cgroup-manager cgroupfs --events-backend file "\$@"
W
chmod 755 "$tmp/bin/podman-root"
gp_root() {
  (cd "$tmp" && env "${common[@]}" GPURUN_PODMAN="$tmp/bin/podman-root" GPURUN_LOCK_DIR="$tmp/root-locks" XDG_CONFIG_HOME="$tmp/xdg" \
    CONTAINER_HOST="unix://$tmp/root-podman/none.sock" timeout -k 5 "$RUN_TIMEOUT" "$tmp/bin/gpurun" "$@") </dev/null
}

# 1. The dry run, as the user: CDI by UUID, and why.
out=$(gp_user --dry-run --image "$IMAGE" 1 -- true 2>"$tmp/dry.err")
if [[ $out == "$tmp/bin/podman run "*" --device nvidia.com/gpu=$(uuid 0) --cpus "* ]] &&
  grep -q 'GPUs requested as cdi (gpu_request auto: podman always resolves CDI devices)' "$tmp/dry.err"; then
  pass "--dry-run as $USER_NAME runs its podman with --device nvidia.com/gpu=$(uuid 0) and says why"
else
  fail "--dry-run as $USER_NAME printed: $out; stderr: $(cat "$tmp/dry.err")"
fi

# 2. A detached launch through the user's rootless podman gets its CDI device.
# Its time limit is a label the service cannot read there: the launch says so.
name=$(gp_user --detach --name rl-job --time-limit 8h --docker-opt --network=none --image "$IMAGE" 1 -- sleep 300 2>"$tmp/detach.err")
listed=$(as_user "$tmp/bin/podman" ps --filter name=rl-job --format '{{.Names}} {{.Status}}' 2>&1)
env_got=$(as_user "$tmp/bin/podman" inspect --format '{{range .Config.Env}}{{println .}}{{end}}' rl-job 2>&1)
if [[ $name == rl-job && $listed == "rl-job Up "* ]] && grep -qx "GPURUN_CDI_GPU=$(uuid 0)" <<<"$env_got" &&
  as_user "$tmp/bin/podman" exec rl-job test -c "$(node 0)"; then
  pass "gpurun --detach as $USER_NAME started rl-job in its rootless podman with CDI device $(uuid 0)"
else
  fail "gpurun --detach printed '$name': $(cat "$tmp/detach.err"); podman ps: $listed; its environment: $env_got"
fi
if grep -q 'your own (rootless) podman, whose containers the gpurun service sees only as your processes: its time limit is not acted on' "$tmp/detach.err"; then
  pass "the rootless launch with --time-limit says the service cannot act on it"
else
  fail "the rootless launch with --time-limit said nothing of it: $(cat "$tmp/detach.err")"
fi

# 3. Its holders as the user: through its podman's CLI (no socket yet), then its API socket.
check_user_holders() { # check_user_holders LABEL VERBOSE_LINE
  local picked status
  picked=$(gp_user --verbose pick 1 2>"$tmp/pick.err")
  status=$(gp_user status --verbose 2>&1)
  if [[ $picked == 1 ]] && grep -qF -- "$2" "$tmp/pick.err" &&
    awk '/^ +[0-9]+  /{gpu=$1} gpu==0' <<<"$status" | grep -q 'in use by container rl-job'; then
    pass "as $USER_NAME, through its podman's $1, rl-job holds GPU 0: the pick is GPU 1"
  else
    fail "as $USER_NAME through its podman's $1 the pick is '$picked' (want 1, and '$2' in its --verbose output): $(cat "$tmp/pick.err"); status: $status"
  fi
}
check_user_holders CLI "asking $tmp/bin/podman (the CLI), not podman's API: no socket of ours at $rt/podman/podman.sock"
install -d -m 700 -o "$USER_NAME" -g "$USER_NAME" "$rt/podman"
runuser -u "$USER_NAME" -- env -i PATH="$PATH" HOME="$home" USER="$USER_NAME" XDG_RUNTIME_DIR="$rt" \
  "$tmp/bin/podman" system service --time=0 "unix://$rt/podman/podman.sock" </dev/null >"$tmp/service.log" 2>&1 &
service_pid=$!
for ((i = 0; i < 100; i++)); do [[ -S $rt/podman/podman.sock ]] && break; sleep 0.1; done
[[ -S $rt/podman/podman.sock ]] || fail "the user's podman service made no socket: $(cat "$tmp/service.log")"
check_user_holders "API socket" "asking podman's API at $rt/podman/podman.sock"

# 4. As root: nvidia-smi reports the rootless container's process on GPU 0; root's podman knows
# nothing of it, /proc does.
pid=$(as_user "$tmp/bin/podman" inspect --format '{{.State.Pid}}' rl-job 2>/dev/null)
id=$(as_user "$tmp/bin/podman" inspect --format '{{.Id}}' rl-job 2>/dev/null)
short=${id:0:12}
scenario "$pid" >"$tmp/scenario.json"
say "note: rl-job ($short) runs as pid $pid; its /proc/$pid/cgroup: $(tr '\n' ' ' <"/proc/$pid/cgroup" 2>/dev/null)"
status=$(gp_root status --verbose 2>&1)
ps_out=$(gp_root ps 2>&1)
if awk '/^ +[0-9]+  /{gpu=$1} gpu==0' <<<"$status" |
  grep -q "in use by container $short ($USER_NAME, rootless podman container)" &&
  grep -q "^  0 .*  $USER_NAME  *busy: $USER_NAME" <<<"$status" &&
  grep -q "^$short .*$USER_NAME .*0 " <<<"$ps_out"; then
  pass "as root, the rootless container ($short, pid $pid on GPU 0 to nvidia-smi) is named by status and ps, owned by $USER_NAME"
else
  fail "as root, GPU 0's holder was not traced to $USER_NAME: status: $status; ps: $ps_out"
fi
picked=$(gp_root pick 3 2>"$tmp/pick.err")
if [[ $picked == "1,2,3" ]]; then
  pass "as root, the pick of 3 leaves GPU 0 to $USER_NAME's rootless container"
else
  fail "as root, the pick of 3 is '$picked', expected 1,2,3: $(cat "$tmp/pick.err")"
fi

# 5. The gpurun service, as root: the rootless container is one run of $USER_NAME's (issue 22).
gpurund=$(dirname -- "$gpurun_src")/gpurund
if [[ -x $gpurund ]]; then
  # exec: $! is gpurund itself, which the kill below stops (a subshell's kill would leave it).
  (cd "$tmp" && exec env "${common[@]}" CONTAINER_HOST="unix://$tmp/root-podman/none.sock" \
    "$gpurund" --state-dir "$tmp/gpurund-state" --socket "$tmp/gpurund.sock" --interval 0.2 \
    --engine podman --podman "$tmp/bin/podman-root" --gpu-source nvidia-smi --nvidia-smi "$tmp/bin/nvidia-smi" \
    </dev/null >/dev/null 2>"$tmp/gpurund.err") &
  gpurund_pid=$!
  line=""
  for ((i = 0; i < 100; i++)); do
    line=$(GPURUN_SERVICE_SOCKET=$tmp/gpurund.sock "$tmp/bin/gpurun" history --json 2>/dev/null | python3 -c '
import json, sys
runs = [r for r in json.load(sys.stdin) if (r["container"] or "").startswith(sys.argv[1])]
print(len(runs), *(r["user"] for r in runs))' "$short" 2>/dev/null)
    [[ $line == "1 $USER_NAME" ]] && break
    sleep 0.2
  done
  kill "$gpurund_pid" 2>/dev/null
  wait "$gpurund_pid" 2>/dev/null
  if [[ $line == "1 $USER_NAME" ]]; then
    pass "gpurund records the rootless container $short as one run of $USER_NAME"
  else
    fail "gpurund's runs of $short: '$line'; $(tail -5 "$tmp/gpurund.err")"
  fi
else
  say "SKIP (section 5): no gpurund beside $gpurun_src"
fi

summary
