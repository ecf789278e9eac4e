"""swedeck_preload: a grade's first test command, ``python -m pytest ...``, with pytest imported ahead.

Not a pytest plugin: a script shipped beside the plugins (standard library, then pytest), started by
a grade's held command (``harness.grading.handover``) before the candidate's patch is applied, so the
interpreter's start and pytest's import run while the patch applies and the host judges it. It reads
nothing of the work tree: run as a script, its own folder (ours) is first on sys.path, not the work
directory, and it imports pytest and pytest's own plugins only, from the environment.

Then it waits. Once the host has judged the change and said ``go``, the tests' script (under the
grade's ``timeout``) installs the hidden tests and writes its parent's process id, the timeout's
process group, on this process's standard input (a pipe in the IO folder). Only then is the job read
(``argv``, ``pythonpath``, ``env``, ``shell``: written by the host with its ``go``) and a child forked
that joins the timeout's process group, so the deadline's signals reach the tests as they reach a
command the timeout started, and runs pytest as ``python -m pytest`` would: the work directory first
on sys.path, then the command's PYTHONPATH, ``pytest/__main__.py`` run as ``__main__``. Where pytest
could not be imported here, or where a folder the command puts ahead of what this process imported
(the work directory, a ``PYTHONPATH=src``) holds an entry named like one of those modules (a tree that
is pytest, pluggy or packaging, or a file named like a standard module pytest imports), the child runs
the command with bash instead: the plain command would have imported that entry.

The exit code goes on the answer pipe (fd 7), which the tests' script reads and exits with: written
by the child once it has exited as the interpreter would up to what a grade can see (non-daemon
threads joined, atexit handlers run, standard streams flushed), or by this process when the child
ended otherwise (128 + the signal that ended it). The interpreter's own teardown of pytest's objects,
tens of milliseconds that change no report, is skipped.

Nothing here enforces the deadline: the timeout does, and the sandbox command ends with it. Code under
test can kill this process or write on the answer pipe, which only ends its own run early.
"""

import sys

AT_START = set(sys.modules)  # the interpreter's start-up imports, which a plain command makes as well

# after AT_START: a plain command might import these from the tree
import json
import os

ANSWER_FD = 7  # held open by the held command (harness.grading.handover)
STARTED_WITH = os.environ.get("PYTHONPATH", "")


def preload():
    """pytest and its own plugins imported; False where pytest cannot be imported here."""
    try:
        import importlib

        import _pytest.config
        import pytest  # noqa: F401 - imported for the child

        for name in _pytest.config.default_plugins:
            try:
                importlib.import_module("_pytest." + name)
            except Exception:  # noqa: BLE001, S110 - a plugin pytest fails to load is loaded later or not at all
                pass
        return True
    except Exception:  # noqa: BLE001 - no pytest here: the command runs with bash
        return False


def exit_code(raised):
    """What the interpreter exits with for an uncaught ``raised`` (None: the module ran to its end)."""
    if raised is None:
        return 0
    if not isinstance(raised, SystemExit):
        import traceback

        traceback.print_exception(raised)
        return 1
    if raised.code is None:
        return 0
    if isinstance(raised.code, int):
        return raised.code & 0xFF
    print(raised.code, file=sys.stderr)
    return 1


def command_path(root):
    """sys.path as ``python -m pytest`` builds it here: the work directory, PYTHONPATH's entries, then
    the rest (site removes duplicates); this script's folder and the entries this process started
    with go."""
    inherited = {os.path.abspath(p) for p in STARTED_WITH.split(":") if p}
    entries = [os.path.abspath(os.path.join(root, p)) for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    rest = [p for p in sys.path[1:] if p not in inherited]
    return list(dict.fromkeys([root, *entries, *rest]))


def shadowed(root, pythonpath, known, at_start):
    """Whether a folder a command puts ahead of ``known`` (this process's sys.path): the work
    directory, a ``PYTHONPATH=src``, holds an entry named like a module this process imported since
    ``at_start`` (a tree that is pluggy, a ``json.py``). The plain command would import that entry, so
    a fork, which has the other, may not run the command. The probe server asks too."""
    entries = [os.path.abspath(os.path.join(root, p)) for p in pythonpath.split(":") if p]
    ahead = [p for p in (root, *entries) if p not in known]
    return shadows(ahead, {name.partition(".")[0] for name in set(sys.modules) - at_start})


def shadows(folders, names):
    """Whether a folder holds an entry a plain command would import as one of ``names``: a folder of
    that name (a package or a namespace), or a file of that name with a suffix the interpreter imports
    (source, bytecode, an extension). More than the import system would take, never less; a
    ``pytest.ini`` is no module."""
    from importlib.machinery import all_suffixes

    suffixes = sorted(all_suffixes(), key=len, reverse=True)  # ".cpython-311-...so" before ".so"
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            stem = next((entry[: -len(suffix)] for suffix in suffixes if entry.endswith(suffix)), entry)
            if stem in names:
                return True
    return False


def run_as_python_m_pytest(job, root, path):
    """In the child: never returns."""
    import atexit
    import runpy
    import types

    sys.path[:] = path
    # what `python -m` itself calls, in a __main__ of its own (this script's functions keep their
    # globals), so pytest/__main__.py stays __main__ to the end, atexit handlers included
    sys.modules["__main__"] = types.ModuleType("__main__")
    sys.argv = ["-m", *job["argv"]]  # argv[0] becomes pytest/__main__.py's path
    raised = None
    try:
        runpy._run_module_as_main("pytest")
    except BaseException as err:  # noqa: BLE001 - the interpreter's exit, below
        raised = err
    code = exit_code(raised)
    # the interpreter's exit, in its order
    if "threading" in sys.modules:
        sys.modules["threading"]._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - as the interpreter's flush at exit
            code = 120
    os.write(ANSWER_FD, b"%d\n" % code)
    os._exit(code)


def child(job, group, preloaded):
    os.setpgid(0, group)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.set_inheritable(ANSWER_FD, False)  # nothing the tests execute holds it
    os.environ.update(job["env"])
    if job["pythonpath"] is not None:
        os.environ["PYTHONPATH"] = job["pythonpath"]
    root = os.getcwd()
    if not preloaded or shadowed(root, os.environ.get("PYTHONPATH", ""), sys.path, AT_START):
        os.execvp("bash", ["bash", "-c", job["shell"]])
    run_as_python_m_pytest(job, root, command_path(root))


def main():
    preloaded = preload()
    said = sys.stdin.buffer.readline().strip()
    if not said.isdigit():
        return 0  # the grade stopped before its tests
    with open(sys.argv[1]) as f:
        job = json.load(f)
    pid = os.fork()
    if pid == 0:
        child(job, int(said), preloaded)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    os.write(ANSWER_FD, b"%d\n" % (code if code >= 0 else 128 - code))
    return 0


if __name__ == "__main__":
    sys.exit(main())
