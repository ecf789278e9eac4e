"""The inference engines on tiny random models: the local transformers engine against full forwards, and
the vLLM client against the in-package server that serves the same routes on a local engine.

The key property (trainer issue): after a weight refresh every cache is invalidated and the kept history
is prefilled again, so the next-token distribution equals a fresh full forward under the new weights;
the same computation on the cache left from the old weights does not.
"""

from __future__ import annotations

import copy
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import torch

from harness.agent.engine import ByteTokenizer, EngineError, assistant_prefix, message, tool_response
from training.engine_server import EngineServer
from training.engines import (
    EngineTimeout,
    EngineUnavailable,
    LocalEngine,
    VLLMClient,
    engine_from_spec,
    scaled_logprobs,
)
from training.models import ModelKind, tiny_model

TOK = ByteTokenizer()
PROMPT = TOK.encode(message("user", "fix the bug") + assistant_prefix())
LONG = 400  # tokens: long enough (~0.5 s) that a pause from another thread lands mid-generation
ATOL = 1e-5


class NeverStop(ByteTokenizer):
    """A tokenizer whose stop id the model can never sample: every generation runs to max_tokens."""

    @property
    def stop_id(self) -> int:
        return -1


class StopAt(ByteTokenizer):
    def __init__(self, stop_id: int) -> None:
        super().__init__()
        self._stop = stop_id

    @property
    def stop_id(self) -> int:
        return self._stop


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    # tiny matmuls run faster on one thread, and the test machine's cores are shared
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def full_logprobs(
    model: torch.nn.Module, prompt: list[int], tokens: list[int], temperature: float = 1.0
) -> list[float]:
    """Log-probs of ``tokens`` after ``prompt`` from one full forward, no cache."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + tokens])).logits[0]
    rows = scaled_logprobs(logits[len(prompt) - 1 : len(prompt) - 1 + len(tokens)], temperature)
    return [float(rows[i, t]) for i, t in enumerate(tokens)]


def perturbed(model: torch.nn.Module, seed: int = 7) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {name: p.detach() + 0.05 * torch.randn(p.shape, generator=g) for name, p in model.named_parameters()}


def split_old_new(got: list[float], old: list[float], new: list[float]) -> int:
    """How many leading tokens were sampled under the old weights; asserts every later one was sampled
    under the new weights (after a re-prefill) and that the weights did differ."""
    k = 0
    while k < len(got) and abs(got[k] - old[k]) <= ATOL:
        k += 1
    assert all(abs(g - n) <= ATOL for g, n in zip(got[k:], new[k:])), "a token after the refresh used stale state"
    assert all(abs(o - n) > ATOL for o, n in zip(old[k:], new[k:]))
    return k


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.005)


def sampled_some(engine: LocalEngine, *, since: int) -> None:
    """Wait until a generation started after ``since`` forwarded tokens has sampled a few tokens (each
    decoding step feeds the previous token), so a pause lands mid-generation."""
    wait_until(lambda: engine.forwarded_tokens - since > len(PROMPT) + 8)


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}
    thread = threading.Thread(target=lambda: out.update(value=fn()), daemon=True)
    thread.start()
    return thread, out


# ------------------------------------------------------------------------------------------ local engine


@pytest.mark.parametrize(("kind", "temperature"), [("dense", 1.0), ("dense", 0.7), ("hybrid", 1.0)])
def test_sampled_logprobs_equal_a_full_forward(kind: ModelKind, temperature: float) -> None:
    engine = LocalEngine(tiny_model(kind), NeverStop())
    sample = engine.generate(PROMPT, max_tokens=24, temperature=temperature, seed=1)
    assert len(sample.token_ids) == 24 and sample.finish_reason == "length"
    expected = full_logprobs(engine.model, PROMPT, sample.token_ids, temperature)
    assert sample.logprobs == pytest.approx(expected, abs=ATOL)


def test_stop_id_ends_the_turn_and_max_tokens_the_length() -> None:
    model = tiny_model("dense")
    greedy = LocalEngine(model, NeverStop()).generate(PROMPT, max_tokens=8, temperature=0.0)
    assert greedy.logprobs == pytest.approx(full_logprobs(model, PROMPT, greedy.token_ids), abs=ATOL)
    first_seen = [i for i, t in enumerate(greedy.token_ids) if t not in greedy.token_ids[:i]]
    at = first_seen[-1]  # the last token the greedy path produces for the first time
    stopped = LocalEngine(model, StopAt(greedy.token_ids[at])).generate(PROMPT, max_tokens=8, temperature=0.0)
    assert stopped.finish_reason == "stop"
    assert stopped.token_ids == greedy.token_ids[: at + 1]  # the stop token is included
    short = LocalEngine(model, NeverStop()).generate(PROMPT, max_tokens=3, seed=0)
    assert (len(short.token_ids), short.finish_reason) == (3, "length")
    with pytest.raises(ValueError):
        LocalEngine(model, TOK).generate([], max_tokens=3)


def test_a_seed_makes_sampling_deterministic() -> None:
    engine = LocalEngine(tiny_model("dense"), NeverStop())
    a, b = (engine.generate(PROMPT, max_tokens=16, seed=11) for _ in range(2))
    assert a == b
    assert engine.generate(PROMPT, max_tokens=16, seed=12).token_ids != a.token_ids


def test_a_session_prefills_only_the_new_suffix_and_matches_no_cache() -> None:
    model = tiny_model("dense")
    cached, uncached = LocalEngine(model, TOK), LocalEngine(model, TOK)
    turn1 = cached.generate(PROMPT, max_tokens=16, seed=1, session="t")
    assert turn1 == uncached.generate(PROMPT, max_tokens=16, seed=1)
    prompt2 = PROMPT + turn1.token_ids + TOK.encode(tool_response("ok") + assistant_prefix())
    before = cached.forwarded_tokens
    turn2 = cached.generate(prompt2, max_tokens=16, seed=2, session="t")
    reference = uncached.generate(prompt2, max_tokens=16, seed=2)
    assert turn2.token_ids == reference.token_ids
    assert turn2.logprobs == pytest.approx(reference.logprobs, abs=ATOL)
    # the cache held the prompt and every sampled token but the last, which was never fed
    in_cache = len(PROMPT) + len(turn1.token_ids) - 1
    assert cached.forwarded_tokens - before == len(prompt2) - in_cache + len(turn2.token_ids) - 1

    # a prompt that rewrites the history is prefilled in full, and still right
    rewritten = PROMPT + TOK.encode("no tools needed" + tool_response("ok") + assistant_prefix())
    before = cached.forwarded_tokens
    turn3 = cached.generate(rewritten, max_tokens=4, seed=3, session="t")
    assert cached.forwarded_tokens - before == len(rewritten) + len(turn3.token_ids) - 1
    assert turn3.logprobs == pytest.approx(full_logprobs(model, rewritten, turn3.token_ids), abs=ATOL)

    # after a reset the kept history is prefilled again
    assert cached.reset_prefix_cache()
    before = cached.forwarded_tokens
    cached.next_token_logprobs(rewritten + turn3.token_ids, session="t")
    assert cached.forwarded_tokens - before == len(rewritten) + len(turn3.token_ids)


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_after_a_weight_refresh_the_next_token_distribution_is_a_fresh_full_forward(kind: ModelKind) -> None:
    engine = LocalEngine(tiny_model(kind), TOK)
    turn1 = engine.generate(PROMPT, max_tokens=12, seed=0, session="traj")
    history = PROMPT + turn1.token_ids + TOK.encode(tool_response("3 passed") + assistant_prefix())
    # the engine's own cache for this trajectory, as it stands before the refresh
    stale = engine._sessions["traj"]

    assert engine.update_weights(perturbed(engine.model), version=1) == 1
    before = engine.forwarded_tokens
    got = engine.next_token_logprobs(history, session="traj")
    assert engine.forwarded_tokens - before == len(history)  # the whole kept history, re-prefilled

    with torch.no_grad():
        fresh = engine.model(input_ids=torch.tensor([history])).logits[0, -1].float().log_softmax(-1)
    assert torch.allclose(got, fresh, atol=ATOL)
    # the same step without invalidation: extend the old cache by the new suffix under the new weights
    reused = scaled_logprobs(engine._forward(history[len(stale.ids) :], stale.cache), 1.0)
    assert (reused - fresh).abs().max() > 1e-3

    turn2 = engine.generate(history, max_tokens=8, seed=1, session="traj")
    assert turn2.weight_version == 1
    assert turn2.logprobs == pytest.approx(full_logprobs(engine.model, history, turn2.token_ids), abs=ATOL)


def test_an_in_flight_generation_re_prefills_its_history_when_weights_change() -> None:
    engine = LocalEngine(tiny_model("dense"), NeverStop())
    old_model = copy.deepcopy(engine.model)
    thread, out = in_thread(lambda: engine.generate(PROMPT, max_tokens=LONG, seed=5))
    sampled_some(engine, since=0)
    engine.pause("keep")
    assert engine.is_paused() and thread.is_alive()
    engine.update_weights(perturbed(engine.model), version=1)
    engine.resume()
    thread.join(30)
    sample = out["value"]
    assert len(sample.token_ids) == LONG and sample.weight_version == 0  # the oldest token's version
    old = full_logprobs(old_model, PROMPT, sample.token_ids)
    new = full_logprobs(engine.model, PROMPT, sample.token_ids)
    assert 0 < split_old_new(sample.logprobs, old, new) < LONG


def test_pause_abort_ends_in_flight_generations_and_holds_new_ones() -> None:
    engine = LocalEngine(tiny_model("dense"), NeverStop())
    reference = engine.generate(PROMPT, max_tokens=LONG, seed=5)
    thread, out = in_thread(lambda: engine.generate(PROMPT, max_tokens=LONG, seed=5))
    wait_until(lambda: engine.inflight == 1)
    engine.pause("abort")  # returns once the in-flight generation has ended
    thread.join(5)
    aborted = out["value"]
    assert aborted.finish_reason == "abort" and len(aborted.token_ids) < LONG
    assert aborted.token_ids == reference.token_ids[: len(aborted.token_ids)]

    waiting, out = in_thread(lambda: engine.generate(PROMPT, max_tokens=4, seed=5))
    waiting.join(0.2)
    assert waiting.is_alive()  # admitted only after resume
    engine.resume()
    waiting.join(5)
    assert out["value"].token_ids == reference.token_ids[:4]


# ------------------------------------------------------------------------------------------ client and server


@pytest.fixture
def served() -> Iterator[tuple[LocalEngine, VLLMClient]]:
    engine = LocalEngine(tiny_model("dense"), NeverStop())
    with EngineServer(engine) as url, VLLMClient(url, "tiny-dense", NeverStop(), timeout=30) as client:
        yield engine, client
        engine.resume()  # never leave a request thread waiting on a paused engine


def test_the_client_samples_what_the_local_engine_samples(served: tuple[LocalEngine, VLLMClient]) -> None:
    engine, client = served
    for temperature in (1.0, 0.0):
        local = engine.generate(PROMPT, max_tokens=20, temperature=temperature, seed=3)
        assert client.generate(PROMPT, max_tokens=20, temperature=temperature, seed=3) == local
    # a seed whose sample reaches the stop id: the server stops there and the client keeps the stop token
    stopping = LocalEngine(tiny_model("dense"), TOK)
    seed = next(s for s in range(20) if stopping.generate(PROMPT, max_tokens=LONG, seed=s).finish_reason == "stop")
    with EngineServer(stopping) as url, VLLMClient(url, "tiny-dense", TOK) as stops:
        sample = stops.generate(PROMPT, max_tokens=LONG, seed=seed)
        assert sample == stopping.generate(PROMPT, max_tokens=LONG, seed=seed)
        assert sample.finish_reason == "stop" and sample.token_ids[-1] == TOK.stop_id


def test_pause_holds_client_generation_until_resume(served: tuple[LocalEngine, VLLMClient]) -> None:
    engine, client = served
    reference = engine.generate(PROMPT, max_tokens=20, seed=4)
    client.pause("keep")
    assert client.is_paused()
    thread, out = in_thread(lambda: client.generate(PROMPT, max_tokens=20, seed=4))
    thread.join(0.3)
    assert thread.is_alive()
    client.resume()
    thread.join(10)
    assert out["value"] == reference and not client.is_paused()


def test_a_weight_update_through_the_server_bumps_the_version_and_changes_outputs(
    served: tuple[LocalEngine, VLLMClient], tmp_path
) -> None:
    engine, client = served
    before = client.generate(PROMPT, max_tokens=12, seed=6)
    path = tmp_path / "weights.pt"
    torch.save(perturbed(engine.model), path)
    client.pause()
    assert client.update_weights_from_path(path, version=3) == 3
    client.resume()
    assert client.weight_version == client.server_weight_version() == engine.weight_version == 3
    after = client.generate(PROMPT, max_tokens=12, seed=6)
    assert after.weight_version == 3 and after.logprobs != before.logprobs
    assert after.logprobs == pytest.approx(full_logprobs(engine.model, PROMPT, after.token_ids), abs=ATOL)
    with pytest.raises(EngineError, match="FileNotFoundError"):
        client.update_weights_from_path(tmp_path / "missing.pt")
    torch.save({"model.norm.weight": torch.ones(3)}, path)
    with pytest.raises(EngineError, match=r"do not fit the model: \['model.norm.weight \(3,\) != \(64,\)'\]"):
        client.update_weights_from_path(path)
    assert client.weight_version == engine.weight_version == 3


def test_an_aborted_request_is_resubmitted_and_re_prefilled_under_the_new_weights(
    served: tuple[LocalEngine, VLLMClient], tmp_path
) -> None:
    engine, client = served
    old_model = copy.deepcopy(engine.model)
    path = tmp_path / "weights.pt"
    torch.save(perturbed(engine.model), path)
    since = engine.forwarded_tokens
    thread, out = in_thread(lambda: client.generate(PROMPT, max_tokens=LONG, seed=5))
    sampled_some(engine, since=since)
    client.pause("abort")
    client.update_weights_from_path(path, version=1)
    client.resume()
    thread.join(30)
    sample = out["value"]
    assert (len(sample.token_ids), sample.finish_reason, sample.weight_version) == (LONG, "length", 0)
    old = full_logprobs(old_model, PROMPT, sample.token_ids)
    new = full_logprobs(engine.model, PROMPT, sample.token_ids)
    assert 0 < split_old_new(sample.logprobs, old, new) < LONG


def test_reset_prefix_cache_reports_and_running_requests_recompute(served: tuple[LocalEngine, VLLMClient]) -> None:
    engine, client = served
    assert client.reset_prefix_cache() is True
    thread, out = in_thread(lambda: client.generate(PROMPT, max_tokens=LONG, seed=8))
    wait_until(lambda: engine.inflight == 1)
    time.sleep(0.05)
    client.pause("keep")
    assert client.reset_prefix_cache() is False  # a request is running: nothing reset, as in vLLM
    assert client.reset_prefix_cache(reset_running_requests=True) is True
    before = engine.forwarded_tokens
    client.resume()
    thread.join(30)
    sample = out["value"]
    # the frozen request re-prefilled prompt + its k tokens, then decoded the other LONG - k - 1 one by one
    assert engine.forwarded_tokens - before == len(PROMPT) + LONG - 1
    assert sample.logprobs == pytest.approx(full_logprobs(engine.model, PROMPT, sample.token_ids), abs=ATOL)


def test_a_paused_server_times_out_with_a_clear_error(served: tuple[LocalEngine, VLLMClient]) -> None:
    engine, client = served
    engine.pause("keep")
    impatient = VLLMClient(client.base_url, "tiny-dense", NeverStop(), timeout=0.5)
    with impatient, pytest.raises(EngineTimeout, match="no answer within 0.5s"):
        impatient.generate(PROMPT, max_tokens=4)


def test_server_errors_are_retried_and_request_errors_are_not(
    served: tuple[LocalEngine, VLLMClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, client = served
    calls: list[int] = []
    real = engine.is_paused

    def flaky() -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("transient")
        return real()

    monkeypatch.setattr(engine, "is_paused", flaky)
    client.backoff_s = 0.01
    assert client.is_paused() is False and len(calls) == 2
    with pytest.raises(EngineError, match="unknown worker method 'reload_weights'"):
        client.collective_rpc("reload_weights")
    with pytest.raises(EngineError, match="does not exist"):
        VLLMClient(client.base_url, "another-model", NeverStop()).generate(PROMPT, max_tokens=2)


def test_an_unreachable_server_or_missing_routes_fail_at_startup() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EngineUnavailable, match="cannot reach the server"):
        VLLMClient(f"http://127.0.0.1:{port}", "tiny-dense", TOK, retries=1, backoff_s=0.01)
    server = EngineServer(LocalEngine(tiny_model("dense"), TOK))
    del server.routes[("POST", "/collective_rpc")]
    with server as url, pytest.raises(EngineError, match=r"lacks routes \['/collective_rpc'\]"):
        VLLMClient(url, "tiny-dense", TOK)


def test_engine_from_spec() -> None:
    local = engine_from_spec("local", "tiny-hybrid")
    assert isinstance(local, LocalEngine) and type(local.model).__name__ == "Qwen3_5ForCausalLM"
    with EngineServer(local, model="tiny-hybrid") as url:
        remote = engine_from_spec(url + "/v1", "tiny-hybrid")
        assert isinstance(remote, VLLMClient) and remote.generate(PROMPT, max_tokens=3, seed=0) == local.generate(
            PROMPT, max_tokens=3, seed=0
        )
        remote.close()
    for spec, name in (("local", "Qwen/Qwen3-8B"), ("grpc://host", "tiny-dense")):
        with pytest.raises(ValueError):
            engine_from_spec(spec, name)


def test_the_client_module_imports_without_torch() -> None:
    code = "import sys, training.engines; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
