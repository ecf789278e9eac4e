"""The real-code benchmark's data (data/real, labelled in data/real_libraries/*.toml): every labelled task
loads, the libraries split into a development and a held-out part, its hand-written patches apply to its buggy tree and differ from gold, and (slow, bwrap) the one
grader gives each shortcut of a too-loose task reward 1 on the raw tests, and each correct alternative
reward 1, except on an over-restrictive task, whose raw tests reject it: what the labels claim."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from curation.sources import load_sources
from data.benchmark import real_tasks
from harness.grading.grader import grade
from harness.records import Task

REAL = Path(__file__).resolve().parent.parent / "data" / "real"
LABELS = {t.name: {"label": t.label, "patches": list(t.patches), "note": t.note, "part": t.part} for t in real_tasks()}
PATCHES = ("shortcut", "alternative")
PAIRS = [(iid, kind) for iid, label in sorted(LABELS.items()) for kind in label["patches"]]


@functools.cache
def _make_real():  # noqa: ANN202 - the builder module, which is a script, not a package
    spec = importlib.util.spec_from_file_location("make_real", REAL / "make_real.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["make_real"] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    loaded = load_sources([REAL])
    assert loaded.errors == []
    return {t.instance_id: t for t in loaded.tasks}


def test_every_labelled_task_is_built_by_make_real_and_loads(tasks: dict[str, Task]) -> None:
    built = {t.name for t in _make_real().TASKS}
    assert set(LABELS) <= built and set(LABELS) <= set(tasks)
    assert {label["label"] for label in LABELS.values()} <= {"too_loose", "adequate", "over_restrictive"}
    libraries = Counter(tasks[iid].repo for iid in LABELS)
    assert len(LABELS) >= 80 and len(libraries) >= 16, libraries
    held_out = {tasks[iid].repo for iid, label in LABELS.items() if label["part"] == "heldout"}
    assert len(held_out) >= 0.4 * len(libraries), held_out  # the split is by library, at least 40% held out
    assert not {"andialbrecht/sqlparse", "python-humanize/humanize", "astanin/python-tabulate", "python-validators/validators",
                "dgilland/pydash", "keleshev/schema"} & set(libraries)
    assert {label["part"] for label in LABELS.values()} <= {"dev", "heldout"}


def test_labels_are_backed_by_the_patches_they_name() -> None:
    """A too-loose task has a shortcut, an over-restrictive one an alternative; every named patch is in
    its folder, and no folder holds a patch its label does not name."""
    for iid, label in LABELS.items():
        assert set(label["patches"]) <= set(PATCHES) and label["note"].strip(), iid
        if label["label"] == "too_loose":
            assert "shortcut" in label["patches"], iid
        if label["label"] == "over_restrictive":
            assert "alternative" in label["patches"], iid
        present = {kind for kind in PATCHES if (REAL / iid / f"{kind}.patch").exists()}
        assert present == set(label["patches"]), iid


def test_is_test_finds_tests_wherever_a_project_keeps_them() -> None:
    is_test = _make_real().is_test
    assert is_test("tests/test_x.py") and is_test("test_semver.py") and is_test("iso8601/test_iso8601.py")
    assert is_test("tests/conftest.py") and is_test("pkg/x_test.py") and is_test("tests/helpers.py")
    assert not is_test("src/semver/version.py") and not is_test("tests/data.txt") and not is_test("docs/testing.py")


def test_hand_written_patches_apply_to_the_buggy_tree_and_differ_from_gold(tasks: dict[str, Task], tmp_path: Path) -> None:
    for iid, label in sorted(LABELS.items()):
        task = tasks[iid]
        tree = tmp_path / iid
        subprocess.run(["git", "clone", "-q", "--no-checkout", task.repo_source.path, str(tree)], check=True)  # type: ignore[union-attr]
        subprocess.run(["git", "checkout", "-q", task.repo_source.ref], cwd=tree, check=True)  # type: ignore[union-attr]
        for kind in label["patches"]:
            text = (REAL / iid / f"{kind}.patch").read_text()
            assert text.strip() and text != task.answer.gold_patch, (iid, kind)
            check = subprocess.run(["git", "apply", "--check", "-"], cwd=tree, input=text, text=True, capture_output=True)
            assert check.returncode == 0, (iid, kind, check.stderr)
            # the patch touches the library only: the hidden tests still apply on top of it
            assert not any(line.startswith("+++ b/") and _make_real().is_test(line[6:]) for line in text.splitlines()), (iid, kind)


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize(("instance_id", "kind"), PAIRS, ids=[f"{i}-{k}" for i, k in PAIRS])
def test_hand_written_patch_earns_what_its_label_says_on_the_raw_tests(instance_id: str, kind: str, bwrap_backend, tasks) -> None:  # noqa: ANN001
    """The label's claim, by the one grader on bwrap: a shortcut (a wrong fix) passes the upstream
    tests; a correct alternative passes them unless the task is over-restrictive."""
    text = (REAL / instance_id / f"{kind}.patch").read_text()
    result = grade(tasks[instance_id], text, bwrap_backend)
    want = 0.0 if LABELS[instance_id]["label"] == "over_restrictive" and kind == "alternative" else 1.0
    assert result.reward == want, (result.reason, dict(list(result.differing.items())[:5]))
