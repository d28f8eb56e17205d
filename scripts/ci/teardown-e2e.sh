#!/usr/bin/env bash
# Undoes setup-e2e.sh: removes containers fluidcap labelled, stops the run's sshd and the dockerd
# this setup started (a daemon that was already running is left alone).
set -uo pipefail
cd "$(dirname "$0")/../.."
E2E="$(pwd)/.tmp/e2e"

if docker info >/dev/null 2>&1; then
  ids=$(docker ps -aq --filter label=fluidcap.run)
  [[ -n "$ids" ]] && docker rm -f $ids >/dev/null
fi
if [[ -f "$E2E/sshd.pid" ]]; then
  kill "$(cat "$E2E/sshd.pid")" 2>/dev/null
  rm -f "$E2E/sshd.pid" "$E2E/sshd.port"
fi
if [[ -f "$E2E/dockerd.pid" ]]; then
  pid=$(cat "$E2E/dockerd.pid")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$E2E/dockerd.pid"
fi
exit 0
