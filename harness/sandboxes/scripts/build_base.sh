#!/usr/bin/env bash
# Build the swedeck base root filesystem (Debian minbase + python3, git, patch, pytest) with debootstrap,
# then import it as a Docker image when an engine is reachable. bwrap sandboxes use the folder directly,
# Docker sandboxes the image, so both backends run the same interpreter and the same pytest.
# usage: build_base.sh ROOTFS_DIR [IMAGE_TAG] [PYTEST_VERSION]
set -euo pipefail
rootfs=$1
image=${2:-swedeck-base:latest}
pytest_version=${3:-9.0.3}
suite=bookworm

mirror() {
  # the machine's own apt mirror: first deb URI in deb822 or one-line sources
  local uri
  uri=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | awk '{print $2}') || true
  if [ -z "$uri" ]; then
    uri=$(grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | head -1 | awk '{print $2}') || true
  fi
  echo "$uri"
}

if [ ! -x "$rootfs/usr/bin/python3" ]; then
  tmp="$rootfs.partial"
  rm -rf "$tmp"
  debootstrap --variant=minbase \
    --include=python3,python-is-python3,python3-venv,python3-pip,git,patch,ca-certificates,procps \
    "$suite" "$tmp" "$(mirror)"
  # pure-python wheels installed from the host's index settings: the chroot has no pip config of its own
  site=$(chroot "$tmp" python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  python3 -m pip install --quiet --no-compile --only-binary=:all: --python-version 3.11 \
    --target "$tmp$site" "pytest==$pytest_version"
  rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*
  mv "$tmp" "$rootfs"
fi

# pip wrote pytest without bytecode (the host's pip cannot compile for the chroot's interpreter), and
# sandboxes never write any (PYTHONDONTWRITEBYTECODE), so without this step every test command in every
# sandbox compiles pytest again: about 0.2 s of each run. A rootfs built before this step gets it here,
# and its Docker image is imported again.
stale_image=0
if [ ! -e "$rootfs/.swedeck-bytecode" ]; then
  site=$(chroot "$rootfs" python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  chroot "$rootfs" python3 -m compileall -q "$site" >/dev/null
  touch "$rootfs/.swedeck-bytecode"
  stale_image=1
fi

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  if [ "$stale_image" = 1 ]; then
    docker image rm -f "$image" >/dev/null 2>&1 || true
  fi
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    tar -C "$rootfs" -c . | docker import - "$image"
  fi
fi
echo "base rootfs: $rootfs"
