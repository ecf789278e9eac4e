"""Corpus files load row by row: every bad line is a load error with its line number, the rest load,
and reading a local file writes nothing anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.sources import load_corpus_file, load_sources

ROOT = Path(__file__).resolve().parents[1]
SWE_BENCH = ROOT / "data" / "fixtures" / "swe_bench.jsonl"


def good_rows() -> list[dict]:
    """The fixture's rows that load (the others are malformed on purpose)."""
    rows = [json.loads(line) for line in SWE_BENCH.read_text().splitlines()]
    loaded = {t.instance_id for t in load_corpus_file(str(SWE_BENCH)).tasks}
    return [r for r in rows if r["instance_id"] in loaded]


def hostile_corpus(path: Path) -> Path:
    """Two good rows, a truncated line, a path-like id and an absolute id (lines 3, 4 and 5)."""
    first, second = good_rows()[:2]
    lines = [
        json.dumps(first),
        json.dumps(second),
        json.dumps(first)[:57],
        json.dumps(dict(first, instance_id="../../etc")),
        json.dumps(dict(first, instance_id="/tmp/swedeck-escaped")),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_bad_line_a_path_like_id_and_an_absolute_id_are_three_load_errors(tmp_path: Path) -> None:
    path = hostile_corpus(tmp_path / "rows.jsonl")
    result = load_corpus_file(str(path))
    assert [t.instance_id for t in result.tasks] == [r["instance_id"] for r in good_rows()[:2]]
    assert [(e.location, e.field) for e in result.errors] == [
        (f"{path}#line3", "json"), (f"{path}#line4", "instance_id"), (f"{path}#line5", "instance_id"),
    ]  # fmt: skip
    assert "not valid JSON" in result.errors[0].message
    assert all("is a path" in e.message for e in result.errors[1:])
    assert {e.source for e in result.errors} == {"swe_bench"}


def test_loading_a_local_file_writes_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the Hugging Face loader used to copy every corpus file into its cache under $HOME
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    path = hostile_corpus(tmp_path / "rows.jsonl")
    assert load_sources([path, ROOT / "data" / "fixtures" / "scale_swe.parquet"]).tasks
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]


def test_every_line_bad_and_odd_json_shapes_are_errors_not_crashes(tmp_path: Path) -> None:
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"instance_id": \n[1, 2]\n\n"text"\n')
    result = load_corpus_file(str(lines))
    assert result.tasks == []
    assert [(e.location.rsplit("#", 1)[1], e.message.split(":")[0]) for e in result.errors] == [
        ("line1", "not valid JSON"), ("line2", "expected a JSON object, got list"), ("line4", "expected a JSON object, got str"),
    ]  # fmt: skip
    array = tmp_path / "rows.json"
    array.write_text(json.dumps([good_rows()[0], 7]))
    result = load_corpus_file(str(array))
    assert len(result.tasks) == 1 and [e.location for e in result.errors] == [f"{array}#row1"]


def test_an_unreadable_table_or_unknown_layout_is_one_error_for_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "rows.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    (error,) = load_corpus_file(str(broken)).errors
    assert error.location == str(broken) and "unreadable" in error.message
    other = tmp_path / "qa.parquet"
    pq.write_table(pa.table({"question": ["q"], "answer": ["a"]}), other)
    (error,) = load_corpus_file(str(other)).errors
    assert error.field == "columns" and error.stage == "corpus_file" and "no corpus" in error.message
    with pytest.raises(ValueError, match="no such file"):
        load_corpus_file(str(tmp_path / "missing.jsonl"))
