#!/usr/bin/env bash
# End-to-end test of `sudo gpurun` (issue 12) with real parts: two users created here, a real
# sudo rule for the built binary, and a private Docker engine (as tests/e2e/real_docker_engine.sh
# starts one). It checks that the container runs as the caller, that files it writes belong to
# the caller, that another user cannot stop it, and that each refusal ends with 125 before any
# container starts.
#
#   bash tests/e2e/sudo_real.sh <path-to-gpurun> <path-to-fake-nvidia-smi>
#
# It writes /etc/gpurun/config.json and /etc/sudoers.d/gpurun-e2e (both put back on exit) and
# creates and removes the users gpurun-e2e-a and gpurun-e2e-b. Exit 0 pass, 1 fail, 77 skipped
# (not root, no sudo/useradd, no engine).
set -uo pipefail
readonly SKIP=77 IMAGE=gpurun-test/busybox:1 A=gpurun-e2e-a B=gpurun-e2e-b
failures=0
say() { printf '%s\n' "$*"; }
pass() { say "PASS: $*"; }
fail() { failures=$((failures + 1)); say "FAIL: $*"; }
skip() { say "SKIP: $*"; exit "$SKIP"; }

(($# == 2)) || { say "usage: $0 GPURUN FAKE_SMI"; exit 2; }
[[ $(id -u) -eq 0 ]] || skip "needs root to create users, a sudo rule and a Docker engine (uid $(id -u))"
for t in sudo useradd userdel runuser; do command -v $t >/dev/null || skip "$t not found (scripts/install-deps installs sudo)"; done
SYS_PATH=/usr/sbin:/usr/bin:/sbin:/bin
sys_which() { PATH=$SYS_PATH command -v -- "$1"; }
docker_cli=${GPURUN_E2E_DOCKER:-/usr/bin/docker}
[[ -x $docker_cli ]] || skip "docker client $docker_cli not found"
for t in dockerd containerd runc; do sys_which $t >/dev/null || skip "$t not found"; done
busybox=""
for c in /bin/busybox /usr/bin/busybox; do
  [[ -x $c ]] || continue
  ldd_out=$(LC_ALL=C ldd "$c" 2>&1)
  [[ $ldd_out == *"not a dynamic"* || $ldd_out == *statically* ]] && busybox=$c && break
done
[[ -n $busybox ]] || skip "no static busybox (install busybox-static)"
getent passwd $A >/dev/null && skip "user $A exists already: another run of this test?"

tmp=$(mktemp -d /tmp/gpurun-sudo.XXXXXX) && chmod 755 "$tmp"
cpid="" dpid=""
restore() { # restore FILE: put back what was there before
  if [[ -e $tmp/saved$(basename "$1") ]]; then mv -f "$tmp/saved$(basename "$1")" "$1"; else rm -f "$1"; fi
}
cleanup() {
  local rc=$?
  set +e
  [[ -n $dpid ]] && kill "$dpid" && wait "$dpid"
  [[ -n $cpid ]] && kill "$cpid" && wait "$cpid"
  restore /etc/gpurun/config.json
  restore /etc/sudoers.d/gpurun-e2e
  userdel -r $A >/dev/null 2>&1; userdel -r $B >/dev/null 2>&1
  awk -v t="$tmp" 'index($2, t "/") == 1 { print $2 }' /proc/self/mounts | sort -r | xargs -r -n1 umount -l
  rm -rf -- "$tmp"
  exit "$rc"
}
trap cleanup EXIT
mkdir -p /etc/gpurun /etc/sudoers.d
[[ -e /etc/gpurun/config.json ]] && cp -p /etc/gpurun/config.json "$tmp/savedconfig.json"
[[ -e /etc/sudoers.d/gpurun-e2e ]] && cp -p /etc/sudoers.d/gpurun-e2e "$tmp/savedgpurun-e2e"

# The engine, private to this test (see real_docker_engine.sh for why each setting).
mkdir -p "$tmp/hooks" "$tmp/cli"
printf '#!/bin/sh\nexit 0\n' >"$tmp/hooks/nvidia-container-runtime-hook" && chmod 755 "$tmp/hooks/nvidia-container-runtime-hook"
cat >"$tmp/containerd.toml" <<EOF
version = 2
root = "$tmp/containerd/root"
state = "$tmp/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$tmp/c.sock"
[ttrpc]
  address = "$tmp/c.sock.ttrpc"
EOF
PATH=$tmp/hooks:$SYS_PATH "$(sys_which containerd)" --config "$tmp/containerd.toml" >"$tmp/containerd.log" 2>&1 </dev/null &
cpid=$!
for ((i = 0; i < 300; i++)); do [[ -S $tmp/c.sock ]] && break; sleep 0.1; done
[[ -S $tmp/c.sock ]] || skip "containerd did not start"
dockerd_bin=$(sys_which dockerd)
if grep -qa -- 'json:"deprecated-key-path' "$dockerd_bin"; then
  printf '{"deprecated-key-path": "%s"}\n' "$tmp/key.json" >"$tmp/daemon.json"
else echo '{}' >"$tmp/daemon.json"; fi
PATH=$tmp/hooks:$SYS_PATH "$dockerd_bin" --config-file "$tmp/daemon.json" --containerd "$tmp/c.sock" \
  --host "unix://$tmp/d.sock" --data-root "$tmp/data" --exec-root "$tmp/x" --pidfile "$tmp/dockerd.pid" \
  --storage-driver=vfs --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
  >"$tmp/dockerd.log" 2>&1 </dev/null &
dpid=$!
export DOCKER_HOST=unix://$tmp/d.sock DOCKER_CONFIG=$tmp/cli
dk() { "$docker_cli" "$@"; }
for ((i = 0; i < 300; i++)); do dk version >/dev/null 2>&1 && break; sleep 0.2; done
dk version >/dev/null 2>&1 || { tail "$tmp/dockerd.log"; skip "dockerd did not start"; }
rootfs=$tmp/rootfs
mkdir -p "$rootfs"/{bin,dev,etc,proc,sys,tmp} && chmod 1777 "$rootfs/tmp" && cp "$busybox" "$rootfs/bin/busybox"
for a in $("$busybox" --list); do [[ -e $rootfs/bin/$a ]] || ln -s busybox "$rootfs/bin/$a"; done
printf 'root:x:0:0:root:/:/bin/sh\n' >"$rootfs/etc/passwd"
tar --numeric-owner -C "$rootfs" -cf - . | dk import - "$IMAGE" >/dev/null || { say "FAIL: docker import"; exit 1; }

# docker: the memlock shim of real_docker_engine.sh where RLIMIT_MEMLOCK cannot be raised.
docker_prog=$docker_cli
if ! (ulimit -l unlimited) 2>/dev/null; then
  hard=$(($(ulimit -H -l) * 1024))
  docker_prog=$tmp/docker-shim
  printf '#!/bin/bash\nargs=()\nfor a in "$@"; do [[ $a == memlock=-1 ]] && a=memlock=%s; args+=("$a"); done\nexec %s "${args[@]}"\n' \
    "$hard" "$docker_cli" >"$docker_prog"
  chmod 755 "$docker_prog"
fi

# The users, the admin's file and the sudo rule.
useradd -m -s /bin/sh $A && useradd -m -s /bin/sh $B || { say "FAIL: useradd"; exit 1; }
uid_a=$(id -u $A)
install -m 755 "$1" "$tmp/gpurun"
gpurun=$tmp/gpurun
cat >"$tmp/scenario.json" <<'EOF'
{"gpus": [
 {"index": 0, "uuid": "GPU-s0", "name": "NVIDIA A100", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0, "mig.mode.current": "Disabled"},
 {"index": 1, "uuid": "GPU-s1", "name": "NVIDIA A100", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0, "mig.mode.current": "Disabled"}],
 "processes": []}
EOF
install -m 755 "$2" "$tmp/nvidia-smi"
# The admin names the engine in the program they configure: under sudo gpurun drops the caller's
# DOCKER_* variables (the rule below keeps them, as a careless site might, to prove it).
# When $tmp/swap names "SOURCE TARGET", it also swaps SOURCE for a symlink to TARGET right before
# `docker run`: the worst moment a caller racing gpurun could hit (test 4).
cat >"$tmp/docker-for-root" <<EOF
#!/bin/sh
if [ "\$1" = run ] && [ -f $tmp/swap ]; then
  read -r src dst <$tmp/swap && rm -f $tmp/swap && mv "\$src" "\$src.old" && ln -s "\$dst" "\$src"
fi
DOCKER_HOST=$DOCKER_HOST DOCKER_CONFIG=$DOCKER_CONFIG exec $docker_prog "\$@"
EOF
chmod 755 "$tmp/docker-for-root"
printf '{"docker": "%s", "nvidia_smi": "%s", "lock_dir": "%s/locks", "ignore_containers": false}\n' \
  "$tmp/docker-for-root" "$tmp/nvidia-smi" "$tmp" >/etc/gpurun/config.json
cat >"$tmp/sudoers" <<EOF
Defaults!$gpurun env_keep += "DOCKER_HOST DOCKER_CONFIG FAKE_SMI_SCENARIO ASAN_OPTIONS"
$A, $B ALL=(root) NOPASSWD: $gpurun
EOF
visudo -cf "$tmp/sudoers" >/dev/null || { say "FAIL: sudoers rule does not parse"; exit 1; }
install -m 440 "$tmp/sudoers" /etc/sudoers.d/gpurun-e2e

as() { # as USER DIR ARGS...: run `sudo gpurun ARGS` as USER in DIR; output in $tmp/out, $tmp/err
  local user=$1 dir=$2
  shift 2
  # A sanitized build (scripts/coverage): LeakSanitizer cannot stop a process that changed its
  # effective ids (not dumpable), and would end each such gpurun with its own exit status.
  (cd "$dir" && runuser -u "$user" -- env DOCKER_HOST=unix:///nonexistent/caller.sock DOCKER_CONFIG="$dir" \
     FAKE_SMI_SCENARIO="$tmp/scenario.json" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
     timeout 60 sudo -n "$gpurun" "$@") >"$tmp/out" 2>"$tmp/err" </dev/null
}
home_a=$(getent passwd $A | cut -d: -f6)
home_b=$(getent passwd $B | cut -d: -f6)
chmod 700 "$home_a" "$home_b"
runuser -u $A -- mkdir "$home_a/work"

# 1. The container runs as the caller; what it writes belongs to the caller.
as $A "$home_a/work" --image $IMAGE 1 -- sh -c 'echo "UID=$(id -u):$(id -g)"; echo hi >written.txt'
rc=$?
if ((rc == 0)) && grep -qx "UID=$uid_a:$(id -g $A)" "$tmp/out"; then pass "container runs as $A ($uid_a)"
else fail "container as the caller: rc $rc, $(cat "$tmp/out" "$tmp/err")"; fi
owner=$(stat -c %U "$home_a/work/written.txt" 2>/dev/null)
[[ $owner == "$A" ]] && pass "file written in the mounted directory belongs to $A" || fail "written.txt owned by '$owner'"

# 2. Detached: named and labelled for the caller; another user cannot stop it; the caller can.
as $A "$home_a/work" -d --image $IMAGE 1 -- sleep 60
name=$(cat "$tmp/out")
if [[ $name == ${A}_gpu* ]] && grep -q "sudo gpurun stop $name" "$tmp/err"; then pass "detached as $name, stop hint via gpurun"
else fail "detached launch: name '$name', $(cat "$tmp/err")"; fi
[[ $(dk inspect -f '{{index .Config.Labels "gpurun.user"}} {{index .Config.Labels "gpurun.uid"}}' "$name" 2>&1) == "$A $uid_a" ]] &&
  pass "labels carry $A and uid $uid_a" || fail "labels: $(dk inspect -f '{{json .Config.Labels}}' "$name" 2>&1)"
as $B "$home_b" stop "$name"
rc=$?
((rc == 125)) && grep -q "belongs to $A" "$tmp/err" && dk inspect "$name" >/dev/null 2>&1 &&
  pass "$B cannot stop $A's container" || fail "$B stop: rc $rc $(cat "$tmp/err")"
as $A "$home_a/work" stop "$name"
rc=$?
((rc == 0)) && pass "$A stops their own container" || fail "$A stop: rc $rc $(cat "$tmp/err")"
for ((i = 0; i < 100; i++)); do [[ -z $(dk ps -aq) ]] && break; sleep 0.1; done  # --rm: gone soon after

# 4 first (it needs no container left from 2): a mount source swapped after the check.
# The target is open itself but under a directory only root may search: the caller cannot reach
# it, a container given it as its mount root could.
mkdir -m 700 "$tmp/private" && mkdir -m 755 "$tmp/private/open" && echo SECRET >"$tmp/private/open/file"
chmod 644 "$tmp/private/open/file"
runuser -u $A -- sh -c "mkdir $home_a/work/data && echo mine >$home_a/work/data/file"
echo "$home_a/work/data $tmp/private/open" >"$tmp/swap"
as $A "$home_a/work" -v "$home_a/work/data:/data" --image $IMAGE 1 -- cat /data/file
rc=$?
if ((rc == 0)) && [[ $(cat "$tmp/out") == mine && -L $home_a/work/data ]]; then
  pass "a mount source swapped for a symlink after the check: docker mounted what was checked"
else fail "swapped mount: rc $rc, out '$(cat "$tmp/out")', $(cat "$tmp/err")"; fi
for ((i = 0; i < 50; i++)); do [[ -z $(ls -A /run/gpurun/pins 2>/dev/null) ]] && break; sleep 0.1; done
[[ -z $(ls -A /run/gpurun/pins 2>/dev/null) ]] && pass "pins removed once the client ended" ||
  fail "pins left: $(ls -lR /run/gpurun/pins)"

# 3. Refusals: 125, "not allowed under sudo" (or the refusal named), no container started.
printf '{"docker": "/bin/sh"}\n' >"$tmp/evil.json" && chmod 644 "$tmp/evil.json"
runuser -u $A -- sh -c "printf '{\"docker\": \"/bin/sh\"}' >$home_a/work/mine.json"
refused() { # refused WHAT PATTERN ARGS...
  local what=$1 pattern=$2 before after
  shift 2
  before=$(dk ps -aq | wc -l)
  as $A "$home_a/work" "$@"
  local rc=$?
  after=$(dk ps -aq | wc -l)
  if ((rc == 125)) && grep -q -- "$pattern" "$tmp/err" && ((before == after)); then pass "refused: $what"
  else fail "$what: rc $rc, containers $before -> $after, stderr: $(cat "$tmp/err")"; fi
}
img=(--image $IMAGE 1 -- true)
refused "--docker" "not allowed under sudo" --docker /bin/sh "${img[@]}"
refused "--nvidia-smi" "not allowed under sudo" --nvidia-smi /bin/sh "${img[@]}"
refused "--lock-dir" "not allowed under sudo" --lock-dir /tmp "${img[@]}"
refused "--config with docker" "not allowed under sudo" --config mine.json "${img[@]}"
refused "--docker-opt --privileged" "privileged" --docker-opt --privileged "${img[@]}"
refused "--docker-opt=--cidfile=/etc/x" "cidfile" --docker-opt=--cidfile=/etc/x "${img[@]}"
refused "--docker-opt -itv /root:/host" "not allowed under sudo: -v" --docker-opt -itv --docker-opt /root:/host "${img[@]}"
refused "-v of another user's home" "not allowed under sudo" -v "$home_b:/b" "${img[@]}"
refused "--mount dst first" "not allowed under sudo" --docker-opt --mount --docker-opt "dst=/b,src=$home_b,type=bind" "${img[@]}"
refused "-e NVIDIA_VISIBLE_DEVICES" "outside its reservation" -e NVIDIA_VISIBLE_DEVICES=all "${img[@]}"
refused "--docker-opt --user 0" "user" --docker-opt --user=0 "${img[@]}"
refused "--docker-opt image word" "not a docker option" --docker-opt "$IMAGE" "${img[@]}"
refused "--backend slurm" "would run as root" --backend slurm "${img[@]}"
refused "--from-csv for a launch" "not allowed under sudo" --from-csv /dev/null "${img[@]}"
refused "status --from-csv /etc/shadow" "Permission denied" status --from-csv /etc/shadow
grep -q "root:" "$tmp/err" "$tmp/out" && fail "/etc/shadow content echoed" || pass "/etc/shadow not echoed"
[[ $(stat -c '%U %a' "$tmp/locks") == "root 755" ]] && pass "lock directory root's, 755" || fail "lock dir $(stat -c '%U %a' "$tmp/locks")"

((failures == 0)) && { say "all passed"; exit 0; }
say "$failures failed"; exit 1
