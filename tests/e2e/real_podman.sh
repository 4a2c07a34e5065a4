#!/usr/bin/env bash
# End-to-end test: gpurun with a real podman (rootful), GPUs requested as CDI devices.
#
#   bash tests/e2e/real_podman.sh <path-to-gpurun> <path-to-fake-nvidia-smi>
#
# Everything podman keeps (storage, run state, its API socket) lives in one mktemp directory; a
# stand-in CDI spec (kind nvidia.com/gpu, devices named by the scenario's UUIDs, each a
# /dev/null node) goes to /var/run/cdi for the test's duration (podman 4.3 has no
# --cdi-spec-dir), so `--device nvidia.com/gpu=<UUID>` resolves without any GPU.
# Checked: the dry run's CDI argv and its reason; a detached launch through podman gets its CDI
# device; gpurun's queries through podman's API socket (a `podman system service` of the test's
# own) and through its CLI see that container; a container of another podman (another storage
# root: an engine gpurun does not ask) whose process the stand-in nvidia-smi reports on a GPU
# makes that GPU busy, traced through /proc/PID/cgroup.
# Rootless podman, run by a user of its own, is tests/e2e/real_podman_rootless.sh
# (e2e.real_podman_rootless).
#
# Exit status: 0 all assertions hold, 1 a failure, 77 skipped (not root, podman or a static
# busybox missing, podman cannot run a container here).
set -uo pipefail
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

readonly IMAGE=gpurun-test/busybox:1 RUN_TIMEOUT=60

(($# == 2)) || { say "usage: $0 <path-to-gpurun> <path-to-fake-nvidia-smi>" >&2; exit 2; }
gpurun=$(abspath "$1")
fake_smi=$(abspath "$2")
[[ -x $gpurun && -x $fake_smi ]] || die "gpurun or the fake nvidia-smi is missing"

[[ $(id -u) -eq 0 ]] || skip "needs root for rootful podman and /var/run/cdi (running as uid $(id -u))"
podman_bin=$(sys_which podman) || skip "podman not found (install podman)"
busybox=$(static_busybox) || skip "no statically linked busybox found (install busybox-static)"

tmp=$(mktemp -d /tmp/gpurun-podman.XXXXXX) || die "mktemp failed"
readonly tmp spec=/var/run/cdi/gpurun-e2e-$$.json
service_pid=""
cleanup() {
  local rc=$?
  set +e
  trap - EXIT
  "$tmp/podman" rm -f -a -t 0 >/dev/null 2>&1
  "$tmp/podman-other" rm -f -a -t 0 >/dev/null 2>&1
  [[ -n $service_pid ]] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  rm -f -- "$spec"
  while read -r mp; do umount -l "$mp" 2>/dev/null; done < <(awk -v t="$tmp" 'index($2, t "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
  rm -rf -- "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A podman of the test's own: storage and state in $tmp, no systemd. Where root may not raise
# rlimits (no CAP_SYS_RESOURCE, as in this project's CI VM) podman's default nofile/nproc and
# gpurun's memlock=-1 cannot be set: the wrapper then asks for limits within the current ones.
clamp=""
if ! (ulimit -H -n $(($(ulimit -H -n) + 1))) 2>/dev/null; then
  clamp="--ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
  say "note: rlimits cannot be raised here; podman run gets nofile/nproc 1024 and memlock clamped"
fi
make_podman() { # make_podman NAME DIR
  cat >"$tmp/$1" <<W
#!/usr/bin/env bash
g=(--root "$2/root" --runroot "$2/run" --storage-driver vfs --cgroup-manager cgroupfs --events-backend file)
if [[ \${1:-} == run && -n "$clamp" ]]; then
  shift; a=()
  for x in "\$@"; do [[ \$x == memlock=-1 ]] && x=memlock=$(($(ulimit -H -l) * 1024)); a+=("\$x"); done
  exec "$podman_bin" "\${g[@]}" run $clamp "\${a[@]}"
fi
exec "$podman_bin" "\${g[@]}" "\$@"
W
  chmod 755 "$tmp/$1"
}
make_podman podman "$tmp/p"
make_podman podman-other "$tmp/o"

rootfs=$tmp/rootfs
busybox_rootfs "$rootfs" "$busybox" sh env sleep cat true || die "cannot make a root file system of $busybox"
for p in podman podman-other; do
  tar --numeric-owner -C "$rootfs" -cf - . | "$tmp/$p" import - "$IMAGE" >"$tmp/import.log" 2>&1 ||
    { cat "$tmp/import.log"; skip "podman import failed"; }
done

uuid() { printf 'GPU-e2e0d000-0000-0000-0000-00000000000%s' "$1"; }
mkdir -p /var/run/cdi
remove_stale_cdi_specs
"$tmp/podman" run --rm --network none "$IMAGE" true >"$tmp/probe.log" 2>&1 ||
  { cat "$tmp/probe.log"; skip "podman cannot run a container here"; }
{
  printf '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": ['
  for i in 0 1 2 3; do
    ((i)) && printf ','
    printf '{"name": "%s", "containerEdits": {"env": ["GPURUN_CDI_GPU=%s"], "deviceNodes": [{"path": "/dev/nvidia%s", "hostPath": "/dev/null"}]}}' "$(uuid $i)" "$(uuid $i)" "$i"
  done
  printf '], "containerEdits": {}}\n'
} >"$spec"
# It runs containers: one with a CDI device failing is a failure, not a machine that cannot.
"$tmp/podman" run --rm --network none --device "nvidia.com/gpu=$(uuid 0)" "$IMAGE" true >"$tmp/probe.log" 2>&1 ||
  { cat "$tmp/probe.log"; die "podman runs containers but not one with the stand-in CDI device"; }

scenario() { # scenario [PID_ON_GPU_3]
  printf '{"gpus": ['
  for i in 0 1 2 3; do
    ((i)) && printf ','
    printf '{"index": %s, "uuid": "%s", "name": "A100", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0}' "$i" "$(uuid "$i")"
  done
  printf '], "processes": [%s]}\n' "${1:+{\"gpu_uuid\": \"$(uuid 3)\", \"pid\": $1, \"used_memory\": 1\}}"
}
scenario >"$tmp/scenario.json"
mkdir -p "$tmp/work"
gp() { # gp ENV_ASSIGNMENTS... -- gpurun args
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  (cd "$tmp/work" && env GPURUN_GPU_SOURCE=nvidia-smi GPURUN_NVIDIA_SMI="$fake_smi" FAKE_SMI_SCENARIO="$tmp/scenario.json" \
    GPURUN_LOCK_DIR="$tmp/locks" GPURUN_ENGINE=podman GPURUN_PODMAN="$tmp/podman" XDG_CONFIG_HOME="$tmp/xdg" \
    "${envs[@]}" timeout -k 5 "$RUN_TIMEOUT" "$gpurun" "$@") </dev/null
}
# Podman's CLI, not a socket (CONTAINER_HOST would make the podman client itself remote).
cli=E2E_WAY=cli
[[ -S /run/podman/podman.sock ]] && say "note: /run/podman/podman.sock exists: the CLI passes below may ask that podman too"

# 1. The dry run: CDI by UUID, and why.
out=$(gp "$cli" -- --dry-run --image "$IMAGE" 1 -- true 2>"$tmp/dry.err")
if [[ $out == "$tmp/podman run "*" --device nvidia.com/gpu=$(uuid 0) --cpus "* ]] &&
  grep -q 'GPUs requested as cdi (gpu_request auto: podman always resolves CDI devices)' "$tmp/dry.err"; then
  pass "--dry-run runs podman with --device nvidia.com/gpu=$(uuid 0) and says why"
else
  fail "--dry-run printed: $out; stderr: $(cat "$tmp/dry.err")"
fi

# 2. A detached launch through podman gets its CDI device.
name=$(gp "$cli" -- --detach --name pm-job --docker-opt --network=none --image "$IMAGE" 1 -- sleep 300 2>"$tmp/detach.err")
got=$("$tmp/podman" inspect --format '{{range .Config.Env}}{{println .}}{{end}}' pm-job 2>&1)
if [[ $name == pm-job ]] && grep -qx "GPURUN_CDI_GPU=$(uuid 0)" <<<"$got"; then
  pass "gpurun --detach started pm-job through podman with CDI device $(uuid 0)"
else
  fail "gpurun --detach printed '$name': $(cat "$tmp/detach.err"); the container's environment: $got"
fi

# 3. Its holders, through podman's CLI and through its API socket (a service of our own).
"$tmp/podman" system service --time 0 "unix://$tmp/podman.sock" >"$tmp/service.log" 2>&1 &
service_pid=$!
for ((i = 0; i < 100; i++)); do [[ -S $tmp/podman.sock ]] && break; sleep 0.1; done
api=CONTAINER_HOST=unix://$tmp/podman.sock
for way in "$cli" "$api"; do
  label=CLI
  [[ $way == "$api" ]] && label="API socket"
  picked=$(gp "$way" -- pick 1 2>"$tmp/pick.err")
  if [[ $picked == 1 ]] && gp "$way" -- status --verbose 2>/dev/null | awk '/^ +[0-9]+  /{gpu=$1} gpu==0' |
    grep -q 'in use by container pm-job'; then
    pass "through podman's $label, pm-job holds GPU 0: the pick is GPU 1"
  else
    fail "through podman's $label the pick is '$picked' (want 1): $(cat "$tmp/pick.err"); status: $(gp "$way" -- status 2>&1)"
  fi
done

# 4. A GPU process in a container of another podman (not asked by gpurun) makes its GPU busy.
"$tmp/podman-other" run -d --name other-job --network none "$IMAGE" sleep 300 >"$tmp/other.log" 2>&1 ||
  fail "the other podman could not start a container: $(cat "$tmp/other.log")"
other_pid=$("$tmp/podman-other" inspect --format '{{.State.Pid}}' other-job 2>/dev/null)
scenario "$other_pid" >"$tmp/scenario.json"
"$tmp/podman" rm -f -t 0 pm-job >/dev/null 2>&1
status=$(gp "$cli" -- status --verbose 2>&1)
short=$("$tmp/podman-other" inspect --format '{{.Id}}' other-job | cut -c1-12)
# Its user is unknown: a rootful container's processes run as the uid its image chose, an account
# inside it that names nobody on the host.
if awk '/^ +[0-9]+  /{gpu=$1} gpu==3' <<<"$status" | grep -q "in use by container $short (podman container)" &&
  gp "$cli" -- ps 2>/dev/null | grep -q "^$short  *? .*3 "; then
  pass "the other podman's container ($short, pid $other_pid on GPU 3 to nvidia-smi) is named by status and ps"
else
  fail "GPU 3's holder was not traced: status: $status; ps: $(gp "$cli" -- ps 2>&1)"
fi
picked=$(gp "$cli" -- pick 3 2>/dev/null)
if [[ $picked == "0,1,2" ]]; then
  pass "the pick of 3 leaves GPU 3 to the other podman's container"
else
  fail "the pick of 3 is '$picked', expected 0,1,2"
fi


# 5. The container verbs go through the engine (issue 20/21): `gpurun stop` with engine podman
#    runs podman, never docker (a docker client that cannot run proves it), and echoes the name.
gp "$cli" -- --detach --name pm-stop --docker-opt --network=none --image "$IMAGE" 1 -- sleep 300 >/dev/null 2>"$tmp/detach2.err" ||
  fail "second detached launch: $(cat "$tmp/detach2.err")"
gp "$cli" GPURUN_DOCKER=/nonexistent/docker -- stop pm-stop >"$tmp/stop.out" 2>"$tmp/stop.err"
stop_rc=$?
if ((stop_rc == 0)) && [[ $(cat "$tmp/stop.out") == pm-stop ]] &&
  [[ $("$tmp/podman" inspect --format '{{.State.Running}}' pm-stop 2>&1) == false ]]; then
  pass "gpurun stop pm-stop with engine podman stopped it through podman"
else
  fail "gpurun stop with engine podman: rc $stop_rc, $(cat "$tmp/stop.out" "$tmp/stop.err"); podman ps: $("$tmp/podman" ps -a 2>&1)"
fi
# A detached job's container stays once it has ended; gpurun rm removes it, through podman too.
gp "$cli" GPURUN_DOCKER=/nonexistent/docker -- rm pm-stop >"$tmp/rm.out" 2>"$tmp/rm.err"
rm_rc=$?
if ((rm_rc == 0)) && [[ $(cat "$tmp/rm.out") == pm-stop ]] && ! "$tmp/podman" container exists pm-stop 2>/dev/null; then
  pass "gpurun rm pm-stop with engine podman removed the ended container through podman"
else
  fail "gpurun rm with engine podman: rc $rm_rc, $(cat "$tmp/rm.out" "$tmp/rm.err"); podman ps: $("$tmp/podman" ps -a 2>&1)"
fi
"$tmp/podman" rm -f pm-stop >/dev/null 2>&1
summary
