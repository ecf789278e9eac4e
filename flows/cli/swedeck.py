"""The ``swedeck`` app: --version, the command groups in help order, and ``main`` (each command's token and scratch folder)."""

from __future__ import annotations

from typing import Annotated

import typer

from flows.cli.common import _user_error
from flows.cli.decks import app as decks_app
from flows.cli.env import env_app
from flows.cli.grade import app as grade_app
from flows.cli.pipelines import app as pipelines_app
from flows.cli.rollouts import app as rollouts_app
from flows.cli.tasks import tasks_app
from flows.cli.train import train_app

app = typer.Typer(help="Curate SWE RL task corpora into trustworthy decks.", no_args_is_help=True)


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        print(f"swedeck {version('swedeck')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")] = False,
) -> None:
    """Curate SWE RL task corpora into trustworthy decks."""


# help lists the commands in the order they join: the groups without a name add top-level commands
app.add_typer(grade_app)
app.add_typer(pipelines_app)
app.add_typer(rollouts_app)
app.add_typer(decks_app)
app.add_typer(tasks_app, name="tasks")
app.add_typer(env_app, name="env")
app.add_typer(train_app, name="train")


def main() -> None:
    import os
    import shutil
    import tempfile

    from flows.supervise import PREFECT_DEFAULTS
    from harness.sandboxes import leftovers
    from harness.config import Settings, UserError

    for name, value in PREFECT_DEFAULTS.items():  # for a command that starts Prefect in this process
        os.environ.setdefault(name, value)

    # Every command owns what it starts, as a supervised run does: its processes carry its token and its
    # temporary files (probe workspaces, strengthening scratch) go under the cache in a folder named by
    # it, so a command killed midway leaves nothing in the machine's /tmp and nothing the next run's
    # sweep cannot find. A supervised run's worker gets the same token and folder.
    owned = leftovers.RUN_ENV not in os.environ
    scratch = leftovers.scratch_dir(Settings.from_env(), leftovers.owner())
    if owned:
        scratch.mkdir(parents=True, exist_ok=True)
        os.environ[leftovers.RUN_ENV] = leftovers.owner()
        os.environ["TMPDIR"] = tempfile.tempdir = str(scratch)
    try:
        code = app(prog_name="swedeck", standalone_mode=False)
    except typer.TyperException as err:  # typer's click errors: a mistyped option or value, one line like any mistake
        if type(err).__name__ == "NoArgsIsHelpError":  # as typer tells it: the help is printed already
            raise SystemExit(2) from None
        ctx = getattr(err, "ctx", None)
        _user_error(err.format_message() + (f" (`{ctx.command_path} --help` lists what it takes)" if ctx else ""))
    except typer.Abort:
        raise SystemExit(1) from None
    except UserError as err:
        _user_error(err)
    finally:
        if owned:
            shutil.rmtree(scratch, ignore_errors=True)
    raise SystemExit(code or 0)  # without standalone mode, click returns a command's exit code
