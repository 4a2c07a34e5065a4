#!/usr/bin/env bash
# `cmake --install` puts each file in its standard place, and the .deb installs and runs on a
# fresh Debian machine. Builds the package with CPack, bootstraps a
# minimal Debian of this host's release into a folder (debootstrap --variant=minbase: no docker, no
# GPU tools, no bash-completion), installs the package there with `dpkg -i` in a chroot, runs the
# installed gpurun, checks the man page and completions, and removes the package again.
# Usage: deb_install.sh BUILD_DIR
# Needs root (chroot, dpkg) and debootstrap with a Debian mirror (DEB_TEST_MIRROR, default:
# the one apt uses here). Without root it exits 77, which CTest reports as skipped.
# The bootstrapped system is cached as BUILD_DIR/package-test/debian-CODENAME.tar; each run
# installs into a fresh copy of it.
set -euo pipefail

build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: installing the package into a fresh Debian root needs root (chroot, dpkg)"
  exit 77
fi
command -v debootstrap >/dev/null || { echo "FAIL: debootstrap is missing; scripts/install-deps installs it"; exit 1; }

fail() { echo "FAIL: $*"; exit 1; }
step() { echo "--- $*"; }

# cmake --install: the standard places under a prefix.
step "cmake --install"
staged=$(mktemp -d)
DESTDIR=$staged cmake --install "$build" --prefix /usr/local >/dev/null
for f in bin/gpurun sbin/gpurund share/man/man1/gpurun.1.gz share/man/man8/gpurund.8.gz lib/systemd/system/gpurund.service \
         share/bash-completion/completions/gpurun share/zsh/site-functions/_gpurun \
         share/gpurun/grafana/gpurun-dashboard.json; do
  [[ -s $staged/usr/local/$f ]] || fail "cmake --install did not write /usr/local/$f"
done
# The unit starts the gpurund of its prefix: /usr/sbin is empty under /usr/local (status 203/EXEC).
grep -qx "ExecStart=/usr/local/sbin/gpurund" "$staged/usr/local/lib/systemd/system/gpurund.service" ||
  fail "the unit cmake --install wrote does not start /usr/local/sbin/gpurund: $(grep ExecStart= "$staged/usr/local/lib/systemd/system/gpurund.service")"
rm -rf "$staged"

# The package.
step "cpack"
(cd "$build" && cpack -G DEB >/dev/null)
version=$("$build/gpurun" --version | cut -d' ' -f2)
deb=$build/gpurun_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || fail "cpack did not write $deb"
depends=$(dpkg-deb -f "$deb" Depends)
# gpurun itself loads libc alone (libstdc++ is linked in); gpurund, the service, adds SQLite and
# libcurl (its notification webhook).
[[ $depends == "libc6 (>= "*")"* && $depends == *"libsqlite3-0 (>= "* && $depends == *"libcurl4 (>= "* ]] ||
  fail "Depends should name libc6, libsqlite3-0 and libcurl4, got: $depends"
[[ $(readelf -d "$build/gpurun" | grep -c NEEDED) == $(readelf -d "$build/gpurun" | grep -cE 'NEEDED.*\[(libc|ld-linux[-a-z0-9_]*)\.so') ]] ||
  fail "gpurun should load libc alone: $(readelf -d "$build/gpurun" | grep NEEDED)"

# A fresh Debian root, bootstrapped once and then copied.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
# The mirror apt uses here, so that the test needs nothing apt itself does not.
host_mirror() {
  local uri
  uri=$(grep -hs -m1 -E '^URIs: +[a-z]+://[^ ]*/debian/?$' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | head -1)
  [[ -n $uri ]] || uri=$(grep -hs -E '^deb +(\[[^]]*\] +)?[a-z]+://[^ ]*/debian/? ' /etc/apt/sources.list \
                           /etc/apt/sources.list.d/*.list | head -1 | sed -E 's/^deb +(\[[^]]*\] +)?([^ ]+).*/\2/')
  echo "${uri:-http://deb.debian.org/debian}"
}
mirror=${DEB_TEST_MIRROR:-$(host_mirror)}
# SQLite and libcurl are not in minbase: they come in as the package's Depends would bring them (apt-get).
cache=$build/package-test/debian-$codename-sqlite-curl.tar
mkdir -p "$build/package-test"
if [[ ! -f $cache ]]; then
  step "debootstrap --variant=minbase --include=libsqlite3-0,libcurl4 $codename (cached in $cache)"
  bootstrap=$(mktemp -d "$build/package-test/bootstrap.XXXXXX")
  if ! debootstrap --variant=minbase --include=libsqlite3-0,libcurl4 "$codename" "$bootstrap" "$mirror" >"$bootstrap.log" 2>&1; then
    tail -20 "$bootstrap.log"
    rm -rf "$bootstrap"
    fail "debootstrap could not build a $codename root from $mirror (set DEB_TEST_MIRROR)"
  fi
  tar -C "$bootstrap" -cf "$cache.partial" . && mv "$cache.partial" "$cache"
  rm -rf "$bootstrap" "$bootstrap.log"
fi
root=$(mktemp -d "$build/package-test/root.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$cache"

# In the fresh root: a clean environment, as root's login shell would have.
# From /tmp, as a user works: a launch from / is refused (the working directory, mounted at its
# path, would be all of the host).
in_root() {
  chroot "$root" /bin/sh -c 'cd /tmp && exec "$@"' in_root \
    /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

step "dpkg -i"
dpkg-deb --info "$deb" postinst >/dev/null 2>&1 || fail "the package has no postinst (an upgrade restarts gpurund)"
cp "$deb" "$root/tmp/gpurun.deb"
in_root dpkg -i /tmp/gpurun.deb || fail "dpkg -i failed"
in_root dpkg -i /tmp/gpurun.deb || fail "dpkg -i over itself (an upgrade's postinst) failed"
in_root dpkg -s gpurun | grep -qx 'Status: install ok installed' || fail "dpkg does not list gpurun as installed"

step "gpurun runs"
[[ $(in_root gpurun --version) == "gpurun $version" ]] || fail "gpurun --version"
cp "$source_dir/scripts/sample/dgx-a100-busy.csv" "$root/tmp/sample.csv"
args=(--dry-run -q --ignore-containers --from-csv /tmp/sample.csv --host-cpus 128 --name job
      --image me/pytorch:24.05 2 -- python train.py --lr 0.1)
installed=$(in_root gpurun "${args[@]}") || fail "gpurun --dry-run failed"
expected="docker run --rm --init --interactive --name job --gpus '\"device=2,5\"' --cpus 32 --user 0:0 --volume /tmp:/tmp --workdir /tmp \
--shm-size=1g --ulimit memlock=-1 --ulimit stack=67108864 --log-opt max-size=50m --label gpurun.user=root \
--label gpurun.gpus=2,5 --label gpurun.gpu-uuids=GPU-ce9da201-e0c0-d1a0-dc00-f0e71a714a16,GPU-171b2f3a-9f88-9eea-f77e-e09a4496e0ed \
--label gpurun.uid=0 --label gpurun.name=job --label gpurun.time-limit= --label gpurun.notify= --label gpurun.detached= \
me/pytorch:24.05 python train.py --lr 0.1"
[[ $installed == "$expected" ]] || fail "the installed gpurun printed
  $installed
instead of
  $expected"
# From / the launch is refused, saying what to do (the mount would be all of the host).
from_root=$(chroot "$root" /bin/sh -c 'cd / && gpurun "$@" 2>&1' gpurun "${args[@]}") &&
  fail "a launch from / was not refused: $from_root"
[[ $from_root == *"cd to your project's directory first"* ]] || fail "a launch from / said: $from_root"
in_root gpurun status --verbose --from-csv /tmp/sample.csv 2>/dev/null | grep -A1 '^  2  NVIDIA A100-SXM4-80GB .* free$' | grep -q '^      note: processes not checked: the snapshot has no process list$' || fail "gpurun status"
in_root gpurun config | grep -q '^image ' || fail "gpurun config"
# A real launch on a machine without docker: the documented exit 127 and a message, no crash.
set +e
message=$(in_root gpurun --ignore-containers --from-csv /tmp/sample.csv --image me/pytorch:24.05 1 true 2>&1 >/dev/null)
status=$?
set -e
[[ $status == 127 && $message == *"docker"* ]] || fail "without docker: exit $status, $message"

step "site policy in /etc/gpurun/config.json"
# The admin's file at its real path, which the other tests cannot write on the host.
mkdir -p "$root/etc/gpurun"
cat >"$root/etc/gpurun/config.json" <<'JSON'
{
  // house rules
  "allowed_gpus": [0, 1, 2, 3],
  "max_gpus_per_launch": 2,
  "refused_docker_options": ["--privileged", "--pid=host"]
}
JSON
policy_args=(--dry-run -q --ignore-containers --from-csv /tmp/sample.csv --host-cpus 128 --image me/pytorch:24.05)
picked=$(in_root gpurun "${policy_args[@]}" 2 true) || fail "a launch within the policy failed"
[[ $picked == *"--gpus '\"device=2,3\"'"* ]] || fail "GPU 5 is not allowed, so 2 and 3 should be picked: $picked"
expect_refusal() {  # expect_refusal TEXT ARGS...: exit 125 and a message containing TEXT
  local text=$1 message status
  shift
  set +e
  message=$(in_root gpurun "${policy_args[@]}" "$@" 2>&1 >/dev/null)
  status=$?
  set -e
  [[ $status == 125 && $message == *"$text"* ]] || fail "gpurun $*: expected exit 125 and \"$text\", got $status: $message"
}
expect_refusal "/etc/gpurun/config.json:5" --docker-opt --pid --docker-opt host 1 true
expect_refusal "/etc/gpurun/config.json:5" --no-config --docker-opt --privileged 1 true
expect_refusal "/etc/gpurun/config.json:4" 3 true
# A user file cannot loosen it.
mkdir -p "$root/root/.config/gpurun"
echo '{"allowed_gpus": [0, 1, 2, 3, 4, 5, 6, 7]}' >"$root/root/.config/gpurun/config.json"
expect_refusal "/root/.config/gpurun/config.json:1" 1 true
rm -r "$root/etc/gpurun" "$root/root/.config/gpurun"

step "man page and completions"
in_root sh -c 'zcat /usr/share/man/man1/gpurun.1.gz | grep -q "^\.TH GPURUN 1 "' || fail "man page"
[[ $(in_root bash -c 'source /usr/share/bash-completion/completions/gpurun && complete -p gpurun') == \
   "complete -F _gpurun gpurun" ]] || fail "bash completion"
grep -q '^#compdef gpurun$' "$root/usr/share/zsh/vendor-completions/_gpurun" || fail "zsh completion"

step "gpurund"
[[ $(in_root gpurund --version) == "gpurund $version" ]] || fail "gpurund --version"
in_root sh -c 'zcat /usr/share/man/man8/gpurund.8.gz | grep -q "^\.TH GPURUND 8 "' || fail "gpurund's man page"
[[ -f $root/usr/lib/systemd/system/gpurund.service ]] || fail "the systemd unit of gpurund"
grep -qx "ExecStart=/usr/sbin/gpurund" "$root/usr/lib/systemd/system/gpurund.service" ||
  fail "the package's unit does not start /usr/sbin/gpurund"
[[ -s $root/usr/share/gpurun/grafana/gpurun-dashboard.json ]] || fail "the Grafana dashboard"
# Without nvidia-smi it logs why, keeps trying, and stops cleanly (exit 0) on SIGTERM.
set +e
message=$(in_root timeout --preserve-status 2 gpurund --state-dir /tmp/state --socket /tmp/gpurund.sock --interval 0.1 2>&1)
status=$?
set -e
[[ $status == 0 && $message == *"nvidia-smi not found"* && $message == *"stopped"* ]] ||
  fail "gpurund without a GPU: exit $status, $message"
[[ $(stat -c %a "$root/tmp/state") == 700 ]] || fail "gpurund's state directory should be private (0700)"
rm -rf "$root/tmp/state"

[[ -f $root/usr/lib/tmpfiles.d/gpurun.conf ]] || fail "the tmpfiles.d line of the lock directory"
in_root gpurun config --check /usr/share/doc/gpurun/config.system.example.json >/dev/null ||
  fail "the starter system file the package ships does not pass gpurun config --check"

step "dpkg -r"
mapfile -t files < <(in_root dpkg -L gpurun | grep -v '^/\.$')
in_root dpkg -r gpurun >/dev/null || fail "dpkg -r failed"
for f in "${files[@]}"; do
  [[ -d $root$f || ! -e $root$f ]] || fail "$f is left after dpkg -r"
done
[[ ! -e $root/usr/bin/gpurun ]] || fail "/usr/bin/gpurun is left after dpkg -r"
echo "PASS: $(basename "$deb") installs, runs and uninstalls on a fresh Debian $codename"
