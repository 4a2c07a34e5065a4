# shellcheck shell=bash
# Shared by the shell tests that run real components (tests/e2e/real_*.sh, sudo_real.sh,
# tests/slurm/real_slurm.sh); sourced, never run. It offers:
#   - results: say, pass, fail (counted in passes/failures), skip (exit 77, the CTest
#     SKIP_RETURN_CODE), die (exit 1), expect_eq, expect_match, summary (the closing line and
#     status);
#   - files: abspath, SYS_PATH and sys_which (the distribution's tools, never the caller's PATH),
#     static_busybox (the images have no libc), busybox_rootfs.

readonly SKIP=77
readonly SYS_PATH=/usr/sbin:/usr/bin:/sbin:/bin
failures=0
passes=0

say() { printf '%s\n' "$*"; }
pass() { passes=$((passes + 1)); say "PASS: $*"; }
fail() { failures=$((failures + 1)); say "FAIL: $*"; }
skip() { say "SKIP: $*"; exit "$SKIP"; }
die() { say "FAIL: $*"; exit 1; }
expect_eq() { # WHAT EXPECTED ACTUAL
  if [[ $2 == "$3" ]]; then pass "$1"; else fail "$1: expected [$2], got [$3]"; fi
}
expect_match() { # WHAT REGEX ACTUAL
  if [[ $3 =~ $2 ]]; then pass "$1"; else fail "$1: [$3] does not match [$2]"; fi
}
summary() { # the closing line, a script's last: it exits 1 where an assertion failed, else 0
  ((failures == 0)) || { say "FAIL: $failures assertion(s) failed, $passes passed"; exit 1; }
  say "PASS: all $passes assertions hold"
}

abspath() { # absolute path of an existing file, without needing realpath(1)
  local d
  d=$(cd "$(dirname -- "$1")" && pwd -P) || return 1
  printf '%s/%s\n' "$d" "$(basename -- "$1")"
}
sys_which() { PATH=$SYS_PATH command -v -- "$1"; }

static_busybox() { # prints the first statically linked busybox; fails where there is none
  local c ldd_out
  for c in /bin/busybox /usr/bin/busybox "$(sys_which busybox || true)"; do
    [[ -n $c && -x $c ]] || continue
    ldd_out=$(LC_ALL=C ldd "$c" 2>&1) # ldd fails on a static binary: its words, not its status
    if [[ $ldd_out == *"not a dynamic executable"* || $ldd_out == *"statically linked"* ]]; then
      printf '%s\n' "$c"
      return 0
    fi
  done
  return 1
}

busybox_rootfs() { # busybox_rootfs ROOTFS BUSYBOX [APPLET...]: a root file system of BUSYBOX
  # alone, with links for the APPLETs (every one it has where none is named)
  local rootfs=$1 bb=$2 a applets
  shift 2
  mkdir -p "$rootfs"/{bin,dev,etc,proc,sys,tmp} && chmod 1777 "$rootfs/tmp" && cp "$bb" "$rootfs/bin/busybox" || return 1
  applets=("$@")
  if ((${#applets[@]} == 0)); then
    mapfile -t applets < <("$bb" --list) && ((${#applets[@]} > 0)) || return 1
  fi
  for a in "${applets[@]}"; do
    [[ $a == busybox || -e $rootfs/bin/$a ]] || ln -s busybox "$rootfs/bin/$a"
  done
  printf 'root:x:0:0:root:/:/bin/sh\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\n' >"$rootfs/etc/group"
}
