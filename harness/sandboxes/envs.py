"""Materialising what a sandbox starts from: the base root filesystem, recipe environments and the
sealed buggy tree. Each is built once and cached by content hash; builds may use the network, task
runs never do.

A recipe environment is a Python virtual environment at ``/opt/swedeck-env`` that sees the base's
packages. Its build runs the recipe's commands in the task's workdir, on a throwaway copy of the
sealed buggy tree, with the network on and this machine's package index, proxy and CA settings, so
``pip install X`` and ``pip install -e .`` both land in it; what they write into the tree is dropped.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path, PurePosixPath

from harness.config import Settings
from harness.records import Recipe, Task, content_hash
from harness.sandboxes.sandbox import EnvError

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
# Bump when the way environments are built changes: environments built the old way are not reused.
ENV_LAYOUT = 3
# The first build command: the environment's python and pip come first on PATH from then on. The
# base's pip serves the environment (`pip` runs it with the environment's python): ensurepip would
# install a copy of it into every environment, and take most of a small build's time. The base's
# pytest has no `pytest` command (corpus test commands are `pytest -rA ...`): the environment gets
# pytest's own console script, which a recipe that installs another pytest overwrites.
MAKE_VENV = (
    f"python3 -m venv --without-pip --system-site-packages {ENV_MOUNT}"
    f" && printf '#!/bin/sh\\nexec {ENV_MOUNT}/bin/python -m pip \"$@\"\\n' > {ENV_MOUNT}/bin/pip"
    f" && chmod 755 {ENV_MOUNT}/bin/pip && ln -s pip {ENV_MOUNT}/bin/pip3"
    f" && printf '#!{ENV_MOUNT}/bin/python\\nimport sys\\nfrom pytest import console_main\\nsys.exit(console_main())\\n'"
    f" > {ENV_MOUNT}/bin/pytest && chmod 755 {ENV_MOUNT}/bin/pytest"
)
# forwarded into build sandboxes only, so recipe installs use this machine's package index, proxy and CA
BUILD_ENV_PREFIXES = (
    "PIP_", "UV_", "SSL_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
)  # fmt: skip
# pip settings from this machine's pip configuration files that a build needs to reach its index
# (constraints and local find-links stay behind: they are this machine's, not the recipe's)
PIP_CONFIG_KEYS = ("index-url", "extra-index-url", "trusted-host", "cert", "client-cert", "proxy")
# host files the carried variables name (CA bundles, client certificates) are copied here in a build
BUILD_FILES_DIR = "/tmp/.swedeck-build"
# a build that failed this way failed because of the network, the index or certificates, not the recipe
INFRA_BUILD_ERRORS = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|SSLError|SSL: |ProxyError|Tunnel connection failed"
    r"|Temporary failure in name resolution|Name or service not known|Could not resolve host"
    r"|NewConnectionError|Failed to establish a new connection|Max retries exceeded|Connection refused"
    r"|Connection reset|Connection aborted|Connection timed out|ConnectTimeout|ReadTimeout|Read timed out"
    r"|Network is unreachable|No route to host|IncompleteRead|HTTP error 5\d\d|\b50[234] Server Error"
)


def run_env(with_recipe_env: bool) -> dict[str, str]:
    """The environment every sandboxed command starts from, identical on both backends."""
    env = {"PATH": BASE_PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1"}
    if with_recipe_env:
        env["PYTHONPATH"] = f"{ENV_MOUNT}/site"
    return env


def script(name: str) -> Path:
    return Path(str(resources.files("harness.sandboxes") / "scripts" / name))


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


def env_key(task: Task) -> str:
    """A recipe environment's cache key: its commands see the task's tree at its workdir (an
    editable install records that path), so both belong to it."""
    return content_hash([ENV_LAYOUT, task.environment.recipe, tree_key(task), task.environment.workdir])


def build_commands(recipe: Recipe) -> list[str]:
    return [MAKE_VENV, *recipe.install]


# ------------------------------------------------------------------------------------------ build settings


@functools.cache
def host_pip_config() -> dict[str, str]:
    """This machine's pip settings from its configuration files (``pip config list``; the
    environment's PIP_* variables are carried as they are)."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    settings: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name, _, value = line.partition("=")
        section, _, key = name.partition(".")
        if section != ":env:" and key in PIP_CONFIG_KEYS:
            settings[key] = value.strip().strip("'\"")
    return settings


def carried_env(environ: Mapping[str, str], pip_config: Mapping[str, str]) -> dict[str, str]:
    """The variables a build sandbox gets from this machine: index, proxy and CA settings, with the
    pip configuration files' settings as PIP_* variables where no variable sets them. Index URLs
    that name local folders (``file:``) mean nothing in a sandbox and are left out."""
    env = {k: v for k, v in environ.items() if k.startswith(BUILD_ENV_PREFIXES)}
    for key, value in pip_config.items():
        if key.endswith("index-url"):
            value = " ".join(url for url in value.split() if not url.startswith("file:"))
        env.setdefault("PIP_" + key.upper().replace("-", "_"), value)
    return {k: v for k, v in env.items() if v}


def relocate_files(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Path]]:
    """Variables that name a file on this machine (a CA bundle, a client certificate) point at a
    copy in ``BUILD_FILES_DIR`` instead, which the backend puts there: the sandbox's own file at that
    path, if any, is the base's, not this machine's. Returns the variables and {copy: original}."""
    moved, files = dict(env), {}
    for key, value in env.items():
        if value.startswith("/") and Path(value).is_file():
            inside = f"{BUILD_FILES_DIR}/{key}-{PurePosixPath(value).name}"
            moved[key], files[inside] = inside, Path(value)
    return moved, files


def build_settings() -> tuple[dict[str, str], dict[str, Path]]:
    return relocate_files(carried_env(os.environ, host_pip_config()))


# ------------------------------------------------------------------------------------------ build failures


def failure_marker(settings: Settings, key: str) -> Path:
    return settings.cache_dir / "envs" / f"{key}.failed"


def cached_failure(task: Task, settings: Settings, key: str) -> None:
    """Raise the failure a build of this environment met before, when it was the recipe's own."""
    marker = failure_marker(settings, key)
    if marker.exists():
        raise EnvError(
            f"{task.instance_id}: environment build failed earlier (cached in {marker}; delete that file to build again)",
            marker.read_text(errors="replace"),
        )


def is_infrastructure_failure(log: str, timed_out: bool) -> bool:
    return timed_out or INFRA_BUILD_ERRORS.search(log) is not None


def build_failed(task: Task, settings: Settings, key: str, command: str, log: str, *, timed_out: bool = False) -> EnvError:
    """The error for a failed build command. A failure of the recipe itself is cached (a rebuild
    would fail the same way) and says how to retry; one of the network, the index or certificates
    is not, so the next run builds again."""
    what = f"{task.instance_id}: environment build failed at `{command}`"
    if is_infrastructure_failure(log, timed_out):
        cause = "it timed out" if timed_out else "network, package index or certificate error"
        return EnvError(f"{what} ({cause}; not cached, the next run builds again)", log)
    marker = failure_marker(settings, key)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"$ {command}\n{log}")
    return EnvError(f"{what} (cached in {marker}; delete that file to build again)", log)


def publish_env(folder: Path) -> None:
    """Make a built environment readable by every sandbox user (sandboxes run as uids of their own)
    and owned by root, so none of them can change it."""
    for dirpath, dirnames, filenames in os.walk(folder):
        os.chown(dirpath, 0, 0)
        os.chmod(dirpath, 0o755)
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            os.lchown(path, 0, 0)
            if not os.path.islink(path) and name in filenames:
                mode = os.stat(path).st_mode & 0o777
                os.chmod(path, (mode | 0o444 | (0o111 if mode & 0o100 else 0)) & 0o755)


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


def tree_tar(task: Task, settings: Settings, uid: int) -> Path:
    """The sealed tree as a tar rooted at the workdir's name, owned by ``uid``: what a sandbox whose
    workdir the host cannot write into unpacks from inside (a Docker container's tmpfs; a probe
    session taking another task's tree, ``probes.session``)."""
    tree = prepare_tree(task, settings)
    name = PurePosixPath(task.environment.workdir).name
    # keyed by the root's name too: two tasks on one tree may run in different workdirs
    dest = settings.cache_dir / "trees" / f"{content_hash([tree_key(task), name, uid])}.tar"
    if dest.exists():
        return dest

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = uid
        info.uname = info.gname = ""
        return info

    fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".tar.part")
    with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w") as tar:
        tar.add(tree, arcname=name, filter=owned)
    # read-only: it is the sealed tree every sandbox of the task unpacks (a copy in its IO folder)
    os.chmod(tmp, 0o444)
    os.replace(tmp, dest)
    return dest


def prepare_tree(task: Task, settings: Settings) -> Path:
    """The pristine, sealed buggy tree of a task on the host: from its files or git bundle, or copied
    out of the image its repository lives in."""
    if task.repo_source.kind == "image":
        return _tree_from_image(task, settings)
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
            if not (src.is_file() if task.repo_source.kind == "bundle" else src.is_dir()):
                raise EnvError(f"{task.instance_id}: git {task.repo_source.kind} {src} does not exist")
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


def _tree_from_image(task: Task, settings: Settings) -> Path:
    """The workdir of a pristine container of the task's image, copied out once per image id, base
    commit and workdir, and sealed on the host like any tree. The image's git configuration and hooks
    are not kept: the host's git must run nothing the image brought."""
    import docker
    import docker.errors

    from harness.sandboxes.leftovers import container_labels

    ref, workdir = task.environment.image, task.environment.workdir
    try:
        client = docker.from_env()
        image = client.images.get(ref)
    except docker.errors.ImageNotFound as err:
        raise EnvError(f"{task.instance_id}: image {ref} is not on this machine, so its repository cannot be copied out") from err
    except docker.errors.DockerException as err:
        raise EnvError(f"{task.instance_id}: the repository lives in image {ref}, and no Docker engine answers: {err}") from err
    dest = settings.cache_dir / "trees" / content_hash(["image", image.id, task.base_commit, workdir])
    if (dest / ".git").is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
    try:
        container = client.containers.create(image.id, ["true"], labels=container_labels(settings))
        try:
            stream, _ = container.get_archive(workdir)
            with (work / "tree.tar").open("wb") as f:
                for chunk in stream:
                    f.write(chunk)
        except docker.errors.NotFound as err:
            raise EnvError(f"{task.instance_id}: image {ref} has no {workdir}") from err
        finally:
            container.remove(force=True)
        with tarfile.open(work / "tree.tar") as archive:
            archive.extractall(work / "x", filter=_owned_here)
        (work / "tree.tar").unlink()
        root = work / "x" / PurePosixPath(workdir).name
        if (root / ".git").is_dir():
            _forget_git_config(root / ".git")
        else:  # a tree without history: its files are the base
            _git(["init", "-q", "-b", "main"], root)
            _git(["add", "-A"], root)
            _git(["commit", "-q", "--no-verify", "-m", f"{task.repo} at base"], root)
        seal = subprocess.run(["bash", str(script("seal_git.sh")), task.base_commit or "HEAD"], cwd=root, capture_output=True, text=True)
        if seal.returncode:
            raise EnvError(f"{task.instance_id}: could not seal the git history copied out of {ref} at {task.base_commit or 'HEAD'}", seal.stderr)
        try:
            os.rename(root, dest)
        except OSError:  # a concurrent worker copied the same tree first; theirs is identical
            pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _owned_here(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """tar's own safety rules (nothing lands outside ``dest``), and files owned by this user: git
    refuses to work in a repository another user owns."""
    return tarfile.tar_filter(member, dest).replace(uid=os.getuid(), gid=os.getgid(), uname="", gname="")


def _forget_git_config(git_dir: Path) -> None:
    """Keep only what reading the repository needs (its format and object format) of its config."""
    config = git_dir / "config"
    keep = {"core.repositoryformatversion": "0"}
    for key in ("core.repositoryformatversion", "extensions.objectformat"):
        found = subprocess.run(["git", "config", "--file", str(config), "--get", key], capture_output=True, text=True)
        if found.returncode == 0:
            keep[key] = found.stdout.strip()
    shutil.rmtree(git_dir / "hooks", ignore_errors=True)
    config.unlink(missing_ok=True)
    for key, value in keep.items():
        subprocess.run(["git", "config", "--file", str(config), key, value], check=True)


def tree_commit(tree: Path) -> str:
    return _git(["rev-parse", "HEAD"], tree)
