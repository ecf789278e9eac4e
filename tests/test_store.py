"""The Parquet store: schemas derived from the records, round trips, atomic folders, the catalog."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from curation.store import arrow_schema, build_catalog, commit_folder, connect, read_records, sweep_partials, write_records
from harness.records import Pipeline1Result, RunRecord

STAMP = {"config_hash": "c", "task_hash": "t", "instance_id": "i"}


def _result(**changes: object) -> Pipeline1Result:
    base = dict(
        STAMP, source="local", repo="r", decision="keep", reason="", infrastructure=False, stage="",
        fail_to_pass=["a"], pass_to_pass=[], flaky=[], gold_failing=[], binding_assertions=["t.py:3"],
        label_disagreements=[], expected_status={"a": "PASSED"}, runs=6, duration_s=1.5, detail="",
    )  # fmt: skip
    return Pipeline1Result(**(base | changes))


def test_schema_derives_from_the_record_model() -> None:
    schema = arrow_schema(RunRecord)
    assert schema.names == list(RunRecord.model_fields)
    assert schema.field("statuses").type == pa.map_(pa.string(), pa.string())
    assert schema.field("exit_codes").type == pa.list_(pa.int64())


def test_records_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_records(path, Pipeline1Result, [_result()])
    assert read_records(path, Pipeline1Result) == [_result()]


def test_regression_empty_map_reads_back_as_a_dict(tmp_path: Path) -> None:
    # an empty Arrow map came back as [] and failed validation when Pipeline 2 read a rejected task
    path = tmp_path / "r.parquet"
    write_records(path, Pipeline1Result, [_result(expected_status={})])
    assert read_records(path, Pipeline1Result)[0].expected_status == {}


def test_commit_folder_replaces_atomically_and_sweeps_leftovers(tmp_path: Path) -> None:
    dest = tmp_path / "p1" / "i"
    commit_folder(dest, [("result", Pipeline1Result, [_result()])], {"note.txt": "one"})
    commit_folder(dest, [("result", Pipeline1Result, [_result(reason="gold_fails", decision="reject")])])
    assert [r.reason for r in read_records(dest / "result.parquet", Pipeline1Result)] == ["gold_fails"]
    assert not (dest / "note.txt").exists()
    (tmp_path / "p1" / ".i.partial").mkdir()
    sweep_partials(tmp_path / "p1")
    assert sorted(p.name for p in (tmp_path / "p1").iterdir()) == ["i"]


def test_catalog_has_typed_empty_views_when_nothing_was_written(tmp_path: Path) -> None:
    write_records(tmp_path / "a.parquet", Pipeline1Result, [_result()])
    db = tmp_path / "c.duckdb"
    build_catalog(db, {"p1_results": (str(tmp_path / "a.parquet"), Pipeline1Result), "runs": (str(tmp_path / "none.parquet"), RunRecord)})
    con = connect(db)
    assert con.execute("select instance_id, expected_status['a'] from p1_results").fetchall() == [("i", "PASSED")]
    assert con.execute("select count(*), count(statuses) from runs").fetchall() == [(0, 0)]
