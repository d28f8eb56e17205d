#!/usr/bin/env bash
# A real Slurm on this machine for the end-to-end tests: Debian's munge, slurmctld and slurmd, one
# node (this machine) in one partition, declaring 4 GPUs of type h100 as a generic resource and
# the node feature h100. There is no GPU here: Slurm only counts them. slurmd drops a GPU gres
# without a File, so each GPU is a stand-in character device (/dev/null's numbers) in a directory
# of this script's own.
# Idempotent: re-running reuses daemons that answer. Refuses to replace a slurm.conf it did not
# write. Tests find it with sinfo (no environment variables); setup-e2e.sh calls this script last.
# Runs as root on a fresh Debian with only apt reachable.
set -euo pipefail
cd "$(dirname "$0")/../.."
MARK='# written by fluidcap scripts/ci/setup-slurm.sh'
CONF=/etc/slurm/slurm.conf
PARTITION=fluidcap
t0=$(date +%s)

say() { printf 'setup-slurm: %s\n' "$*"; }
trap 'say "failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR

# 1. Packages.
need=()
command -v munged >/dev/null 2>&1 || need+=(munge)
command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
command -v sinfo >/dev/null 2>&1 || need+=(slurm-client)
if ((${#need[@]})); then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A mirror caught mid-sync or a held dpkg lock fails an install for a moment: try three times.
  for attempt in 1 2 3; do
    if apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; then break; fi
    ((attempt == 3)) && { say "apt-get could not install ${need[*]}"; exit 1; }
    say "apt-get failed (attempt $attempt); retrying in 10 s"
    sleep 10
  done
fi

# 2. munge: the package makes a key on install; make one if it did not.
if [[ ! -s /etc/munge/munge.key ]]; then
  say "creating the munge key"
  mkdir -p /etc/munge
  mungekey --create --force >/dev/null 2>&1 || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
if ! munge -n </dev/null >/dev/null 2>&1; then
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 1 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
fi

# 3. slurm.conf and gres.conf (this machine's real CPU count and memory, from slurmd -C).
node=$(uname -n | cut -d. -f1)
hw=$(slurmd -C | head -1 | sed -E 's/^NodeName=[^ ]+ //')
if [[ -f "$CONF" ]] && ! grep -qF "$MARK" "$CONF"; then
  say "$CONF exists and was not written by this script; not touching it"
  exit 1
fi
want=$(cat <<EOF
$MARK
ClusterName=fluidcap-ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
# No systemd or cgroup v2 delegation in CI containers: the plain process tracker and no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ReturnToService=2
# Quick scheduling so a held job starts within a second of the one before it ending.
SchedulerParameters=sched_interval=2
MinJobAge=30
KillWait=5
InactiveLimit=0
NodeName=$node NodeAddr=127.0.0.1 $hw Gres=gpu:h100:4 Feature=h100 State=UNKNOWN
PartitionName=$PARTITION Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
)
GPUDEV=/var/lib/fluidcap-slurm
mkdir -p "$GPUDEV"
for i in 0 1 2 3; do
  # A regular file is accepted too (slurmd logs an error per file), where mknod is not allowed.
  [[ -e "$GPUDEV/gpu$i" ]] || mknod "$GPUDEV/gpu$i" c 1 3 2>/dev/null || touch "$GPUDEV/gpu$i"
done
gres="$MARK
NodeName=$node Name=gpu Type=h100 File=$GPUDEV/gpu[0-3]"
changed=0
if [[ "$(cat "$CONF" 2>/dev/null)" != "$want" ]]; then printf '%s\n' "$want" >"$CONF"; changed=1; fi
if [[ "$(cat /etc/slurm/gres.conf 2>/dev/null)" != "$gres" ]]; then printf '%s\n' "$gres" >/etc/slurm/gres.conf; changed=1; fi
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
chown slurm:slurm /var/spool/slurmctld /var/log/slurm

# 4. Daemons (a stale pid file from a killed daemon is ignored; a changed config restarts them).
running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
if ((changed)); then
  for pidfile in /run/slurmd.pid /run/slurmctld.pid; do
    if running "$pidfile"; then
      kill "$(cat "$pidfile")"
      for _ in $(seq 1 100); do running "$pidfile" || break; sleep 0.1; done
    fi
  done
fi
if ! running /run/slurmctld.pid; then
  say "starting slurmctld (log: /var/log/slurm/slurmctld.log)"
  /usr/sbin/slurmctld -i
fi
for _ in $(seq 1 100); do timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.2; done
if ! running /run/slurmd.pid; then
  say "starting slurmd (log: /var/log/slurm/slurmd.log)"
  /usr/sbin/slurmd -N "$node"
fi

# 5. Wait for the node to be idle (a node that was down comes back through ReturnToService=2).
# Up to 90 s: a loaded machine registers slurmd slowly; slurmd is restarted once after 45 s.
for i in $(seq 1 180); do
  state=$(timeout 5 sinfo -h -n "$node" -o '%t' 2>/dev/null | head -1 || true)
  [[ "$state" == idle || "$state" == mix || "$state" == alloc ]] && break
  # A node drained by an earlier configuration (say, GPUs it could not find) is resumed.
  [[ "$state" == down* || "$state" == drain* || "$state" == inval* ]] && timeout 5 scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true
  if ((i == 90)); then
    say "node $node is ${state:-not listed} after 45 s; restarting slurmd"
    running /run/slurmd.pid && kill "$(cat /run/slurmd.pid)" && sleep 1
    running /run/slurmctld.pid || /usr/sbin/slurmctld -i
    /usr/sbin/slurmd -N "$node"
  fi
  sleep 0.5
done
if [[ "$state" != idle && "$state" != mix && "$state" != alloc ]]; then
  say "node $node did not become idle (state: ${state:-none}); last log lines:"
  tail -n 15 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
  exit 1
fi
say "node $node is $state in partition $PARTITION ($(sinfo -h -o '%G' | head -1)); $(($(date +%s) - t0)) s"

