#!/usr/bin/env bash
# End-to-end test infrastructure on this machine's loopback: a real dockerd and a real sshd with a
# key made for the run, then the simulated engine's image, then (when ../shared/engines is beside
# the repository) llama.cpp's server and its image. Idempotent (re-running reuses what is up and
# what is built); works as root on a fresh Debian with only apt and npm reachable. Writes
# .tmp/e2e/env (KEY=VALUE lines that .ci/run sources before `FLUIDCAP_E2E=require npm test`).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
E2E="$ROOT/.tmp/e2e"
mkdir -p "$E2E"
chmod 700 "$ROOT/.tmp" "$E2E"

say() { printf 'setup-e2e: %s\n' "$*"; }

# 1. Packages (apt only when something is missing).
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
[[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
command -v chromium >/dev/null 2>&1 || need+=(chromium) # tests/report/chromium.test.ts renders report.html
if ((${#need[@]})); then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. dockerd (vfs storage, no iptables, no bridge: containers use the host network).
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: .tmp/e2e/dockerd.log)"
  # A stale pid file from a killed daemon stops a new one from starting.
  if [[ -f /var/run/docker.pid ]] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  nohup dockerd --storage-driver vfs --iptables=false --ip6tables=false --bridge=none \
    --host unix:///var/run/docker.sock >"$E2E/dockerd.log" 2>&1 </dev/null &
  echo $! >"$E2E/dockerd.pid"  # teardown stops only a daemon this script started
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    say "dockerd did not come up; last log lines:"
    tail -20 "$E2E/dockerd.log" >&2
    exit 1
  fi
fi
say "docker $(docker version --format '{{.Server.Version}}') is up"

# 3. sshd on 127.0.0.1 with its own config, host key and an authorized key for this run.
[[ -f "$E2E/ssh_host_ed25519_key" ]] || ssh-keygen -q -t ed25519 -N '' -C fluidcap-e2e-host -f "$E2E/ssh_host_ed25519_key"
[[ -f "$E2E/id_ed25519" ]] || ssh-keygen -q -t ed25519 -N '' -C fluidcap-e2e-client -f "$E2E/id_ed25519"
cp "$E2E/id_ed25519.pub" "$E2E/authorized_keys"
chmod 600 "$E2E/authorized_keys" "$E2E/id_ed25519" "$E2E/ssh_host_ed25519_key"
mkdir -p /run/sshd
chmod 755 /run/sshd

sshd_running() { [[ -f "$E2E/sshd.pid" ]] && kill -0 "$(cat "$E2E/sshd.pid")" 2>/dev/null; }
if sshd_running && [[ -f "$E2E/sshd.port" ]]; then
  port=$(cat "$E2E/sshd.port")
else
  port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
  cat >"$E2E/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $E2E/ssh_host_ed25519_key
PidFile $E2E/sshd.pid
AuthorizedKeysFile $E2E/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowStreamLocalForwarding yes
AllowTcpForwarding yes
MaxStartups 100:30:200
MaxSessions 100
LogLevel INFO
EOF
  /usr/sbin/sshd -t -f "$E2E/sshd_config"
  /usr/sbin/sshd -f "$E2E/sshd_config" -E "$E2E/sshd.log"
  echo "$port" >"$E2E/sshd.port"
  for _ in $(seq 1 50); do
    sshd_running && break
    sleep 0.1
  done
fi
say "sshd on 127.0.0.1:$port"

# known_hosts for the run (plain entry; tests make hashed and changed variants from it).
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$E2E/ssh_host_ed25519_key.pub")" >"$E2E/known_hosts"

# Proves the whole path once: key login and the Docker socket reachable over the connection.
ssh -o BatchMode=yes -o UserKnownHostsFile="$E2E/known_hosts" -o StrictHostKeyChecking=yes \
  -i "$E2E/id_ed25519" -p "$port" root@127.0.0.1 true

cat >"$E2E/env" <<EOF
FLUIDCAP_E2E_SSH_HOST=127.0.0.1
FLUIDCAP_E2E_SSH_PORT=$port
FLUIDCAP_E2E_SSH_USER=root
FLUIDCAP_E2E_KEY=$E2E/id_ed25519
FLUIDCAP_E2E_KNOWN_HOSTS=$E2E/known_hosts
FLUIDCAP_E2E_SSHD_PID_FILE=$E2E/sshd.pid
FLUIDCAP_E2E_SSHD_CONFIG=$E2E/sshd_config
FLUIDCAP_E2E_DOCKER_SOCKET=/var/run/docker.sock
FLUIDCAP_E2E_IMAGE=fluidcap/sim:dev
EOF

# 4. The simulated engine's image.
say "building fluidcap/sim:dev"
npm run --silent build:sim-image

# 5. llama.cpp's server (a real engine fluidcap did not write) and its image. The build is cached
# outside the repository (~/.cache/fluidcap-engines): minutes the first time, seconds after.
# A failure here leaves the sshd/Docker tests runnable; the llama.cpp tests then fail under
# FLUIDCAP_E2E=require for want of FLUIDCAP_LLAMA_SERVER.
engines="$ROOT/../shared/engines"
setup_llama() {
  tools=()
  for t in cmake g++ make; do command -v "$t" >/dev/null 2>&1 || tools+=("$t"); done
  if ((${#tools[@]})); then
    say "installing ${tools[*]} to build llama-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || return 1
    apt-get install -y -qq --no-install-recommends cmake g++ make >/dev/null || return 1
  fi
  t0=$(date +%s)
  say "building llama-server (cached in ~/.cache/fluidcap-engines)"
  llama_bin=$("$engines/build-llama-server.sh" | tail -1) || return 1
  say "llama-server at $llama_bin ($(($(date +%s) - t0)) s)"
  llama_image=fluidcap/llama-server:dev
  want=$(sha256sum "$llama_bin" | cut -c1-16)
  have=$(docker image inspect --format '{{index .Config.Labels "fluidcap.llama-server.sha256"}}' "$llama_image" 2>/dev/null || true)
  if [[ "$have" != "$want" ]]; then
    say "building $llama_image"
    npx zx scripts/build-llama-image.mjs --bin "$llama_bin" --tag "$llama_image" || return 1
  else
    say "$llama_image is up to date (llama-server sha256 $want…)"
  fi
  cat >>"$E2E/env" <<EOF
FLUIDCAP_LLAMA_SERVER=$llama_bin
FLUIDCAP_LLAMA_MODEL=$(cd "$engines" && pwd)/stories260K.gguf
FLUIDCAP_LLAMA_IMAGE=$llama_image
EOF
}
if [[ -x "$engines/build-llama-server.sh" && -f "$engines/stories260K.gguf" ]]; then
  # set -e does not reach inside a function tested with ||, hence the explicit returns above.
  setup_llama || say "llama-server or its image could not be built (see above); the llama.cpp end-to-end tests will fail"
else
  say "no ../shared/engines beside the repository: the llama.cpp end-to-end tests will skip"
fi
# 6. A one-node Slurm (munge, slurmctld, slurmd) for the Slurm end-to-end tests, which find it
# with sinfo and skip without it. A failure leaves every other end-to-end test runnable.
# Its output is kept in .tmp/e2e/slurm-setup.log, which the Slurm tests quote when they find no Slurm.
slurm_setup() { scripts/ci/setup-slurm.sh 2>&1 | tee -a "$E2E/slurm-setup.log"; }
: >"$E2E/slurm-setup.log"
slurm_setup || { say "Slurm setup failed; once more in 5 s"; sleep 5; slurm_setup; } ||
  say "Slurm could not be started (see above); the Slurm end-to-end tests will fail"
say "ready (env in .tmp/e2e/env)"
