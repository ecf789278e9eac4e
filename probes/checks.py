"""The host's checks of our probes before a probe session may grade one (``probes.session``): the
probe applies with git, touches nothing protected or hidden, breaks no capability rule and draws no
tamper finding, as ``harness.grading.grader.grade`` would judge it; else ``grade`` itself takes it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from harness.grading import tamper
from harness.grading.capabilities import is_protected, violations
from harness.grading.tree import Entry, TaskFacts
from harness.records import Task
from probes.workspace import Trees, recall

Files = dict[str, tuple[int, bytes] | None]  # path -> (mode, content); None: deleted


class Checks:
    """The host's checks of our probes, which decide whether a session may grade one (``files``), run
    ahead of the grading in a thread of their own (``ahead``): while a session's sandbox runs one
    probe's tests, the host checks the next ones, instead of the sandbox waiting on the host and the
    host on the sandbox."""

    def __init__(self, task: Task, tree: Path, facts: TaskFacts, listing: dict[str, Entry]) -> None:
        self.task, self.tree, self.facts, self.listing = task, tree, facts, listing
        self.trees: Trees | None = None  # a host clone, made only for a patch not remembered (probes.workspace)
        self.lock = threading.Lock()  # the clone applies one patch at a time
        self.done: dict[str, Files | None] = {}
        self.ready = threading.Condition()
        self.queued: set[str] = set()
        self.stop = False
        self.threads: list[threading.Thread] = []

    def ahead(self, patches: Sequence[str]) -> None:
        """Check these patches in order, in the background."""
        todo = [p for p in dict.fromkeys(patches) if p not in self.done]
        with self.ready:
            self.queued |= set(todo)

        def work() -> None:
            for patch in todo:
                if self.stop:
                    return
                try:
                    found = self.files(patch)
                except Exception:  # noqa: BLE001 - left to the grading thread, which checks it again and records the error
                    continue
                with self.ready:
                    self.done[patch] = found
                    self.ready.notify_all()

        self.threads.append(threading.Thread(target=work, name="swedeck-probe-checks", daemon=True))
        self.threads[-1].start()

    def get(self, patch: str) -> Files | None:
        """``files`` of ``patch``, from the background checks when it is one of theirs."""
        with self.ready:
            while patch in self.queued and patch not in self.done and any(t.is_alive() for t in self.threads):
                self.ready.wait(0.5)
            if patch in self.done:
                return self.done[patch]
        return self.files(patch)

    def files(self, patch: str) -> Files | None:
        """The probe's files (path -> (mode, content), None: deleted) when it is one a session may grade
        as ``grade`` would: applies with git, touches nothing protected, no capability rule or tamper
        finding; else None."""
        known, contents = recall(self.tree, patch)
        if not known:
            with self.lock:
                self.trees = self.trees or Trees(self.task, self.tree).__enter__()
                contents = self.trees.contents(patch)
        if not contents:
            return None
        after = dict(self.listing)
        out: Files = {}
        for path, text in contents.items():
            if is_protected(path, self.task) or path in self.facts.hidden:
                return None
            if text is None:
                after.pop(path, None)
                out[path] = None
                continue
            blob = text.encode("utf-8", errors="surrogateescape")
            old = self.listing.get(path)
            mode = old.mode if old is not None and old.kind == "f" else 0o644
            after[path] = Entry("f", mode, len(blob), "probe")
            for folder in PurePosixPath(path).parents:
                if str(folder) != ".":
                    after.setdefault(str(folder), Entry("d", 0o755, 4096, "probe"))
            out[path] = (mode, blob)
        if violations(self.listing, after, self.task, self.facts):
            return None
        python = tamper.python_paths({p for p, f in out.items() if f is not None})
        if tamper.audit({p: out[p][1] for p in python}, patch):
            return None
        return out

    def close(self) -> None:
        self.stop = True
        for thread in self.threads:
            thread.join()
        if self.trees is not None:
            self.trees.__exit__(None, None, None)
