"""Per-update training metrics: the record, the token-level statistics, Parquet output and plots.

One ``UpdateMetrics`` row per optimiser update. Rows go to ``<folder>/update-<n>.parquet``, one small
file per update written aside and renamed into place, so a run killed at any moment leaves only
complete rows, and a run resumed from update u rewrites the rows from u on instead of mixing two
histories. TensorBoard gets the same scalars when it is installed; nothing needs it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

from torch import Tensor

from curation.store import read_records, write_records
from harness.records import Record
from training.objectives import importance_weights, mismatch_kl, token_entropy


class UpdateMetrics(Record):
    """What one update did and what it cost. Token metrics are over the update's trainable tokens."""

    update: int
    weight_version: int  # the trainer's weights after this update (what the engines get next)
    started_at: float  # unix seconds: the update began waiting for rollouts
    finished_at: float  # unix seconds: the optimiser step was done
    rollout_wait_s: float  # waiting for enough fresh groups
    train_s: float  # forward, backward and optimiser step
    loss: float
    lr: float
    grad_norm: float
    n_tokens: int
    mismatch_kl: float  # mean ω − log ω − 1, rollout engine vs trainer
    entropy: float
    masked_fraction: float  # trainable tokens dropped by the IcePop ratio mask
    policy_lag_mean: float  # updates between a rollout's weights and the trainer's
    policy_lag_max: int
    stale_groups_dropped: int
    infra_failed_groups: int = 0  # dropped: a rollout ended in env_error (sandbox, engine), not a wrong answer
    reward: float  # mean reward of the trained rollouts (active tasks only)
    adjusted_reward: float  # see training.eviction: retired tasks put back in
    retired_fraction: float
    success_rate: float  # the environment's strict criterion; equals reward unless the recipe is broken
    replay_accuracy: float | None = None  # only on updates where the replay probe ran


@dataclass(frozen=True)
class TokenStats:
    """Token sums that pool across micro-batches by ``+``; the means weigh every token the same."""

    tokens: int = 0
    masked: int = 0
    kl_sum: float = 0.0
    entropy_sum: float = 0.0

    def __add__(self, other: TokenStats) -> TokenStats:
        return TokenStats(
            self.tokens + other.tokens,
            self.masked + other.masked,
            self.kl_sum + other.kl_sum,
            self.entropy_sum + other.entropy_sum,
        )

    @property
    def masked_fraction(self) -> float:
        return self.masked / max(self.tokens, 1)

    @property
    def mismatch_kl(self) -> float:
        return self.kl_sum / max(self.tokens, 1)

    @property
    def entropy(self) -> float:
        return self.entropy_sum / max(self.tokens, 1)


def token_stats(
    logits: Tensor, logp_train: Tensor, logp_rollout: Tensor, mask: Tensor, *, max_ratio: float = 2.0
) -> TokenStats:
    """Masked tokens, mismatch KL and entropy of one (micro-)batch; ``max_ratio`` as in ``cispo_loss``.

    Shapes as in ``training.objectives``: log-probs and ``mask`` ``[R, T]``, ``logits`` ``[R, T, V]``.
    """
    keep = mask.bool()
    tokens = int(keep.sum())
    ratio = importance_weights(logp_train.detach(), logp_rollout.detach())
    # "not ≤" rather than ">": a NaN ratio fails the loss's keep test too, so it counts as masked here
    masked = int((keep & ~(ratio <= max_ratio)).sum())
    return TokenStats(
        tokens=tokens,
        masked=masked,
        kl_sum=float(mismatch_kl(logp_train, logp_rollout, mask)) * tokens,
        entropy_sum=float(token_entropy(logits, mask, reduction="sum")),
    )


def policy_lag(rollout_versions: Sequence[int], trainer_version: int) -> tuple[float, int]:
    """(mean, max) of trainer_version − version over the rollouts; (0.0, 0) for none.

    A rollout whose weights changed mid-generation should pass its oldest version: its earliest
    tokens are the most off-policy.
    """
    lags = [trainer_version - v for v in rollout_versions]
    if not lags:
        return 0.0, 0
    return sum(lags) / len(lags), max(lags)


def _summary_writer(logdir: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional; Parquet is the record
        return None
    return SummaryWriter(log_dir=str(logdir))


class MetricsWriter:
    """Writes one Parquet row per update into ``folder`` (and to TensorBoard under ``folder/tensorboard``).

    ``start_update``: the first update this run will write. Rows from it on belong to a run being
    redone (a resume from an earlier checkpoint) and are deleted, so a second crash cannot leave
    rows from two runs interleaved.
    """

    def __init__(self, folder: Path, *, start_update: int = 0) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        for path in folder.glob("update-*.parquet"):
            if int(path.stem.removeprefix("update-")) >= start_update:
                path.unlink()
        self._tensorboard = _summary_writer(folder / "tensorboard")

    def write(self, metrics: UpdateMetrics) -> None:
        path = self.folder / f"update-{metrics.update:08d}.parquet"
        partial = self.folder / f".{path.name}.partial"  # dot-named: readers never glob it
        write_records(partial, UpdateMetrics, [metrics])
        os.replace(partial, path)
        if self._tensorboard is not None:
            for name, value in metrics.model_dump(exclude={"update"}).items():
                if value is not None:
                    self._tensorboard.add_scalar(f"train/{name}", value, metrics.update)
            self._tensorboard.flush()

    def close(self) -> None:
        if self._tensorboard is not None:
            self._tensorboard.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def updates_done(folder: Path) -> int:
    """Updates whose metrics a run folder holds (what a resumed run has behind it)."""
    return sum(1 for _ in folder.glob("update-*.parquet"))


def read_metrics(folder: Path) -> list[UpdateMetrics]:
    """Every row in ``folder``, by update."""
    rows = [
        cast(UpdateMetrics, row)
        for path in folder.glob("update-*.parquet")
        for row in read_records(path, UpdateMetrics)
    ]
    return sorted(rows, key=lambda r: r.update)


def plot_metrics(folder: Path, out_png: Path) -> None:
    """Four panels per update: reward and adjusted reward (replay accuracy as dots), entropy,
    mismatch KL, retired fraction. Written aside and renamed, so a viewer never sees half a PNG."""
    # imported here: slow to import, and only plots need it
    from matplotlib.figure import Figure

    rows = read_metrics(folder)
    updates = [r.update for r in rows]
    fig = Figure(figsize=(8, 10), layout="constrained")
    reward, entropy, kl, retired = fig.subplots(4, 1, sharex=True)
    reward.plot(updates, [r.reward for r in rows], label="reward")
    reward.plot(updates, [r.adjusted_reward for r in rows], label="eviction-adjusted reward")
    replays = [r for r in rows if r.replay_accuracy is not None]
    if replays:
        accuracy = [r.replay_accuracy for r in replays]
        reward.plot([r.update for r in replays], accuracy, "o", label="replay accuracy")
    reward.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=3, frameon=False)  # above: never on data
    reward.set_ylabel("reward")
    entropy.plot(updates, [r.entropy for r in rows])
    entropy.set_ylabel("token entropy")
    kl.plot(updates, [r.mismatch_kl for r in rows])
    kl.set_ylabel("mismatch KL")
    retired.plot(updates, [r.retired_fraction for r in rows])
    retired.set_ylabel("retired fraction")
    retired.set_xlabel("update")
    out_png.parent.mkdir(parents=True, exist_ok=True)
    partial = out_png.with_name(f".{out_png.name}.partial")
    fig.savefig(partial, format="png")
    os.replace(partial, out_png)
