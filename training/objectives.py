"""The trainer's objective: group advantages, the CISPO loss with IcePop masking, PPO-clip, metrics.

Small pure functions on tensors; nothing here touches a model, an optimiser or a config. Shapes: a
batch is ``[R, T]`` (R rollouts padded to T token positions). ``mask`` marks the *trainable* tokens
(the ones the policy sampled); prompt, tool-output and padding positions are 0 and never receive a
gradient, whatever garbage their log-probs hold.

The default recipe (issue 6, "Algorithm"; derivation in ``shared/reference/trainer.md``):

    ω = exp(logp_train − logp_rollout)                       per token, vs the rollout engine
    m = mask · 1[ω ≤ max_ratio]                              IcePop: drop, do not clip
    L = −(1/N) Σ m · sg(ω) · A · logp_train                  N = Σ mask over the WHOLE batch
    A = reward − group mean                                  no std division

so ∂L/∂logp_train = −ω·A/N on a kept token and exactly 0 on a dropped one. N keeps the dropped tokens
so masking never inflates the gradient of the tokens that remain. The alternatives needed for
ablations (std division, per-rollout normalisation, PPO-clip) sit behind keyword arguments.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from training.config import Normalisation

NORMALISATIONS: tuple[str, ...] = ("batch_tokens", "per_rollout")
STD_EPS = 1e-6


# ------------------------------------------------------------------------------------------ advantages


def group_advantages(rewards: Tensor, group_size: int, *, std_normalise: bool = False) -> Tensor:
    """A_i = r_i − mean(group of i); with ``std_normalise``, divided by (std(group) + 1e-6).

    ``rewards`` is 1-D with the G rollouts of each group contiguous (``[g0 r0..rG-1, g1 ..]``).
    The default omits the std division (Dr.GRPO): dividing by a small std blows up the advantages of
    nearly-solved or nearly-hopeless groups, which is where the reward signal is noisiest. The std is
    the population std (``unbiased=False``) of the group; the 1e-6 keeps a group of equal rewards at
    A = 0 instead of 0/0. A group of equal rewards gets zero advantage either way, hence no gradient.
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D, got shape {tuple(rewards.shape)}")
    if group_size < 1 or rewards.numel() % group_size != 0:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    groups = rewards.to(torch.float32).reshape(-1, group_size)
    advantages = groups - groups.mean(dim=1, keepdim=True)
    if std_normalise:
        advantages = advantages / (groups.std(dim=1, unbiased=False, keepdim=True) + STD_EPS)
    return advantages.reshape(-1)


# ------------------------------------------------------------------------------- ratios and metrics


def importance_weights(logp_train: Tensor, logp_rollout: Tensor) -> Tensor:
    """ω = exp(logp_train − logp_rollout): how much likelier the trainer finds a token than the engine
    that sampled it did. Not detached: the losses decide where the gradient may flow."""
    return torch.exp(logp_train - logp_rollout)


def mismatch_kl(logp_train: Tensor, logp_rollout: Tensor, mask: Tensor) -> Tensor:
    """mean over trainable tokens of ω − log ω − 1 (Schulman's k3), detached; 0 with no tokens.

    An unbiased, non-negative estimate of KL(rollout ‖ trainer) from the rollout's own samples: the
    size of the train/inference mismatch the IcePop mask guards against. Exactly 0 when the two
    log-probs agree.
    """
    keep = mask.bool()
    log_ratio = torch.where(keep, logp_train.detach().double() - logp_rollout.detach().double(), 0.0)
    # k3 >= 0 exactly; in floating point exp(r) - r - 1 cancels to a few ulps either side of 0 when the
    # two log-probs nearly agree, so it is computed as expm1(r) - r in float64 and rounded up to 0
    k3 = (torch.expm1(log_ratio) - log_ratio).clamp(min=0.0)
    return ((k3 * keep).sum() / keep.sum().clamp(min=1)).to(logp_train.dtype)


def token_entropy(
    logits: Tensor, mask: Tensor, *, reduction: Literal["mean", "sum", "none"] = "mean"
) -> Tensor:
    """Entropy logsumexp(z) − Σ softmax(z)·z of the trainer's next-token distribution, detached.

    ``logits`` is ``[..., T, V]``, ``mask`` ``[..., T]``. A metric (collapse of entropy is the early
    sign of a policy that stopped exploring), so no gradient; computed in fp32 on the trainable
    positions only, so a bf16 model with a large vocabulary does not pay for its padding.
    ``reduction``: "mean" over trainable tokens (0 with none), "sum" (to pool micro-batches), or
    "none" (per position, 0 where ``mask`` is 0).
    """
    keep = mask.bool()
    z = logits.detach()[keep].to(torch.float32)
    per_token = torch.logsumexp(z, dim=-1) - (torch.softmax(z, dim=-1) * z).sum(dim=-1)
    if reduction == "none":
        out = torch.zeros(keep.shape, dtype=torch.float32, device=logits.device)
        out[keep] = per_token
        return out
    if reduction == "sum":
        return per_token.sum()
    if reduction == "mean":
        return per_token.sum() / max(per_token.numel(), 1)
    raise ValueError(f"unknown reduction {reduction!r}")


# ---------------------------------------------------------------------------------------- losses


def _per_token_advantages(advantages: Tensor, like: Tensor) -> Tensor:
    """Broadcast per-rollout advantages ``[R]`` over the tokens; pass ``[R, T]`` through."""
    if advantages.dim() == like.dim() - 1:
        advantages = advantages.unsqueeze(-1)
    return advantages.to(like.dtype).expand_as(like)


def _reduce(
    per_token: Tensor,
    mask: Tensor,
    normalisation: str,
    num_tokens: float | Tensor | None,
    num_rollouts: float | Tensor | None,
) -> Tensor:
    """Sum a per-token objective (already 0 off the trainable tokens) into one scalar.

    "batch_tokens": Σ / N, N = trainable tokens of the batch, every token weighs the same whatever
    its rollout's length. "per_rollout": mean over each rollout's n_i trainable tokens, then mean
    over the R rollouts that have any, so a token's weight is 1/(R·n_i) and short rollouts count
    more per token (the GRPO length bias, kept for ablation). ``num_tokens`` / ``num_rollouts``
    override N / R when one optimiser step is split into micro-batches: pass the whole batch's count
    so the accumulated gradient equals the full-batch one instead of a per-micro-batch average.
    """
    if normalisation == "batch_tokens":
        n = mask.sum() if num_tokens is None else torch.as_tensor(num_tokens, device=per_token.device)
        return per_token.sum() / n.to(per_token.dtype).clamp(min=1)
    if normalisation == "per_rollout":
        per_rollout_tokens = mask.sum(dim=-1).to(per_token.dtype)
        rollout_means = per_token.sum(dim=-1) / per_rollout_tokens.clamp(min=1)
        if num_rollouts is None:
            r = (per_rollout_tokens > 0).sum()
        else:
            r = torch.as_tensor(num_rollouts, device=per_token.device)
        return rollout_means.sum() / r.to(per_token.dtype).clamp(min=1)
    raise ValueError(f"unknown normalisation {normalisation!r}; choose one of {NORMALISATIONS}")


def cispo_loss(
    logp_train: Tensor,
    logp_rollout: Tensor,
    advantages_per_token: Tensor,
    mask: Tensor,
    *,
    max_ratio: float = 2.0,
    normalisation: Normalisation = "batch_tokens",
    num_tokens: float | Tensor | None = None,
    num_rollouts: float | Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """CISPO with IcePop masking: L = −(1/N) Σ mask · 1[ω ≤ max_ratio] · sg(ω) · A · logp_train.

    Why this form: the coefficient sg(ω)·A corrects for sampling under the engine's (slightly
    different, possibly stale) policy while the gradient flows only through log π, so no token's
    update is clipped away as in PPO. A token whose ω exceeds ``max_ratio`` is a sign that trainer and
    engine disagree about it (numerics, stale weights), not a useful signal; it is *dropped* (zero
    gradient) rather than clipped to max_ratio, which would still push on it. Dropped tokens stay in
    N, so a batch with many of them takes a smaller step rather than rescaling the survivors.

    ``advantages_per_token``: ``[R, T]`` or ``[R]`` (broadcast over the tokens). Positions with
    ``mask`` 0 get zero gradient and do not enter ω or the metrics, whatever their log-probs hold.
    See ``_reduce`` for ``normalisation``, ``num_tokens`` and ``num_rollouts``.

    Metrics over the trainable tokens: ``masked_fraction`` (share dropped by the ratio),
    ``mismatch_kl`` (mean ω − log ω − 1), ``mean_ratio`` (mean ω), ``trainable_tokens``.
    """
    keep = mask.bool()
    log_ratio = torch.where(keep, logp_train.detach() - logp_rollout.detach(), 0.0)
    ratio = torch.exp(log_ratio)  # sg(ω): computed from detached log-probs
    kept = keep & (ratio <= max_ratio)
    coefficient = torch.where(kept, ratio * _per_token_advantages(advantages_per_token, logp_train), 0.0)
    # where(), not a product with the mask: a -inf log-prob on a prompt/padding position must not
    # turn into 0·inf = nan in the loss or its gradient
    objective = torch.where(kept, coefficient * logp_train, 0.0)
    loss = -_reduce(objective, mask, normalisation, num_tokens, num_rollouts)

    n = keep.sum().clamp(min=1)
    metrics = {
        "masked_fraction": float((keep & ~kept).sum() / n),
        "mismatch_kl": float(mismatch_kl(logp_train, logp_rollout, mask)),
        "mean_ratio": float((ratio * keep).sum() / n),
        "trainable_tokens": float(keep.sum()),
    }
    return loss, metrics


def ppo_clip_loss(
    logp_train: Tensor,
    logp_old: Tensor,
    advantages_per_token: Tensor,
    mask: Tensor,
    *,
    clip_eps: float = 0.2,
    clip_eps_high: float | None = None,
    normalisation: Normalisation = "batch_tokens",
    num_tokens: float | Tensor | None = None,
    num_rollouts: float | Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """PPO-clip, the ablation baseline: L = −(1/N) Σ mask · min(ρ·A, clip(ρ, 1−ε, 1+ε_high)·A).

    ρ = exp(logp_train − logp_old), with gradient. The min makes the gradient vanish once ρ has
    left the band in the direction the advantage pushes (ρ > 1+ε_high with A > 0, ρ < 1−ε with
    A < 0), while a token that moved the wrong way keeps its full gradient −ρ·A/N. ``clip_eps_high``
    defaults to ``clip_eps`` (DAPO's clip-higher sets it larger). ``logp_old`` is whatever the
    ratio is taken against: the rollout engine's log-probs in this trainer.

    Metrics over the trainable tokens: ``clip_fraction`` (share with zero gradient from the clip),
    ``mismatch_kl`` and ``mean_ratio`` (as in ``cispo_loss``), ``trainable_tokens``.
    """
    high = clip_eps if clip_eps_high is None else clip_eps_high
    keep = mask.bool()
    advantages = _per_token_advantages(advantages_per_token, logp_train)
    ratio = torch.exp(torch.where(keep, logp_train - logp_old.detach(), 0.0))
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + high) * advantages
    objective = torch.where(keep, torch.minimum(unclipped, clipped), 0.0)
    loss = -_reduce(objective, mask, normalisation, num_tokens, num_rollouts)

    with torch.no_grad():
        r = ratio.detach()
        a = advantages.detach()
        clipped_away = keep & (((r > 1.0 + high) & (a > 0)) | ((r < 1.0 - clip_eps) & (a < 0)))
        n = keep.sum().clamp(min=1)
        metrics = {
            "clip_fraction": float(clipped_away.sum() / n),
            "mismatch_kl": float(mismatch_kl(logp_train, logp_old, mask)),
            "mean_ratio": float((r * keep).sum() / n),
            "trainable_tokens": float(keep.sum()),
        }
    return loss, metrics
