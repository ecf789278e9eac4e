"""swedeck_guard_state: what the run-time guard (swedeck_guard) checks that no audit event covers.

PYTEST_DONT_REWRITE. Imported by swedeck_guard before anything of the tree, and used only through
``checks``, whose closures hold every name they call (bound when the guard installs), as the hook's
own do: a module attribute the tree replaces later never reaches them.

A function or class attribute replaced (``_pytest.runner.CallInfo = ...``, ``Function.runtest = ...``)
raises no audit event. So the functions and classes of every module loaded before the tree, and each
class's attributes, are kept as they were: the test framework's own (pytest, pluggy, unittest, these
plugins) may not change at all once pytest's plugins configured, checked after each test; the rest
may not be replaced with the changed files' code, checked at the end, when the tests' own
replacements are put back. Also checked: no plugin or hook implementation and no trace or profile
function comes from the changed files, ``sys.audit`` is the interpreter's, and at the end no process
started during the run is still alive (this process's descendants, its session's, and orphans the
namespace's init adopted since it started).
"""

import functools
import posix
import sys
import threading
import types

import pluggy


def checks(kind, module_kind, relative, tampered, state):
    """``(check, slurp)``: ``check(thorough)`` ends the run through ``tampered`` on a finding;
    ``slurp(path)`` reads a file with system calls alone. ``state`` holds the plugin manager once
    pytest configured (``manager``, ``plugins``: how many it held last), and gets ``known``: the ids
    of every function and class kept, alive as long as the snapshot."""
    _type, _str, _int, _len, _list, _orepr, _id, _issubclass, _frozenset, _OSError = (
        type, str, int, len, list, object.__repr__, id, issubclass, frozenset, OSError
    )  # fmt: skip
    _Function, _Module, _Builtin, _Method, _partial = (
        types.FunctionType, types.ModuleType, types.BuiltinFunctionType, types.MethodType, functools.partial
    )  # fmt: skip
    _module_dict = _Module.__dict__["__dict__"].__get__
    _meta = type
    _type_dict = type.__dict__["__dict__"].__get__
    _type_module = type.__dict__["__module__"].__get__
    _func_code = _Function.__dict__["__code__"].__get__
    _get_plugins, _get_hookimpls, _HookCaller = pluggy.PluginManager.get_plugins, pluggy.HookCaller.get_hookimpls, pluggy.HookCaller
    _gettrace, _getprofile, _modules, _sysdict, _audit = sys.gettrace, sys.getprofile, sys.modules, _module_dict(sys), sys.audit
    _threading = _module_dict(threading)
    _open, _read, _close, _listdir, _RDONLY = posix.open, posix.read, posix.close, posix.listdir, posix.O_RDONLY
    at_start, me = _frozenset(_listdir("/proc")), _str(posix.getpid())

    missing = object()

    def members(mod):
        out = {}
        for name, value in _list(_module_dict(mod).items()):
            if _type(value) in (_Function, _Builtin) or _issubclass(_type(value), _meta):
                out[name] = value
                if _issubclass(_type(value), _meta):
                    for attr, member in _list(_type_dict(value).items()):
                        out[(name, attr)] = member
        return out

    def snapshot(prefixes):
        return {name: (mod, members(mod)) for name, mod in _list(_modules.items())
                if _issubclass(_type(mod), _Module) and (prefixes is None or name.startswith(prefixes))}  # fmt: skip

    def from_changed(value):
        if _type(value) is _partial:
            value = value.func
        if _type(value) is _Method:
            value = value.__func__
        if _type(value) is _Function:
            return kind(_func_code(value).co_filename) == "candidate"
        if _issubclass(_type(value), _Module):
            filename = _module_dict(value).get("__file__")
            return _type(filename) is _str and kind(filename) == "candidate"
        if _issubclass(_type(value), _meta):
            return module_kind(_type_module(value)) == "candidate"
        return module_kind(_type_module(_type(value))) == "candidate"

    def replaced(taken, strict):
        """The first function, class or class attribute of ``taken`` that is no longer what it was:
        any change in the test framework's own modules (``strict``), one of the changed files' in
        the rest (the tests' and the framework's own replacements are put back or are theirs)."""
        for name, (mod, was) in _list(taken.items()):
            names = _module_dict(mod)
            for attr, value in _list(was.items()):
                if _type(attr) is _str:
                    new, label = names.get(attr, missing), attr
                else:
                    new, label = _type_dict(was[attr[0]]).get(attr[1], missing), "%s.%s" % attr
                if new is not value and (strict or new is missing or from_changed(new)):
                    code = _func_code(new) if _type(new) is _Function else None
                    origin = " by %s:%d" % (relative(code.co_filename), code.co_firstlineno) if code is not None else ""
                    return "%s.%s was %s%s" % (name, label, "deleted" if new is missing else "replaced", origin)
        return None

    def foreign_hooks(thorough):
        manager = state["manager"]
        if manager is None:
            return None
        plugins = _get_plugins(manager)
        if not thorough and _len(plugins) == state["plugins"]:
            return None
        state["plugins"] = _len(plugins)
        for plugin in plugins:
            if from_changed(plugin):
                return "a plugin of the changed files is registered: %s" % _orepr(plugin)
        for caller in _list(manager.hook.__dict__.values()):
            if _type(caller) is _HookCaller:
                for impl in _get_hookimpls(caller):
                    if from_changed(impl.function):
                        return "a hook implementation of the changed files: %s" % _orepr(impl.function)
        return None

    def tracers():
        for value in (_gettrace(), _getprofile(), _threading.get("_trace_hook"), _threading.get("_profile_hook")):
            if value is not None and from_changed(value):
                return "a trace or profile function of the changed files is installed"
        if _sysdict.get("audit") is not _audit:
            return "sys.audit was replaced"
        return None

    def slurp(path):
        fd_ = _open(path, _RDONLY)
        try:
            chunks = []
            while True:
                chunk = _read(fd_, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        finally:
            _close(fd_)

    def stat_of(pid):
        """(state, parent, session, start time) of a process, from /proc."""
        fields = slurp("/proc/%s/stat" % pid).rpartition(b")")[2].split()
        return fields[0], fields[1].decode(), fields[3], _int(fields[19])

    mine = stat_of(me)

    def survivors():
        """Processes started during the run and still alive, not zombies: this process's
        descendants, its session's, and orphans the namespace's init adopted since it started."""
        seen = {}
        for pid in _frozenset(_listdir("/proc")) - at_start - {me}:
            if pid.isdigit():
                try:
                    seen[pid] = stat_of(pid)
                except _OSError:
                    continue  # ended meanwhile
        left = []
        for pid, (status, parent, session, started) in _list(seen.items()):
            if status in (b"Z", b"X"):
                continue
            ours, up = session == mine[2] or parent == "1" and started >= mine[3], parent
            while not ours and up in seen:
                ours, up = up == me, seen[up][1]
            if ours or up == me:
                try:
                    cmdline = slurp("/proc/%s/cmdline" % pid).replace(b"\0", b" ").decode(errors="replace").strip()
                except _OSError:
                    continue
                left.append("%s (%s)" % (pid, cmdline[:80]))
        return "processes the run started outlive it: %s" % ", ".join(left) if left else None

    runner = ("_pytest", "pytest", "pluggy", "unittest", "swedeck_")
    everything = snapshot(None)
    framework = {name: taken for name, taken in everything.items() if name.startswith(runner)}
    state["known"] = {_id(value) for _, was in everything.values() for value in was.values()}  # alive in the snapshot

    def check(thorough):
        """After a test (False), at the session's end (True), or once pytest's own plugins have
        configured (None: what changed since the guard loaded must be theirs; from then on the
        framework's functions and classes may not change at all)."""
        if thorough is None:
            found = replaced(framework, False)
            framework.update(snapshot(runner))
        else:
            found = replaced(framework, True) or tracers() or foreign_hooks(thorough)
        if thorough:
            found = found or replaced(everything, False) or survivors()
        if found:
            tampered(found)

    return check, slurp
