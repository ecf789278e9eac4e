"""A container registry on localhost for tests: the pull side of the Docker Registry HTTP API v2,
serving images exported with ``docker save``. The test double for a corpus's registry, where no
registry image can be pulled to run a real one.

``serve(images)`` answers ``GET /v2/``, ``HEAD``/``GET /v2/<name>/manifests/<tag or digest>`` and
``HEAD``/``GET /v2/<name>/blobs/<digest>``, which is all ``docker pull localhost:PORT/<name>:<tag>``
asks for. Each image is a schema-2 manifest over the saved image's config and layers; layers are
served as saved (uncompressed tars: the engine detects the compression of what it downloads).
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_V1 = "application/vnd.docker.container.image.v1+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


@dataclass(frozen=True)
class Repository:
    manifests: dict[str, bytes]  # tag and digest -> manifest
    blobs: dict[str, Path]  # digest -> file


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"sha256:{h.hexdigest()}"


def load_saved(archive: Path, unpack: Path, tag: str) -> Repository:
    """One repository from the first image of a ``docker save`` archive, unpacked into ``unpack``."""
    with tarfile.open(archive) as saved:
        saved.extractall(unpack, filter="data")
    (entry, *_) = json.loads((unpack / "manifest.json").read_text())
    files = [unpack / entry["Config"], *(unpack / layer for layer in entry["Layers"])]
    digests = [_digest(f) for f in files]
    blobs = dict(zip(digests, files, strict=True))
    config, *layers = digests
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_V2,
            "config": {"mediaType": CONFIG_V1, "size": files[0].stat().st_size, "digest": config},
            "layers": [{"mediaType": LAYER, "size": blobs[d].stat().st_size, "digest": d} for d in layers],
        }
    ).encode()
    digest = f"sha256:{hashlib.sha256(manifest).hexdigest()}"
    return Repository(manifests={tag: manifest, digest: manifest}, blobs=blobs)


def _handler(repositories: Mapping[str, Repository]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet: tests read their own output
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/v2", "/v2/"):
                return self._send(200, b"{}", "application/json", body)
            name, kind, ref = _route(path)
            repository = repositories.get(name)
            if repository is not None and kind == "manifests" and ref in repository.manifests:
                manifest = repository.manifests[ref]
                digest = f"sha256:{hashlib.sha256(manifest).hexdigest()}"
                return self._send(200, manifest, MANIFEST_V2, body, digest)
            if repository is not None and kind == "blobs" and ref in repository.blobs:
                return self._send_file(repository.blobs[ref], ref, body)
            error = {"errors": [{"code": f"{kind.upper().rstrip('S')}_UNKNOWN", "message": f"{name} {ref} unknown"}]}
            self._send(404, json.dumps(error).encode(), "application/json", body)

        def _headers(self, status: int, size: int, kind: str, digest: str) -> None:
            self.send_response(status)
            self.send_header("Docker-Distribution-API-Version", "registry/2.0")
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(size))
            if digest:
                self.send_header("Docker-Content-Digest", digest)
            self.end_headers()

        def _send(self, status: int, data: bytes, kind: str, body: bool, digest: str = "") -> None:
            self._headers(status, len(data), kind, digest)
            if body:
                self.wfile.write(data)

        def _send_file(self, path: Path, digest: str, body: bool) -> None:
            self._headers(200, path.stat().st_size, "application/octet-stream", digest)
            if body:
                with path.open("rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        self.wfile.write(chunk)

    return Handler


def _route(path: str) -> tuple[str, str, str]:
    """``/v2/<name>/<manifests|blobs>/<ref>`` -> (name, kind, ref); names may hold slashes."""
    parts = path.removeprefix("/v2/").split("/")
    if len(parts) < 3:
        return "", "", ""
    return "/".join(parts[:-2]), parts[-2], parts[-1]


@contextmanager
def serve(repositories: Mapping[str, Repository]) -> Iterator[int]:
    """Serve ``repositories`` (name -> Repository) on 127.0.0.1; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(repositories))
    thread = threading.Thread(target=server.serve_forever, name="swedeck-local-registry", daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
