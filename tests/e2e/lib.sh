# shellcheck shell=bash
# Shared by the shell tests that run real components (tests/e2e/real_*.sh, sudo_real.sh,
# tests/slurm/real_slurm.sh); sourced, never run. It offers:
#   - results: say, pass, fail (counted in passes/failures), skip (exit 77, the CTest
#     SKIP_RETURN_CODE), die (exit 1), expect_eq, expect_match, summary (the closing line and
#     status);
#   - files: abspath, SYS_PATH and sys_which (the distribution's tools, never the caller's PATH),
#     static_busybox (the images have no libc), busybox_rootfs;
#   - a private Docker engine: docker_engine_tools, start_private_docker DIR (containerd + dockerd
#     with all their state in DIR; exports DOCKER_HOST=unix://DIR/d.sock), docker_import_busybox,
#     docker_memlock_shim, stop_private_docker DIR.

readonly SKIP=77
# Nothing of the caller's: a GPURUN_* an admin exported (an engine, a docker), their user file, a
# proxy the loopback requests would go through. The GPUs are the stand-ins': never a GPU host's NVML.
for variable in "${!GPURUN_@}"; do [[ $variable == GPURUN_E2E_* ]] || unset "$variable"; done  # (the tests' own kept)
export XDG_CONFIG_HOME=/nonexistent/gpurun-tests/xdg GPURUN_GPU_SOURCE=nvidia-smi
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
# Never the machine's /etc/gpurun/config.json: an admin's policy there would change the answers.
# sudo_real.sh writes one of its own (put back on exit) and unsets this.
export GPURUN_SYSTEM_CONFIG=/nonexistent/gpurun-tests/config.json
# Nor the machine's gpurun service: a gpurund running here would add IDLE columns to status and ps.
export GPURUN_SERVICE_SOCKET=/nonexistent/gpurun-tests/gpurund.sock
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

remove_stale_cdi_specs() { # the stand-in CDI specs of runs killed before their cleanup (their pid gone)
  local f pid
  for f in /var/run/cdi/gpurun-e2e-*.json; do
    [[ -e $f ]] || continue
    pid=${f%.json} pid=${pid##*-}
    [[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -f -- "$f"
  done
  return 0
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

# ---------------------------------------------------------------------------------------
# A private Docker engine: containerd + dockerd (vfs storage, no bridge, no iptables) with
# every socket, state and data directory in one directory, so that it never touches an engine
# already running, nor a second copy of itself running concurrently.
# ---------------------------------------------------------------------------------------
docker_engine_tools() { # skips unless the distribution's engine is installed; sets docker_cli
  local tool
  docker_cli=${GPURUN_E2E_DOCKER:-/usr/bin/docker}
  [[ -x $docker_cli ]] || skip "docker client $docker_cli not found (install docker.io)"
  for tool in dockerd containerd runc containerd-shim-runc-v2; do
    sys_which "$tool" >/dev/null || skip "$tool not found in $SYS_PATH (install docker.io)"
  done
}

log_tail() { say "---- last lines of $1 ----"; tail -n "${2:-25}" "$1" 2>/dev/null | sed 's/^/    /'; }
dk() { "$docker_cli" "$@"; }

containerd_pid="" dockerd_pid=""
# start_private_docker DIR [DAEMON_JSON_SETTING...]: starts the engine (its logs DIR/containerd.log
# and DIR/dockerd.log); skips where it does not come up. Each SETTING is a "key": value member
# added to its daemon.json. A stub nvidia-container-runtime-hook first on the daemons' PATH (it
# appends its arguments to DIR/hook-calls) makes dockerd register its nvidia device driver, so
# `--gpus '"device=…"'` is accepted and the container gets NVIDIA_VISIBLE_DEVICES, without a GPU.
# Exports DOCKER_HOST=unix://DIR/d.sock and DOCKER_CONFIG=DIR/cli (the client keeps away from
# ~/.docker); sets containerd_pid and dockerd_pid for stop_private_docker. Unix socket paths are
# limited to ~108 bytes: keep DIR short.
start_private_docker() {
  local dir=$1 start_timeout=60 i up=0 why daemon_path dockerd_bin setting settings=""
  shift
  mkdir -p "$dir/hooks" "$dir/cli"
  # runc runs this as an OCI prestart hook in every --gpus container; it only leaves a trace.
  cat >"$dir/hooks/nvidia-container-runtime-hook" <<EOF
#!/bin/sh
echo "\$*" >>"$dir/hook-calls"
exit 0
EOF
  chmod 755 "$dir/hooks/nvidia-container-runtime-hook"
  daemon_path=$dir/hooks:$SYS_PATH

  # Private containerd. dockerd 20.10 would otherwise adopt a system containerd it finds at
  # /run/containerd/containerd.sock (sharing its "moby" namespace with the host engine), and
  # only starts its own supervisor when there is none; an explicit one is never shared.
  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$dir/c.sock"
[ttrpc]
  address = "$dir/c.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
  PATH=$daemon_path "$(sys_which containerd)" --config "$dir/containerd.toml" \
    >"$dir/containerd.log" 2>&1 </dev/null &
  containerd_pid=$!
  for ((i = 0; i < start_timeout * 10; i++)); do
    [[ -S $dir/c.sock ]] && break
    kill -0 "$containerd_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -S $dir/c.sock ]]; then
    log_tail "$dir/containerd.log"
    skip "private containerd did not come up (see its log above)"
  fi

  # Our own daemon.json, so /etc/docker/daemon.json is never read. dockerd 20.10 also writes
  # an identity key to /etc/docker/key.json unless the (flag-less, config file only)
  # "deprecated-key-path" setting points elsewhere; newer dockerds have no such key.
  dockerd_bin=$(sys_which dockerd)
  grep -qa -- 'json:"deprecated-key-path' "$dockerd_bin" && set -- "\"deprecated-key-path\": \"$dir/key.json\"" "$@"
  for setting in "$@"; do settings+=${settings:+, }$setting; done
  printf '{%s}\n' "$settings" >"$dir/daemon.json"
  # --ip-forward=false: the host's net.ipv4.ip_forward is left as it is.
  PATH=$daemon_path "$dockerd_bin" --config-file "$dir/daemon.json" --containerd "$dir/c.sock" \
    --host "unix://$dir/d.sock" --data-root "$dir/data" --exec-root "$dir/x" --pidfile "$dir/dockerd.pid" \
    --storage-driver=vfs --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
    >"$dir/dockerd.log" 2>&1 </dev/null &
  dockerd_pid=$!

  export DOCKER_HOST=unix://$dir/d.sock DOCKER_CONFIG=$dir/cli
  unset DOCKER_CONTEXT DOCKER_TLS_VERIFY DOCKER_CERT_PATH DOCKER_API_VERSION
  for ((i = 0; i < start_timeout * 5; i++)); do
    if dk version >/dev/null 2>&1; then
      up=1
      break
    fi
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.2
  done
  if ((!up)); then
    log_tail "$dir/dockerd.log"
    kill -0 "$dockerd_pid" 2>/dev/null && why="did not answer within ${start_timeout} s" || why="exited"
    skip "private dockerd $why (see its log above)"
  fi
  say "engine: $(dk version --format 'dockerd {{.Server.Version}}, API {{.Server.APIVersion}}') at $DOCKER_HOST"
}

docker_import_busybox() { # docker_import_busybox DIR BUSYBOX IMAGE [APPLET...]: IMAGE made of
  # BUSYBOX with all its applets (rootfs in DIR/rootfs); skips unless it has each APPLET named
  local dir=$1 bb=$2 image=$3 a
  shift 3
  busybox_rootfs "$dir/rootfs" "$bb" || die "cannot make a root file system of $bb"
  for a in "$@"; do
    [[ -e $dir/rootfs/bin/$a ]] || skip "$bb lacks the '$a' applet"
  done
  if ! tar --numeric-owner -C "$dir/rootfs" -cf - . | dk import - "$image" >"$dir/import.log" 2>&1; then
    cat "$dir/import.log"
    die "docker import of the busybox rootfs failed"
  fi
}

# RLIMIT_MEMLOCK. gpurun passes `--ulimit memlock=-1`; runc can only raise the hard limit with
# CAP_SYS_RESOURCE. Some sandboxes (this project's CI VM included) withhold that capability even
# from root, and then every such container fails with "error setting rlimits for ready process:
# error setting rlimit type 8: operation not permitted". There, and only there, gpurun is
# pointed at a tiny shim that rewrites memlock to the current hard limit before exec'ing the
# real client; everything else is passed through untouched.
# shellcheck disable=SC2034  # memlock_shim and hard_kb are for the script that sources this
docker_memlock_shim() { # docker_memlock_shim PATH: sets docker_for_gpurun (the client, or the
  # shim written at PATH) and memlock_shim (1 where there is one; hard_kb is then its limit)
  docker_for_gpurun=$docker_cli
  memlock_shim=0
  (ulimit -l unlimited) 2>/dev/null && return 0
  hard_kb=$(ulimit -H -l)
  memlock_shim=1
  docker_for_gpurun=$1
  cat >"$docker_for_gpurun" <<EOF
#!/usr/bin/env bash
# Test shim: RLIMIT_MEMLOCK cannot be raised here; clamp gpurun's memlock=-1 to the hard limit.
args=()
for a in "\$@"; do
  case \$a in
    memlock=-1* | memlock=unlimited*) a=memlock=$((hard_kb * 1024)) ;;
    --ulimit=memlock=-1* | --ulimit=memlock=unlimited*) a=--ulimit=memlock=$((hard_kb * 1024)) ;;
  esac
  args+=("\$a")
done
exec "$docker_cli" "\${args[@]}"
EOF
  chmod 755 "$docker_for_gpurun"
  say "note: RLIMIT_MEMLOCK cannot be raised here (no CAP_SYS_RESOURCE; hard limit ${hard_kb} KiB);"
  say "      running gpurun with --docker $docker_for_gpurun, which clamps memlock=-1 and execs $docker_cli"
}

stop_pid() { # stop_pid PID NAME: SIGTERM, wait up to 30 s, then SIGKILL; reaps the child
  local pid=$1 name=$2 i
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "note: $name (pid $pid) ignored SIGTERM for 30 s, killing it"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

stop_private_docker() { # stop_private_docker DIR: stops what start_private_docker DIR started
  local mp
  stop_pid "$dockerd_pid" dockerd
  stop_pid "$containerd_pid" containerd
  dockerd_pid="" containerd_pid=""
  # dockerd unmounts its data root when it shuts down cleanly; after a crash or a SIGKILL
  # mounts may be left under DIR. Unmount deepest first, lazily, before removing anything.
  while read -r mp; do
    umount -l "$mp" 2>/dev/null || umount -R -l "$mp" 2>/dev/null
  done < <(awk -v t="$1" 'index($2, t "/") == 1 || $2 == t { print $2 }' /proc/self/mounts | sort -r)
}
