"""The probe server's warm-up (probes/session_server.py, shipped beside it), once pytest is imported
(``swedeck_preload.preload``, the grades' own): one pytest session of its own run on a test file
outside the tree, and each command's configuration object built ahead. Standalone like the server:
the standard library, then pytest."""

import os
import shutil
import sys


# a fixture, a parametrized test, pytest.raises and a test class: what most suites use
WARM_TEST = """import pytest
@pytest.fixture
def value():
    return 1
@pytest.mark.parametrize("x", [1, 2])
def test_param(x, value):
    assert x >= value
def test_raises():
    with pytest.raises(ValueError):
        int("x")
class TestKind:
    def test_method(self):
        assert [1] == [1]
"""


def warm_pytest():
    """One pytest session in this process on a test file of our own in a scratch folder outside the
    tree (its own ini file, so the tree's settings and conftests are never read), with pytest's own
    plugins only (the environment's may read the environment or the work directory when imported, and
    must do so in the child): what pytest imports, compiles and caches lazily is then done once, for
    every fork.
    What the session leaves in the process is undone: its test module, sys.path, and the output."""
    scratch = os.path.join("/tmp", ".swedeck-probe-warm")
    shutil.rmtree(scratch, ignore_errors=True)
    os.mkdir(scratch, 0o700)
    # a pyproject.toml, as most trees configure pytest: reading one imports tomllib and compiles its
    # patterns, which every fork would otherwise do again (several milliseconds a run)
    with open(os.path.join(scratch, "pyproject.toml"), "w") as f:
        f.write("[tool.pytest.ini_options]\n")
    with open(os.path.join(scratch, "swedeck_probe_warm.py"), "w") as f:
        f.write(WARM_TEST)
    path, modules = list(sys.path), set(sys.modules)
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        import pytest

        os.dup2(null, 1)
        os.dup2(null, 2)
        args = ["-rA", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-c", os.path.join(scratch, "pyproject.toml")]
        args += ["--junitxml", os.path.join(scratch, "junit.xml"), "--rootdir", scratch]
        pytest.main([*args, os.path.join(scratch, "swedeck_probe_warm.py")])
    except BaseException:  # noqa: BLE001 - a server that cannot warm up still serves
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)
        del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        os.environ.pop("PYTEST_CURRENT_TEST", None)
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            if name.startswith("swedeck_probe_warm"):
                del sys.modules[name]
        shutil.rmtree(scratch, ignore_errors=True)


def ahead(argvs):
    """argv -> pytest's configuration object for it, built before any fork (``_pytest.config.get_config``:
    a plugin manager with pytest's own plugins registered, nothing read but the arguments; the options,
    ini files and conftests are read by the child). Each fork takes its own copy, so one object serves
    every job. Empty where this pytest has no such function."""
    try:
        import _pytest.config

        return {tuple(argv): _pytest.config.get_config(list(argv)) for argv in argvs}
    except Exception:  # noqa: BLE001 - every child then builds its own
        return {}
