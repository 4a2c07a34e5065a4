#!/usr/bin/env bash
# gpurun's launch code is laid out together (docs/performance.md, "Code layout"), and the
# committed order (src/cli/launch.order) still names what a launch runs: a launch is profiled
# anew (scripts/launch-order, callgrind) and
#   - at least 90 % of the functions it ran must be in the committed list (else: run
#     scripts/launch-order and commit its list), and
#   - 90 % of them must lie within 1 MB of gpurun's text (the layout took effect: without it they
#     spread over the whole 3 MB).
# Skips (77) without valgrind.
#
# Usage: launch_order.sh path/to/gpurun source-dir
set -euo pipefail
gpurun=$1
source_dir=$2
command -v valgrind >/dev/null || { echo "SKIP: no valgrind to profile a launch with"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-layout-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
env -u DOCKER_HOST "$source_dir/scripts/launch-order" "$gpurun" "$work/fresh.order" >&2

python3 - "$gpurun" "$source_dir/src/cli/launch.order" "$work/fresh.order" <<'PY'
import subprocess, sys
gpurun, committed_path, fresh_path = sys.argv[1:]
def functions(path):  # the function names of an order file
    names = set()
    for line in open(path):
        line = line.strip()
        if line.startswith(".text.startup."):
            names.add(line[len(".text.startup."):])
        elif line.startswith(".text."):
            names.add(line[len(".text."):])
    return names
committed, fresh = functions(committed_path), functions(fresh_path)
covered = len(fresh & committed) / len(fresh)
print(f"the committed order names {covered:.0%} of the {len(fresh)} section names a launch ran now")
if covered < 0.9:
    sys.exit("FAIL: src/cli/launch.order is stale: run scripts/launch-order and commit the list it writes")

addresses = {}
for line in subprocess.run(["nm", gpurun], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        addresses[parts[2]] = int(parts[0], 16)
placed = sorted(addresses[name] for name in fresh if name in addresses)
keep = max(1, int(len(placed) * 0.9))
span = min(placed[i + keep - 1] - placed[i] for i in range(len(placed) - keep + 1))
print(f"90 % of the {len(placed)} functions of a launch found in gpurun lie within {span / 1024:.0f} KB")
if span > 1024 * 1024:
    sys.exit("FAIL: a launch's functions are spread over gpurun's text: the layout (gold's "
             "--section-ordering-file, cmake/StandardSettings.cmake) did not take effect")
print("PASS")
PY
