#!/usr/bin/env bash
# gpurun (run as root for sudo's callers) and gpurund (a root service) are linked with full RELRO:
# every symbol bound at load (BIND_NOW) and the relocated tables read-only before main runs, so
# that a memory error cannot overwrite a function pointer of the GOT. src/CMakeLists.txt links them so.
#
# Usage: full_relro.sh PROGRAM...
set -euo pipefail
command -v readelf >/dev/null || { echo "SKIP: no readelf (binutils) to read the programs' headers"; exit 77; }
for program in "$@"; do
  LC_ALL=C readelf -lW "$program" | grep -q 'GNU_RELRO' || { echo "FAIL: $program has no GNU_RELRO segment"; exit 1; }
  LC_ALL=C readelf -d "$program" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' ||
    { echo "FAIL: $program is not bound at load (BIND_NOW): its GOT stays writable"; exit 1; }
  echo "full RELRO: $program"
done
