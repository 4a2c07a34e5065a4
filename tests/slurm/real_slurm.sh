#!/usr/bin/env bash
# End-to-end test of the Slurm backend against a real single-node Slurm 22.05 with four fake
# GPUs (tests/slurm/cluster.sh), started here and stopped by pid on the way out.
#
#   bash tests/slurm/real_slurm.sh <path-to-gpurun>
#
# Checks: --dry-run prints the srun line; the exit status passes through srun; two concurrent
# 2-GPU jobs get disjoint GPUs while a third waits in Slurm's queue (--wait) and a fourth without
# --wait fails at once; status and ps show the allocation; -d returns a job id that completes;
# --report samples the step's GPUs from inside the allocation; the pyxis options reach srun (a
# stand-in SPANK plugin built here records them); the oci path runs a real container with runc
# from a bundle gpurun makes of a busybox image, seeing its working directory and only its GPUs;
# --report in a pyxis or oci container (a sampling step that starts the container step), also
# with -d (the report in the job's output); -d with oci (the batch script's gpurun writes the
# bundle on the node).
#
# Exit status: 0 all assertions hold, 1 a failure, 77 skipped (not root, Slurm not installed,
# Slurm does not start here). 77 is the CTest SKIP_RETURN_CODE.
set -uo pipefail
source "$(dirname -- "${BASH_SOURCE[0]}")/../e2e/lib.sh"

here=$(cd "$(dirname -- "$0")" && pwd -P)

(($# == 1)) || { say "usage: $0 <path-to-gpurun>" >&2; exit 2; }
gpurun=$(abspath "$1")
[[ -x $gpurun ]] || die "$1 is not an executable gpurun"

[[ $(id -u) -eq 0 ]] || skip "needs root to run slurmd (running as uid $(id -u))"
export PATH=$SYS_PATH
D=$(mktemp -d /tmp/gpurun-slurm-test.XXXXXX)
trap 'bash "$here/cluster.sh" stop "$D"' EXIT
# Ports of our own, so that a second run (or a system Slurm on 6817) never answers ours.
export TEST_SLURM_PORT=${TEST_SLURM_PORT:-$((20000 + ($$ % 10000) * 2))}
start_out=$(bash "$here/cluster.sh" start "$D" 2>&1)
case $? in
  0) ;;
  77) skip "$start_out" ;;
  *) say "$start_out"; skip "Slurm did not start on this machine (see above)" ;;
esac
export SLURM_CONF=$D/etc/slurm.conf
work=$D/work
mkdir -p "$work"
cd "$work" || exit 1
unset GPURUN_CONFIG  # the test's settings only
export XDG_CONFIG_HOME=$D/config
export GPURUN_BACKEND=slurm GPURUN_SLURM_CONTAINER=none
# --no-config: whatever the machine's /etc/gpurun or ~/.config say, only the variables here count.
run() { timeout 60 "$gpurun" --no-config "$@"; }

# --- dry run: the exact srun line, with the partition's fair share (64 CPUs / 4 GPUs = 16) ----
out=$(run --dry-run 2 -- sh -c 'echo hi')
expect_eq "dry run prints the srun line" \
  "srun --nodes=1 --gpus-per-node=2 --cpus-per-gpu=16 --job-name=gpurun --immediate sh -c 'echo hi'" "$out"
out=$(run --dry-run --wait=90s --slurm-gres --slurm-partition gpu --slurm-time 5 1 -- true)
expect_eq "dry run: --wait=90s, --gres, partition and time" \
  "srun --nodes=1 --gres=gpu:1 --cpus-per-task=16 --job-name=gpurun --partition=gpu --time=5 --immediate=90 true" "$out"
out=$(run --slurm-gres 2 -- sh -c 'echo "$SLURM_STEP_GPUS $SLURM_CPUS_PER_TASK"')
expect_eq "--slurm-gres: the job holds 2 GPUs and their CPUs" "0,1 32" "$out"

# --- the exit status passes through srun -----------------------------------------------------
run 1 -- sh -c 'exit 7' 2>/dev/null
expect_eq "exit status of the job" 7 "$?"

# --- two concurrent jobs get disjoint GPUs; a third waits; a fourth without --wait fails -----
job() { run --name "$1" 2 -- sh -c "echo \$SLURM_STEP_GPUS > $work/$1.gpus; sleep $2"; }
job one 4 & p1=$!
job two 4 & p2=$!
for _ in $(seq 1 50); do [[ -s $work/one.gpus && -s $work/two.gpus ]] && break; sleep 0.1; done
run --wait --name three 2 -- sh -c "echo \$SLURM_STEP_GPUS > $work/three.gpus" 2>"$work/three.err" & p3=$!
sleep 0.5
status=$(run status)
expect_match "status shows all 4 GPUs allocated" $'localhost +gpu\\* +[a-z]+ +4/4 +64/64' "$status"
ps=$(run ps)
expect_match "ps shows job one running on 2 GPUs" $'root +one +RUNNING +[0-9:]+ +2 +localhost' "$ps"
expect_match "ps shows job two running on 2 GPUs" $'root +two +RUNNING +[0-9:]+ +2 +localhost' "$ps"
expect_match "ps shows job three pending" $'root +three +PENDING +[0-9:]+ +2 +\\(Resources\\)' "$ps"
json=$(run ps --json)
expect_match "ps --json lists the jobs" '"name": "three"' "$json"
# A job that asked for GPUs per job (--gpus=1, not per node): squeue's %b says N/A for it.
byhand=$(sbatch --parsable --gpus=1 -J byhand --output=/dev/null --wrap 'sleep 30' 2>&1)
expect_match "ps shows a job that asked with --gpus=1" $'root +byhand +PENDING +[0-9:]+ +1 +\\(' "$(run ps)"
scancel "$byhand" 2>/dev/null
# Per socket (Slurm takes it only with --sockets-per-node): squeue's tres-per-node and -job say N/A.
persocket=$(sbatch --parsable --gpus-per-socket=1 --sockets-per-node=2 -J persocket --output=/dev/null --wrap 'sleep 30' 2>&1)
expect_match "ps shows a job that asked with --gpus-per-socket=1 on 2 sockets" $'root +persocket +PENDING +[0-9:]+ +2 +\\(' "$(run ps)"
scancel "$persocket" 2>/dev/null
[[ -e $work/three.gpus ]] && fail "the third job ran while the GPUs were taken" || pass "the third job waits"
run 2 -- true 2>"$work/four.err"
rc=$?
[[ $rc -ne 0 ]] && pass "without --wait a busy cluster fails at once (rc $rc)" || fail "the fourth job ran"
wait "$p1" "$p2"
g1=$(cat "$work/one.gpus" 2>/dev/null) g2=$(cat "$work/two.gpus" 2>/dev/null)
expect_eq "two concurrent jobs hold disjoint GPUs" "0,1,2,3" "$(printf '%s,%s' "$g1" "$g2" | tr , '\n' | sort -n | paste -sd,)"
wait "$p3"
expect_eq "the third job ran once GPUs were free" 0 "$?"
expect_match "the third job got 2 GPUs" '^[0-3],[0-3]$' "$(cat "$work/three.gpus" 2>/dev/null)"
grep -q "queued and waiting for resources" "$work/three.err" && pass "srun said the third job was queued" ||
  fail "srun did not queue the third job: $(cat "$work/three.err")"

# --- -d: sbatch returns a job id that completes ---------------------------------------------
id=$(run -d 2 -- sh -c 'echo "gpus=$CUDA_VISIBLE_DEVICES"' 2>"$work/detach.err")
expect_match "-d prints a job id" '^[0-9]+$' "$id"
grep -q "scancel $id" "$work/detach.err" && pass "-d says how to cancel" || fail "-d hints: $(cat "$work/detach.err")"
for _ in $(seq 1 100); do [[ -z $(squeue -h -j "$id" 2>/dev/null) ]] && break; sleep 0.1; done
expect_eq "the batch job's output" "gpus=0,1" "$(cat "$work/gpurun-$id.out" 2>/dev/null)"

# --- --report inside the allocation: gpurun samples the step's GPUs on the node -------------
# The stand-in nvidia-smi plays GPU 0 at 90 95 100 20 ... % and GPU 1 at 95 %.
fakes=$(cd "$here/../fakes" && pwd -P)
scenarios=$(cd "$here/../data/scenarios" && pwd -P)
FAKE_SMI_SCENARIO=$scenarios/report_trace.json \
  run --report --report-interval 0.2 --report-json "$work/report.json" --nvidia-smi "$fakes/nvidia-smi" \
  2 -- sh -c 'sleep 1.2; exit 4' 2>"$work/report.err"
expect_eq "--report: the job's exit status" 4 "$?"
expect_match "--report: the summary names the step's GPUs" 'granted +2 GPUs \(0, 1\), 32 CPUs' "$(cat "$work/report.err")"
expect_match "--report: GPU efficiency in the summary" 'GPU efficiency +[0-9.]+%' "$(cat "$work/report.err")"
expect_match "--report-json: per-GPU samples" '"index": 1,' "$(cat "$work/report.json" 2>/dev/null)"

# --- pyxis: the container options srun gets (stand-in SPANK plugin) -------------------------
if cc -Wall -Werror -shared -fPIC -o "$D/pyxis_standin.so" "$here/pyxis_standin.c" 2>"$work/cc.err"; then
  echo "required $D/pyxis_standin.so $work/pyxis.record" >"$D/etc/plugstack.conf"
  export GPURUN_SLURM_CONTAINER=pyxis
  run --image nvcr.io/nvidia/pytorch:24.05-py3 -e WANDB_MODE=offline -v /srv/data:/data:ro 1 -- true
  expect_eq "pyxis job exit status" 0 "$?"
  expect_eq "pyxis options as srun passed them" "container-image=nvcr.io#nvidia/pytorch:24.05-py3
container-mounts=$work:$work,/srv/data:/data:ro
container-workdir=$work
container-env=WANDB_MODE
env WANDB_MODE=offline" "$(cat "$work/pyxis.record" 2>/dev/null)"
  # pyxis mounts the working directory at its path as docker does: not from /usr (the image's own).
  out=$(cd /usr && run --dry-run --image busybox 1 -- true 2>&1)
  expect_match "pyxis from /usr is refused, saying what to do" "cd to your project's directory first" "$out"
  out=$(cd /usr && run --dry-run --slurm-container none 1 -- true 2>&1)
  expect_match "without a container /usr is a working directory like another" '^srun ' "$out"
  # --report in a pyxis container: gpurun samples in a first step, the container step is its child.
  : >"$work/pyxis.record"
  out=$(run --dry-run --report --nvidia-smi /opt/smi --image busybox 2 -- true)
  expect_eq "pyxis --report: the dry run shows the sampling step and the container step it starts" \
    "srun --nodes=1 --gpus-per-node=2 --cpus-per-gpu=16 --job-name=gpurun --immediate --overlap /usr/bin/env GPURUN_SLURM_REPORT_STEP=1 $gpurun --no-config --backend slurm --slurm-container none --report --nvidia-smi /opt/smi --report-interval 1 --report-threshold 80 --gpu-source nvidia-smi 2 -- srun --container-image=busybox --container-mounts=$work:$work --container-workdir=$work true" "$out"
  FAKE_SMI_SCENARIO=$scenarios/report_trace.json run --report --report-interval 0.2 --nvidia-smi "$fakes/nvidia-smi" \
    --image busybox -e MODE=pyxis 2 -- sh -c 'echo "$MODE" >pyxis.out; sleep 1.2; exit 3' 2>"$work/pyxis-report.err"
  expect_eq "pyxis --report: the job's exit status" 3 "$?"
  expect_eq "pyxis --report: the container step got the job's environment" pyxis "$(cat "$work/pyxis.out" 2>/dev/null)"
  expect_match "pyxis --report: the summary names the job's GPUs" 'granted +2 GPUs \(0, 1\)' "$(cat "$work/pyxis-report.err")"
  expect_match "pyxis --report: GPU efficiency in the summary" 'GPU efficiency +[0-9.]+%' "$(cat "$work/pyxis-report.err")"
  expect_eq "pyxis --report: the container options reached the container step" "container-image=busybox
container-mounts=$work:$work
container-workdir=$work
container-env=MODE
env MODE=pyxis" "$(cat "$work/pyxis.record" 2>/dev/null)"
  # -d --report: the report goes to the batch job's output when it ends.
  id=$(FAKE_SMI_SCENARIO=$scenarios/report_trace.json run -d --report --report-interval 0.2 \
    --nvidia-smi "$fakes/nvidia-smi" --image busybox 2 -- sh -c 'echo in-pyxis; sleep 1.2' 2>"$work/pyxis-detach.err")
  expect_match "pyxis -d --report prints a job id" '^[0-9]+$' "$id"
  for _ in $(seq 1 150); do [[ -z $(squeue -h -j "$id" 2>/dev/null) ]] && break; sleep 0.2; done
  out=$(cat "$work/gpurun-$id.out" 2>/dev/null)
  expect_match "pyxis -d --report: the job ran in its container step" $'^in-pyxis\n' "$out"
  expect_match "pyxis -d --report: the report is in the job's output" 'granted +2 GPUs \(0, 1\).*GPU efficiency +[0-9.]+%' "$(tr '\n' ' ' <<<"$out")"
  out=$(run --image busybox -v data:/data 1 -- true 2>&1)
  expect_eq "a named volume is refused under pyxis (rc)" 125 "$?"
  expect_match "a named volume is refused with a reason" 'no named Docker volumes' "$out"
else
  fail "cannot build the pyxis stand-in (is libslurm-dev installed?): $(cat "$work/cc.err")"
fi

# --- oci: Slurm's srun --container with runc, the bundle made by gpurun (skopeo + umoci) from a
# busybox image; the container sees the working directory, a volume, the env and only its GPUs.
missing=""
for p in skopeo umoci runc; do command -v "$p" >/dev/null || missing="$missing $p"; done
bb=$(static_busybox) || missing="$missing busybox-static"
if [[ -n $missing ]]; then
  fail "the oci check needs:$missing (scripts/install-deps)"
else
  image=$D/busybox-image
  b=$D/image-build
  { umoci init --layout "$image" && umoci new --image "$image:1" && umoci unpack --image "$image:1" "$b" &&
    busybox_rootfs "$b/rootfs" "$bb" sh ls env cat id tr grep sleep &&
    umoci repack --image "$image:1" "$b"; } >"$work/umoci.log" 2>&1 || fail "cannot build the busybox image: $(cat "$work/umoci.log")"
  export GPURUN_SLURM_CONTAINER=oci GPURUN_SLURM_OCI_CACHE=$D/oci-cache
  echo data >"$work/input.txt"
  mkdir -p "$D/volume" && echo vol >"$D/volume/v.txt"
  GPURUN_SLURM_CONTAINER=none job holder 3 & holder=$!  # holds GPUs 0,1 while the oci job runs
  for _ in $(seq 1 50); do [[ -s $work/holder.gpus ]] && break; sleep 0.1; done
  out=$(GPURUN_SLURM_CONTAINER=oci run --image "oci:$image:1" -e MODE=oci -v "$D/volume:/vol:ro" 2 -- \
    sh -c 'echo "$(cat input.txt) $(cat /vol/v.txt) $MODE $CUDA_VISIBLE_DEVICES $(ls /dev | grep nvidia | tr "\n" " ")"; exit 5' 2>"$work/oci.err")
  expect_eq "oci: exit status" 5 "$?"
  expect_eq "oci: workdir, volume, env, CUDA_VISIBLE_DEVICES and only its GPUs' device nodes" \
    "data vol oci 0,1 nvidia2 nvidia3 " "$out"
  wait "$holder"
  [[ -z $(squeue -h) ]] && pass "oci: the allocation is released" || fail "oci: jobs left: $(squeue -h)"
  [[ -z $(ls "$D/oci-cache/jobs" 2>/dev/null) ]] && pass "oci: the job's bundle is removed" || fail "oci: bundle left"
  [[ $out == data* ]] || say "oci stderr: $(cat "$work/oci.err")"

  # --report in an oci container: the sampling step runs the container step as its child.
  FAKE_SMI_SCENARIO=$scenarios/report_trace.json run --report --report-interval 0.2 --nvidia-smi "$fakes/nvidia-smi" \
    --image "oci:$image:1" 2 -- sh -c 'ls /dev | grep nvidia | tr "\n" " " >oci-report.out; sleep 1.2; exit 6' \
    2>"$work/oci-report.err"
  expect_eq "oci --report: the job's exit status" 6 "$?"
  expect_eq "oci --report: the container ran on the job's GPUs" "nvidia0 nvidia1 " "$(cat "$work/oci-report.out" 2>/dev/null)"
  expect_match "oci --report: the summary names the job's GPUs" 'granted +2 GPUs \(0, 1\)' "$(cat "$work/oci-report.err")"
  expect_match "oci --report: GPU efficiency in the summary" 'GPU efficiency +[0-9.]+%' "$(cat "$work/oci-report.err")"

  # -d: the batch script runs gpurun on the node, which writes the bundle once the job holds its GPUs.
  # A holder takes GPUs 0,1 (--wait: the last job's allocation may still be completing), so the batch job gets 2,3.
  # It holds them until the batch job has ended (a file says so; 60 s at most), however slowly a loaded machine
  # schedules the batch job.
  GPURUN_SLURM_CONTAINER=none run --wait --name holder2 2 -- sh -c "echo \$SLURM_STEP_GPUS > $work/holder2.gpus
    for i in \$(seq 1 600); do [ -e $work/holder2.release ] && exit 0; sleep 0.1; done" &
  holder=$!
  for _ in $(seq 1 100); do [[ -s $work/holder2.gpus ]] && break; sleep 0.1; done
  id=$(FAKE_SMI_SCENARIO=$scenarios/report_trace.json run -d --report --report-interval 0.2 --nvidia-smi "$fakes/nvidia-smi" \
    --image "oci:$image:1" -e MODE=batch -v "$D/volume:/vol:ro" 2 -- \
    sh -c 'echo "$(cat input.txt) $(cat /vol/v.txt) $MODE $CUDA_VISIBLE_DEVICES $(ls /dev | grep nvidia | tr "\n" " ")"; exit 5' \
    2>"$work/oci-detach.err")
  expect_match "oci -d prints a job id" '^[0-9]+$' "$id"
  for _ in $(seq 1 150); do [[ -z $(squeue -h -j "$id" 2>/dev/null) ]] && break; sleep 0.2; done
  touch "$work/holder2.release"
  expect_eq "oci -d: the batch job's container saw the workdir, volume, env and only its GPUs" \
    "data vol batch 0,1 nvidia2 nvidia3 " "$(head -1 "$work/gpurun-$id.out" 2>/dev/null)"
  expect_match "oci -d: the job's exit status is Slurm's" 'ExitCode=5:0' "$(scontrol show job "$id" 2>&1)"
  expect_match "oci -d --report: the report is in the job's output" 'granted +2 GPUs \(2, 3\).*exit status +5|exit status +5.*granted +2 GPUs \(2, 3\)' \
    "$(tr '\n' ' ' <"$work/gpurun-$id.out" 2>/dev/null)"
  wait "$holder"
  [[ -z $(ls "$D/oci-cache/jobs" 2>/dev/null) ]] && pass "oci -d: the job's bundle is removed" || fail "oci -d: bundle left"
  [[ -s $work/gpurun-$id.out ]] || say "oci -d stderr: $(cat "$work/oci-detach.err")"
fi

summary
