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

from harness.sandbox import EnvError

ROOT = Path("/sys/fs/cgroup")


def _own(controller: str) -> Path | None:
    """This process's group in a v1 hierarchy (``controller``) or in v2 (``""``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") if controller else controllers == "":
            return path.lstrip("/")
    return None


class Cgroup:
    def __init__(self, name: str, memory_bytes: int, processes: int) -> None:
        self.dirs: list[Path] = []
        v2 = ROOT / "cgroup.controllers"
        if v2.exists() and {"memory", "pids"} <= set(v2.read_text().split()):
            parent = ROOT / (_own("") or "")
            self._make(parent / name, {"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": processes})
            return
        memory, pids = _own("memory"), _own("pids")
        if memory is None or pids is None or not (ROOT / "memory").is_dir():
            raise EnvError("no cgroup memory controller: a sandbox's total memory could not be bounded")
        limits = {"memory.limit_in_bytes": memory_bytes}
        if (ROOT / "memory" / memory / "memory.memsw.limit_in_bytes").exists():
            limits["memory.memsw.limit_in_bytes"] = memory_bytes
        self._make(ROOT / "memory" / memory / name, limits)
        self._make(ROOT / "pids" / pids / name, {"pids.max": processes})

    def _make(self, path: Path, limits: dict[str, int]) -> None:
        path.mkdir()
        self.dirs.append(path)
        for key, value in limits.items():
            (path / key).write_text(str(value))

    def join(self) -> None:
        """Called in the child between fork and exec: it and all it starts belong to the group."""
        for path in self.dirs:
            (path / "cgroup.procs").write_text("0")

    def remove(self) -> None:
        for path in self.dirs:
            for _ in range(50):
                pids = [int(p) for p in (path / "cgroup.procs").read_text().split()] if path.exists() else []
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
