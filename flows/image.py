"""The service image: the Dockerfile at the repository root, built on the base image.

pip inside a build does not see this machine's pip settings or CA bundle, so the build gets them from
here: the index URLs it can reach over the network and the trusted hosts as build arguments, the CA
bundle pip verifies them with as a file in the build context (it stays in the build stage)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what the Dockerfile installs: the package's sources and its metadata
CONTEXT = ("Dockerfile", "pyproject.toml", "README.md", "harness", "curation", "probes", "judge", "training", "flows", "data")
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
CA_IN_CONTEXT = ".build/ca.pem"
SRC_IN_IMAGE = "/opt/swedeck/src"  # where the Dockerfile copies the context


def pip_settings() -> dict[str, str]:
    """This machine's pip settings, environment over files, as ``pip config list`` shows them."""
    lines = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True).stdout
    settings: dict[str, str] = {}
    for line in sorted(lines.splitlines(), key=lambda l: l.startswith(":env:")):
        key, _, value = line.partition("=")
        settings[key.rsplit(".", 1)[-1]] = value.strip("'\"")
    return settings


def build_args(settings: dict[str, str], context: Path) -> dict[str, str]:
    """Build arguments for the Dockerfile's pip, and the CA bundle copied into ``context``."""
    args = {"PIP_" + key.upper().replace("-", "_"): settings[key] for key in ("index-url", "trusted-host") if key in settings}
    remote = [url for url in settings.get("extra-index-url", "").split() if not url.startswith("file:")]
    if remote:
        args["PIP_EXTRA_INDEX_URL"] = " ".join(remote)
    if "cert" in settings:
        (context / CA_IN_CONTEXT).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(settings["cert"], context / CA_IN_CONTEXT)
        args["PIP_CERT"] = f"{SRC_IN_IMAGE}/{CA_IN_CONTEXT}"
    return args


def stage_context(dest: Path) -> None:
    for name in CONTEXT:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=JUNK)
        else:
            shutil.copy2(src, dest / name)


def build_image(base: str, tag: str) -> str:
    """Build ``tag`` from the Dockerfile on ``base``; returns the image id."""
    import docker
    import docker.errors

    client = docker.from_env()
    try:
        client.images.get(base)
    except docker.errors.ImageNotFound:
        raise SystemExit(f"base image {base} is missing: build it with `swedeck env base`") from None
    with tempfile.TemporaryDirectory(prefix="swedeck-image-") as tmp:
        context = Path(tmp)
        stage_context(context)
        args = {"BASE": base, **build_args(pip_settings(), context)}
        command = ["docker", "build", "-t", tag, *(f"--build-arg={k}={v}" for k, v in args.items()), str(context)]
        done = subprocess.run(command, check=False)
        if done.returncode:
            raise SystemExit(f"docker build of {tag} failed (exit {done.returncode}); its output is above")
    return client.images.get(tag).id
