#!/usr/bin/env bash
# End-to-end test of `sudo gpurun` (issue 12) with real parts: two users created here, a real
# sudo rule for the built binary, and a private Docker engine (as tests/e2e/real_docker_engine.sh
# starts one). It checks that the container runs as the caller, that files it writes belong to
# the caller, that another user cannot stop it, and that each refusal ends with 125 before any
# container starts. The engine is start_private_docker of tests/e2e/lib.sh.
#
#   bash tests/e2e/sudo_real.sh <path-to-gpurun> <path-to-fake-nvidia-smi>
#
# It writes /etc/gpurun/config.json and /etc/sudoers.d/gpurun-e2e, in a mount namespace of its own
# where the machine allows one (over private copies of both directories: the host's files are never
# touched, even by a run that is killed), else in place (both put back on exit); and it creates and
# removes the users gpurun-e2e-a, -b and -c (c launches directly, as a member of the lock group
# gpurun-e2e-g, as the docker group's members do). Exit 0 pass, 1 fail, 77 skipped (not root, no
# sudo/useradd, no engine).
set -uo pipefail
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
unset GPURUN_SYSTEM_CONFIG # the system file is this test's own /etc/gpurun/config.json
readonly IMAGE=gpurun-test/busybox:1 A=gpurun-e2e-a B=gpurun-e2e-b C=gpurun-e2e-c G=gpurun-e2e-g

(($# == 2)) || { say "usage: $0 GPURUN FAKE_SMI"; exit 2; }
[[ $(id -u) -eq 0 ]] || skip "needs root to create users, a sudo rule and a Docker engine (uid $(id -u))"
# Once more in a mount namespace of its own, where /etc/gpurun and /etc/sudoers.d are private copies.
if [[ -z ${GPURUN_E2E_PRIVATE_ETC-} ]] && command -v unshare >/dev/null && unshare --mount true 2>/dev/null; then
  GPURUN_E2E_PRIVATE_ETC=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
for t in sudo useradd userdel runuser; do command -v $t >/dev/null || skip "$t not found (scripts/install-deps installs sudo)"; done
docker_engine_tools
busybox=$(static_busybox) || skip "no static busybox (install busybox-static)"
readonly MARK="gpurun e2e sudo test"  # the test users' GECOS: stale ones (a run killed by CTest's timeout) are ours
# A run's users' processes, until none is left (userdel refuses a user with any, zombies too).
kill_test_users_processes() {
  local u i
  for u in $A $B $C; do pkill -KILL -u "$u" 2>/dev/null; done
  for ((i = 0; i < 50; i++)); do
    [[ -z $(for u in $A $B $C; do ps -o pid= -u "$u" 2>/dev/null; done) ]] && break
    sleep 0.1
  done
}
remove_test_users() {
  kill_test_users_processes
  for u in $A $B $C; do userdel -r "$u" >/dev/null 2>&1; done
  groupdel $G >/dev/null 2>&1
}
if ! getent passwd $A >/dev/null && ! getent passwd $B >/dev/null && ! getent passwd $C >/dev/null &&
  getent group $G >/dev/null; then
  groupdel $G  # a run killed between its users' removal and its group's
fi
for u in $A $B $C; do
  if entry=$(getent passwd "$u"); then
    [[ $(cut -d: -f5 <<<"$entry") == "$MARK" ]] || skip "a user $u exists that this test did not create"
    say "note: removing the users left by an earlier run"
    remove_test_users
    break
  fi
done

tmp=$(mktemp -d /tmp/gpurun-sudo.XXXXXX) && chmod 755 "$tmp"
restore() { # restore FILE: put back what was there before
  if [[ -e $tmp/saved$(basename "$1") ]]; then mv -f "$tmp/saved$(basename "$1")" "$1"; else rm -f "$1"; fi
}
cleanup() {
  local rc=$?
  set +e
  stop_private_docker "$tmp"
  restore /etc/gpurun/config.json
  restore /etc/sudoers.d/gpurun-e2e
  if [[ -n ${GPURUN_E2E_PRIVATE_ETC-} ]]; then umount /etc/gpurun /etc/sudoers.d 2>/dev/null; fi
  [[ -n ${made_etc_gpurun-} ]] && rmdir /etc/gpurun 2>/dev/null
  remove_test_users
  rm -rf -- "$tmp"
  exit "$rc"
}
trap cleanup EXIT
made_etc_gpurun=
[[ -d /etc/gpurun ]] || made_etc_gpurun=1
mkdir -p /etc/gpurun /etc/sudoers.d
if [[ -n ${GPURUN_E2E_PRIVATE_ETC-} ]]; then
  for d in gpurun sudoers.d; do
    mkdir "$tmp/etc-$d" && cp -a "/etc/$d/." "$tmp/etc-$d/" && chmod --reference="/etc/$d" "$tmp/etc-$d" &&
      mount --bind "$tmp/etc-$d" "/etc/$d" || { say "FAIL: cannot put a private /etc/$d in place"; exit 1; }
  done
  say "in a mount namespace of its own: /etc/gpurun and /etc/sudoers.d are private copies"
fi
[[ -e /etc/gpurun/config.json ]] && cp -p /etc/gpurun/config.json "$tmp/savedconfig.json"
[[ -e /etc/sudoers.d/gpurun-e2e ]] && cp -p /etc/sudoers.d/gpurun-e2e "$tmp/savedgpurun-e2e"

# The engine, private to this test; the memlock shim where RLIMIT_MEMLOCK cannot be raised.
start_private_docker "$tmp"
docker_import_busybox "$tmp" "$busybox" "$IMAGE"
docker_memlock_shim "$tmp/docker-shim"

# The users, the admin's file and the sudo rule.
groupadd $G && useradd -m -c "$MARK" -s /bin/sh $A && useradd -m -c "$MARK" -s /bin/sh $B &&
  useradd -m -c "$MARK" -s /bin/sh -G $G $C ||
  { say "FAIL: useradd"; exit 1; }
uid_a=$(id -u $A)
install -m 755 "$1" "$tmp/gpurun"
gpurun=$tmp/gpurun
cat >"$tmp/scenario.json" <<'EOF'
{"gpus": [
 {"index": 0, "uuid": "GPU-s0", "name": "NVIDIA A100", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0, "mig.mode.current": "Disabled"},
 {"index": 1, "uuid": "GPU-s1", "name": "NVIDIA A100", "memory.used": 0, "memory.total": 81920, "utilization.gpu": 0, "mig.mode.current": "Disabled"}],
 "processes": []}
EOF
# The stand-in's scenario is the admin's wrapper's to give: under sudo gpurun hands root's
# children none of the caller's environment but the terminal's and the language's.
install -m 755 "$2" "$tmp/nvidia-smi-stand-in"
printf '#!/bin/sh\nFAKE_SMI_SCENARIO=%s exec %s "$@"\n' "$tmp/scenario.json" "$tmp/nvidia-smi-stand-in" >"$tmp/nvidia-smi"
chmod 755 "$tmp/nvidia-smi"
# The admin names the engine in the program they configure: under sudo gpurun drops the caller's
# DOCKER_* variables (the rule below keeps them, as a careless site might, to prove it).
# When $tmp/swap names "SOURCE TARGET", it also swaps SOURCE for a symlink to TARGET right before
# `docker run`: the worst moment a caller racing gpurun could hit (test 4).
cat >"$tmp/docker-for-root" <<EOF
#!/bin/sh
env >$tmp/root-env
if [ "\$1" = run ] && [ -f $tmp/swap ]; then
  read -r src dst <$tmp/swap && rm -f $tmp/swap && mv "\$src" "\$src.old" && ln -s "\$dst" "\$src"
fi
DOCKER_HOST=$DOCKER_HOST DOCKER_CONFIG=$DOCKER_CONFIG exec $docker_for_gpurun "\$@"
EOF
chmod 755 "$tmp/docker-for-root"
printf '{"docker": "%s", "nvidia_smi": "%s", "lock_dir": "%s/locks", "lock_group": "%s", "ignore_containers": false}\n' \
  "$tmp/docker-for-root" "$tmp/nvidia-smi" "$tmp" "$G" >/etc/gpurun/config.json
cat >"$tmp/sudoers" <<EOF
Defaults!$gpurun env_keep += "DOCKER_HOST DOCKER_CONFIG FAKE_SMI_SCENARIO ASAN_OPTIONS HTTPS_PROXY BASH_ENV TZ"
$A ALL=(root) NOPASSWD: $gpurun
$B ALL=(root) NOPASSWD:SETENV: $gpurun
EOF
visudo -cf "$tmp/sudoers" >/dev/null || { say "FAIL: sudoers rule does not parse"; exit 1; }
install -m 440 "$tmp/sudoers" /etc/sudoers.d/gpurun-e2e

as() { # as USER DIR ARGS...: run `sudo gpurun ARGS` as USER in DIR; output in $tmp/out, $tmp/err
  local user=$1 dir=$2
  shift 2
  # A sanitized build (scripts/coverage): LeakSanitizer cannot stop a process that changed its
  # effective ids (not dumpable), and would end each such gpurun with its own exit status.
  (cd "$dir" && runuser -u "$user" -- env DOCKER_HOST=unix:///nonexistent/caller.sock DOCKER_CONFIG="$dir" \
     FAKE_SMI_SCENARIO="$tmp/scenario.json" HTTPS_PROXY=http://caller.example:3128 BASH_ENV="$dir/.bashenv" \
     TZ="${CALLER_TZ:-Europe/Berlin}" \
     ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
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
# sudo kept the caller's proxy, BASH_ENV and the rest (env_keep): root's docker got none of them.
if [[ -s $tmp/root-env ]] && ! grep -Eq '^(HTTPS_PROXY|BASH_ENV|FAKE_SMI_SCENARIO|DOCKER_HOST|DOCKER_CONFIG)=' "$tmp/root-env"; then
  pass "root's docker got none of the caller's environment sudo kept"
else fail "root's docker's environment: $(grep -E '^(HTTPS_PROXY|BASH_ENV|FAKE_|DOCKER_)' "$tmp/root-env" 2>&1)"; fi
# The caller's time zone is theirs to keep (history's times), as a zone's name; never a path.
grep -qx 'TZ=Europe/Berlin' "$tmp/root-env" 2>/dev/null && pass "the caller's TZ=Europe/Berlin is kept" ||
  fail "TZ=Europe/Berlin was not kept: $(grep '^TZ=' "$tmp/root-env" 2>&1)"
# (sudo drops one with '..' itself; an absolute path it keeps, and gpurun must not.)
CALLER_TZ=/usr/share/zoneinfo/UTC as $A "$home_a/work" --image $IMAGE 1 -- true
! grep -q '^TZ=' "$tmp/root-env" 2>/dev/null && pass "a TZ that is a path is not kept for root" ||
  fail "root's docker got $(grep '^TZ=' "$tmp/root-env")"
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
((rc == 0)) && [[ $(cat "$tmp/out") == "$name" ]] && pass "$A stops their own container, and the name is echoed" ||
  fail "$A stop: rc $rc, out '$(cat "$tmp/out")', $(cat "$tmp/err")"
# The ended job's container stays (no --rm for a detached job): its owner alone removes it.
as $B "$home_b" rm "$name"
rc=$?
((rc == 125)) && grep -q "belongs to $A" "$tmp/err" && dk inspect "$name" >/dev/null 2>&1 &&
  pass "$B cannot remove $A's ended container" || fail "$B rm: rc $rc $(cat "$tmp/err")"
as $A "$home_a/work" rm "$name"
rc=$?
((rc == 0)) && [[ $(cat "$tmp/out") == "$name" ]] && ! dk inspect "$name" >/dev/null 2>&1 &&
  pass "$A removes their own ended container with sudo gpurun rm" || fail "$A rm: rc $rc, $(cat "$tmp/err")"
for ((i = 0; i < 100; i++)); do [[ -z $(dk ps -aq) ]] && break; sleep 0.1; done

# 2b. A container shows its image's labels as its own: one whose image sets gpurun's labels is
# nobody's to manage under sudo, however they read (root started it, from an image that names $A).
base=$(dk create "$IMAGE" true)
dk commit --change "LABEL gpurun.user=$A gpurun.uid=$uid_a gpurun.gpus=0" "$base" gpurun-e2e-forged:1 >/dev/null
dk rm "$base" >/dev/null
dk run -d --name not-$A-s gpurun-e2e-forged:1 sleep 60 >/dev/null
as $A "$home_a/work" stop not-$A-s
rc=$?
((rc == 125)) && grep -q "labelled yours by its image" "$tmp/err" && dk inspect not-$A-s >/dev/null 2>&1 &&
  pass "$A cannot stop a container whose image carries labels naming $A" || fail "forged labels: rc $rc $(cat "$tmp/err")"
dk rm -f not-$A-s >/dev/null
dk rmi gpurun-e2e-forged:1 >/dev/null
for ((i = 0; i < 100; i++)); do [[ -z $(dk ps -aq) ]] && break; sleep 0.1; done

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
refused "--mount Source= (docker reads keys in any case)" "not allowed under sudo" \
  --docker-opt "--mount=type=bind,Source=$home_b,target=/b" "${img[@]}"
refused "-v with :U (chown by the engine)" "not allowed under sudo" -v "$home_a/work:/w:U" "${img[@]}"
refused "-e NVIDIA_VISIBLE_DEVICES" "outside its reservation" -e NVIDIA_VISIBLE_DEVICES=all "${img[@]}"
refused "--docker-opt --user 0" "user" --docker-opt --user=0 "${img[@]}"
refused "--docker-opt image word" "not a docker option" --docker-opt "$IMAGE" "${img[@]}"
refused "--backend slurm" "would run as root" --backend slurm "${img[@]}"
refused "--from-csv for a launch" "not allowed under sudo" --from-csv /dev/null "${img[@]}"
refused "status --from-csv /etc/shadow" "Permission denied" status --from-csv /etc/shadow
refused "-e NAME without a value" "write -e HOME=VALUE" -e HOME "${img[@]}"
# SETENV (B's rule) lets a caller set SUDO_UID and SUDO_GID on sudo's command line: believed only
# as the sudo that started gpurun knows its user.
for forged in SUDO_UID=0 "SUDO_UID=$(id -u $A)" SUDO_GID=0; do
  (cd /tmp && runuser -u $B -- timeout 60 sudo -n "$forged" "$gpurun" --dry-run --image $IMAGE 1 -- true) \
    >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  ((rc == 125)) && grep -q "set on sudo.s command line" "$tmp/err" && pass "sudo $forged gpurun (SETENV) is refused" ||
    fail "sudo $forged gpurun: rc $rc $(cat "$tmp/out" "$tmp/err")"
done
refused "--ignore-containers (other users' containers' GPUs)" "not allowed under sudo" --ignore-containers "${img[@]}"
refused "--cpus-per-gpu (the quota --cpus is refused for)" "not allowed under sudo" --cpus-per-gpu 24 "${img[@]}"
refused "-e NVIDIA_MOFED=enabled (host InfiniBand devices)" "host devices besides its GPUs" \
  -e NVIDIA_MOFED=enabled "${img[@]}"
refused "--docker-opt --ipc=host, naming what the admin may allow" 'the admin may allow it by adding "--ipc=host"' \
  --docker-opt --ipc=host "${img[@]}"
# What to do is what the caller can do: not a flag that sudo refuses.
mv "$tmp/nvidia-smi" "$tmp/nvidia-smi.away"
refused "nvidia-smi missing: ask the admin" 'ask your admin to install the NVIDIA driver utilities, or to set "nvidia_smi"' status
mv "$tmp/nvidia-smi.away" "$tmp/nvidia-smi"
grep -q "root:" "$tmp/err" "$tmp/out" && fail "/etc/shadow content echoed" || pass "/etc/shadow not echoed"
expect_eq "lock directory root's and the lock group's, setgid 2775" "root $G 2775" "$(stat -c '%U %G %a' "$tmp/locks")"

# 5. One set of reservations for every launcher (issue 21): C, a member of the lock group,
# launches directly; root launches directly; A launches through sudo. Each attached launch holds
# its GPU's reservation for as long as its docker client runs: a stand-in client that sleeps,
# for the direct ones (the reservation is the point, not the container).
mkdir -m 1777 "$tmp/pids"
printf '#!/bin/sh\necho $$ >%s/pids/$(id -u)\nexec sleep 30\n' "$tmp" >"$tmp/holding-docker" && chmod 755 "$tmp/holding-docker"
direct=(env FAKE_SMI_SCENARIO="$tmp/scenario.json" ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$gpurun" --nvidia-smi "$tmp/nvidia-smi"
        --ignore-containers --gpu-request gpus)
as_c() { (cd /tmp && runuser -u $C -- timeout 60 "${direct[@]}" "$@") >"$tmp/out" 2>"$tmp/err" </dev/null; }
wait_reserved() { # wait_reserved INDEX: until /proc/locks shows an flock on GPU INDEX's lock file
  local i file=$tmp/locks/gpu-GPU-s$1.lock
  for ((i = 0; i < 100; i++)); do
    # shellcheck disable=SC2046  # three words: major, minor, inode
    [[ -e $file ]] && grep -q "FLOCK .* $(printf '%02x:%02x:%s' $(stat -c '%Hd %Ld %i' "$file")) " /proc/locks && return 0
    sleep 0.1
  done
  return 1
}
(cd /tmp && runuser -u $C -- "${direct[@]}" --docker "$tmp/holding-docker" --image $IMAGE 1 -- true) >/dev/null 2>"$tmp/c.err" </dev/null &
c_hold=$!
wait_reserved 0 && pass "$C (lock group) launched directly and holds GPU 0" || fail "$C's launch: $(cat "$tmp/c.err")"
as $A "$home_a/work" --dry-run --gpu-request gpus --image $IMAGE 1 -- true
rc=$?
((rc == 0)) && grep -q 'device=1' "$tmp/out" && pass "sudo caller $A is given GPU 1, not $C's GPU 0" ||
  fail "sudo dry run beside $C's launch: rc $rc $(cat "$tmp/out" "$tmp/err")"
grep -q -- '--env NVIDIA_MOFED=disabled --env NVIDIA_NVSWITCH=disabled --env NVIDIA_GDS=disabled --env NVIDIA_GDRCOPY=disabled' "$tmp/out" &&
  pass "a sudo caller's container gets the toolkit's host-device switches disabled, whatever its image says" ||
  fail "no disabled NVIDIA_MOFED/NVSWITCH/GDS/GDRCOPY in: $(cat "$tmp/out")"
(cd /tmp && "${direct[@]}" --docker "$tmp/holding-docker" --image $IMAGE 1 -- true) >/dev/null 2>"$tmp/root.err" </dev/null &
root_hold=$!
wait_reserved 1 && pass "root launched directly beside $C and holds GPU 1" || fail "root's launch: $(cat "$tmp/root.err")"
as $A "$home_a/work" --dry-run --gpu-request gpus --image $IMAGE 1 -- true
rc=$?
((rc == 125)) && pass "sudo caller $A finds no GPU free while $C and root hold both" || fail "sudo with both held: rc $rc $(cat "$tmp/out" "$tmp/err")"
as_c status
grep -q "^  1 .*  reserved: root$" "$tmp/out" &&
  pass "$C sees root's reservation" || fail "$C's status: $(cat "$tmp/out" "$tmp/err")"
kill "$(cat "$tmp/pids/0")" "$(cat "$tmp/pids/$(id -u $C)")"; wait $root_hold $c_hold 2>/dev/null
# A sudo launch holds GPU 0 (a real container); C, launching directly, is not given it.
(cd "$home_a/work" && runuser -u $A -- env FAKE_SMI_SCENARIO="$tmp/scenario.json" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
   timeout 60 sudo -n "$gpurun" --gpu-request gpus --image $IMAGE 1 -- sleep 8) >/dev/null 2>"$tmp/a.err" </dev/null &
a_hold=$!
wait_reserved 0 && pass "sudo caller $A holds GPU 0 with a real container" || fail "$A's launch: $(cat "$tmp/a.err")"
as_c --dry-run --image $IMAGE 1 -- true
grep -q 'device=1' "$tmp/out" && ! grep -q 'device=0' "$tmp/out" && pass "$C is given GPU 1, not sudo caller $A's GPU 0" ||
  fail "$C's dry run beside $A's launch: $(cat "$tmp/out" "$tmp/err")"
wait $a_hold
# A directory anyone may write (as an older gpurun made it): refused to a direct user, with the
# mend; mended by the first gpurun that runs as root.
chmod 1777 "$tmp/locks"
as_c --docker /bin/true --image $IMAGE 1 -- true
rc=$?
((rc == 125)) && grep -q "which sudo gpurun does not trust.*sudo chmod 2775" "$tmp/err" &&
  pass "$C is refused a lock directory anyone may write, with the mend" || fail "$C with a 1777 directory: rc $rc $(cat "$tmp/err")"
as $A "$home_a/work" status
grep -q "writable by anyone" "$tmp/err" && expect_eq "sudo gpurun mended the directory" "root $G 2775" "$(stat -c '%U %G %a' "$tmp/locks")" ||
  fail "no mend by sudo gpurun: $(cat "$tmp/err")"
as_c --docker /bin/true --image $IMAGE 1 -- true
(($? == 0)) && pass "$C launches again once mended" || fail "$C after the mend: $(cat "$tmp/err")"

# A project file its owner's private group may write (useradd's user private group, umask 002) is
# the owner's; one a shared group may write is ignored: each member could choose the image.
printf '{"image": "planted/by-project-file"}\n' >"$home_a/work/.gpurun.json"
chown $A:"$(id -gn $A)" "$home_a/work/.gpurun.json" && chmod 664 "$home_a/work/.gpurun.json"
if [[ $(getent group "$(id -g $A)" | cut -d: -f4) == "" && $(id -gn $A) == "$A" ]]; then
  as $A "$home_a/work" --dry-run --gpu-request gpus 1 -- true
  grep -q 'planted/by-project-file' "$tmp/out" && ! grep -q 'ignoring' "$tmp/err" &&
    pass "a project file its owner's private group may write is read" || fail "private group: $(cat "$tmp/out" "$tmp/err")"
else say "SKIP: useradd gave $A no private group (USERGROUPS_ENAB), so that case is not checked"; fi
chgrp $G "$home_a/work/.gpurun.json"
as $A "$home_a/work" --dry-run --gpu-request gpus --image $IMAGE 1 -- true
! grep -q 'planted/by-project-file' "$tmp/out" && grep -q "ignoring .*members of group $G may write it" "$tmp/err" &&
  pass "a project file group $G (with $C in it) may write is ignored" || fail "shared group: $(cat "$tmp/out" "$tmp/err")"
rm -f "$home_a/work/.gpurun.json"

# The admin's docker in a directory only root may search: --detach finds and runs it as an
# attached launch does (it was looked for with the caller's rights: "not found", 127).
mkdir -m 700 "$tmp/root-only" && cp -p "$tmp/docker-for-root" "$tmp/root-only/docker" &&
  sed "s|$tmp/docker-for-root|$tmp/root-only/docker|" /etc/gpurun/config.json >"$tmp/root-only.json" &&
  cp /etc/gpurun/config.json "$tmp/config.before-root-only" && cp "$tmp/root-only.json" /etc/gpurun/config.json
as $A "$home_a/work" --detach --gpu-request gpus --image $IMAGE 1 -- true
rc=$?
detached=$(head -n 1 "$tmp/out")
((rc == 0)) && [[ -n $detached ]] && pass "--detach runs the admin's docker from a directory only root may search" ||
  fail "--detach with a root-only docker: rc $rc $(cat "$tmp/out" "$tmp/err")"
[[ -n $detached ]] && "$tmp/docker-for-root" rm -f "$detached" >/dev/null 2>&1
cp "$tmp/config.before-root-only" /etc/gpurun/config.json

summary
