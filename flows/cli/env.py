"""``swedeck env base|image|build``: the base filesystem, the service image and the tasks' environments, built ahead of time."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import BackendOpt, ConfigOpt, SetOpt, _config, _console, _print_errors, _progress, _sources


env_app = typer.Typer(help="Build environments ahead of time.", no_args_is_help=True)


@env_app.command("base")
def env_base() -> None:
    """Build the base root filesystem (debootstrap) and import it into Docker when an engine runs."""
    from harness.config import Settings
    from harness.sandboxes.envs import build_base

    build_base(Settings.from_env())


@env_app.command("image")
def env_image(
    base: Annotated[str | None, typer.Option("--base", help="base image (default: the one `swedeck env base` builds)")] = None,
    tag: Annotated[str, typer.Option("--tag", "-t", help="tag of the service image")] = "swedeck:latest",
) -> None:
    """Build the service image (the Dockerfile) on the base image; its pip gets this machine's index settings and CA."""
    from flows.image import build_image
    from harness.config import Settings

    print(build_image(base or Settings.from_env().base_image, tag))


@env_app.command("build")
def env_build(
    paths: Annotated[list[Path] | None, typer.Argument(help="sources")] = None,
    backend: BackendOpt = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
) -> None:
    """Materialise every task's environment and sealed tree now (cached by content hash)."""
    from curation.sources import load_sources
    from harness.sandboxes.backends import get_backend
    from harness.sandboxes.sandbox import EnvError

    cfg = _config(config, overrides, backend)
    result = load_sources(_sources(paths))
    _print_errors(result.errors)
    sandbox_backend = get_backend(cfg.sandbox)
    failed = 0
    with _progress() as progress:
        job = progress.add_task("building environments", total=len(result.tasks), info="")
        for task in result.tasks:
            try:
                sandbox_backend.prepare(task)
            except EnvError as err:
                failed += 1
                progress.console.print(f"[red]env error[/] {task.instance_id}: {err}")
            progress.update(job, advance=1)
    _console().print(f"{len(result.tasks) - failed} ready, {failed} failed")
