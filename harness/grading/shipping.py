"""The pytest plugins shipped into a sandbox: the files each one is made of, and the folder they go to."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.sandboxes.envs import ENV_MOUNT
from harness.sandboxes.sandbox import IO_DIR, Sandbox

PLUGINS = Path(__file__).parent / "plugins"
# first on the tests' PYTHONPATH, so `-p swedeck_x` finds the plugin here
PLUGIN_DIR = f"{IO_DIR}/plugins"
# a test command's PYTHONPATH where plugins load: ours, then the recipe environment's site folder
PLUGIN_PATH = f"{PLUGIN_DIR}:{ENV_MOUNT}/site"


def plugin_files(name: str) -> list[Path]:
    """The plugin's module and its helper modules (``<name>_<part>.py``, which it imports by absolute
    name from the same folder)."""
    return [PLUGINS / f"{name}.py", *sorted(PLUGINS.glob(f"{name}_*.py"))]


def plugin_modules() -> set[str]:
    """The name of every module a plugin may import from PLUGIN_DIR: a candidate's module of one of
    these names in a folder ahead of it on sys.path would be imported in its place."""
    return {path.stem for path in PLUGINS.glob("swedeck_*.py")}


def ship(sandbox: Sandbox, names: Iterable[str]) -> None:
    for name in names:
        for path in plugin_files(name):
            sandbox.write_file(f"{PLUGIN_DIR}/{path.name}", path.read_bytes())
