"""Mutant schemata (probes.schema): one pytest session collects a tree once, then runs each probe of it
in a fork of its own, with that probe switched on.

PYTEST_DONT_REWRITE. Loaded with ``-p swedeck_schema`` into probe sessions only, never into a
candidate's grade. ``SWEDECK_SCHEMA`` names the job (JSON, written by the host): ``mutants``, each
with its ``number``, the ``key`` of the function it rewrites, the ``tests`` to run (node ids, in
order; null: every test), ``maxfail``, and where its JUnit report and output go (``junit``, ``log``);
``log``, the command's own output; ``timeout`` (a probe's own run's: each run gets it less the
collection's time, which its own run would have spent) and ``output_bytes``, each run's limits; ``answer``,
where the runs' results go (one JSON object, ending in a newline, written once every run ended: each
probe's by its number, and ``collection_s``, the session's time up to its test loop).

The switched functions call ``swedeck_schema_switch.which(key)``: the number of the probe switched
on, 0 outside a probe's run. A function entered with none switched on (during
collection) has run gold's body where the probe's own tree would have run the probe's: its probes
are answered ``early`` and not run. Each run is a fork of the collected session in a process group of
its own, under its own deadline and output limit: its output goes to its own log (every descriptor
that held the command's log is pointed at it, pytest's saved ones included), its items are the
probe's tests, its JUnit report its own, and it ends as pytest's session would (the session's finish,
the reports written, pytest's exit code). A run that changed the work tree or HOME (/tmp in a
sandbox; the runs' own TMPDIRs apart), or left a process behind (this process is their subreaper, and
kills them), would hand the next run a state the next probe's own run never sees: the probes after it
are answered ``dirty`` and not run. A run that started another program (an audit hook sees it; where
the interpreter has none, no run is made) is answered ``spawned``: another interpreter may have run
the tree's modules outside the switch's reach. Probes not run are graded on their own by the host.
"""

import json
import os
import shutil
import signal
import sys
import tempfile
import time

import pytest
from swedeck_schema_switch import ACTIVE, EARLY
from swedeck_schema_tree import snapshot
from swedeck_select import chosen

POLL_S = 0.002
STARTED = [time.monotonic()]  # the session's start: collection's time is answered too


# what starts another program: a run that does is answered ``spawned`` (the program may be another
# interpreter, with the tree's modules of its own)
SPAWNS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn")
SPAWNED = ".swedeck-spawned"  # in the run's TMPDIR, once it started one


def pytest_sessionstart(session):
    STARTED[0] = time.monotonic()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    path = os.environ.get("SWEDECK_SCHEMA")
    if not path or session.config.option.collectonly:
        return None
    with open(path, encoding="utf-8") as handle:
        job = json.load(handle)
    root, home = os.getcwd(), os.environ.get("HOME") or "/tmp"  # the work tree (pytest runs there), and HOME
    tmp = os.path.realpath(os.environ.get("TMPDIR") or tempfile.gettempdir())
    # ours (the IO folder, the server's snapshot of the tree) and the runs' own TMPDIRs are not looked at
    skip = {name for name in os.listdir(home) if name.startswith(".swedeck-")} | {os.path.relpath(tmp, os.path.realpath(home))}
    before = (snapshot(root), snapshot(home, skip))
    _subreaper()
    ours = _children()  # what collection started (a server a conftest runs) stays
    answers, dirty = {"collection_s": time.monotonic() - STARTED[0]}, False
    blind = not hasattr(sys, "addaudithook")  # no way to see a run start a program
    for mutant in job["mutants"]:
        number = str(mutant["number"])
        if dirty or blind or mutant["key"] in EARLY:
            answers[number] = {"skipped": "dirty" if dirty else "no audit hooks" if blind else "early"}
            continue
        tmpdir = os.path.join(tmp, "mutant-%s" % number)
        os.mkdir(tmpdir, 0o700)
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _run(session, job, mutant, tmpdir)
        # the probe's own run would have spent its deadline on the collection too
        answers[number] = _wait(pid, mutant["log"], job["output_bytes"], job["timeout"] - answers["collection_s"], started)
        if os.path.exists(os.path.join(tmpdir, SPAWNED)):
            answers[number] = {"skipped": "spawned"}
        shutil.rmtree(tmpdir, ignore_errors=True)
        dirty = _left_behind(ours) or (snapshot(root), snapshot(home, skip)) != before
    with open(job["answer"], "w", encoding="utf-8") as handle:
        handle.write(json.dumps(answers) + "\n")
    return True


def _subreaper():
    """Processes a run leaves behind (a daemon that left its group) become this process's children,
    not the init's, so the next run can tell (``_left_behind``)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _children():
    out = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % task) as handle:
                out |= {int(pid) for pid in handle.read().split()}
        except OSError:
            continue
    return out


def _left_behind(ours):
    """Whether the last run left processes behind; they are killed (their children come here next)."""
    found = False
    while True:
        left = _children() - ours
        if not left:
            return found
        found = True
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def _wait(pid, log, cap, limit, started):
    """The run's exit code, or its kill at the deadline or the output limit (its whole group)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        limited = os.path.getsize(log) > cap
        if done:
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            return {"exit": None if limited else code, "timed_out": False, "limited": limited, "seconds": time.monotonic() - started}
        timed_out = time.monotonic() - started > limit
        if limited or timed_out:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            os.waitpid(pid, 0)
            return {"exit": None, "timed_out": timed_out and not limited, "limited": limited, "seconds": time.monotonic() - started}
        time.sleep(POLL_S)


def _run(session, job, mutant, tmpdir):
    """In the fork: one probe's run, as its own pytest session would end. Never returns."""
    try:
        os.setpgid(0, 0)
        _redirect(job["log"], mutant["log"])
        os.environ["TMPDIR"] = tmpdir
        tempfile.tempdir = None
        ACTIVE[0] = mutant["number"]
        os.environ["SWEDECK_MUTANT"] = str(mutant["number"])
        marker = os.path.join(tmpdir, SPAWNED)

        def spawns(event, args):
            if event.startswith(SPAWNS) and not os.path.exists(marker):
                open(marker, "w").close()

        sys.addaudithook(spawns)
        config = session.config
        config.option.maxfail = mutant["maxfail"] or 0
        _report_to(config, mutant["junit"])
        if mutant["tests"] is not None:
            keep, dropped = chosen(session.items, mutant["tests"])
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            session.items[:] = keep
        code = _loop(session)
        session.exitstatus = code
        config.hook.pytest_sessionfinish(session=session, exitstatus=code)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    except BaseException:  # noqa: BLE001 - the fork must end here, whatever happened
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)


def _loop(session):
    """pytest's own test loop and the exit code its session would give."""
    from _pytest.main import pytest_runtestloop

    try:
        pytest_runtestloop(session)
    except session.Failed:
        return 1
    except (session.Interrupted, KeyboardInterrupt):
        return 2
    if session.testsfailed:
        return 1
    return 5 if session.testscollected == 0 else 0


def _redirect(command_log, own_log):
    """Every descriptor open on the command's log now writes this run's log instead."""
    target = os.path.realpath(command_log)
    fd = os.open(own_log, os.O_WRONLY | os.O_APPEND)
    for name in os.listdir("/proc/self/fd"):
        try:
            if int(name) != fd and os.readlink("/proc/self/fd/" + name) == target:
                os.dup2(fd, int(name))
        except OSError:
            continue


def _report_to(config, path):
    """The JUnit report of this run goes to ``path`` and times this run, not the collection."""
    from _pytest import junitxml

    stash = getattr(config, "stash", None) or config._store
    xml = stash.get(junitxml.xml_key, None)
    if xml is None:
        raise RuntimeError("no JUnit report configured")
    xml.logfile = os.path.normpath(os.path.abspath(path))
    if hasattr(xml, "suite_start"):
        xml.suite_start = type(xml.suite_start)()
    if hasattr(xml, "suite_start_time"):
        xml.suite_start_time = time.time()
