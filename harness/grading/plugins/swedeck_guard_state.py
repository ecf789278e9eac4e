"""swedeck_guard_state: what the run-time guard (swedeck_guard) checks that no audit event covers.

PYTEST_DONT_REWRITE. Imported by swedeck_guard before anything of the tree, and used only through
``checks``, whose closures hold every name they call (bound when the guard installs), as the hook's
own do: a module attribute the tree replaces later never reaches them.

A function or class attribute replaced (``_pytest.runner.CallInfo = ...``, ``Function.runtest = ...``)
raises no audit event. So the functions and classes of every module loaded before the tree, and each
class's attributes, are kept as they were: the test framework's own (pytest, pluggy, unittest, these
plugins) may not change at all once pytest's plugins configured, checked after each test; the rest
may not be replaced with the changed files' code, checked at the end, when the tests' own
replacements are put back. After a test only what a test's run and report go through is compared,
at most once in ``SPACING_S``, so a suite of thousands of short tests is not slowed by it. Also
checked: no plugin or hook implementation and no trace or profile
function comes from the changed files, ``sys.audit`` is the interpreter's, and at the end no process
started during the run is still alive (this process's descendants and its session's).
"""

import functools
import posix
import sys
import threading
import time
import types

import pluggy


SPACING_S = 0.01  # the least time between two checks after a test


def checks(kind, module_kind, relative, tampered, state):
    """``(check, slurp, protected)``: ``check(thorough)`` ends the run through ``tampered`` on a
    finding; ``slurp(path)`` reads a file with system calls alone; ``protected(obj)``: whether
    ``obj`` is a function or class kept. ``state`` holds the plugin manager once pytest configured
    (``manager``, ``plugins``: how many it held last)."""
    _type, _str, _int, _len, _list, _orepr, _id, _issubclass, _frozenset, _OSError = (
        type, str, int, len, list, object.__repr__, id, issubclass, frozenset, OSError
    )  # fmt: skip
    _Function, _Module, _Builtin, _Method, _partial = (
        types.FunctionType, types.ModuleType, types.BuiltinFunctionType, types.MethodType, functools.partial
    )  # fmt: skip
    _module_dict = _Module.__dict__["__dict__"].__get__
    _meta, _dict, _type_name = type, dict, type.__dict__["__name__"].__get__
    _type_qualname, _func_qualname = type.__dict__["__qualname__"].__get__, types.FunctionType.__dict__["__qualname__"].__get__
    _func_module, _tuple_t, _NoneType = types.FunctionType.__dict__["__module__"].__get__, tuple, type(None)
    _type_dict = type.__dict__["__dict__"].__get__
    _type_module = type.__dict__["__module__"].__get__
    _func_code = _Function.__dict__["__code__"].__get__
    _get_plugins, _get_hookimpls, _HookCaller = pluggy.PluginManager.get_plugins, pluggy.HookCaller.get_hookimpls, pluggy.HookCaller
    _gettrace, _getprofile, _modules, _sysdict, _audit = sys.gettrace, sys.getprofile, sys.modules, _module_dict(sys), sys.audit
    _threading = _module_dict(threading)
    _open, _read, _close, _listdir, _RDONLY = posix.open, posix.read, posix.close, posix.listdir, posix.O_RDONLY
    at_start, me, _monotonic = _frozenset(_listdir("/proc")), _str(posix.getpid()), time.monotonic
    state["checked"] = 0.0

    missing = object()

    # the test framework's modules (their functions may not change at all once pytest configured);
    # the runner's path among them, checked after every test; where classes are kept attribute by
    # attribute (each under the module defining it), the rest only by name
    framework = ("_pytest", "pytest", "pluggy", "unittest", "swedeck_")
    # what a test's run and report go through, checked after every test (the rest at the end)
    per_test = ("_pytest.runner", "_pytest.reports", "pluggy._callers", "pluggy._hooks", "pluggy._result", "swedeck_")
    per_test_classes = ("CallInfo", "TestReport", "BaseReport", "Function", "Item", "Node", "TestCaseFunction", "TestCase",
                        "_Outcome", "HookCaller", "PluginManager", "Result")  # fmt: skip
    deep = framework + ("xml.", "json")

    def take():
        """{module name: (module, a copy of its names)}, {class id: (class, a copy of its attributes)}
        for the classes the modules in ``deep`` define."""
        modules, classes = {}, {}
        for name, mod in _list(_modules.items()):
            if _issubclass(_type(mod), _Module):
                names = modules[name] = (mod, _dict(_module_dict(mod)))
                if name.startswith(deep):
                    for value in _list(names[1].values()):
                        if _issubclass(_type(value), _meta) and _type_module(value) == name:
                            classes[_id(value)] = (value, _dict(_type_dict(value)))
        return modules, classes

    def kept_kind(value):
        """Whether a value is of a kind kept: a function or a class (state such as streams and
        counters changes as the run goes)."""
        return _type(value) in (_Function, _Builtin) or _issubclass(_type(value), _meta)

    def replaced(modules, classes, strict, accept=False):
        """The first function, class or class attribute kept that is no longer what it was: any
        change in the test framework's (``strict``), one of the changed files' in the rest (the
        tests' own replacements are put back by then). ``accept``: changes not of the changed files
        are taken as the new state (pytest's own plugins configuring)."""
        for name, (mod, was) in _list(modules.items()):
            names = _module_dict(mod)
            for attr, value in _list(was.items()):
                new = names.get(attr, missing)
                if new is value or not kept_kind(value):
                    continue
                if accept and new is not missing and not from_changed(new):
                    was[attr] = new
                elif accept or strict and name.startswith(framework) or new is missing or from_changed(new):
                    return found(name + "." + attr, new)
        for cls, was in _list(classes.values()):
            now = _type_dict(cls)
            for attr, value in _list(was.items()):
                new = now.get(attr, missing)
                if new is value or _type(value) in (_str, _int, _tuple_t, _NoneType):
                    continue
                if accept and not from_changed(new):
                    was[attr] = new
                elif accept or strict or from_changed(new):
                    return found("%s.%s.%s" % (_type_module(cls), _type_name(cls), attr), new)
        return None

    def found(label, new):
        code = _func_code(new) if _type(new) is _Function else None
        origin = " by %s:%d" % (relative(code.co_filename), code.co_firstlineno) if code is not None else ""
        return "%s was %s%s" % (label, "deleted" if new is missing else "replaced", origin)

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
        """(state, parent, session) of a process, from /proc."""
        fields = slurp("/proc/%s/stat" % pid).rpartition(b")")[2].split()
        return fields[0], fields[1].decode(), fields[3]

    mine = stat_of(me)

    def survivors():
        """Processes started during the run and still alive, not zombies: this process's
        descendants and its session's (a program the changed code starts is refused as it starts)."""
        seen = {}
        for pid in _frozenset(_listdir("/proc")) - at_start - {me}:
            if pid.isdigit():
                try:
                    seen[pid] = stat_of(pid)
                except _OSError:
                    continue  # ended meanwhile
        left = []
        for pid, (status, parent, session) in _list(seen.items()):
            if status in (b"Z", b"X"):
                continue
            ours, up = session == mine[2], parent
            while not ours and up in seen:
                ours, up = up == me, seen[up][1]
            if ours or up == me:
                try:
                    cmdline = slurp("/proc/%s/cmdline" % pid).replace(b"\0", b" ").decode(errors="replace").strip()
                except _OSError:
                    continue
                left.append("%s (%s)" % (pid, cmdline[:80]))
        return "processes the run started outlive it: %s" % ", ".join(left) if left else None

    everything, kept = take()

    def protected(obj):
        """Whether ``obj`` is a function or class kept (its module's, or a kept class's method)."""
        if _type(obj) is _Function:
            module, name = _func_module(obj), _func_qualname(obj)
        elif _issubclass(_type(obj), _meta):
            module, name = _type_module(obj), _type_qualname(obj)
        else:
            return False
        taken = everything.get(module) if _type(module) is _str else None
        if taken is None or _type(name) is not _str:
            return False
        head, _, rest = name.partition(".")
        top = taken[1].get(head)
        if not rest:
            return top is obj
        cls = kept.get(_id(top))
        return cls is not None and cls[1].get(rest) is obj

    runner = {name: taken for name, taken in everything.items() if name.startswith(per_test)}
    runner_classes = {key: kept[key] for key, (cls, _) in kept.items() if _type_name(cls) in per_test_classes}

    def check(thorough):
        """After a test (False), at the session's end (True), or once pytest's own plugins have
        configured (None: what changed since the guard loaded must not be the changed files'; from
        then on the framework's functions and classes may not change at all)."""
        now = _monotonic()
        if thorough is False and now - state["checked"] < SPACING_S:
            return  # a suite of thousands of short tests pays for one check in SPACING_S, not one a test
        state["checked"] = now
        if thorough is None:
            found = replaced(everything, kept, False, accept=True)
        elif thorough:
            found = tracers() or replaced(everything, kept, True) or foreign_hooks(True) or survivors()
        else:
            found = tracers() or replaced(runner, runner_classes, True) or foreign_hooks(False)
        if found:
            tampered(found)

    return check, slurp, protected
