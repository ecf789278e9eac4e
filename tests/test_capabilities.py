"""The capability model as pure functions: what a candidate's change may do (harness.grading.capabilities),
and the gold patch of every task in the repository, which must never be refused."""

from __future__ import annotations

import os
import pkgutil
import re
import socket
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from curation.sources import load_source
from data import FIXTURES, ROOT, SAMPLE
from harness.grading.capabilities import Violation, import_name, pythonpath_folders, sys_path_folders, violations
from harness.config import Settings
from harness.grading.diffs import split_diff
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import run_tests
from harness.grading import shipping
from harness.records import Task
from harness.sandboxes.sandbox import Backend
from harness.grading.tree import LISTING, Entry, TaskFacts, parse_listing

SUFFIXES = [".py", ".pyc", ".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so"]
EXTENSIONS = SUFFIXES[2:]
FILE = Entry("f", 0o644, 10, "1.0")
DIR = Entry("d", 0o755, 4096, "1.0")
NEW = Entry("f", 0o644, 10, "2.0")


@pytest.fixture
def task(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks["sample__toposort-1"]


def _facts(**fields: object) -> TaskFacts:
    base = {
        "protected": {}, "hidden": {"tests/test_sort.py": (0o644, "")}, "tree_path": [""],
        "modules": ["json", "pytest", "_pytest", "argparse", "xml", "toposort"], "plugins": [],
        "suffixes": SUFFIXES, "extension_suffixes": EXTENSIONS,
    }  # fmt: skip
    return TaskFacts(**(base | fields))


BEFORE = {"toposort": DIR, "toposort/__init__.py": FILE, "toposort/graph.py": FILE, "tests": DIR, "tests/test_sort.py": FILE}


def _refused(added: dict[str, Entry], task: Task, facts: TaskFacts | None = None) -> list[tuple[str, str]]:
    return [(v.path, v.rule) for v in violations(BEFORE, BEFORE | added, task, facts or _facts())]


# ------------------------------------------------------------------------------------------ allowed


@pytest.mark.parametrize(
    "change",
    [
        {"toposort/graph.py": NEW},  # the fix
        {"toposort/graph.py": Entry("f", 0o755, 10, "2.0")},  # made executable
        {"toposort/extra.py": NEW, "toposort/data": DIR, "toposort/data/table.csv": NEW},  # new module, data
        {"toposort_extra.py": NEW, "scripts": DIR, "scripts/run": Entry("f", 0o755, 9, "2.0")},
        {"toposort/json.py": NEW},  # inside a package: toposort.json, shadows nothing
        {"docs": DIR, "docs/json": NEW},  # no import suffix, not on sys.path
        {"pyproject.toml": NEW, "setup.cfg": NEW},  # shared with packaging: written back, not refused
    ],
    ids=["fix", "mode-755", "new-module-and-data", "new-root-module", "module-in-package", "data-named-json", "packaging"],
)
def test_ordinary_changes_are_allowed(task: Task, change: dict[str, Entry]) -> None:
    assert _refused(change, task) == []


def test_deleting_ordinary_files_is_allowed(task: Task) -> None:
    after = {p: e for p, e in BEFORE.items() if p != "toposort/graph.py"}
    assert violations(BEFORE, after, task, _facts()) == []


def test_the_projects_own_shadowing_module_stays_editable(task: Task) -> None:
    """The project installed into the environment (so ``toposort`` is among its modules) shadows it
    from the work directory already at the base commit: that is its own code, which gold edits."""
    facts = _facts(modules=["toposort", "json"])
    assert _refused({"toposort/__init__.py": NEW, "toposort/helpers.py": NEW}, task, facts) == []


# ------------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({"pytest": Entry("l", 0o777, 4, "2.0"), "evil": DIR, "evil/__init__.py": NEW}, [("pytest", "symlink")]),
        ({"toposort/link.py": Entry("l", 0o777, 4, "2.0")}, [("toposort/link.py", "symlink")]),
        ({"toposort/twin.py": Entry("f", 0o644, 10, "2.0", links=2)}, [("toposort/twin.py", "hard_link")]),
        ({"toposort/pipe": Entry("p", 0o644, 0, "2.0")}, [("toposort/pipe", "special_file")]),
        ({"toposort/sock": Entry("s", 0o755, 0, "2.0")}, [("toposort/sock", "special_file")]),
        ({"toposort/graph.py": Entry("f", 0o4755, 10, "2.0")}, [("toposort/graph.py", "mode")]),
        ({"toposort/new.py": Entry("f", 0o666, 10, "2.0")}, [("toposort/new.py", "mode")]),
        ({"tests/test_sort.py": NEW}, [("tests/test_sort.py", "tests_place")]),
        ({"tests/test_planted.py": NEW}, [("tests/test_planted.py", "tests_place")]),
        ({"toposort/conftest.py": NEW}, [("toposort/conftest.py", "tests_place")]),
        ({"pytest.ini": NEW}, [("pytest.ini", "tests_place")]),
        ({"toposort/evil.pth": NEW}, [("toposort/evil.pth", "tests_place")]),
        ({"sitecustomize.py": NEW}, [("sitecustomize.py", "tests_place")]),
        ({"toposort/__pycache__": DIR, "toposort/__pycache__/graph.cpython-311.pyc": NEW},
         [("toposort/__pycache__", "bytecode"), ("toposort/__pycache__/graph.cpython-311.pyc", "bytecode")]),
        ({"argparse.pyc": NEW}, [("argparse.pyc", "bytecode")]),
        ({"x.egg-info": DIR, "x.egg-info/entry_points.txt": NEW},
         [("x.egg-info", "package_metadata"), ("x.egg-info/entry_points.txt", "package_metadata")]),
        ({"toposort/fast.abi3.so": NEW}, [("toposort/fast.abi3.so", "extension_module")]),
        ({"toposort/__init__.cpython-311-x86_64-linux-gnu.so": NEW},
         [("toposort/__init__.cpython-311-x86_64-linux-gnu.so", "extension_module")]),
        ({"json.py": NEW}, [("json.py", "shadows_module")]),
        ({"pytest": DIR, "pytest/__init__.py": NEW}, [("pytest", "shadows_module")]),
        ({"xml": DIR, "xml/dom.py": NEW}, [("xml", "shadows_module")]),  # a namespace folder too
        ({"_pytest": DIR, "_pytest/__init__.abi3.so": NEW},
         [("_pytest", "shadows_module"), ("_pytest/__init__.abi3.so", "extension_module")]),
        ({"argparse.cpython-311-x86_64-linux-gnu.so": NEW},
         [("argparse.cpython-311-x86_64-linux-gnu.so", "extension_module")]),
    ],
)  # fmt: skip
def test_everything_else_is_refused(task: Task, change: dict[str, Entry], refused: list[tuple[str, str]]) -> None:
    assert _refused(change, task) == refused


@pytest.mark.parametrize(
    "path", [".venv/lib/python3.9/site-packages/_pytest/runner.py", "env/lib/python3.11/site-packages/pytest/__init__.py",
             "build/lib/dist-packages/x.py"],
)  # fmt: skip
def test_the_environments_installed_packages_are_refused(task: Task, path: str) -> None:
    """R2E-Gym's environments live in the work directory (.venv): an edit to pytest there would be
    worse than a shadow of it."""
    before = BEFORE | {".venv": DIR, ".venv/pyvenv.cfg": FILE, path: FILE}
    assert [(v.path, v.rule) for v in violations(before, before | {path: NEW}, task, _facts())] == [(path, "environment")]


def test_a_module_installed_in_the_trees_virtualenv_is_the_environments(task: Task) -> None:
    """R2E-Gym's pytest lives in .venv in the work directory, so the environment's Python does not
    count it among the modules it imports from outside the tree; a pytest.py at the root shadows it
    all the same."""
    site = ".venv/lib/python3.9/site-packages"
    before = BEFORE | {".venv": DIR, ".venv/pyvenv.cfg": FILE, site: DIR, f"{site}/pytest": DIR, f"{site}/py.py": FILE}
    facts = _facts(modules=["json"])
    found = [(v.path, v.rule) for v in violations(before, before | {"pytest.py": NEW, "py": DIR}, task, facts)]
    assert found == [("py", "shadows_module"), ("pytest.py", "shadows_module")]


def test_regression_a_module_named_like_the_graders_plugins_is_refused(
    task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m pytest`` puts the work directory before the plugins' folder on sys.path, so a
    ``swedeck_outcomes.py`` at the root was the module ``-p swedeck_outcomes`` loaded, and nothing
    refused it (the environment's Python, which lists the modules to protect, never sees the
    plugins). A plugin's helper modules, which it imports by name, are shipped and protected with it."""
    assert _refused({"swedeck_outcomes.py": NEW, "swedeck_select": DIR, "swedeck_select/__init__.py": NEW}, task) == [
        ("swedeck_outcomes.py", "shadows_module"), ("swedeck_select", "shadows_module")
    ]
    for name in ("swedeck_x.py", "swedeck_x_values.py", "other.py"):
        (tmp_path / name).write_text("")
    monkeypatch.setattr(shipping, "PLUGINS", tmp_path)
    assert [path.name for path in shipping.plugin_files("swedeck_x")] == ["swedeck_x.py", "swedeck_x_values.py"]
    assert _refused({"swedeck_x_values.py": NEW, "other.py": NEW}, task) == [("swedeck_x_values.py", "shadows_module")]


def test_a_module_beside_a_test_inside_a_package_shadows_nothing(task: Task) -> None:
    """A test file that lives in its package (``toposort/test_graph.py``) is imported as part of it:
    the package's folder is not on sys.path, so a fix's new ``toposort/types.py`` is its own module."""
    facts = _facts(hidden={"toposort/test_graph.py": (0o644, "")}, modules=["types", "json"])
    assert _refused({"toposort/types.py": NEW}, task, facts) == []


def test_deleting_a_test_file_is_refused(task: Task) -> None:
    after = {p: e for p, e in BEFORE.items() if p != "tests/test_sort.py"}
    assert violations(BEFORE, after, task, _facts()) == [Violation("tests/test_sort.py", "tests_place")]


def test_a_file_where_the_hidden_tests_need_a_folder_is_refused(task: Task) -> None:
    facts = _facts(hidden={"newtests/test_x.py": (0o644, "")})
    assert _refused({"newtests": NEW}, task, facts) == [("newtests", "tests_place")]


def test_a_folder_put_on_sys_path_makes_its_modules_shadow(task: Task) -> None:
    """With the package's __init__.py gone, pytest's rootdir-insertion puts the package's folder in
    front of sys.path (the first one up from the test without one); a json.py there (the project's
    own, untouched) then shadows the standard library's."""
    facts = _facts(hidden={"src/pkg/tests/test_x.py": (0o644, "")})
    before = {"src": DIR, "src/pkg": DIR, "src/pkg/__init__.py": FILE, "src/pkg/json.py": FILE,
              "src/pkg/tests": DIR, "src/pkg/tests/__init__.py": FILE}  # fmt: skip
    after = {p: e for p, e in before.items() if p != "src/pkg/__init__.py"}
    found = [(v.path, v.rule) for v in violations(before, after, task, facts)]
    assert found == [("src/pkg/json.py", "shadows_module")]
    assert violations(before, before | {"src/pkg/json.py": NEW}, task, facts) == []


def test_a_module_shadowing_from_the_commands_pythonpath_is_refused(task: Task) -> None:
    src_task = task.model_copy(update={"test_cmd": ["PYTHONPATH=src:$PYTHONPATH python -m pytest tests"]})
    assert _refused({"src": DIR, "src/json.py": NEW}, src_task) == [("src/json.py", "shadows_module")]
    assert _refused({"src": DIR, "src/json.py": NEW}, task) == []


@pytest.mark.parametrize(
    ("name", "kind", "module"),
    [
        ("json.py", "f", "json"),
        ("x.cpython-311-x86_64-linux-gnu.so", "f", "x"),  # the longest suffix, not ".so"
        ("x.abi3.so", "f", "x"),
        ("pytest", "d", "pytest"),
        ("pytest", "l", "pytest"),
        ("pytest", "f", ""),  # a file without an import suffix is never imported
        (".py", "f", ""),
    ],
)
def test_import_name(name: str, kind: str, module: str) -> None:
    assert import_name(name, kind, SUFFIXES) == module


def test_sys_path_folders(task: Task) -> None:
    facts = _facts(tree_path=[""], hidden={"src/pkg/tests/test_a.py": (0o644, ""), "tests/data.json": (0o644, "")})
    paths = {"src/pkg/__init__.py", "src/pkg/tests/__init__.py"}
    one = task.model_copy(update={"test_cmd": ["PYTHONPATH=lib:./other python -m pytest"], "test_paths": []})
    assert sys_path_folders(paths, one, facts) == {"", "src", "lib", "other"}
    assert sys_path_folders(paths - {"src/pkg/tests/__init__.py"}, one, facts) == {"", "src/pkg/tests", "lib", "other"}
    assert sys_path_folders(paths | {"docs/conftest.py"}, one, facts) == {"", "src", "lib", "other", "docs"}
    assert pythonpath_folders(["env PYTHONPATH=/abs:$PYTHONPATH:. pytest", "echo 'unbalanced"]) == [""]


# ------------------------------------------------------------------------------------------ real listings


def _list(root: Path) -> dict[str, Entry]:
    return parse_listing(subprocess.run(["bash", "-c", LISTING], cwd=root, capture_output=True, check=True).stdout)


def test_links_and_special_files_in_a_real_listing(tmp_path: Path, task: Task) -> None:
    """None of these can come from a diff (git apply creates symbolic links only; tests of that on
    both backends are in test_grader_attacks.py), but the rule does not rely on it: the harness's own
    listing shows each for what it is."""
    (tmp_path / "toposort").mkdir()
    (tmp_path / "toposort" / "graph.py").write_text("x = 1\n")
    before = _list(tmp_path)
    os.link(tmp_path / "toposort" / "graph.py", tmp_path / "toposort" / "twin.py")
    os.mkfifo(tmp_path / "toposort" / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "toposort" / "sock"))
    (tmp_path / "pytest").symlink_to("toposort")
    after = _list(tmp_path)
    assert after["toposort/twin.py"].links == 2
    # graph.py's link count changed too: touched, but an ordinary file the tree had
    found = {(v.path, v.rule) for v in violations(before, after, task, _facts())}
    assert found == {
        ("toposort/twin.py", "hard_link"), ("toposort/pipe", "special_file"), ("toposort/sock", "special_file"),
        ("pytest", "symlink"),
    }  # fmt: skip


# ------------------------------------------------------------------------------------------ gold is never refused

_MODE = re.compile(r"^(new file mode|new mode|deleted file mode) (\d+)$", re.MULTILINE)
HOST_MODULES = sorted(set(sys.builtin_module_names) | set(sys.stdlib_module_names) | {m.name for m in pkgutil.iter_modules()})


def _every_task() -> list[Task]:
    sources = [SAMPLE, ROOT / "real", *sorted(p for p in FIXTURES.iterdir() if p.suffix in (".jsonl", ".parquet", ".arrow"))]
    return [task for source in sources for task in load_source(source).tasks]


def _apply_listing(before: dict[str, Entry], patch: str) -> dict[str, Entry]:
    """The listing a tree would have after ``patch``, from its file list and modes alone."""
    after = dict(before)
    for diff in split_diff(patch):
        modes = dict(_MODE.findall(diff.text.split("\n@@", 1)[0]))
        if diff.old_path and diff.old_path != diff.new_path or "deleted file mode" in modes:
            after.pop(diff.old_path, None)
        if diff.new_path is None or "deleted file mode" in modes:
            continue
        mode = int(modes.get("new file mode") or modes.get("new mode") or "100644", 8)
        old = after.get(diff.new_path)
        kind = "l" if mode >> 12 == 0o12 else "f"
        after[diff.new_path] = Entry(kind, mode & 0o7777 if old is None or "new mode" in modes else old.mode, 1, "gold")
        for folder in PurePosixPath(diff.new_path).parents:
            if str(folder) != ".":
                after.setdefault(str(folder), DIR)
    return after


def _tree_listing(task: Task) -> dict[str, Entry]:
    """The task's base tree as the harness lists it (sample tasks, real fix commits); what the patch
    names where the tree is an image that is not here (corpus fixtures)."""
    if task.repo_source.kind != "image":
        return _list(prepare_tree(task, Settings.from_env()))
    paths = {p for d in split_diff(task.answer.gold_patch) for p in [d.old_path] if p}
    return {p: FILE for p in paths} | {str(a): DIR for p in paths for a in PurePosixPath(p).parents if str(a) != "."}


def _gold_facts(task: Task) -> TaskFacts:
    patch = task.answer.hidden_tests.patch
    hidden = {p: (0o644, "") for d in (split_diff(patch) if patch.strip() else []) for p in [d.new_path] if p}
    hidden |= {p: (0o644, "") for p in task.answer.hidden_tests.files}
    return TaskFacts(protected={}, hidden=hidden, tree_path=[""], modules=HOST_MODULES, plugins=[],
                     suffixes=SUFFIXES, extension_suffixes=EXTENSIONS)  # fmt: skip


def test_no_gold_patch_in_the_repository_is_refused() -> None:
    """Every fixture task, sample task and real fix commit: the rule over the gold patch's files and
    modes, against the base tree where it is here, with the host's modules standing in for the
    environment's."""
    tasks = _every_task()
    assert len(tasks) >= 30, len(tasks)
    refused = {}
    for task in tasks:
        before = _tree_listing(task)
        found = violations(before, _apply_listing(before, task.answer.gold_patch), task, _gold_facts(task))
        if found:
            refused[task.instance_id] = [str(v) for v in found]
    assert refused == {}


REAL_IDS = ["mahmoud__boltons-766b554", "hukkin__tomli-4e245a4", "more-itertools__more-itertools-d64a7d6"]


@pytest.mark.parametrize("instance_id", [REAL_IDS[1], *(pytest.param(i, marks=pytest.mark.slow) for i in REAL_IDS[::2])])
def test_real_gold_is_applied_on_both_backends(instance_id: str, backends: dict[str, Backend]) -> None:
    """The grader itself, on each backend, lets the real fix commits through (tomli puts src/ on
    PYTHONPATH, where its own package shadows nothing new). The sample tasks' gold earns 1 on both
    in test_grader.py."""
    (task,) = [t for t in load_source(ROOT / "real").tasks if t.instance_id == instance_id]
    for backend in backends.values():
        run = run_tests(task, task.answer.gold_patch, backend)
        assert run.outcome == "ok", (backend.name, run.outcome, run.detail)
