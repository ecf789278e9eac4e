"""A sandbox's folder on the host: the tmpfs mounts it holds, and its release with all it holds."""

from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

from harness.sandboxes import cgroups
from harness.sandboxes.sandbox import EnvError

MNT_DETACH = 2  # umount2(2): lazy, as umount --lazy
# mount(2) and umount2(2) called directly: a mount(8) or umount(8) process for each of a sandbox's
# two tmpfs mounts cost more than the rest of opening and closing it
_LIBC = ctypes.CDLL(None, use_errno=True)


# The cap of the host's own folders in a sandbox's folder (its IO folder, the logs of its commands):
# tmpfs, as the tree and /tmp are, because a grade creates a score of small files there and a file
# created on a long-used disk can cost half a millisecond; a cap only, pages are used as written.
HOST_FOLDER_BYTES = 2 * 2**30


def mount_tmpfs(path: Path, size: int) -> None:
    """A tmpfs the kernel holds to ``size`` bytes: writes past it fail with ENOSPC."""
    path.mkdir()
    options = f"size={size},mode=0755".encode()
    if _LIBC.mount(b"swedeck-sandbox", os.fsencode(path), b"tmpfs", 0, options) != 0:
        why = os.strerror(ctypes.get_errno())
        raise EnvError(f"could not mount the sandbox's tmpfs (bwrap sandboxes need root): {why}")


def release(root: Path) -> None:
    """Remove a sandbox folder with all it holds: its control group (and any process still in it),
    the mounts among its entries, its files. What a backend calls as it closes a sandbox, and what
    sweeps call for any backend's folder a dead process left behind, so cleanup needs no backend."""
    cgroups.remove_named(root.name)
    for entry in root.iterdir() if root.is_dir() and not root.is_symlink() else []:
        if os.path.ismount(entry):
            _LIBC.umount2(os.fsencode(entry), MNT_DETACH)
    shutil.rmtree(root, ignore_errors=True)
