"""The probe server: runs inside one task's sandbox and grades many probes there (probes/session.py).

Standalone (the sandbox's Python, standard library only until pytest is imported). Started with the
session folder in the IO folder as its argument, on the pristine tree: it first takes the harness's
own listing of the tree (``harness.grading.tree.LISTING``) for the host, imports pytest while the host
plans the hidden tests from it, then runs the install the host wrote (``install.sh``, once
``install.go`` is there). Then it snapshots the prepared work tree (the buggy tree with the hidden
tests installed) into a copy under /tmp, and serves jobs ``job-N.json`` in order, each announced by
``job-N.go`` (written after the job, so a job is never read half-written). A job writes the probe's
files into the tree and runs the test commands one after another, each in a child process:

* fork mode: a fork of this process, which has imported pytest and its default plugins but nothing of
  the tree, calls ``pytest.main`` with the command's arguments, as ``python -m pytest`` would (the work
  directory first on sys.path); the interpreter's start and pytest's import are paid once per task.
  The server has also run one pytest session of its own on a test file of its own outside the tree
  (``warm_pytest``: what pytest imports, compiles and caches lazily is then done once), and built each
  command's pytest configuration object ahead (``ahead``: the plugin manager with pytest's plugins
  registered, read from nothing but the command's arguments), which every fork takes as its own copy;
* plain mode (a command that is not plain pytest, or a server that has started a thread, after which
  a fork is unsafe): the child executes the command with bash.

Each child gets its own process group (killed at the deadline, at the output limit, and once it has
exited) and a fresh TMPDIR. After the job every process the server did not start is killed (a daemon
that left the group too) and the answer is written; then, while the host reads it, /tmp loses whatever
the job added (HOME is /tmp), and the tree is put back to the snapshot: every entry whose kind, mode,
size or mtime differs from the snapshot's, or that the snapshot lacks, is removed, and what the
snapshot has is copied back. A job never writes bytecode (PYTHONDONTWRITEBYTECODE,
sys.dont_write_bytecode), so no stale .pyc of one probe can serve the next.
The result ``result-N.json`` (a file the host reserved) is written in one call, ending in a newline.

A switch job hands the server another task's tree (one of the same environment, probes/pool.py
parks idle sessions for that): /tmp and the work tree are emptied, the new tree is unpacked from the
tar the host wrote, and the server lists, installs, compiles and snapshots it as at its start; pytest
stays imported and warm, so the interpreter's start, pytest's import and its warm-up are paid once per
session, not once per task.
"""

import sys

AT_START = set(sys.modules)  # start-up imports, which a plain command makes too; it may take the rest from the tree
import base64
import gc
import json
import os
import select
import shutil
import signal
import subprocess
import threading
import time

from session_warmup import ahead, warm_pytest  # shipped beside this file
from swedeck_preload import command_path, preload, shadowed  # shipped beside this file too: the grades' own
from swedeck_schema_tree import snapshot  # on the server's PYTHONPATH, with the plugins

POLL_S = 0.001
SERVER_PATH = list(sys.path)
BASE = "/tmp/.swedeck-probe-base"  # the prepared tree's snapshot, which every job's tree is put back to
COLLECT_EVERY = 8  # switches between collections of what earlier tasks' configurations left (take_tree)


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


def write_files(root, files, listing):
    """The probe's files: path -> [mode, base64 content], or None to delete it. A written file never
    keeps the second of the snapshot's mtime: bytecode compiled by the warm-up is checked by whole
    seconds and size, so the snapshot's compiled copy must never pass for a probe's file."""
    for rel, file in files.items():
        target = os.path.join(root, rel)
        remove(target)
        if file is None:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(base64.b64decode(file[1]))
        os.chmod(target, file[0])
        old = listing.get(rel)
        if old is not None and os.stat(target).st_mtime_ns // 10**9 == old[3] // 10**9:
            os.utime(target, ns=(old[3] + 2 * 10**9, old[3] + 2 * 10**9))


def child(command, root, env, log, tmpdir, said, bytecode=False, config=None):
    """In the forked child: never returns. ``config``: the configuration object built ahead for
    exactly this command's arguments (``ahead``), which pytest.main's first ``get_config`` returns.
    ``said``: where pytest's exit code is written once its output is flushed (``wait_command``)."""
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
        if command.get("pythonpath") is not None:  # the command's own PYTHONPATH in place of the server's
            os.environ["PYTHONPATH"] = command["pythonpath"]
            sys.path[:] = command_path(root)
        import pytest

        if config is not None:
            import _pytest.config

            build, made = _pytest.config.get_config, [config]

            def get_config(args=None, plugins=None):
                if made and not plugins and list(args or ()) == command["argv"]:
                    return made.pop()
                return build(args, plugins)

            _pytest.config.get_config = get_config
        code = int(pytest.main(command["argv"]))
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(said, b"%d\n" % code)
        os._exit(code)
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


def start_command(command, root, env, log, tmpdir, fork, bytecode=False, config=None):
    """(the child's pid, the pipe its pytest says its exit code on)."""
    # closed on exec: a plain command, and whatever the tests execute, never holds it
    said, say = os.pipe2(os.O_CLOEXEC)
    # as Python's gc documentation advises for a server that forks without exec: the server's own
    # objects are moved out of the collector's sight, so a child's collections (pytest runs several)
    # neither walk them nor copy every page they touch
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        gc.enable()
        os.close(said)
        if not fork:
            command = {"argv": None, "shell": command["shell"]}
        child(command, root, env, log, tmpdir, say, bytecode, config)
    os.close(say)
    return pid, said


def wait_command(pid, said, log, timeout, cap, started):
    """(exit code or None, timed_out, output_limited, seconds, the pid still to reap or None) once the
    child ``pid`` has said its exit code or ended, killed at the deadline or at the output limit. Woken
    by its word or its end (a pidfd), not by polling, where the kernel has pidfds.
    A forked pytest says its code once its reports and output are written, just before it exits: its
    group is killed then, and the answer need not wait for the kernel to take the exited process's
    memory apart (milliseconds a run); the caller reaps it later. Whatever the tests started could
    write the word too, as it could kill the child: our probes' tests are the task's, not a candidate's,
    and a run cut short that way only loses the statuses it had not reported."""
    try:
        wakeup = os.pidfd_open(pid)
    except (AttributeError, OSError):
        wakeup = None
    timed_out = limited = False
    code = None
    watch = [fd for fd in (wakeup, said) if fd is not None]
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if os.path.getsize(log) > cap:
                limited = True
            elif time.monotonic() - started > timeout:
                timed_out = True
            if limited or timed_out:
                kill_group(pid)
                os.waitpid(pid, 0)
                break
            ready = select.select(watch, [], [], 0.05 if wakeup is not None else 0.005)[0]  # the output limit is still checked
            if said in ready:
                word = os.read(said, 64)
                if word.strip().isdigit():
                    code = int(word)
                    break
                watch.remove(said)  # closed on exec, or the child ended without a word
    finally:
        os.close(said)
        if wakeup is not None:
            os.close(wakeup)
    kill_group(pid)  # whatever the tests started
    if os.path.getsize(log) > cap:
        limited = True
    unreaped = pid if code is not None and not done else None
    return (None if (limited or timed_out) else code), timed_out, limited, time.monotonic() - started, unreaped


def run_command(command, root, env, log, timeout, cap, tmpdir, fork, config=None):
    """(exit code or None, timed_out, output_limited, seconds, the pid still to reap or None)."""
    started = time.monotonic()
    pid, said = start_command(command, root, env, log, tmpdir, fork, config=config)
    return wait_command(pid, said, log, timeout, cap, started)


def warm_up(root, warm):
    """Collect each pytest command once, bytecode on, before the snapshot: the tests' rewritten modules
    and the tree's modules are then compiled once per task, not once per probe. Safe because a probe's
    file never has the snapshot's mtime (``write_files``), so the compiled copy of its buggy version
    (validated by source mtime and size) is never used for it, and the snapshot restores the buggy
    file with its mtime. The collections run while this process warms pytest up (``warm_pytest``).
    Returns the children to wait for."""
    started = []
    for i, each in enumerate(warm["commands"]):
        tmpdir = os.path.join("/tmp", ".swedeck-probe-warm-%d" % i)
        remove(tmpdir)
        os.mkdir(tmpdir, 0o700)
        log = tmpdir + ".log"
        open(log, "w").close()
        command = {"argv": [*each["argv"], "--collect-only", "-q"], "shell": "", "pythonpath": each["pythonpath"]}
        pid, said = start_command(command, root, warm["env"], log, tmpdir, not shadowed(root, each["pythonpath"] or "", SERVER_PATH, AT_START), bytecode=True)
        started.append((pid, said, log, tmpdir, time.monotonic()))
    return started


def wait_for(path):
    """Until ``path`` exists: polled every millisecond at first, less and less often the longer nothing
    comes (a parked session waits for its next task for minutes, on a machine others share)."""
    since = time.monotonic()
    while not os.path.exists(path):
        time.sleep(min(0.005, max(POLL_S, (time.monotonic() - since) / 20)))


def list_tree(warm):
    """The harness's own listing of the tree, before anything else runs in it: the host plans the
    hidden tests from it meanwhile."""
    listed = subprocess.run(["bash", "-c", warm["listing"]], stdin=subprocess.DEVNULL).returncode
    with open(warm["listed"], "w") as f:
        f.write("%d\n" % listed)


def get_ready(root, warm, forkable, warmed):
    """Install the hidden tests once the host says so, compile the tree's bytecode, snapshot the
    prepared tree and say ready. Returns (configs, listing, kept), or None when the install failed
    (said in the ready file)."""
    wait_for(warm["go"])
    install = subprocess.run(["bash", warm["install"]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if install.returncode != 0:
        with open(warm["ready"], "w") as f:
            f.write(json.dumps({"installed": install.returncode, "output": install.stdout[-400:].decode(errors="replace")}) + "\n")
        return None
    configs = {}
    if forkable and warm["commands"]:
        collecting = warm_up(root, warm)
        if not warmed:
            warm_pytest()
        configs = ahead([each["argv"] for each in warm["commands"]])
        for pid, said, log, tmpdir, started in collecting:
            unreaped = wait_command(pid, said, log, warm["timeout"], 2**30, started)[4]
            if unreaped is not None:
                os.waitpid(unreaped, 0)
            remove(tmpdir)
            remove(log)
    remove(BASE)
    shutil.copytree(root, BASE, symlinks=True)
    listing = snapshot(root)
    kept = set(os.listdir("/tmp")) | {".swedeck-probe-tmp"}
    with open(warm["ready"], "w") as f:
        f.write(json.dumps({"forkable": forkable, "installed": 0}) + "\n")
    return configs, listing, kept


def take_tree(root, warm, kept, switches):
    """Another task's tree in place of this one (a switch job: the same environment, so the pytest
    this process imported and warmed serves it as well): /tmp and the work tree emptied of everything
    the last task had, the new tree unpacked. What earlier tasks' configurations held is collected
    every COLLECT_EVERY switches (a collection of everything pytest holds takes tens of milliseconds)."""
    if switches % COLLECT_EVERY == 0:
        gc.unfreeze()
        gc.collect()
    clear_tmp(kept - {os.path.basename(BASE)})
    for name in os.listdir(root):
        remove(os.path.join(root, name))
    unpack = ["tar", "-x", "--no-same-owner", "-f", warm["tree"], "-C", os.path.dirname(root)]
    return subprocess.run(unpack, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def main():
    folder = sys.argv[1]
    root = os.getcwd()
    with open(os.path.join(folder, "warm.json")) as f:
        warm = json.load(f)
    list_tree(warm)
    gc.disable()
    forkable = preload()
    state = get_ready(root, warm, forkable, False)
    if state is None:
        return 1
    configs, listing, kept = state
    n, restored, switches = 0, 0.0, 0
    while True:
        wait_for(os.path.join(folder, "job-%d.go" % n))
        with open(os.path.join(folder, "job-%d.json" % n)) as f:
            job = json.load(f)
        if job.get("stop"):
            return 0
        if job.get("switch"):
            warm = job["switch"]
            switches += 1
            unpacked = take_tree(root, warm, kept, switches)
            if unpacked.returncode != 0:
                with open(warm["listed"], "w") as f:
                    f.write("%d\n" % unpacked.returncode)
                return 1
            list_tree(warm)
            state = get_ready(root, warm, forkable, True)
            if state is None:
                return 1
            configs, listing, kept = state
            n, restored = n + 1, 0.0
            continue
        write_files(root, job["files"], listing)
        results, dying = [], []
        tmpdir = os.path.join("/tmp", ".swedeck-probe-tmp")
        for command in job["commands"]:
            remove(tmpdir)
            os.mkdir(tmpdir, 0o700)
            fork = forkable and command["argv"] is not None and threading.active_count() == 1 and not shadowed(root, command.get("pythonpath") or "", SERVER_PATH, AT_START)
            config = configs.get(tuple(command["argv"] or ())) if fork else None
            code, timed_out, limited, seconds, unreaped = run_command(
                command, root, command["env"], command["log"], job["timeout"], job["output_bytes"], tmpdir, fork, config
            )
            dying += [unreaped] if unreaped is not None else []
            results.append({"exit": code, "timed_out": timed_out, "limited": limited, "seconds": seconds, "forked": fork})
            if timed_out or limited:
                break
        remove(tmpdir)
        reap()  # before the answer: nothing the tests started may still write a report the host reads
        results[-1]["restore"] = restored  # the previous job's
        with open(os.path.join(folder, "result-%d.json" % n), "w") as f:
            f.write(json.dumps(results) + "\n")
        # after the answer, while the host reads it: the next job waits for this anyway
        put_back = time.monotonic()
        clear_tmp(kept)
        restore(root, BASE, listing)
        for pid in dying:  # killed before the answer; their memory went meanwhile
            os.waitpid(pid, 0)
        restored = time.monotonic() - put_back
        n += 1


if __name__ == "__main__":
    sys.exit(main())
