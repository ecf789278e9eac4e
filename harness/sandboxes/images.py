"""Corpus images: found locally or pulled from their registry as ``sandbox.pull`` says, with a
progress bar, and kept within ``sandbox.image_cache_gb``.

``never`` uses what the engine has; ``missing`` pulls an image the engine lacks; ``always`` pulls
each image once per process (the registry's tag may have moved). An image that is not there and
could not be pulled is an ``ImageMissing`` error (Pipeline 1 records it as ``env_error`` at stage
``image_missing``). The images swedeck pulled are listed in the cache (``images.json``: reference,
image id, size, last use); after a pull, the least recently used of them are removed until the list
fits the budget again. Images a container still uses, and those the user pulled or built, are never
removed. Sizes are the engine's per-image sizes, so layers several images share count once each.
"""

from __future__ import annotations

import fcntl
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.config import Settings
from harness.sandboxes.sandbox import EnvError

PullPolicy = Literal["never", "missing", "always"]
LEDGER = "images.json"
GB = 10**9


class ImageMissing(EnvError):
    """A task's image is not on this machine and was not pulled (pulling is off, or it failed)."""


# ------------------------------------------------------------------------------------------ progress


@dataclass
class PullProgress:
    """Bytes downloaded over bytes known so far, from the engine's pull events (one per layer step)."""

    layers: dict[str, tuple[int, int]] = field(default_factory=dict)  # layer id -> (done, total)

    def update(self, event: Mapping[str, Any]) -> None:
        if "error" in event:
            raise ImageMissing(f"pull failed: {event['error']}")
        layer, status = event.get("id", ""), event.get("status", "")
        detail = event.get("progressDetail") or {}
        _, total = self.layers.get(layer, (0, 0))
        if status == "Downloading" and detail.get("total"):
            self.layers[layer] = (int(detail.get("current", 0)), int(detail["total"]))
        elif status in ("Download complete", "Already exists", "Pull complete") and layer:
            self.layers[layer] = (total, total)

    @property
    def done(self) -> int:
        return sum(done for done, _ in self.layers.values())

    @property
    def total(self) -> int:
        return sum(total for _, total in self.layers.values())


def follow(ref: str, events: Iterable[Mapping[str, Any]]) -> None:
    """Read a pull's events to the end, drawing a progress bar on stderr; raises on an error event."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TransferSpeedColumn,
    )

    progress = PullProgress()
    columns = (TextColumn("pulling {task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        job = bar.add_task(ref, total=None)
        for event in events:
            progress.update(event)
            bar.update(job, completed=progress.done, total=progress.total or None)


# ------------------------------------------------------------------------------------------ the ledger


@dataclass(frozen=True)
class Pulled:
    ref: str
    image_id: str
    size: int
    used: float


def over_budget(pulled: Iterable[Pulled], budget: int, keep: str) -> list[Pulled]:
    """The least recently used images to remove so the rest fit ``budget`` bytes (``keep`` stays)."""
    by_use = sorted(pulled, key=lambda p: p.used)
    total = sum(p.size for p in by_use)
    victims = []
    for image in by_use:
        if total <= budget:
            break
        if image.ref != keep:
            victims.append(image)
            total -= image.size
    return victims


@contextmanager
def _ledger(settings: Settings) -> Iterator[dict[str, Pulled]]:
    """The list of pulled images, locked against other processes of this cache while it is changed."""
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    path = settings.cache_dir / LEDGER
    with open(settings.cache_dir / f"{LEDGER}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = json.loads(path.read_text()) if path.exists() else []
        ledger = {row["ref"]: Pulled(**row) for row in rows}
        yield ledger
        part = path.with_suffix(".part")
        part.write_text(json.dumps([vars(p) for p in sorted(ledger.values(), key=lambda p: p.ref)], indent=1))
        part.replace(path)


# ------------------------------------------------------------------------------------------ the store


class ImageStore:
    """A backend's view of corpus images (thread-safe: sandboxes of several tasks open at once)."""

    def __init__(self, client: Any, settings: Settings, policy: PullPolicy, budget_gb: float) -> None:
        self.client, self.settings, self.policy = client, settings, policy
        self.budget = int(budget_gb * GB)
        self._ready: set[str] = set()  # references looked up (and pulled) by this process
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def ensure(self, ref: str, instance_id: str) -> str:
        """``ref``, present on the engine; raises ImageMissing."""
        if ref in self._ready:
            return ref
        with self._guard:
            lock = self._locks.setdefault(ref, threading.Lock())
        with lock:
            if ref in self._ready:
                return ref
            present = self._present(ref)
            if self.policy == "always" or (self.policy == "missing" and not present):
                self._pull(ref, instance_id, present)
            elif not present:
                raise ImageMissing(f"{instance_id}: image {ref} is not on this machine and sandbox.pull is 'never' (pull it, or set sandbox.pull to 'missing')")
            self._touch(ref)
            self._ready.add(ref)
        return ref

    def digest(self, ref: str) -> str:
        """The registry digest (``name@sha256:...``) of an image pulled by this name, else its local id."""
        from docker.utils import parse_repository_tag

        image = self.client.images.get(ref)
        name = parse_repository_tag(ref)[0]
        return next((d for d in image.attrs.get("RepoDigests") or [] if d.split("@", 1)[0] == name), image.id)

    def _present(self, ref: str) -> bool:
        import docker.errors

        try:
            self.client.images.get(ref)
        except docker.errors.ImageNotFound:
            return False
        return True

    def _pull(self, ref: str, instance_id: str, present: bool) -> None:
        import docker.errors

        try:
            follow(ref, self.client.api.pull(ref, stream=True, decode=True))
            image = self.client.images.get(ref)
        except (docker.errors.APIError, docker.errors.ImageNotFound, ImageMissing) as err:
            why = err.explanation if isinstance(err, docker.errors.APIError) and err.explanation else str(err)
            where = "" if present else " and is not on this machine"
            raise ImageMissing(f"{instance_id}: image {ref} could not be pulled ({why}){where}") from err
        with _ledger(self.settings) as ledger:
            ledger[ref] = Pulled(ref, image.id, int(image.attrs.get("Size", 0)), time.time())
            if self.budget > 0:
                for victim in over_budget(ledger.values(), self.budget, keep=ref):
                    if self._remove(victim):
                        del ledger[victim.ref]

    def _remove(self, victim: Pulled) -> bool:
        """Untag a pulled image (the engine deletes its layers when nothing else holds them); False
        when a container still uses it."""
        import docker.errors

        try:
            self.client.images.remove(victim.ref)
        except docker.errors.ImageNotFound:
            return True
        except docker.errors.APIError:  # 409: a container uses it
            return False
        return True

    def _touch(self, ref: str) -> None:
        with _ledger(self.settings) as ledger:
            if ref in ledger:
                found = ledger[ref]
                ledger[ref] = Pulled(found.ref, found.image_id, found.size, time.time())
