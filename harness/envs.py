"""Materialising what a sandbox starts from: the base root filesystem, recipe environments and the
sealed buggy tree. Each is built once and cached by content hash; builds may use the network, task
runs never do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from harness.config import Settings
from harness.records import Recipe, Task, content_hash
from harness.sandbox import EnvError

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "swedeck",
    "GIT_AUTHOR_EMAIL": "swedeck@localhost",
    "GIT_COMMITTER_NAME": "swedeck",
    "GIT_COMMITTER_EMAIL": "swedeck@localhost",
    # a fixed date makes the base commit of a plain-files tree reproducible across machines
    "GIT_AUTHOR_DATE": "2020-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2020-01-01T00:00:00+0000",
}
ENV_MOUNT = "/opt/swedeck-env"
BASE_PATH = f"{ENV_MOUNT}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# forwarded into build sandboxes only, so recipe installs use this machine's package index and CA
BUILD_ENV_PREFIXES = ("PIP_", "UV_", "SSL_CERT", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


def run_env(with_recipe_env: bool) -> dict[str, str]:
    """The environment every sandboxed command starts from, identical on both backends."""
    env = {"PATH": BASE_PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1"}
    if with_recipe_env:
        env["PYTHONPATH"] = f"{ENV_MOUNT}/site"
    return env


def script(name: str) -> Path:
    return Path(str(resources.files("harness") / "scripts" / name))


def build_base(settings: Settings, pytest_version: str = "9.0.3") -> None:
    """Build the base rootfs with debootstrap and import it into Docker when an engine runs."""
    subprocess.run(
        ["bash", str(script("build_base.sh")), str(settings.base_rootfs), settings.base_image, pytest_version],
        check=True,
    )


def recipe_key(recipe: Recipe) -> str:
    return content_hash(recipe)


def needs_env_build(recipe: Recipe | None) -> bool:
    return recipe is not None and bool(recipe.install)


def _git(args: list[str], cwd: Path) -> str:
    env = {**os.environ, **GIT_IDENTITY}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise EnvError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def tree_key(task: Task) -> str:
    return content_hash([task.repo_source, task.base_commit, _source_fingerprint(task)])


def _source_fingerprint(task: Task) -> str:
    """Cheap change detector for the files behind a task folder (names, sizes, mtimes)."""
    root = Path(task.repo_source.path)
    if not root.exists():
        return "missing"
    if root.is_file():
        st = root.stat()
        return f"{st.st_size}:{st.st_mtime_ns}"
    entries = sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()
    )
    return content_hash(entries)


def prepare_tree(task: Task, settings: Settings) -> Path:
    """The pristine, sealed buggy tree of a task whose repo is shipped as files or a git bundle."""
    if task.repo_source.kind == "image":
        raise EnvError(f"{task.instance_id}: the repository lives inside image {task.environment.image!r}")
    dest = settings.cache_dir / "trees" / tree_key(task)
    if (dest / ".git").is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
    try:
        src = Path(task.repo_source.path)
        if task.repo_source.kind == "files":
            if not src.is_dir():
                raise EnvError(f"{task.instance_id}: repository folder {src} does not exist")
            shutil.copytree(src, work, dirs_exist_ok=True, symlinks=True)
            _git(["init", "-q", "-b", "main"], work)
            _git(["add", "-A"], work)
            _git(["commit", "-q", "--no-verify", "-m", f"{task.repo} at base"], work)
        else:
            if not src.is_file():
                raise EnvError(f"{task.instance_id}: git bundle {src} does not exist")
            shutil.rmtree(work)
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(src), str(work)], check=True, capture_output=True)
        base = task.repo_source.ref or task.base_commit or "HEAD"
        seal = subprocess.run(["bash", str(script("seal_git.sh")), base], cwd=work, capture_output=True, text=True)
        if seal.returncode:
            raise EnvError(f"{task.instance_id}: could not seal git history at {base}", seal.stderr)
        try:
            os.rename(work, dest)
        except OSError:  # a concurrent worker prepared the same tree first; theirs is identical
            shutil.rmtree(work)
    except subprocess.CalledProcessError as err:
        shutil.rmtree(work, ignore_errors=True)
        raise EnvError(f"{task.instance_id}: could not clone {task.repo_source.path}", str(err.stderr)) from err
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return dest


def tree_commit(tree: Path) -> str:
    return _git(["rev-parse", "HEAD"], tree)
