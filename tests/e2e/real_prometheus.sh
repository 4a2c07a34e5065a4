#!/usr/bin/env bash
# End-to-end: Debian's Prometheus, on loopback, scrapes a gpurund that samples the stand-in
# nvidia-smi (the busy DGX: seven GPU processes on six GPUs), and answers PromQL about them.
# Then every query of the shipped Grafana dashboard runs against it and must be answered.
# Usage: real_prometheus.sh GPURUND NVIDIA_SMI_FAKE DOCKER_FAKE SCENARIO DASHBOARD_JSON
# Skips (77) where prometheus is not installed. Everything lives in a temporary directory.
set -euo pipefail
gpurund=$1 smi=$2 docker=$3 scenario=$4 dashboard=$5
command -v prometheus >/dev/null || { echo "SKIP: prometheus is missing (apt-get install prometheus)"; exit 77; }

dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- gpurund:" >&2; cat "$dir/gpurund.err" >&2 || true
         echo "--- prometheus (last lines):" >&2; tail -n 20 "$dir/prometheus.err" >&2 || true; exit 1; }

FAKE_SMI_SCENARIO=$scenario GPURUN_SYSTEM_CONFIG=$dir/no-system-config.json GPURUN_SYSFS_ROOT=$dir/no-sysfs \
  "$gpurund" --state-dir "$dir/state" --socket "$dir/gpurund.sock" --interval 0.2 --no-config \
  --gpu-source nvidia-smi --nvidia-smi "$smi" --docker "$docker" --listen 127.0.0.1:0 2>"$dir/gpurund.err" &
pids+=($!)
port=
for _ in $(seq 100); do
  port=$(grep -oE 'on 127\.0\.0\.1:0 \(port [0-9]+\)' "$dir/gpurund.err" | grep -oE '[0-9]+\)$' | tr -d ')' || true)
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || fail "gpurund did not say which port it listens on"

cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpurun
    static_configs:
      - targets: ["127.0.0.1:$port"]
YAML
# Prometheus on a free port: the kernel's pick, released just before Prometheus binds it, so
# another process may take it meanwhile; then another pick, up to five.
web=
for _ in 1 2 3 4 5; do
  try=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$try" 2>"$dir/prometheus.err" &
  pid=$!
  for _ in $(seq 100); do
    kill -0 $pid 2>/dev/null || break
    grep -q "Server is ready to receive web requests" "$dir/prometheus.err" && { web=$try; break; }
    sleep 0.1
  done
  [[ -n $web ]] && { pids+=($pid); break; }
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  grep -q "address already in use" "$dir/prometheus.err" || break
done
[[ -n $web ]] || fail "Prometheus did not start"

# PromQL through Prometheus' HTTP API: the first sample's value of QUERY, or nothing yet.
query() {
  python3 - "$web" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
try:
    url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
    result = json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
    print(result[0]["value"][1] if result else "")
except Exception:
    print("")
PY
}
held=
for _ in $(seq 120); do
  held=$(query 'sum(gpurun_gpu_held{job="gpurun"})')
  [[ -n $held ]] && break
  sleep 0.5
done
[[ $held == 7 ]] || fail "sum(gpurun_gpu_held) is '$held', expected 7 (one series per holder per GPU)"
echo "ok: Prometheus scraped gpurund: 7 holders"
# The dashboard's "GPUs held now": GPUs, whoever and however many hold each (busy_dgx: 6).
[[ $(query 'count(count by (instance, gpu) (gpurun_gpu_held{job="gpurun"}))') == 6 ]] ||
  fail "the held GPUs counted by GPU are not 6"
[[ $(query 'up{job="gpurun"}') == 1 ]] || fail "up{job=\"gpurun\"} is not 1"
[[ $(query 'count(DCGM_FI_DEV_GPU_UTIL{job="gpurun"})') == 8 ]] || fail "not one DCGM_FI_DEV_GPU_UTIL per GPU"
[[ $(query 'count(DCGM_FI_DEV_FB_USED{job="gpurun", hpc_job!=""})') == 6 ]] ||
  fail "the six held GPUs do not carry their holder in hpc_job"
echo "ok: DCGM's series, one per GPU, the held ones labelled with their holder"

# The dashboard's queries, as Grafana would send them with every host chosen: each must be valid
# PromQL and answer with at least one series (retried while Prometheus gathers its first samples).
python3 - "$web" "$dashboard" <<'PY' || fail "a query of the dashboard is not answered"
import json, sys, time, urllib.parse, urllib.request
web, path = sys.argv[1], sys.argv[2]
dashboard = json.load(open(path))
names = {v["name"] for v in dashboard["templating"]["list"]}
assert names == {"datasource", "instance"}, names
# The data source chosen at import (__inputs) is the one the panels use: the variable starts at it.
assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"], dashboard["__inputs"]
chooser = next(v for v in dashboard["templating"]["list"] if v["name"] == "datasource")
assert chooser["current"]["value"] == "${DS_PROMETHEUS}", chooser["current"]
for panel in dashboard["panels"]:
    assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
failed = 0
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        expr = (target["expr"].replace("$instance", ".*").replace("$__range", "5m")
                .replace("$__rate_interval", "1m"))
        url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (web, urllib.parse.quote(expr))
        answer = {}
        for _ in range(40):
            try:
                answer = json.load(urllib.request.urlopen(url, timeout=5))
            except urllib.error.HTTPError as e:  # a bad query: 400 with the reason
                answer = json.load(e)
                break
            if answer.get("data", {}).get("result"):
                break
            time.sleep(0.5)
        ok = answer.get("status") == "success" and answer["data"]["result"]
        print("%s: %s: %s" % ("ok" if ok else "FAIL", panel["title"], expr if ok else answer))
        failed += 0 if ok else 1
sys.exit(1 if failed else 0)
PY
echo "ok: every query of the Grafana dashboard is answered"
echo "PASS"
