"""Judge requests have deadlines: a request ends by its total deadline however the server behaves
(slow drip, hang), a task by its deadline, a run's judge stage by its budget; a reply that is not a
chat completion is an endpoint failure that is retried, with its first bytes in the reason. Every test
here runs in seconds, against the scripted server's wire faults."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from curation.sources import load_source
from data import SAMPLE
from harness.records import Pipeline1Result, Task
from judge import JudgeConfig, JudgeSettings, ScriptedJudge, judge_task
from judge.endpoint import EndpointFailed, RequestFailed, Transcript, complete, post_json

MESSAGES = [{"role": "user", "content": "# Task unknown"}]
QUICK = {"timeout_s": 1.0, "max_retries": 1, "backoff_s": 0.01}


def ask(base_url: str, transcript_dir: Path, deadline_s: float = 60.0, **config: object):  # noqa: ANN201
    transcript = Transcript(transcript_dir, "t")
    try:
        return complete(
            JudgeSettings(base_url=base_url, model="scripted-judge"), JudgeConfig(**{**QUICK, **config}),
            list(MESSAGES), transcript, time.monotonic() + deadline_s,
        )  # fmt: skip
    finally:
        transcript.close()


def failures(transcript_dir: Path) -> list[str]:
    (path,) = transcript_dir.glob("*.jsonl")
    return [e["error"] for e in map(json.loads, path.read_text().splitlines()) if e["event"] == "request_failed"]


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("slow_drip", "no complete reply within 1.0 s; "),  # bytes keep coming: a per-read timeout never fires
        ("hang", "no complete reply within 1.0 s"),
        ("http_500", "HTTP 500: b'{\"error\""),
        ("non_json", "HTTP 200 but not JSON: b'<html><body><h1>502 Bad Gateway"),
        ("wrong_shape", "HTTP 200 but not a chat completion (choices.0.message: "),
    ],
)
def test_each_broken_server_is_an_endpoint_failure_retried_in_bounded_time(fault: str, reason: str, tmp_path: Path) -> None:
    started = time.monotonic()
    with ScriptedJudge("labelled", fault) as base_url, pytest.raises(EndpointFailed) as failed:
        ask(base_url, tmp_path)
    assert time.monotonic() - started < 5  # two attempts of at most 1 s each, and the backoff
    assert "the endpoint failed 2 time(s); last: " + reason in str(failed.value)
    assert len(failures(tmp_path)) == 2 and all(reason in f for f in failures(tmp_path))


def test_a_drip_that_ends_in_time_is_a_reply(tmp_path: Path) -> None:
    with ScriptedJudge("labelled", "slow_drip", drip_s=0.0005) as base_url:
        reply = ask(base_url, tmp_path, timeout_s=30.0)
    assert reply.message["role"] == "assistant" and reply.tokens > 0


@pytest.mark.parametrize("fault", ["non_json", "wrong_shape", "slow_drip"])
def test_a_malformed_reply_once_is_retried_and_the_next_one_used(fault: str, tmp_path: Path) -> None:
    with ScriptedJudge("labelled", fault, fault_requests=1) as base_url:
        reply = ask(base_url, tmp_path)
    assert reply.finish_reason == "stop" and len(failures(tmp_path)) == 1


def test_a_client_error_is_not_retried(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path, "t")
    with ScriptedJudge("labelled") as base_url, pytest.raises(EndpointFailed, match="not retried: HTTP 400"):
        complete(
            JudgeSettings(base_url=base_url), JudgeConfig(**QUICK), [{"role": "tool", "tool_call_id": "x", "content": ""}],
            transcript, time.monotonic() + 10,
        )  # fmt: skip


# ------------------------------------------------------------------------------------------ task and run deadlines


class NoSandboxes:
    """A judge that never calls a tool opens no sandbox; one that did would fail this test."""

    def open(self, task: Task) -> None:
        raise AssertionError("no sandbox expected")


def task_and_p1() -> tuple[Task, Pipeline1Result]:
    (task,) = load_source(SAMPLE / "sample__semverlite-1").tasks
    stamp = {"config_hash": "t", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    p1 = Pipeline1Result(
        **stamp, source="local", repo=task.repo, decision="keep", reason="", infrastructure=False, stage="",
        fail_to_pass=[], pass_to_pass=[], flaky=[], gold_failing=[], binding_assertions=[], label_disagreements=[],
        expected_status={}, runs=0, duration_s=0.0, detail="",
    )  # fmt: skip
    return task, p1


def judge_hanging(tmp_path: Path, run_deadline: float | None = None, **config: object):  # noqa: ANN201
    task, p1 = task_and_p1()
    stamp = {"config_hash": "t", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    started = time.monotonic()
    with ScriptedJudge("labelled", "hang") as base_url:
        record, _ = judge_task(
            task, p1, [], NoSandboxes(), stamp, settings=JudgeSettings(base_url=base_url, model="scripted-judge"),  # type: ignore[arg-type]
            config=JudgeConfig(**config), transcript_dir=tmp_path, run_deadline=run_deadline,
        )  # fmt: skip
    return record, time.monotonic() - started


def test_the_task_deadline_ends_a_session_whose_requests_would_take_longer(tmp_path: Path) -> None:
    # four attempts of 30 s would take two minutes; the task's deadline is 1.5 s
    record, seconds = judge_hanging(tmp_path, timeout_s=30.0, max_retries=3, backoff_s=0.01, task_deadline_s=1.5)
    assert seconds < 4
    assert record.verdict == "unjudgeable" and record.detail.startswith("task deadline reached: 1.5 s"), record.detail


def test_the_run_budget_bounds_a_task_started_late_in_the_run(tmp_path: Path) -> None:
    record, seconds = judge_hanging(tmp_path, run_deadline=time.time() + 1.0, timeout_s=30.0, run_budget_s=600.0)
    assert seconds < 4
    assert record.detail.startswith("the run's judge budget is spent (run_budget_s = 600)"), record.detail
    spent, _ = judge_hanging(tmp_path, run_deadline=time.time() - 1, run_budget_s=600.0)
    assert spent.verdict == "unjudgeable" and "budget is spent" in spent.detail


def test_a_reply_that_stalls_after_its_headers_ends_at_the_deadline_not_a_read_timeout_later() -> None:
    # httpx bounds each read by the time left when the request began: a stall that starts late would
    # run past the deadline by up to that much, so a timer cuts the socket at the deadline
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        time.sleep(1.0)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(10)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(RequestFailed, match=r"no complete reply within 2.0 s; 1 bytes came: b'\{'"):
        post_json(f"http://127.0.0.1:{server.getsockname()[1]}/v1/chat/completions", {}, {}, started + 2.0)
    assert time.monotonic() - started < 2.6  # a read timeout would end it at about 3 s
    server.close()
