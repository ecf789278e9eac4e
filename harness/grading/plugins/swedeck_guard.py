"""swedeck_guard: the run-time guard of a grade's pytest session, an audit hook (PEP 578) no code can remove.

PYTEST_DONT_REWRITE. Self-contained (standard library and pytest only): shipped into every grade whose
runner is pytest and loaded first (``-p swedeck_guard`` ahead of every other plugin), so it is in
force before anything of the tree is imported, in a plain command and in the preloaded interpreter's
child alike (``swedeck_preload``: the child imports it as a plain command would). ``SWEDECK_GUARD``
names the job the host wrote once it had judged the change: ``root`` (the work directory),
``changed`` (the files the change added or modified, relative to it), ``protected`` (the hidden test
files), ``log`` (where the guard writes, opened before the tree loads), ``junit``/``outcomes`` (the
reports the seal covers) and ``startup`` (the file names pytest or Python reads code or options from
at start-up). ``SWEDECK_GUARD_KEY`` is the grade's secret, taken out of the
environment here before any of the tree runs.

The hook ends the run as tampered (a line in the log, then ``os._exit(EXIT)``, before the code that
did it gets control back) when code of the changed files does what no library under test needs:
walks frames (``sys._getframe`` and what calls it on its behalf, ``tb_frame``, ``gi_frame``,
``sys._current_frames``), walks the garbage collector, installs a trace or profile function or
another audit hook, opens the hidden tests, the tree's git folder, the IO folder or another
process's descriptors and memory, compiles code itself or from a file that is not Python source,
builds code objects, unmarshals, calls native code (``ctypes``), starts a program or forks,
replaces a function's code, or writes a file Python or pytest would load code from (an import
suffix, ``.pth``, ``__pycache__``, conftest.py and pytest's configuration names: ``startup``). What
else it writes is the change's own code from then on: the change's listing is taken before anything
runs, and a module written at run time and imported would otherwise be "the rest of the tree". Who
did it is read from the calling frames: the innermost frame outside
the standard library, pytest, pluggy and these plugins decides, so a standard function called on the
changed code's behalf (``inspect.stack()``, ``runpy``) is the changed code's act, while the standard
library's own use of frames for a caller (``collections.namedtuple``, ``logging``, ``typing``) and a
module the standard library imports for itself are not. Code in the hidden tests, the rest of the
tree and installed libraries is not judged.

Replacing a function or class attribute raises no audit event, so the guard compares, after each
test and at the session's end, every function and class (and each class's attributes) of the
modules loaded before the tree against what they were, checks that no plugin or hook
implementation comes from the changed files and no trace function is theirs; at the end also that
no process the run started is still alive. Then it seals the session: a line with the reports'
digests, keyed with the grade's secret, which code under test cannot compute. The host
(``harness.grading.guard``) zeroes a grade with any finding, without a seal, or whose reports are not
the sealed ones (written after the session, or by another process).
"""

import os
import sys

import pytest

EXIT = 88  # the guard's own exit; the host reads it too


def _job():
    import json

    key = os.environ.pop("SWEDECK_GUARD_KEY", "")
    import posix

    posix.environ.pop(b"SWEDECK_GUARD_KEY", None)  # the interpreter's own copy of its starting environment
    path = os.environ.get("SWEDECK_GUARD")
    if not path:
        return None, key
    with open(path, encoding="utf-8") as handle:
        return json.load(handle), key


def _install(job, key, ours):
    """``ours``: the code of the plugin's hooks, the only callers whose guard events count."""
    import _hashlib
    import _thread
    import posix
    import types
    from importlib.machinery import all_suffixes

    import _pytest
    import pluggy
    import pytest
    import swedeck_guard_state

    fd = posix.open(job["log"], posix.O_WRONLY | posix.O_APPEND)
    if not hasattr(sys, "addaudithook"):  # Python < 3.8: nothing to install; the host records it
        posix.write(fd, b"UNGUARDED %s\n" % _hashlib.hmac_digest(key.encode(), b"unguarded", "sha256").hex().encode())
        return
    # everything the hook calls is bound here, standard names included: a module or builtin attribute
    # the tree replaces later never reaches it, and none of it runs Python code of a module
    _getframe, _ident, _write, _exit, _readlink, _getcwd = (
        sys._getframe, _thread.get_ident, posix.write, posix._exit, posix.readlink, posix.getcwd
    )  # fmt: skip
    _mac, _sha = _hashlib.hmac_digest, _hashlib.openssl_sha256
    _type, _str, _bytes, _int, _len, _any, _orepr, _id = type, str, bytes, int, len, any, object.__repr__, id
    _issubclass, _frozenset, _OSError, _Module, _Exception = issubclass, frozenset, OSError, types.ModuleType, Exception
    _type_name = type.__dict__["__name__"].__get__
    _module_dict = _Module.__dict__["__dict__"].__get__
    _modules = sys.modules

    def norm(path):
        out = []
        for part in path.split("/"):
            if part == "..":
                out = out[:-1]
            elif part not in ("", "."):
                out.append(part)
        return "/" + "/".join(out)

    def folder(path):
        return path.rpartition("/")[0] + "/"

    root = norm(job["root"])
    changed = _frozenset(norm(root + "/" + p) for p in job["changed"])
    # a modified file's lines the change added; its other lines are the pristine tree's own code
    added = {norm(root + "/" + p): _frozenset(numbers) for p, numbers in job.get("lines", {}).items()}
    lines_of = {}  # co_filename -> the added lines, or None where every line is the change's
    protected = _frozenset(norm(root + "/" + p) for p in job["protected"])
    sealed_paths = (job["junit"], job["outcomes"])
    io_dir, git_dir, stdlib = folder(norm(job["log"])), root + "/.git/", folder(os.__file__)
    here = folder(norm(_getcwd() + "/" + __file__) if not __file__.startswith("/") else norm(__file__))
    framework_dirs = (here, folder(_pytest.__file__), folder(pytest.__file__), folder(pluggy.__file__))
    sites = ("/site-packages/", "/dist-packages/")
    kinds = {}  # co_filename -> "infra" | "candidate" | "other" | "pseudo"
    # what the changed code wrote while the tests ran: code loaded from there (a module it wrote and
    # imported, an archive it put on sys.path) is the change's as much as its listed files are
    written = set()
    startup_names = _frozenset(job.get("startup", ()))  # what pytest or Python reads before any test: conftest.py, pytest.ini...
    code_suffixes = tuple(all_suffixes()) + (".pth",)
    write_flags = posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND
    missing = object()
    busy = set()  # threads inside the hook: the hook's own events are not judged
    state = {"manager": None, "sealed": False, "plugins": 0}

    # ------------------------------------------------------------------ attribution

    def kind(filename):
        found = kinds.get(filename)
        if found is None:
            if filename.startswith("<frozen "):
                found = "infra"
            elif filename.startswith("<"):
                found = "pseudo"  # code compiled from a string: its compiler's caller answers for it
            else:
                path = norm(filename if filename.startswith("/") else root + "/" + filename)
                if path in changed or written and ancestors_written(path):
                    found = "candidate"
                elif path.startswith(framework_dirs) or path.startswith(stdlib) and not _any(s in path for s in sites):
                    found = "infra"
                else:
                    found = "other"
            kinds[filename] = found
        return found

    def actor(frame):
        """(the changed files' frame that answers for the event, the outermost standard frame it
        called, the first frame that is not pseudo), or (None, ...) where no changed code does."""
        boundary, first = None, None
        while frame is not None:
            code = frame.f_code
            found = kind(code.co_filename)
            if found != "pseudo" and first is None:
                first = frame
            if found == "candidate":
                lines = lines_of.get(code.co_filename, missing)
                if lines is missing:
                    lines = lines_of[code.co_filename] = added.get(norm(code.co_filename if code.co_filename.startswith("/") else root + "/" + code.co_filename))
                if lines is None or frame.f_lineno in lines:
                    return frame, boundary, first
                found = "other"  # a pristine line of a modified file
            if found == "other" or (found == "infra" and code.co_name == "<module>"):
                return None, None, first  # judged code, or a standard module importing itself
            if found == "infra":
                boundary = frame
            frame = frame.f_back
        return None, None, first

    def ancestors_written(path):
        while path:
            if path in written:
                return True
            path = path.rpartition("/")[0]
        return False

    def made(event, args):
        """The paths ``event`` creates or writes (resolved), [] for a read or no path event."""
        if event == "open":
            if _len(args) < 3 or _type(args[2]) is not _int or not args[2] & write_flags:
                return []
            return [resolve(args[0])]
        if event in ("os.rename", "os.link", "os.symlink") and _len(args) > 1:
            return [resolve(args[1])]
        return []

    def loaded_as_code(path):
        """Whether Python or pytest would run what is at ``path``, in this session or a later command's."""
        name = path.rpartition("/")[2]
        return name in startup_names or name.endswith(code_suffixes) or "/__pycache__/" in path

    def importing(frame, until):
        """Whether the import system's own import is on the stack between ``frame`` and ``until``: the
        bytecode it caches for a module (what it compiled from the source, never bytes of the caller's)."""
        while frame is not None and frame is not until:
            if frame.f_code.co_name == "_find_and_load" and frame.f_code.co_filename == "<frozen importlib._bootstrap>":
                return True
            frame = frame.f_back
        return False

    def module_kind(name):
        mod = _modules.get(name) if _type(name) is _str else None
        if mod is None or not _issubclass(_type(mod), _Module):
            return "other"
        filename = _module_dict(mod).get("__file__")
        return kind(filename) if _type(filename) is _str else "infra"  # a built-in module

    def relative(filename):
        return filename[_len(root) + 1 :] if filename.startswith(root + "/") else filename

    def where(frame):
        return "%s:%d" % (relative(frame.f_code.co_filename), frame.f_lineno)

    # ------------------------------------------------------------------ the record

    def tampered(what, frame=None):
        line = what if frame is None else "%s: %s" % (where(frame), what)
        try:
            _write(fd, b"TAMPER %s\n" % line.encode(errors="replace").hex().encode())
        except _OSError:  # the descriptor was closed or replaced: the exit says it all the same
            pass
        _exit(EXIT)

    # ------------------------------------------------------------------ the rules

    # the standard library's own users of a caller's frame, which hand no frame back
    frame_users = {"collections": (), "typing": (), "enum": (), "dataclasses": (), "warnings": (), "abc": (),
                   "logging": ("currentframe", "<lambda>")}  # fmt: skip
    message_modules = ("/logging/__init__.py", "/warnings.py")  # a warning's or a log record's source line
    spawns = _frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"})
    frame_events = _frozenset({"sys._getframe", "sys._current_frames", "sys._current_exceptions"})
    frame_attrs = _frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
    anyway = _frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
                         "sys.addaudithook"}) | spawns  # fmt: skip
    direct_only = _frozenset({"code.__new__", "marshal.loads", "marshal.load"})
    native = _frozenset({"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.cdata/buffer",
                         "ctypes.call_function", "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at",
                         "ctypes.PyObj_FromPtr", "ctypes.create_string_buffer", "ctypes.create_unicode_buffer"})  # fmt: skip
    path_events = {"open": (0,), "os.listdir": (0,), "os.scandir": (0,), "glob.glob": (0,), "os.remove": (0,),
                   "os.rename": (0, 1), "os.truncate": (0,), "os.chmod": (0,), "os.link": (0, 1), "os.symlink": (0, 1),
                   "os.utime": (0,), "shutil.copyfile": (0, 1), "shutil.copytree": (0, 1), "shutil.move": (0, 1)}  # fmt: skip
    proc_parts = _frozenset({"environ", "mem", "fd", "fdinfo", "map_files", "maps", "root", "cwd", "exe"})
    watched = frame_events | anyway | direct_only | native | _frozenset(path_events) | {
        "object.__getattr__", "object.__setattr__", "object.__delattr__", "compile", "swedeck.guard"}  # fmt: skip

    def resolve(path):
        """``path`` absolute with links resolved, from system calls alone; None for what is no path."""
        if _type(path) is _int:
            try:
                return _readlink("/proc/self/fd/%d" % path)
            except _OSError:
                return None
        if _type(path) is _bytes:
            path = path.decode(errors="replace")
        if _type(path) is not _str:
            return None
        parts, done, hops = (path if path.startswith("/") else _getcwd() + "/" + path).split("/"), [], 0
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                done = done[:-1]
                continue
            done.append(part)
            try:
                target = _readlink("/" + "/".join(done))
            except _OSError:
                continue
            hops += 1
            if hops > 40:
                break
            done.pop()
            if target.startswith("/"):
                done = []
            parts = target.split("/") + parts
        return "/" + "/".join(done + parts)

    def protected_path(path):
        """What of the grader's ``path`` is, or None."""
        if path is None:
            return None
        if (path + "/").startswith(io_dir):
            return "the grader's IO folder"
        if (path + "/").startswith(git_dir):
            return "the tree's git objects"
        if path in protected:
            return "a hidden test file"
        parts = path.split("/")
        # any depth: /proc/<pid>/task/<tid>/environ (what /proc/thread-self names) is the process's too
        if _len(parts) > 3 and parts[1] == "proc" and not proc_parts.isdisjoint(parts[3:]):
            return "a process's descriptors, memory or environment"
        return None

    def judge(event, args, frame):
        if event == "object.__getattr__":
            if args[1] not in frame_attrs:
                return
        elif event in ("object.__setattr__", "object.__delattr__"):
            if not kept_object(args[0]):  # not a function or class of a module loaded before the tree
                return
        elif event in path_events:  # the frames are walked only for a path of the grader's, or one written
            hits = [(resolve(args[i]), i) for i in path_events[event] if i < _len(args)]
            hits = [(path, what) for path, _ in hits if (what := protected_path(path)) is not None]
            writes = [path for path in made(event, args) if path is not None]
            if not hits and not writes:
                return
        elif event in direct_only or event == "compile" and _type(args[1]) is _str and args[1].endswith((".py", ".pyw")):
            first = frame  # only the changed code's own call counts: the first frame decides
            while first is not None and kind(first.f_code.co_filename) == "pseudo":
                first = first.f_back
            if first is None or kind(first.f_code.co_filename) != "candidate":
                return
        changed_frame, boundary, first = actor(frame)
        if event == "swedeck.guard":
            return guard_event(args, frame, changed_frame)
        if changed_frame is None:
            return
        name = boundary.f_globals.get("__name__", "") if boundary is not None else ""
        direct = first is changed_frame
        if event in anyway or event in native or (direct and event in direct_only):
            tampered(event, changed_frame)
        elif event in frame_events:
            allowed = frame_users.get(name.partition(".")[0])
            if event != "sys._getframe" or allowed is None or boundary.f_code.co_name in allowed:
                tampered("walks the stack's frames (%s%s)" % (event, "" if direct else " through " + name), changed_frame)
        elif event == "object.__getattr__":
            if direct or name.partition(".")[0] == "inspect" or boundary.f_code.co_name in ("walk_tb", "walk_stack"):
                tampered("reads a frame (%s)" % args[1], changed_frame)
        elif event in ("object.__setattr__", "object.__delattr__"):
            tampered("sets %s of %s" % (args[1], _orepr(args[0])), changed_frame)
        elif event == "compile":
            filename = args[1] if _type(args[1]) is _str else ""
            if direct or filename and not filename.startswith("<") and not filename.endswith((".py", ".pyw")):
                tampered("compiles code%s" % ("" if direct else " from " + filename), changed_frame)
        else:
            shown = boundary is not None and boundary.f_code.co_filename.endswith(message_modules)
            for path, what in hits:
                if not (shown and what == "a hidden test file"):
                    tampered("%s of %s (%s)" % (event, what, path), changed_frame)
            for path in writes:
                if loaded_as_code(path) and not importing(frame, changed_frame):
                    tampered("writes %s, code Python or pytest would load (%s)" % (path, event), changed_frame)
                written.add(path)
                added.pop(path, None)  # every line of a file it rewrote is its own
                kinds.clear()  # a file it wrote may have been seen before: judged from now on
                lines_of.clear()

    check, slurp, kept_object = swedeck_guard_state.checks(kind, module_kind, relative, tampered, state)

    def digest(path):
        try:
            return _sha(slurp(path)).hexdigest()
        except _OSError:
            return "-"

    def guard_event(args, frame, changed_frame):
        if changed_frame is not None or frame.f_code not in ours:
            tampered("the guard's events come through code it did not write (a wrapped runner, a forged call)", changed_frame or frame)
        what = args[0] if args else None
        if what == "configure" and state["manager"] is None:
            # pytest's own plugins change its classes as they configure (legacypath): what changed
            # since the guard loaded must be theirs, then nothing may change any more
            check(None)
            state["manager"] = args[1].pluginmanager
            state["plugins"] = -1
        elif what == "report":
            check(False)
        elif what == "seal":
            if state["sealed"]:
                tampered("the session was sealed twice")
            check(True)
            state["sealed"] = True
            digests = " ".join(digest(p) for p in sealed_paths)
            mac = _mac(key.encode(), ("seal " + digests).encode(), "sha256").hex()
            _write(fd, ("SEAL %s %s\n" % (mac, digests)).encode())

    def hook(event, args):
        if event not in watched or event == "object.__getattr__" and args[1] not in frame_attrs:
            return  # the common events, without a frame taken
        thread = _ident()
        if thread in busy:
            return
        busy.add(thread)
        try:
            judge(event, args, _getframe(1))
        except _Exception as err:  # fail closed: what the guard cannot judge, it does not let pass
            tampered("the guard could not judge %s: %s" % (event, _type_name(_type(err))))
        finally:
            busy.discard(thread)

    sys.addaudithook(hook)
    _write(fd, b"LOADED\n")  # the host then wants the seal: a run that ends before it ended early


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    sys.audit("swedeck.guard", "configure", config)


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        sys.audit("swedeck.guard", "report")


@pytest.hookimpl(trylast=True)  # after every other plugin's, the JUnit report's included
def pytest_unconfigure(config):
    sys.audit("swedeck.guard", "seal")


_JOB, _KEY = _job()
if _JOB is not None:
    _install(_JOB, _KEY, {f.__code__ for f in (pytest_configure, pytest_runtest_logreport, pytest_unconfigure)})
del _JOB, _KEY
