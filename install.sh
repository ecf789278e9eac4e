#!/usr/bin/env bash
# Install swedeck and everything its sandboxes need on a fresh Debian/Ubuntu machine:
# bubblewrap, a Docker engine, debootstrap, the Python package, and the local base image.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)

missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v dockerd >/dev/null || missing+=(docker.io)
command -v git >/dev/null || missing+=(git)
command -v chromium >/dev/null || missing+=(chromium)  # the report's screenshot test
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  ($SUDO dockerd >/tmp/swedeck-dockerd.log 2>&1 &)
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /tmp/swedeck-dockerd.log" >&2; exit 1; }
fi

python3 -m pip install -q -e '.[test,train,service]'
swedeck env base
