"""One control group per bwrap sandbox, so its memory and process limits hold for all its processes
together (``ulimit -v`` bounds each process alone: two 1.5 GB processes fit under a 2 GB one).

cgroup v2 where the unified hierarchy has the memory and pids controllers; otherwise the v1
``memory`` and ``pids`` hierarchies. The group is made under the one this process runs in, and every
command of the sandbox joins it before it executes. A machine offering neither is an error: the limit
would silently not hold.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from harness.sandboxes.sandbox import EnvError

ROOT = Path("/sys/fs/cgroup")


def _own(controller: str) -> Path | None:
    """This process's group in a v1 hierarchy (``controller``) or in v2 (``""``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") if controller else controllers == "":
            return path.lstrip("/")
    return None


def _places(name: str) -> tuple[bool, list[Path]]:
    """Whether cgroup v2 is used, and the folders a sandbox's group ``name`` has (or would have)."""
    v2 = ROOT / "cgroup.controllers"
    if v2.exists() and {"memory", "pids"} <= set(v2.read_text().split()):
        return True, [ROOT / (_own("") or "") / name]
    memory, pids = _own("memory"), _own("pids")
    if memory is None or pids is None or not (ROOT / "memory").is_dir():
        raise EnvError("no cgroup memory controller: a sandbox's total memory could not be bounded")
    return False, [ROOT / "memory" / memory / name, ROOT / "pids" / pids / name]


class Cgroup:
    def __init__(self, name: str, memory_bytes: int, processes: int) -> None:
        v2, self.dirs = _places(name)
        if v2:
            limits = [{"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": processes}]
        else:
            memory = {"memory.limit_in_bytes": memory_bytes}
            if (self.dirs[0].parent / "memory.memsw.limit_in_bytes").exists():
                memory["memory.memsw.limit_in_bytes"] = memory_bytes
            limits = [memory, {"pids.max": processes}]
        for path, values in zip(self.dirs, limits, strict=True):
            path.mkdir()
            for key, value in values.items():
                (path / key).write_text(str(value))

    def remove(self) -> None:
        remove(self.dirs)


def remove_named(name: str) -> None:
    """Remove a sandbox's group left behind by a process that died (its processes are killed)."""
    remove(_places(name)[1])


def remove(dirs: list[Path]) -> None:
    for path in dirs:
        for _ in range(50):
            if not path.exists():
                break
            try:
                procs = (path / "cgroup.procs").read_text().split()
            except FileNotFoundError:  # another releaser removed it meanwhile (a sweep beside a close)
                procs = []
            for pid in procs:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                path.rmdir()
            except FileNotFoundError:
                break
            except OSError:  # its last processes are still exiting
                time.sleep(0.02)
