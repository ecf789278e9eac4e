"""The probe server: runs inside one task's sandbox and grades many probes there (probes/session.py).

Standalone (the sandbox's Python, standard library only until pytest is imported). Started with the
session folder in the IO folder as its argument. At start it snapshots the prepared work tree (the
buggy tree with the hidden tests installed) into a copy under /tmp and imports pytest, then serves
jobs ``job-N.json`` in order, each announced by ``job-N.go`` (written after the job, so a job is never
read half-written). A job writes the probe's files into the tree and runs the test commands one after
another, each in a child process:

* fork mode: a fork of this process, which has imported pytest and its default plugins but nothing of
  the tree, calls ``pytest.main`` with the command's arguments, as ``python -m pytest`` would (the work
  directory first on sys.path); the interpreter's start and pytest's import are paid once per task;
* plain mode (a command that is not plain pytest, or a server that has started a thread, after which
  a fork is unsafe): the child executes the command with bash.

Each child gets its own process group (killed at the deadline, at the output limit, and once it has
exited) and a fresh TMPDIR. After the job every process the server did not start is killed (a daemon
that left the group too), /tmp loses whatever the job added (HOME is /tmp), and the tree is put back to
the snapshot: every entry whose kind, mode, size or mtime differs from the snapshot's, or that the
snapshot lacks, is removed, and what the snapshot has is copied back. Bytecode is never written
(PYTHONDONTWRITEBYTECODE, sys.dont_write_bytecode), so no stale .pyc of one probe can serve the next.
The result ``result-N.json`` (a file the host reserved) is written in one call, ending in a newline.
"""

import base64
import gc
import json
import os
import shutil
import signal
import sys
import threading
import time

POLL_S = 0.002


def snapshot(root):
    """path -> (is_dir, mode, size, mtime_ns) of every entry under root (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            is_dir = os.path.isdir(path) and not os.path.islink(path)
            out[os.path.relpath(path, root)] = (is_dir, st.st_mode, 0 if is_dir else st.st_size, 0 if is_dir else st.st_mtime_ns)
    return out


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def restore(root, base, listing):
    """Put ``root`` back to the snapshot ``base`` (whose listing is ``listing``)."""
    now = snapshot(root)
    for rel in sorted(now, key=len):
        if not os.path.lexists(os.path.join(root, rel)):
            continue  # its folder went already
        if listing.get(rel) != now[rel]:  # a folder's entry holds its kind and mode only
            remove(os.path.join(root, rel))
    for rel in sorted(listing, key=len):
        target = os.path.join(root, rel)
        if os.path.lexists(target):
            continue
        source = os.path.join(base, rel)
        if listing[rel][0]:
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    if snapshot(root) != listing:
        raise RuntimeError("the work tree could not be put back to its snapshot")


def write_files(root, files):
    """The probe's files: path -> [mode, base64 content], or None to delete it."""
    for rel, file in files.items():
        target = os.path.join(root, rel)
        remove(target)
        if file is None:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(base64.b64decode(file[1]))
        os.chmod(target, file[0])


def child(command, root, env, log, tmpdir, bytecode=False):
    """In the forked child: never returns."""
    try:
        os.setpgid(0, 0)
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(root)
        os.environ.update(env)
        os.environ["TMPDIR"] = tmpdir
        if command["argv"] is None:
            os.execvp("bash", ["bash", "-c", command["shell"]])
        import tempfile

        tempfile.tempdir = None
        sys.dont_write_bytecode = not bytecode
        sys.argv = [sys.executable, *command["argv"]]
        sys.path[0] = root  # as `python -m pytest` has it
        import pytest

        code = pytest.main(command["argv"])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)


def ancestors():
    """This process and every process above it (the sandbox's command that started it)."""
    out, pid = set(), os.getpid()
    while pid > 0 and pid not in out:
        out.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def reap():
    """Kill whatever a job's tests left running, even outside their process group (a daemon that
    called setsid): everything this user may kill but the server and the processes above it."""
    keep = ancestors() | {1}
    try:  # the container's init and what keeps the container up (docker)
        with open("/proc/1/task/1/children") as f:
            keep |= {int(pid) for pid in f.read().split()}
    except (OSError, ValueError):
        pass
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in keep:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def clear_tmp(kept):
    """Remove what the job left in /tmp (HOME is /tmp): only the entries there at the start stay."""
    for name in os.listdir("/tmp"):
        if name not in kept:
            remove(os.path.join("/tmp", name))


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_command(command, root, env, log, timeout, cap, tmpdir, fork, bytecode=False):
    """(exit code or None, timed_out, output_limited, seconds)."""
    started = time.monotonic()
    # as Python's gc documentation advises for a server that forks without exec: the server's own
    # objects are moved out of the collector's sight, so a child's collections (pytest runs several)
    # neither walk them nor copy every page they touch
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        gc.enable()
        if not fork:
            command = {"argv": None, "shell": command["shell"]}
        child(command, root, env, log, tmpdir, bytecode)
    timed_out = limited = False
    status = None
    while status is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = raw
            break
        if os.path.getsize(log) > cap:
            limited = True
        elif time.monotonic() - started > timeout:
            timed_out = True
        if limited or timed_out:
            kill_group(pid)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    kill_group(pid)  # whatever the tests started
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    if os.path.getsize(log) > cap:
        limited = True
    return (None if (limited or timed_out) else code), timed_out, limited, time.monotonic() - started


def preload():
    """pytest and its default plugins; never anything of the tree."""
    try:
        import importlib

        import _pytest.config
        import pytest  # noqa: F401

        for name in _pytest.config.default_plugins:
            try:
                importlib.import_module("_pytest." + name)
            except Exception:  # noqa: BLE001 - a plugin pytest itself may fail to load is loaded later or not at all
                pass
        return True
    except Exception:  # noqa: BLE001 - no pytest here: every command runs plainly
        return False


def warm_up(root, warm, tmpdir):
    """Collect each pytest command once, bytecode on, before the snapshot: the tests' rewritten modules
    and the tree's modules are then compiled once per task, not once per probe. Safe because every
    probe's file gets a new mtime, so the compiled copy of its buggy version (validated by source
    mtime and size) is never used for it, and the snapshot restores the buggy file with its mtime."""
    for argv in warm["argv"]:
        remove(tmpdir)
        os.mkdir(tmpdir, 0o700)
        log = os.path.join(tmpdir, "..", ".swedeck-probe-warm.log")
        open(log, "w").close()
        run_command({"argv": [*argv, "--collect-only", "-q"], "shell": ""}, root, warm["env"], log, warm["timeout"], 2**30, tmpdir, True, bytecode=True)
    remove(tmpdir)


def main():
    folder = sys.argv[1]
    root = os.getcwd()
    gc.disable()
    forkable = preload()
    with open(os.path.join(folder, "warm.json")) as f:
        warm = json.load(f)
    if forkable and warm["argv"]:
        warm_up(root, warm, os.path.join("/tmp", ".swedeck-probe-tmp"))
    base = os.path.join("/tmp", ".swedeck-probe-base")
    remove(base)
    shutil.copytree(root, base, symlinks=True)
    listing = snapshot(root)
    kept = set(os.listdir("/tmp")) | {".swedeck-probe-tmp"}
    ready = {"forkable": forkable}
    with open(os.path.join(folder, "ready.json"), "w") as f:
        f.write(json.dumps(ready) + "\n")
    n = 0
    while True:
        go = os.path.join(folder, "job-%d.go" % n)
        while not os.path.exists(go):
            time.sleep(POLL_S)
        with open(os.path.join(folder, "job-%d.json" % n)) as f:
            job = json.load(f)
        if job.get("stop"):
            return 0
        write_files(root, job["files"])
        results = []
        tmpdir = os.path.join("/tmp", ".swedeck-probe-tmp")
        for command in job["commands"]:
            remove(tmpdir)
            os.mkdir(tmpdir, 0o700)
            fork = forkable and command["argv"] is not None and threading.active_count() == 1
            code, timed_out, limited, seconds = run_command(
                command, root, command["env"], command["log"], job["timeout"], job["output_bytes"], tmpdir, fork
            )
            results.append({"exit": code, "timed_out": timed_out, "limited": limited, "seconds": seconds, "forked": fork})
            if timed_out or limited:
                break
        remove(tmpdir)
        put_back = time.monotonic()
        reap()
        clear_tmp(kept)
        restore(root, base, listing)
        results[-1]["restore"] = time.monotonic() - put_back
        with open(os.path.join(folder, "result-%d.json" % n), "w") as f:
            f.write(json.dumps(results) + "\n")
        n += 1


if __name__ == "__main__":
    sys.exit(main())
