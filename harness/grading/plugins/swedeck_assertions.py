"""swedeck_assertions: a pytest plugin that records the outcome of every assertion a test executes.

Self-contained on purpose (standard library and pytest only, and its own ``swedeck_assertions_*.py``
modules beside it, shipped with it): it is copied into task sandboxes and loaded there with
``-p swedeck_assertions -o enable_assertion_pass_hook=true`` with its folder on ``PYTHONPATH``. It
writes one JSON object per line, per assertion event, to the file named by the ``SWEDECK_ASSERT_LOG``
environment variable (nothing at all when the variable is unset), after a line
``{"plugin": "swedeck_assertions"}`` from each process that loaded it (the grader reserves the file
beforehand, so only that line says the tests ran instrumented)::

    {"nodeid": ..., "file": <path relative to the rootdir>, "line": <1-based start line>,
     "source": <the assertion's source, whitespace normalised>, "outcome": "passed" | "failed"}

Where events come from:

* a bare ``assert`` that passes: ``pytest_assertion_pass``. The hook names no file, so the file is the
  first frame, walking up from the hook, that belongs to an assertion-rewritten module and stands on the
  hook's line; an assert in a helper module is therefore reported at the helper's file and line.
* a bare ``assert`` that fails: a ``pytest_runtest_makereport`` wrapper reads the exception's traceback
  and reports the innermost frame inside the rootdir whose line belongs to an ``assert`` statement or to
  an ``assert*(...)`` / ``self.fail*(...)`` call. An exception raised while an assert's expression is
  evaluated therefore also counts as that assert failing.
* ``unittest.TestCase`` assertion methods (every public ``assert*`` and ``fail*`` method, wrapped when
  the plugin is imported): each call records at its caller's line; a method that hands back a context
  manager (``with self.assertRaises(...)``) records when the ``with`` block exits. Calls made by
  unittest itself (``assertEqual`` delegating to ``assertListEqual``, ``fail`` raising a failure) are
  not recorded, so only the outermost call counts.
* ``pytest.raises`` (wrapped the same way when the plugin is imported, so ``from pytest import raises``
  in a test module gets the wrapper): a call with a function records when it returns or raises, a
  ``with pytest.raises(...)`` block when it exits (``DID NOT RAISE`` fails it).

Limitations:

* pytest rewrites asserts only in test modules, ``conftest.py`` files and modules registered with
  ``pytest.register_assert_rewrite``. The plugin registers the other modules beside each test file it
  collects (``from common import assert_equal`` in a tests folder) before the test file imports them,
  unless they were imported already or the test file sits in the rootdir (there they would be the
  code under test); a passing assert in any other helper module is invisible (a failing one is still
  found through the traceback).
* a failing bare assert whose ``AssertionError`` is caught by the test itself (``pytest.raises
  (AssertionError)``) is not recorded.
* every process appends to the same file with single ``O_APPEND`` writes (one line each), which keeps
  lines whole under pytest-xdist; the file is never truncated by the plugin.

* with ``--assert=plain`` nothing is rewritten and passing bare asserts are not seen at all.
* unittest assertions made outside any test (at import time) are not recorded.

Rewritten modules are cached in ``__pycache__`` under a name that ignores ``enable_assertion_pass_hook``,
so a cache left by an earlier plain run would hide every passing assert; when the log is enabled the
plugin makes pytest ignore those caches and rewrite afresh.

The plugin never changes an outcome: every piece of its own work swallows its errors. Each event is
written with one ``os.write`` call, so a test that hangs or calls ``os._exit`` leaves every event
recorded before that point.

PYTEST_DONT_REWRITE (pytest rewrites ``-p`` plugins unless their docstring says this)
"""

from __future__ import annotations

import os
import sys
import unittest

import pytest

from swedeck_assertions_log import (
    ANNOUNCE,
    _PLUGIN_FILES,
    _STATE,
    _flush_repeats,
    _in_rootdir,
    _open_log,
    _relpath,
    _tag,
    _tagged,
    _under_root,
    _write,
    normalise,
)
from swedeck_assertions_sites import _find
from swedeck_assertions_wrappers import _force_fresh_rewrite, _install_raises_wrapper, _install_unittest_wrappers

# Frames of this module are hidden from unittest's and pytest's failure reports.
__unittest = True


def _rewritten(frame) -> bool:
    return "@py_builtins" in frame.f_globals or "@pytest_ar" in frame.f_globals


@pytest.hookimpl
def pytest_assertion_pass(item, lineno, orig, expl):
    if not _STATE.path:
        return
    try:
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if (
                frame.f_lineno == lineno
                and _rewritten(frame)
                and os.path.normcase(os.path.abspath(filename)) not in _PLUGIN_FILES
            ):
                break
            frame = frame.f_back
        if frame is None:
            return
        filename = frame.f_code.co_filename
        site = _STATE.pass_sites.get((filename, lineno, orig))
        if site is None:  # asserts in loops pass thousands of times; look each site up once
            fallback = normalise("assert " + (orig or ""))
            found = _find(filename, lineno, kind="assert", start_only=True, prefix=fallback)
            site = _STATE.pass_sites[(filename, lineno, orig)] = (_relpath(filename), found[1] if found else fallback)
        _write(item.nodeid, site[0], lineno, site[1], "passed")
    except Exception:
        pass


def _failure_site(exc: BaseException) -> tuple[str, int, str] | None:
    """The innermost traceback frame in the rootdir that stands on an assertion: (file, line, source)."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    for filename, line in reversed(entries):
        if os.path.normcase(os.path.abspath(filename)) in _PLUGIN_FILES or not _in_rootdir(filename):
            continue
        found = _find(filename, line)
        if found is not None:
            return filename, found[0], found[1]
    return None


# Old-style wrappers (``hookwrapper=True``) work with every pytest since 3, and task images carry
# whatever pytest their corpus pinned.


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if not _STATE.path:
        return
    try:
        excinfo = call.excinfo
        if excinfo is None:
            return
        exc = excinfo.value
        if isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception, unittest.SkipTest)) or _tagged(exc):
            return
        site = _failure_site(exc)
        if site is not None:
            _tag(exc)
            _write(item.nodeid, _relpath(site[0]), site[1], site[2], "failed")
    except Exception:
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _STATE.nodeid = getattr(item, "nodeid", "")
    try:
        yield
    finally:
        _STATE.nodeid = ""
        _flush_repeats()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    try:
        root = getattr(config, "rootpath", None) or config.rootdir
        _STATE.rootdir = os.path.normcase(os.path.abspath(str(root)))
        _STATE.real_rootdir = os.path.normcase(os.path.realpath(_STATE.rootdir))
    except Exception:
        pass
    if not _STATE.path:
        return
    try:
        with _STATE.lock:
            _open_log()
            os.write(_STATE.fd, ANNOUNCE)
    except Exception:
        pass
    try:
        if not config.getini("enable_assertion_pass_hook"):
            sys.stderr.write(
                "swedeck_assertions: enable_assertion_pass_hook is off, passing bare asserts are not recorded\n"
            )
    except Exception:
        pass


@pytest.hookimpl
def pytest_collectstart(collector):
    """Before a test file is imported: have pytest rewrite the helper modules beside it."""
    if not _STATE.path:
        return
    try:
        path = str(getattr(collector, "path", None) or getattr(collector, "fspath", ""))
        folder = os.path.dirname(os.path.abspath(path))
        if not path.endswith(".py") or not _in_rootdir(path) or _under_root(folder) is None:
            return
        names = [n for n in _helper_modules(folder) if n not in sys.modules]
        if names:
            pytest.register_assert_rewrite(*names)
    except Exception:
        pass


def _helper_modules(folder):
    """Import names of the modules in ``folder`` that are neither test files nor conftest: by their
    file name, and by their dotted name when the folder is a package."""
    package = []
    parent = folder
    while os.path.isfile(os.path.join(parent, "__init__.py")):
        package.insert(0, os.path.basename(parent))
        parent = os.path.dirname(parent)
    names = []
    for entry in sorted(os.listdir(folder)):
        stem = entry[:-3]
        if not entry.endswith(".py") or entry == "conftest.py" or stem == "__init__":
            continue
        if stem.startswith("test_") or stem.endswith("_test"):
            continue
        names.append(stem)
        if package:
            names.append(".".join(package + [stem]))
    return names


@pytest.hookimpl
def pytest_unconfigure(config):
    _flush_repeats()
    try:
        if _STATE.fd is not None:
            os.close(_STATE.fd)
            _STATE.fd = None
    except Exception:
        pass


if _STATE.path:
    _install_unittest_wrappers()
    _install_raises_wrapper()
    _force_fresh_rewrite()
