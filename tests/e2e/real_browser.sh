#!/usr/bin/env bash
# End-to-end: the lab's page in a real browser. Debian's chromium, headless, loads / from a
# gpurund that samples the stand-in nvidia-smi (the busy DGX) and the stand-in docker (bob's
# gpurun container, idle on GPU 3, and a container whose name is a <script> tag on GPU 6), after
# the page's script has run; the rendered DOM must show every GPU, the holders, the idle one
# marked, the usage table and the charts, and the hostile name as text. Screenshots, a laptop's and
# a phone's, are kept in ARTIFACT_DIR (docs/lab-page.png is the first).
# Usage: real_browser.sh GPURUND NVIDIA_SMI_FAKE DOCKER_FAKE SCENARIO ARTIFACT_DIR
# Skips (77) where chromium is not installed. Everything else lives in a temporary directory.
set -euo pipefail
gpurund=$1 smi=$2 docker=$3 scenario=$4 artifacts=$5
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n $browser ]] || { echo "SKIP: chromium is missing (apt-get install chromium)"; exit 77; }

dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- gpurund:" >&2; tail -n 20 "$dir/gpurund.err" >&2 || true; exit 1; }
pass() { echo "PASS: $*"; }

# The containers the stand-in docker lists: bob's (gpurun's labels) holds GPU 3, which the busy
# DGX shows at 0 %; another holds GPU 6 under a name that is markup.
cat >"$dir/inspect.json" <<'JSON'
[{"Id": "c1", "Name": "/bob_gpu3", "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"},
  "Path": "python", "Args": ["train.py"], "Config": {"Image": "bob/train:1", "Labels": {"gpurun.user": "bob",
  "gpurun.gpus": "3"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["3"], "Capabilities": [["gpu"]]}]}},
 {"Id": "c2", "Name": "/<script>document.title='pwned'</script>",
  "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z"}, "Path": "sleep",
  "Config": {"Image": "x:1", "User": "carol", "Labels": {"gpurun.user": "carol"}},
  "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["6"], "Capabilities": [["gpu"]]}]}}]
JSON
echo '{}' >"$dir/system.json"  # this machine's /etc/gpurun/config.json plays no part
start_gpurund() {
  FAKE_SMI_SCENARIO=$scenario GPURUN_SYSTEM_CONFIG=$dir/system.json GPURUN_SYSFS_ROOT=$dir/no-sysfs \
  FAKE_DOCKER_PS_IDS="c1 c2" FAKE_DOCKER_INSPECT=$dir/inspect.json DOCKER_HOST=unix:///nonexistent/gpurun.sock \
  "$gpurund" --state-dir "$dir/state" --socket "$dir/gpurund.sock" --interval 0.2 --no-config \
  --gpu-source nvidia-smi --nvidia-smi "$smi" --docker "$docker" --listen 127.0.0.1:0 2>"$dir/gpurund.err" &
  pids+=($!)
}

# A history to show: gpurund makes its database, then a month of other users' runs and a day of
# each GPU's minutes go in (as days of recording would have left them), and it starts again.
command -v sqlite3 >/dev/null || fail "sqlite3 is missing (scripts/install-deps installs it)"
start_gpurund
for _ in $(seq 100); do [[ -s $dir/state/gpurund.db ]] && break; sleep 0.1; done
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
now=$(date +%s)
sqlite3 "$dir/state/gpurund.db" <<SQL || fail "cannot write the history into gpurund's database"
DELETE FROM runs;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39)
INSERT INTO runs (id, key, name, user, container_id, image, command, gpus, start_ms, last_seen_ms, end_ms,
                  gpu_seconds, busy_gpu_seconds, idle_seconds, max_memory_mib, ended_by)
SELECT 1000 + i, 'container:old' || i, 'job' || i, CASE i % 4 WHEN 0 THEN 'alice' WHEN 1 THEN 'dave' WHEN 2 THEN 'erin' ELSE 'frank' END,
       'old' || i, 'lab/pytorch:24.05', 'python train.py', (i % 8) || ',' || ((i + 1) % 8),
       ($now - 86400 * (i % 28) - 7200) * 1000, ($now - 86400 * (i % 28)) * 1000, ($now - 86400 * (i % 28)) * 1000,
       3600.0 * (2 + i % 5) * (1 + i % 4), 3600.0 * (2 + i % 5) * (1 + i % 4) * (0.25 + (i % 4) * 0.22),
       600.0 * (i % 3), 40000, 'gone'
FROM n;
WITH RECURSIVE m(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM m WHERE k < 1440),
     g(gpu) AS (SELECT 0 UNION ALL SELECT gpu + 1 FROM g WHERE gpu < 7)
INSERT OR REPLACE INTO gpu_minutes (minute, gpu, samples, util_samples, util_sum_permille, util_max_permille,
                                    idle_samples, memory_max_mib, holders_max)
SELECT $now / 60 - k, gpu, 6, 6, 6 * (CASE WHEN ((k + gpu * 97) / 180) % 3 = 0 THEN 0
                                            ELSE 350 + ((k / 15 + gpu * 7) % 13) * 50 END),
       1000, 0, 40000, 1
FROM m, g;
SQL
start_gpurund
port=
for _ in $(seq 100); do
  port=$(grep -oE 'on 127\.0\.0\.1:0 \(port [0-9]+\)' "$dir/gpurund.err" | grep -oE '[0-9]+\)$' | tr -d ')' || true)
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || fail "gpurund did not say which port it listens on"
sleep 2  # some samples: runs, idle time, a minute's rollup

# Headless chromium as root needs --no-sandbox; its profile stays in the temporary directory.
chrome() {
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --user-data-dir="$dir/profile" --virtual-time-budget=5000 "$@" 2>>"$dir/chromium.err"
}
url=http://127.0.0.1:$port/
chrome --dump-dom "$url" >"$dir/dom.html" || fail "chromium could not load $url: $(tail -3 "$dir/chromium.err")"
dom=$(cat "$dir/dom.html")

check() { # check DESCRIPTION PYTHON-EXPRESSION-OVER-dom
  python3 - "$dir/dom.html" "$2" <<'PY' && pass "$1" || fail "$1"
import html.parser, re, sys
dom = open(sys.argv[1]).read()
class Rows(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.title, self.scripts, self.figures, self.lines = [], None, None, "", 0, 0, []
        self.in_title = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-gpu" in a: self.row = {"class": a.get("class", ""), "gpu": a["data-gpu"]}; self.rows.append(self.row)
        if tag == "td" and self.row is not None: self.cell = a.get("class", ""); self.row.setdefault(self.cell, "")
        if tag == "script": self.scripts += 1
        if tag == "figure": self.figures += 1
        if tag == "polyline": self.lines.append(len(a.get("points", "").split()))
        if tag == "title": self.in_title = True
    def handle_endtag(self, tag):
        if tag == "tr": self.row = None
        if tag == "td": self.cell = None
        if tag == "title": self.in_title = False
    def handle_data(self, data):
        if self.in_title: self.title += data
        if self.row is not None and self.cell: self.row[self.cell] += data
page = Rows(); page.feed(dom)
rows = {r["gpu"]: r for r in page.rows}
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
check "the board shows all 8 GPUs" 'sorted(rows) == [str(i) for i in range(8)]'
check "bob holds GPU 3, by his container's name and run" 'rows["3"]["holder"].startswith("bob · bob_gpu3 (run ")'
check "GPU 3, held at 0 %, is marked idle with its idle time" \
  'rows["3"]["class"] == "idle" and re.fullmatch(r"[0-9]+s", rows["3"]["idle"])'
check "the free GPUs say so" 'rows["2"]["state"] == "free" and rows["5"]["state"] == "free"'
check "the name that is a <script> tag is shown as text" \
  '"<script>document.title=\x27pwned\x27</script>" in rows["6"]["holder"]'
check "no script ran from it: one script element (page.js), the title untouched" \
  'page.scripts == 1 and page.title.startswith("GPUs on ")'
check "page.js drew each GPU's last 24 hours from its one-minute rollups" \
  'page.figures == 8 and len(page.lines) == 8 and min(page.lines) >= 1440'
check "the usage table lists the month's users and the holders now, each with a link to their runs" \
  'all(f"href=\"?user={u}#runs\"" in dom for u in ("alice", "dave", "erin", "frank", "bob", "carol"))'
check "the usage chart is drawn" 're.search(r"<div id=\"usage-chart\"[^>]*><svg", dom) is not None'
check "page.js fetched everything it asked: its status line is empty" \
  're.search(r"<p id=\"page-status\"[^>]*></p>", dom) is not None'

chrome --dump-dom "${url}?user=bob" >"$dir/runs.html" || fail "chromium could not load ${url}?user=bob"
grep -q '<h2>Runs of bob</h2>' "$dir/runs.html" && grep -q '<td>bob_gpu3</td>' "$dir/runs.html" &&
  pass "?user=bob shows bob's runs" || fail "?user=bob: no runs of bob"

mkdir -p "$artifacts"
chrome --window-size=1280,1400 --screenshot="$artifacts/lab-page.png" "$url" >/dev/null ||
  fail "chromium could not take a screenshot"
[[ -s $artifacts/lab-page.png ]] && pass "screenshot: $artifacts/lab-page.png" || fail "no screenshot"
# The same page as a phone shows it (the style sheet's narrow layout), kept beside it.
chrome --window-size=390,844 --screenshot="$artifacts/lab-page-phone.png" "$url" >/dev/null ||
  fail "chromium could not take the phone's screenshot"
[[ -s $artifacts/lab-page-phone.png ]] && pass "screenshot: $artifacts/lab-page-phone.png" || fail "no phone screenshot"
