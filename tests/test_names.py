"""The one naming rule: data never becomes a path outside its root, and two strings never share a name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.names import file_name, id_problem, under

HOSTILE = ["..", ".", "../../etc", "/etc/passwd", "a/../../b", "a\x00b", "x" * 5000, "-rf", ".hidden", "", "é😀\ud800"]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_string_becomes_one_short_component_inside_the_root(value: str, tmp_path: Path) -> None:
    name = file_name(value)
    assert "/" not in name and "\x00" not in name and name not in ("", ".", "..")
    assert not name.startswith((".", "-")) and name.isascii() and len(name.encode()) <= 100
    path = under(tmp_path, value)
    assert path.parent == tmp_path
    path.mkdir()  # the file system accepts it
    assert os.listdir(tmp_path) == [name]


def test_plain_ids_keep_their_name() -> None:
    for value in ("django__django-11099", "sample__semverlite-1", "scikit-learn__scikit-learn-13142", "raw"):
        assert file_name(value) == value


def test_case_only_differences_never_collide_on_a_case_insensitive_file_system() -> None:
    values = ["Foo", "foo", "FOO", "Project-MONAI__MONAI-1", "project-monai__monai-1"]
    names = [file_name(v) for v in values]
    assert len({n.casefold() for n in names}) == len(values)


def test_a_slug_can_never_imitate_another_strings_name() -> None:
    # a plain name has no '~'; a string that looks like another's hashed name is itself hashed
    hashed = file_name("Foo")
    assert file_name(hashed) != hashed
    long_a, long_b = "a" * 200, "a" * 199 + "b"  # same slug after the cut, different strings
    assert file_name(long_a) != file_name(long_b)


def test_under_refuses_a_symlink_that_leads_out_of_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "task").symlink_to(outside)
    with pytest.raises(ValueError, match="outside"):
        under(root, "task")
    assert under(root, "task2", "logs") == root / "task2" / "logs"


@pytest.mark.parametrize(("value", "problem"), [
    ("../../etc", "is a path"), ("/abs/id", "is a path"), ("a\\b", "is a path"), ("..", "is a path"),
    ("a\x00b", "control character"), ("line\nbreak", "control character"), ("  ", "is empty"),
])  # fmt: skip
def test_a_path_or_control_character_cannot_be_an_instance_id(value: str, problem: str) -> None:
    assert problem in id_problem(value)


def test_ordinary_ids_are_fine() -> None:
    assert id_problem("Project-MONAI__MONAI-1234") == id_problem("x" * 5000) == ""
