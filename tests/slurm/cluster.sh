#!/usr/bin/env bash
# A throw-away single-node Slurm (Debian 12's 22.05) with four fake GPUs, for the Slurm tests.
#
#   tests/slurm/cluster.sh start DIR   -> starts munged, slurmctld and slurmd with everything
#                                         (config, state, logs, sockets, pid files) under DIR;
#                                         prints "export SLURM_CONF=DIR/etc/slurm.conf"
#   tests/slurm/cluster.sh stop DIR    -> stops what `start` started, by pid, and removes DIR
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge (scripts/install-deps).
# The cluster uses its own munge socket and its own ports (TEST_SLURM_PORT, default 16817, and
# the next one), so it never talks to a system Slurm. Exit status of start: 0 up, 1 it did not
# come up (the log tails say why), 77 it cannot run here (not root, packages missing).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
(($# == 2)) || usage
action=$1
D=$2

start() {
  [[ $(id -u) -eq 0 ]] || { echo "cluster.sh: needs root to run slurmd (uid $(id -u))" >&2; exit 77; }
  local p
  for p in munged slurmctld slurmd sinfo srun; do
    PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$p" >/dev/null ||
      { echo "cluster.sh: $p is not installed (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 77; }
  done
  local port=${TEST_SLURM_PORT:-16817}
  mkdir -p "$D"/{etc,state,spool,log,run,dev,munge}
  chmod 755 "$D" "$D/munge"  # munged wants every directory above its socket o+x (mktemp makes 0700)

  # Four fake GPUs: character devices (major 195, as nvidia's), kept out of /dev so that no real
  # GPU probe sees them. Regular files would be scheduled, but Slurm would then set no
  # CUDA_VISIBLE_DEVICES.
  local i
  for i in 0 1 2 3; do [[ -c $D/dev/nvidia$i ]] || mknod "$D/dev/nvidia$i" c 195 "$i"; done

  [[ -f $D/munge/munge.key ]] || {
    dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$D/munge/munge.key"
  }
  munged --socket="$D/munge/munge.socket.2" --key-file="$D/munge/munge.key" --log-file="$D/munge/munged.log" \
    --pid-file="$D/munge/munged.pid" --seed-file="$D/munge/munged.seed"

  # CPUs=64 with config_overrides: 16 CPUs per GPU whatever the test machine has, so that two
  # 2-GPU jobs fit side by side (they oversubscribe the real cores, which a test does not mind).
  # No AccountingStorageTRES=gres/gpu: it would need slurmdbd.
  cat >"$D/etc/slurm.conf" <<CONF
ClusterName=gpuruntest
SlurmctldHost=localhost
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket.2
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
PlugStackConfig=$D/etc/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=64 RealMemory=64000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  cat >"$D/etc/gres.conf" <<CONF
AutoDetect=off
Name=gpu File=$D/dev/nvidia[0-3]
CONF
  # Slurm's native OCI containers (srun --container=BUNDLE) run with runc, its state under DIR.
  mkdir -p "$D/runc"
  cat >"$D/etc/oci.conf" <<CONF
RunTimeQuery="runc --root=$D/runc state %n.%u.%j.%s.%t"
RunTimeKill="runc --root=$D/runc kill -a %n.%u.%j.%s.%t"
RunTimeDelete="runc --root=$D/runc delete --force %n.%u.%j.%s.%t"
RunTimeRun="runc --root=$D/runc run %n.%u.%j.%s.%t -b %b"
CONF
  # SPANK plugins the tests add (the pyxis stand-in) go here; srun reads it at every call.
  [[ -f $D/etc/plugstack.conf ]] || : >"$D/etc/plugstack.conf"

  export SLURM_CONF=$D/etc/slurm.conf
  slurmctld -D -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 </dev/null &
  echo $! >"$D/run/slurmctld.bgpid"
  slurmd -D -N localhost -f "$SLURM_CONF" >"$D/log/slurmd.out" 2>&1 </dev/null &
  echo $! >"$D/run/slurmd.bgpid"
  # Watch the daemons while waiting: a dead slurmctld makes every sinfo hang for seconds.
  local end=$((SECONDS + 30)) d
  while ((SECONDS < end)); do
    for d in slurmctld slurmd; do
      kill -0 "$(cat "$D/run/$d.bgpid")" 2>/dev/null || {
        echo "cluster.sh: $d died:" >&2
        tail -5 "$D/log/$d.out" "$D/log/$d.log" >&2 2>/dev/null || true
        exit 1
      }
    done
    if [[ $(timeout 5 sinfo -h -N -o %T 2>/dev/null) == idle ]]; then
      echo "export SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.2
  done
  echo "cluster.sh: slurm did not come up in 30 s; see $D/log" >&2
  exit 1
}

stop() {
  local pids="" f p
  for f in "$D/run/slurmd.bgpid" "$D/run/slurmctld.bgpid" "$D/munge/munged.pid"; do
    [[ -s $f ]] && p=$(cat "$f") && kill -TERM "$p" 2>/dev/null && pids="$pids $p"
  done
  for p in $pids; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    # slurmd ignores TERM while it retries its registration.
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$D"
}

case $action in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
