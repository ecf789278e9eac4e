"""swedeck_assertions' wrappers: unittest's assertion methods and ``pytest.raises``, recording at their caller's line.

PYTEST_DONT_REWRITE (pytest rewrites the modules a ``python_files`` pattern matches unless their docstring says this)
"""

from __future__ import annotations

import functools
import os
import sys
import unittest

import pytest

from swedeck_assertions_log import _PLUGIN_FILES, _STATE, _in_rootdir, _relpath, _tag, _write, normalise
from swedeck_assertions_sites import _find

# Frames of this module are hidden from unittest's and pytest's failure reports.
__unittest = True

_UNITTEST_DIR = os.path.normcase(os.path.dirname(os.path.abspath(unittest.__file__))) + os.sep


def _internal(filename: str) -> bool:
    path = os.path.normcase(os.path.abspath(filename))
    return path.startswith(_UNITTEST_DIR) or path in _PLUGIN_FILES


def _caller_site(frame, name: str) -> tuple[str, int, str] | None:
    """Where the test code called ``name``: the caller, or, when the caller lies outside the rootdir
    (an installed library's assertion helper), the first frame up the stack inside the rootdir."""
    first = frame
    probe = frame
    while probe is not None and not _in_rootdir(probe.f_code.co_filename):
        probe = probe.f_back
    chosen = probe if probe is not None else first
    filename = chosen.f_code.co_filename
    line = chosen.f_lineno
    found = _find(filename, line, kind="call", name=name) if chosen is first else None
    if found is None:
        found = _find(filename, line)
    if found is None:
        return filename, line, normalise(f"self.{name}(...)")
    return filename, found[0], found[1]


class _RecordingContext:
    """Stands in for the context manager an assertion method or ``pytest.raises`` returned; records when
    the block exits."""

    def __init__(self, context, site, nodeid):
        self._swedeck_context = context
        self._swedeck_site = site
        self._swedeck_nodeid = nodeid

    def __enter__(self):
        return self._swedeck_context.__enter__()

    def __exit__(self, exc_type, exc, tb):
        __tracebackhide__ = True
        try:
            suppressed = self._swedeck_context.__exit__(exc_type, exc, tb)
        except (Exception, pytest.fail.Exception) as error:  # DID NOT RAISE is an OutcomeException
            _record_call(self._swedeck_site, self._swedeck_nodeid, "failed")
            _tag(error)
            raise
        if exc_type is not None and not suppressed:
            _record_call(self._swedeck_site, self._swedeck_nodeid, "failed")
            if exc is not None:
                _tag(exc)
        else:
            _record_call(self._swedeck_site, self._swedeck_nodeid, "passed")
        return suppressed

    def __getattr__(self, name):
        return getattr(self._swedeck_context, name)


def _record_call(site, nodeid, outcome):
    if site is None or not nodeid:
        return
    try:
        _write(nodeid, _relpath(site[0]), site[1], site[2], outcome)
    except Exception:
        pass


def _is_context(result) -> bool:
    kind = type(result)
    return (
        hasattr(kind, "__enter__")
        and hasattr(kind, "__exit__")
        and getattr(kind, "__module__", "").startswith("unittest")
    )


def _wrap(name, original):
    @functools.wraps(original)
    def recording(self, *args, **kwargs):
        __tracebackhide__ = True
        site = None
        try:
            caller = sys._getframe(1)
            if not _internal(caller.f_code.co_filename):
                site = _caller_site(caller, name)
        except Exception:
            site = None
        if site is None:
            return original(self, *args, **kwargs)
        nodeid = _STATE.nodeid
        try:
            result = original(self, *args, **kwargs)
        except Exception as error:
            _record_call(site, nodeid, "failed")
            _tag(error)
            raise
        try:
            if _is_context(result):
                return _RecordingContext(result, site, nodeid)
        except Exception:
            pass
        _record_call(site, nodeid, "passed")
        return result

    recording._swedeck_wrapped = True  # type: ignore[attr-defined]
    return recording


def _install_unittest_wrappers() -> None:
    for name in dir(unittest.TestCase):
        if not name.startswith(("assert", "fail")):
            continue
        try:
            original = unittest.TestCase.__dict__.get(name)
            if original is None:
                for klass in unittest.TestCase.__mro__:
                    if name in klass.__dict__:
                        original = klass.__dict__[name]
                        break
            if not callable(original) or isinstance(original, type):
                continue
            if getattr(original, "_swedeck_wrapped", False):
                continue
            setattr(unittest.TestCase, name, _wrap(name, original))
        except Exception:
            pass


def _install_raises_wrapper() -> None:
    """``pytest.raises`` records at its caller's line, like a unittest assertion method: a call with a
    function when it returns or raises, a ``with`` block when the block exits (``Failed: DID NOT RAISE``
    comes out of ``__exit__``). Installed before the test modules are imported, so ``from pytest import
    raises`` gets it too. Only calls written in the rootdir record (a plugin's own use does not)."""
    original = pytest.raises
    if getattr(original, "_swedeck_wrapped", False):
        return

    @functools.wraps(original)
    def raises(*args, **kwargs):
        __tracebackhide__ = True
        site = None
        try:
            caller = sys._getframe(1)
            if _in_rootdir(caller.f_code.co_filename) and not _internal(caller.f_code.co_filename):
                site = _caller_site(caller, "raises")
        except Exception:
            site = None
        if site is None:
            return original(*args, **kwargs)
        nodeid = _STATE.nodeid
        try:
            result = original(*args, **kwargs)
        except (Exception, pytest.fail.Exception) as error:
            _record_call(site, nodeid, "failed")
            _tag(error)
            raise
        if hasattr(type(result), "__exit__"):
            return _RecordingContext(result, site, nodeid)
        _record_call(site, nodeid, "passed")
        return result

    raises._swedeck_wrapped = True  # type: ignore[attr-defined]
    pytest.raises = raises


def _force_fresh_rewrite() -> None:
    """Ignore rewritten-module caches, which may predate the pass hook (their key ignores the ini)."""
    try:
        from _pytest.assertion import rewrite

        rewrite._read_pyc = lambda *args, **kwargs: None  # type: ignore[assignment]
    except Exception:
        pass
