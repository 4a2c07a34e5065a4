#!/usr/bin/env bash
# gpurun loads no shared library but libc (and its loader): fmt, spdlog and libstdc++ are linked
# in, and nothing takes a function from libm, whose loading cost every launch about 0.08 ms
# (docs/performance.md). A new call to a libm function (std::pow, std::llround…) brings libm
# back and fails here: use what include/gpurun/util/rounding.hpp offers, or add to it.
#
# Usage: libc_alone.sh path/to/gpurun
set -euo pipefail
gpurun=$1
command -v readelf >/dev/null || { echo "SKIP: no readelf (binutils) to read gpurun's dynamic section"; exit 77; }
needed=$(LC_ALL=C readelf -d "$gpurun" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
[[ -n $needed ]] || { echo "FAIL: readelf found no NEEDED entry in $gpurun"; exit 1; }
others=$(grep -vxE 'libc\.so\.[0-9]+|ld-linux[-a-z0-9_.]*\.so\.[0-9]+' <<<"$needed" || true)
if [[ -n $others ]]; then
  echo "FAIL: gpurun loads more than libc:" $others
  for library in $others; do
    [[ $library == libm.* ]] && echo "  it takes from libm:" $(LC_ALL=C nm -D --undefined-only "$gpurun" | awk '{print $2}' |
      sed 's/@.*//' | grep -xFf <(nm -D --defined-only "$(ldconfig -p | awk -v l="$library" '$1 == l {print $NF; exit}')" |
      awk '{print $3}' | sed 's/@.*//') | tr '\n' ' ')
  done
  exit 1
fi
echo "gpurun loads:" $needed
