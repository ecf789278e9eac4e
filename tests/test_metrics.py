"""Per-update metrics: token statistics on hand-made tensors, the Parquet writer across a restart, plots."""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from training.metrics import (
    MetricsWriter,
    TokenStats,
    UpdateMetrics,
    plot_metrics,
    policy_lag,
    read_metrics,
    token_stats,
)

LN = math.log


def _metrics(update: int, **changes: object) -> UpdateMetrics:
    base = {
        "update": update, "weight_version": update + 1, "started_at": 1000.0 + update,
        "finished_at": 1000.5 + update, "rollout_wait_s": 0.2, "train_s": 0.3, "loss": 0.1 / (update + 1),
        "lr": 1e-6, "grad_norm": 0.5, "n_tokens": 100, "mismatch_kl": 0.01 * update,
        "entropy": 2.0 - 0.1 * update, "masked_fraction": 0.02, "policy_lag_mean": 0.5, "policy_lag_max": 1,
        "stale_groups_dropped": 0, "reward": 0.4, "adjusted_reward": 0.4 + 0.05 * update,
        "retired_fraction": 0.05 * update, "success_rate": 0.4,
    }  # fmt: skip
    return UpdateMetrics(**(base | changes))


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two rollouts, three positions; ω per trainable token: 1, 3 (masked at 2), 0.5 and 1."""
    logp_rollout = torch.full((2, 3), LN(0.2))
    logp_train = torch.log(torch.tensor([[0.2, 0.6, 0.9], [0.1, 0.2, 0.3]]))
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    logp_train[0, 2] = -math.inf  # garbage off the trainable tokens must not leak into the metrics
    logits = torch.zeros(2, 3, 8)  # uniform over 8 tokens: entropy ln 8 everywhere
    logits[0, 2] = torch.nan
    return logits, logp_train, logp_rollout, mask


def test_token_stats_match_the_formulas_on_trainable_tokens_only() -> None:
    stats = token_stats(*_batch(), max_ratio=2.0)
    omegas = [1.0, 3.0, 0.5, 1.0]
    assert stats.tokens == 4
    assert stats.masked_fraction == pytest.approx(1 / 4)
    assert stats.mismatch_kl == pytest.approx(sum(w - LN(w) - 1 for w in omegas) / 4, rel=1e-5)
    assert stats.entropy == pytest.approx(LN(8), rel=1e-5)
    assert token_stats(*_batch(), max_ratio=4.0).masked == 0


def test_token_stats_pool_over_micro_batches_weighting_every_token_the_same() -> None:
    logits, logp_train, logp_rollout, mask = _batch()
    whole = token_stats(logits, logp_train, logp_rollout, mask)
    one = token_stats(logits[:1], logp_train[:1], logp_rollout[:1], mask[:1])
    two = token_stats(logits[1:], logp_train[1:], logp_rollout[1:], mask[1:])
    pooled = TokenStats() + one + two
    assert pooled.tokens == whole.tokens and pooled.masked == whole.masked
    assert pooled.mismatch_kl == pytest.approx(whole.mismatch_kl)
    assert pooled.entropy == pytest.approx(whole.entropy)
    assert TokenStats().mismatch_kl == 0.0 and TokenStats().masked_fraction == 0.0


def test_policy_lag_counts_updates_behind_the_trainer() -> None:
    assert policy_lag([7, 5, 6, 6], trainer_version=7) == (1.0, 2)
    assert policy_lag([], trainer_version=3) == (0.0, 0)


def test_update_metrics_reject_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        _metrics(0, rewrd=1.0)


def test_writer_rows_survive_a_restart_and_a_resume_redoes_later_rows(tmp_path: Path) -> None:
    folder = tmp_path / "metrics"
    with MetricsWriter(folder) as writer:
        for u in range(4):
            writer.write(_metrics(u, replay_accuracy=0.75 if u == 2 else None))
    (folder / ".update-00000004.parquet.partial").write_bytes(b"killed mid-write")

    rows = read_metrics(folder)  # a fresh reader, as after the process died
    assert rows == [_metrics(u, replay_accuracy=0.75 if u == 2 else None) for u in range(4)]
    assert rows[0].replay_accuracy is None

    # resumed from the checkpoint after update 1: rows 2 and 3 belong to the lost run
    with MetricsWriter(folder, start_update=2) as writer:
        assert [r.update for r in read_metrics(folder)] == [0, 1]
        writer.write(_metrics(2, reward=0.9))
    assert [(r.update, r.reward) for r in read_metrics(folder)] == [(0, 0.4), (1, 0.4), (2, 0.9)]


def test_a_diverged_update_is_recorded_as_it_was(tmp_path: Path) -> None:
    # a NaN loss or an infinite gradient norm is the row that matters most; it must not become null
    with MetricsWriter(tmp_path) as writer:
        writer.write(_metrics(0, loss=math.nan, grad_norm=math.inf))
    (row,) = read_metrics(tmp_path)
    assert math.isnan(row.loss) and row.grad_norm == math.inf


def test_tensorboard_gets_the_scalars_when_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logged: list[tuple[str, float, int]] = []

    class FakeSummaryWriter:
        def __init__(self, log_dir: str) -> None:
            self.log_dir = log_dir

        def add_scalar(self, tag: str, value: float, step: int) -> None:
            logged.append((tag, value, step))

        def flush(self) -> None: ...

        def close(self) -> None: ...

    fake = types.ModuleType("torch.utils.tensorboard")
    fake.SummaryWriter = FakeSummaryWriter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", fake)
    with MetricsWriter(tmp_path) as writer:
        writer.write(_metrics(3))
    assert ("train/reward", 0.4, 3) in logged
    assert not any(tag in ("train/update", "train/replay_accuracy") for tag, _, _ in logged)


def test_plot_is_written(tmp_path: Path) -> None:
    with MetricsWriter(tmp_path / "metrics") as writer:
        for u in range(5):
            writer.write(_metrics(u, replay_accuracy=1.0 if u == 3 else None))
    out = tmp_path / "plots" / "train.png"
    plot_metrics(tmp_path / "metrics", out)
    assert out.read_bytes().startswith(b"\x89PNG") and out.stat().st_size > 10_000
    assert [p.name for p in out.parent.iterdir()] == ["train.png"]
