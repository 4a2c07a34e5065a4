#!/usr/bin/env bash
# The unit the package ships (docs/gpurund.service) passes `systemd-analyze verify` without a
# word: systemd only warns about unknown keys and bad values (exit 0), so any output fails.
# Usage: systemd_unit.sh UNIT_FILE GPURUND. Exits 77 (skipped) without systemd-analyze.
set -euo pipefail
unit=$1 gpurund=$(realpath "$2")
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is missing (Debian's systemd)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The installed path may not exist here: point ExecStart at the gpurund just built.
grep -q '^ExecStart=/usr/sbin/gpurund$' "$unit" || { echo "FAIL: ExecStart should be /usr/sbin/gpurund"; exit 1; }
sed "s|^ExecStart=/usr/sbin/gpurund|ExecStart=$gpurund|" "$unit" >"$dir/gpurund.service"
set +e
said=$(cd "$dir" && systemd-analyze verify --man=no ./gpurund.service 2>&1)
status=$?
set -e
[[ $status == 0 && -z $said ]] || { echo "FAIL: systemd-analyze verify (exit $status):"; echo "$said"; exit 1; }
for key in 'StateDirectory=gpurun' 'StateDirectoryMode=0700' 'RuntimeDirectory=gpurun' 'WantedBy=multi-user.target'; do
  grep -qx "$key" "$unit" || { echo "FAIL: the unit lacks $key"; exit 1; }
done
# What gpurund runs must be able to work: podman's state and the mail queue are under /var, the
# DCGM job map in /run, and exim4's and postfix's sendmail gain privileges through setuid/setgid.
for key in 'ProtectSystem=strict' 'NoNewPrivileges=yes'; do
  ! grep -qx "$key" "$unit" || { echo "FAIL: $key keeps podman stop, sendmail or the DCGM job map from working"; exit 1; }
done
echo "PASS: $unit verifies cleanly"
