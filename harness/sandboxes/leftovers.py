"""What a killed run leaves in the cache, and how the next run finds and removes it.

Everything a run starts carries its **owner**: the run's token (``SWEDECK_RUN``, set by the CLI for a
run and inherited by every process it starts) or, outside a run, the creating process's own token.
A token is ``<pid namespace>.<pid>.<start time>``, so it names one process for the life of the machine: the
owner is alive exactly while that process is (``alive``), and a reused pid is a different token. A pid
means nothing outside its namespace (a run inside a service container is pid 1 there, something else
on the host), so an owner from another pid namespace counts as alive: its own namespace sweeps it. Docker
containers carry the owner and the cache in labels, sandbox folders in their names, processes in
their environment, scratch folders in their names. ``sweep`` removes what belongs to dead owners of
one cache and leaves live runs' things alone, whoever started them.

A run also leaves a run file (``runs/<token>.json``, its output folder) while it lives, so two live
runs never write to one output folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.config import Settings
from harness.sandboxes.folders import release

RUN_ENV = "SWEDECK_RUN"
_OWNED = re.compile(r"^(?:bwrap|docker)-(\d+\.\d+\.\d+)-")  # a sandbox folder made under an owner
UNOWNED_IDLE_S = 3600.0  # a sandbox folder from before owners were recorded: swept once idle this long


def pid_namespace() -> str:
    """The inode of this process's pid namespace (``pid:[4026531836]`` -> ``4026531836``)."""
    return os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")


def process_token(pid: int) -> str | None:
    """``<pid namespace>.<pid>.<start time in clock ticks since boot>`` of a process of this pid
    namespace, or None when no such process exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count fields after its last ')'
    return f"{pid_namespace()}.{pid}.{stat.rsplit(')', 1)[1].split()[19]}"


def owner() -> str:
    """The owner of what this process creates: its run, or itself outside one."""
    return os.environ.get(RUN_ENV) or process_token(os.getpid()) or str(os.getpid())


def alive(token: str) -> bool:
    fields = token.split(".")
    if len(fields) != 3 or not all(f.isdigit() for f in fields):
        return False
    if fields[0] != pid_namespace():
        return True  # not ours to judge (see the module's docstring)
    return process_token(int(fields[1])) == token


def cache_key(settings: Settings) -> str:
    return hashlib.sha256(str(settings.cache_dir.resolve()).encode()).hexdigest()[:16]


def container_labels(settings: Settings) -> dict[str, str]:
    return {"swedeck.cache": cache_key(settings), "swedeck.owner": owner()}


def sandbox_prefix(kind: str) -> str:
    """The name prefix of a sandbox folder of ``kind`` (bwrap, docker) made by this process."""
    return f"{kind}-{owner()}-"


# ----------------------------------------------------------------------------------------- run files


@dataclass(frozen=True)
class Run:
    token: str
    out: str
    started: float


class RunConflict(RuntimeError):
    """Another live run writes to the same output folder."""


def _runs_dir(settings: Settings) -> Path:
    return settings.cache_dir / "runs"


def live_runs(settings: Settings) -> list[Run]:
    runs = []
    for path in sorted(_runs_dir(settings).glob("*.json")):
        try:
            run = Run(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if alive(run.token):
            runs.append(run)
    return runs


def register_run(settings: Settings, token: str, out: Path) -> Run:
    """Record the run ``token`` writing to ``out``; RunConflict when a live run already does. The
    file is written before the check, so of two runs starting together at least one sees the other."""
    run = Run(token=token, out=str(out.resolve()), started=time.time())
    path = _runs_dir(settings) / f"{token}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}")
    tmp.write_text(json.dumps(run.__dict__))
    os.replace(tmp, path)
    others = [r for r in live_runs(settings) if r.out == run.out and r.token != token]
    if others:
        path.unlink()
        raise RunConflict(f"another swedeck run (pid {others[0].token.split('.')[1]}) is writing to {out}")
    return run


def end_run(settings: Settings, token: str) -> None:
    (_runs_dir(settings) / f"{token}.json").unlink(missing_ok=True)


def scratch_dir(settings: Settings, token: str) -> Path:
    """The run's temporary folder (TMPDIR for its processes), under the cache so a sweep finds it."""
    return settings.cache_dir / "scratch" / token


SHORT_LINKS = Path("/tmp")
_SHORT_PREFIX = "swedeck-link-"


def short_link(target: Path) -> Path:
    """A short path to ``target``: a link in /tmp named by a hash of it. Unix sockets are limited to
    107 bytes of path, and a temporary Ray's socket paths under a scratch folder of the default cache
    run to 116. The files stay in ``target``; only the link is outside, and a sweep removes a link
    whose target has gone."""
    link = SHORT_LINKS / f"{_SHORT_PREFIX}{hashlib.sha256(str(target).encode()).hexdigest()[:12]}"
    target.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(target, target_is_directory=True)
    return link


def _dangling_links() -> list[Path]:
    return [p for p in SHORT_LINKS.glob(f"{_SHORT_PREFIX}*") if p.is_symlink() and not p.exists()]


# ----------------------------------------------------------------------------------------- the sweep


@dataclass
class Swept:
    processes: list[int] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.processes or self.containers or self.folders)

    def summary(self) -> str:
        return f"{len(self.processes)} process(es), {len(self.containers)} container(s), {len(self.folders)} folder(s)"


def sweep(settings: Settings, gone: set[str] | None = None) -> Swept:
    """Remove the processes, containers, sandbox and scratch folders and run files of this cache
    whose owner is dead, or (``gone``) whose owner is one of these tokens."""

    def dead(token: str) -> bool:
        return token in gone if gone is not None else not alive(token)

    swept = Swept(processes=kill_processes(dead), containers=remove_containers(settings, dead))
    sandboxes = settings.cache_dir / "sandboxes"
    for folder in sorted(sandboxes.glob("*")) if sandboxes.is_dir() else []:
        owned = _OWNED.match(folder.name)
        if owned and dead(owned.group(1)) or not owned and gone is None and _idle(folder) > UNOWNED_IDLE_S:
            swept.folders.append(folder)
    for kind in ("scratch", "runs"):
        for entry in sorted((settings.cache_dir / kind).glob("*")) if (settings.cache_dir / kind).is_dir() else []:
            if dead(entry.name.lstrip(".").removesuffix(".json")):
                swept.folders.append(entry)
    for path in swept.folders:
        _remove(path)
    links = _dangling_links()  # only now: the scratch folders they led into are gone
    for link in links:
        link.unlink(missing_ok=True)
    swept.folders += links
    return swept


def sweep_sandboxes(settings: Settings, kind: str) -> list[Path]:
    """Release the sandbox folders of ``kind`` (bwrap, docker) whose owner is dead: what a grade killed
    from outside (a timeout, SIGKILL) left, mounts and control group included. Backends call it as
    they open a sandbox, so the next grade cleans up after a stopped one, not only the next run's sweep."""
    sandboxes = settings.cache_dir / "sandboxes"
    gone = [
        folder
        for folder in (sorted(sandboxes.glob(f"{kind}-*")) if sandboxes.is_dir() else [])
        if (owned := _OWNED.match(folder.name)) and not alive(owned.group(1))
    ]
    for folder in gone:
        _remove(folder)
    return gone


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        release(path)  # a bwrap sandbox's tmpfs mounts and control group go first, or nothing can
    else:
        path.unlink(missing_ok=True)


def _idle(folder: Path) -> float:
    """Seconds since anything was made in the folder or its direct subfolders (logs, tmp)."""
    try:
        newest = max(p.stat().st_mtime for p in [folder, *folder.iterdir()])
    except OSError:
        return 0.0
    return time.time() - newest



def kill_processes(dead) -> list[int]:  # noqa: ANN001 - a predicate on owner tokens
    """SIGKILL every process (of this user) whose environment names a dead owner."""
    marker = f"{RUN_ENV}=".encode()
    killed = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's
            continue
        tokens = [v[len(marker):].decode(errors="replace") for v in environ.split(b"\0") if v.startswith(marker)]
        if tokens and dead(tokens[0]):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except OSError:
                pass
    return killed


def remove_containers(settings: Settings, dead) -> list[str]:  # noqa: ANN001 - a predicate on owner tokens
    """Force-remove this cache's containers whose owner is dead; nothing when no Docker engine answers."""
    try:
        import docker

        api = docker.from_env(timeout=20).api
        # the engine's list alone, labels included: the SDK's containers.list inspects each container
        # after listing them, and one removed in between (a sandbox closing) failed the whole sweep
        containers = api.containers(all=True, filters={"label": f"swedeck.cache={cache_key(settings)}"})
    except Exception:  # no engine here: bwrap users have no containers to leak
        return []
    removed = []
    for container in containers:
        if dead((container.get("Labels") or {}).get("swedeck.owner", "")):
            try:
                api.remove_container(container["Id"], force=True)
                removed.append(container["Id"][:12])
            except Exception:  # removed meanwhile by its owner's own cleanup
                pass
    return removed
