"""The grader's trusted path: what a candidate changed, and what must go, decided without running it.

Nothing the candidate wrote executes before the test command. The harness lists the tree itself (GNU
``find`` from the environment, never an interpreter or git reading the tree's config) right before
and right after the patch is applied; ``harness.grading.capabilities`` decides on the host, with pure
functions, whether the change is allowed at all, and ``plan`` which files are written back. The contents it
writes come from ``TaskFacts`` (``harness.grading.tree``): the pristine tree's protected files, the hidden tests applied to the
pristine tree, and what the environment's Python can import. They are gathered once per task in a
sandbox the candidate never touched, and cached.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shlex
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.config import Settings
from harness.names import write_whole
from harness.sandboxes.envs import tree_key
from harness.grading import tamper
from harness.grading.capabilities import is_protected
from harness.grading.patching import apply_patch
from harness.grading.tree import LISTING, Entry, TaskFacts, parse_listing, tree_changes
from harness.records import Task, content_hash
from harness.sandboxes.sandbox import IO_DIR, Backend, EnvError, Sandbox

# Bump when anything that decides a grade changes: it keys the facts and gold-pattern caches.
GRADER_VERSION = 4
# the exit of a test command whose install of the hidden tests failed, so the tests never started
INSTALL_FAILED = 86
# Run by the environment's Python in a pristine sandbox (so it may be any version from 3.6 on): the
# sys.path entries inside the tree, the top-level names importable from outside it, the pytest
# plugins installed by entry point, the file suffixes its import system accepts.
ENV_PROBE = r"""
import importlib.machinery, json, os, pkgutil, sys
here = os.path.realpath(os.getcwd())
def rel(p):
    r = os.path.realpath(p or ".")
    return os.path.relpath(r, here) if r == here or r.startswith(here + os.sep) else None
inside = sorted({r for r in map(rel, sys.path) if r is not None})
outside = [p for p in sys.path if rel(p) is None]
names = set(sys.builtin_module_names) | set(getattr(sys, "stdlib_module_names", ()))
names |= {m.name for m in pkgutil.iter_modules(outside)}
plugins = []
try:
    from importlib import metadata
    eps = metadata.entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    plugins = sorted({ep.name for ep in group})
except Exception:
    pass
print(json.dumps({"tree_path": ["" if p == "." else p for p in inside], "modules": sorted(names), "plugins": plugins,
                  "suffixes": importlib.machinery.all_suffixes(), "extension_suffixes": importlib.machinery.EXTENSION_SUFFIXES}))
"""


@dataclass
class File:
    mode: int
    data: bytes


def decode(stored: tuple[int, str]) -> File:
    return File(stored[0], base64.b64decode(stored[1]))


@dataclass
class Plan:
    delete: list[str]  # removed (rm -rf) before anything is written; what is in a written file's way, tar removes
    write: dict[str, File]  # written by the host, from the task record
    neutralized: list[str]  # the candidate's paths undone: restored or deleted


def plan(
    before: dict[str, Entry], after: dict[str, Entry], task: Task, facts: TaskFacts, hidden: dict[str, File | None]
) -> Plan:
    """What to delete and write so the tests run against the candidate's code and nothing else of
    its, for a change ``harness.grading.capabilities`` allows: the hidden tests (``hidden``, canaries
    included) as the task has them, and every protected path it touched (only the configuration
    pytest shares with packaging gets this far) as the pristine tree had it."""
    changes = tree_changes(before, after)
    write = {p: f for p, f in hidden.items() if f is not None}
    delete = {p for p, f in hidden.items() if f is None and p in after}
    undone = set()
    for path in changes.touched:
        if not is_protected(path, task):
            continue
        if path in facts.protected and path not in hidden:
            write[path] = decode(facts.protected[path])
        elif path in after and path not in hidden:
            delete.add(path)
        if (after.get(path) or before[path]).kind != "d":
            undone.add(path)
    return Plan(sorted(_outermost(delete)), write, sorted(_outermost(undone)))


def _outermost(paths: set[str]) -> set[str]:
    return {p for p in paths if not any(str(a) in paths for a in PurePosixPath(p).parents)}


def install_command(delete: list[str], archive_path: str | None) -> str:
    """One command: remove what must go, then unpack what the host wrote. tar replaces a file, link
    or folder (with all it holds) at a written path, never writing through it: the hidden tests need
    no ``rm`` of their own, one process less before the tests start."""
    steps = ["rm -rf -- " + shlex.join(delete)] if delete else []
    if archive_path:
        steps.append(f"tar -x --no-same-owner --no-overwrite-dir --recursive-unlink -f {shlex.quote(archive_path)}")
    return " && ".join(steps) or "true"


def installing(install: str, command: str, token: str) -> str:
    """The install of the hidden tests and the first test command, as one sandbox command (one round
    trip less than two): the tests start only once the install is done, as before, and not at all
    when it failed. The test command could print the same line and exit the same way, but only to
    have its own grade end with reward 0."""
    return f"{{ {install}; }} || {{ echo {_install_marker(token)}; exit {INSTALL_FAILED}; }}\n{command}"


def _install_marker(token: str) -> str:
    return f"swedeck-install-failed-{token}"


def install_failed(exit_code: int | None, output: bytes, token: str) -> bool:
    return exit_code == INSTALL_FAILED and _install_marker(token).encode() in output


def archive(files: dict[str, File]) -> bytes:
    buf = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, file in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(file.data), file.mode & 0o7777, now
            tar.addfile(info, io.BytesIO(file.data))
    return buf.getvalue()


# ------------------------------------------------------------------------------------------ task facts

_FACTS: dict[str, TaskFacts] = {}
_FACTS_LOCKS: dict[str, threading.Lock] = {}
_FACTS_GUARD = threading.Lock()


def facts_key(task: Task, backend: Backend) -> str:
    """Task, tree, backend, the image its sandboxes start from, and the grader's version: what the
    facts and the gold pattern depend on."""
    tree = tree_key(task) if task.repo_source.kind != "image" else ""
    return content_hash([task.task_hash(), tree, backend.name, backend.image_digest(task), GRADER_VERSION])


def task_facts(task: Task, backend: Backend, settings: Settings | None = None, key: str | None = None) -> TaskFacts:
    """Gathered once per task and backend (memory, then disk), in a sandbox nothing else has run in.
    ``key``: ``facts_key(task, backend)``, where the caller has it already."""
    key = key or facts_key(task, backend)
    with _FACTS_GUARD:
        lock = _FACTS_LOCKS.setdefault(key, threading.Lock())
    with lock:  # workers grading one task at once gather its facts once
        if key in _FACTS:
            return _FACTS[key]
        cache = (settings or Settings.from_env()).cache_dir / "facts" / f"{key}.json"
        if cache.exists():
            facts = TaskFacts.model_validate_json(cache.read_text())
        else:
            sandbox = backend.open(task)
            try:
                facts = gather(sandbox, task)
            finally:
                sandbox.close()
            write_whole(cache, facts.model_dump_json())
        _FACTS[key] = facts
        return facts


def gather(sandbox: Sandbox, task: Task) -> TaskFacts:
    before = parse_listing(_listing(sandbox, "facts-before"))
    probe = sandbox.run(f"python -c {shlex.quote(ENV_PROBE)}", timeout=120)
    try:
        env = json.loads(probe.output.strip().splitlines()[-1])
    except (ValueError, IndexError) as err:
        raise EnvError(f"{task.instance_id}: the environment's Python could not describe itself", probe.output) from err
    protected = [p for p, e in before.items() if e.kind == "f" and is_protected(p, task)]
    protected_files = read_many(sandbox, protected, "facts-protected")
    hidden: dict[str, tuple[int, str] | None] = {}
    strategy, why = apply_patch(sandbox, task.answer.hidden_tests.patch, "facts-hidden")
    if strategy:
        for path, content in task.answer.hidden_tests.files.items():
            sandbox.write_file(path, content)
        after = parse_listing(_listing(sandbox, "facts-after"))
        changed = tree_changes(before, after)
        written = sorted(p for p in changed.added | changed.modified if after[p].kind == "f")
        hidden = {p: (after[p].mode, _b64(b)) for p, b in read_many(sandbox, written, "facts-hidden").items()}
        hidden |= {p: None for p in changed.deleted}
    return TaskFacts(
        protected={p: (before[p].mode, _b64(b)) for p, b in protected_files.items()},
        hidden=hidden,
        hidden_error="" if strategy else why,
        tree_path=env["tree_path"],
        modules=env["modules"],
        plugins=env["plugins"],
        suffixes=env["suffixes"],
        extension_suffixes=env["extension_suffixes"],
    )


def _b64(blob: bytes) -> str:
    return base64.b64encode(blob).decode()


def _listing(sandbox: Sandbox, name: str) -> bytes:
    out = sandbox.output(f"{IO_DIR}/{name}.listing")
    done = sandbox.run(f"{LISTING} > {out}", timeout=120)
    if done.exit_code != 0:
        raise EnvError(f"could not list the tree: {done.output[-400:]}")
    return sandbox.read_file(out)


def read_many(sandbox: Sandbox, paths: list[str], name: str) -> dict[str, bytes]:
    """Several files in one round trip: tarred into the IO folder by the sandbox, read on the host."""
    if not paths:
        return {}
    names = write_names(sandbox, paths, name)
    out = sandbox.output(f"{IO_DIR}/{name}.tar")
    done = sandbox.run(f"tar -c --null -T {names} -f {out}", timeout=120)
    if done.exit_code != 0:
        raise EnvError(f"could not read the task's files: {done.output[-400:]}")
    return untar(sandbox.read_file(out))


def write_names(sandbox: Sandbox, paths: list[str], name: str) -> str:
    """A NUL-separated list of ``paths`` in the IO folder, for ``tar --null -T``; returns its path."""
    names = f"{IO_DIR}/{name}.names"
    sandbox.write_file(names, b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths))
    return names


def untar(blob: bytes) -> dict[str, bytes]:
    """The regular files of a tar a sandbox wrote (never what a link member points to); raises
    tarfile.TarError for a tar that is not one (cut short by the file size limit, or forged)."""
    blobs = {}
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member) if member.isreg() else None
            if extracted is not None:
                blobs[member.name] = extracted.read()
    return blobs


@dataclass
class Audit:
    findings: list[str]
    files: dict[str, bytes | None]  # the change's files as the audit read them (None: too large to); {} where it read none


def tamper_findings(
    sandbox: Sandbox, patch: str, before: dict[str, Entry], after: dict[str, Entry], token: str, prefetch: str
) -> Audit:
    """harness.grading.tamper's findings in the files the change added or modified, as they were after
    it was applied and before anything of it ran: from ``prefetch``, the tar of the files the patch
    names that the apply command wrote right after its listing, and what that lacks in one more
    round trip; and those files. Past ``tamper.MAX_AUDIT_BYTES`` in all, the change is too large to audit."""
    changes = tree_changes(before, after)
    paths = sorted(p for p in changes.added | changes.modified if after[p].kind == "f")
    readable = [p for p in paths if after[p].size <= tamper.MAX_FILE_BYTES]
    if sum(after[p].size for p in readable) > tamper.MAX_AUDIT_BYTES:
        return Audit([f"the change's files hold over {tamper.MAX_AUDIT_BYTES} bytes: too large to audit"], {})
    try:
        # at most what the audit reads, with the tar's own headers: it also holds what is too large
        fetched = untar(sandbox.read_file(prefetch, limit=2 * tamper.MAX_AUDIT_BYTES)) if prefetch and readable else {}
    except (OSError, tarfile.TarError):  # cut short by the file size limit: read the rest below
        fetched = {}
    read = {p: fetched[p] for p in readable if p in fetched and len(fetched[p]) == after[p].size}
    rest = [p for p in readable if p not in read]
    try:
        read |= read_many(sandbox, rest, f"audit-{token}-rest")
    except EnvError as err:  # the change's own files would not tar: as suspect as unread
        return Audit([f"{', '.join(rest)}: could not be read for the audit: {err}"], {})
    files: dict[str, bytes | None] = {p: read.get(p) for p in paths}
    return Audit(audited(files, patch), files)


_AUDITED: dict[str, list[str]] = {}  # audit key -> findings: this process's last MAX_AUDITED audits
_AUDITED_LOCK = threading.Lock()
MAX_AUDITED = 256


def audit_key(files: dict[str, bytes | None], patch: str) -> str:
    """All that ``tamper.audit`` reads, hashed: each file's path and bytes (or that it was too large), and the patch."""
    digest = hashlib.sha256(patch.encode("utf-8", "surrogateescape"))
    for path, blob in sorted(files.items()):
        digest.update(b"\0%s\0%d\0" % (path.encode("utf-8", "surrogateescape"), -1 if blob is None else len(blob)))
        digest.update(blob or b"")
    return digest.hexdigest()


def audited(files: dict[str, bytes | None], patch: str) -> list[str]:
    """``tamper.audit``'s findings, remembered by what it read (it is a pure function of that): one
    patch graded many times (gold in Pipeline 1's runs, a survivor or a rewrite of gold under each
    test strengthening validates) was parsed and audited each time, 0.45 s a grade on more-itertools'
    5,000-line module."""
    key = audit_key(files, patch)
    with _AUDITED_LOCK:
        known = _AUDITED.get(key)
    if known is None:
        known = [str(finding) for finding in tamper.audit(files, patch)]
        with _AUDITED_LOCK:
            if len(_AUDITED) >= MAX_AUDITED:
                _AUDITED.pop(next(iter(_AUDITED)))
            _AUDITED[key] = known
    return list(known)
