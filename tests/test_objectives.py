"""The objective's math, pinned on hand-made tensors: each choice shows the gradient it should give.

Gradients are taken with torch.autograd on a leaf ``logp_train``; ∂L/∂logp_train is what the
optimiser sees through the model for each token.
"""

from __future__ import annotations

import math

import pytest
import torch

from training.objectives import (
    STD_EPS,
    cispo_loss,
    group_advantages,
    importance_weights,
    mismatch_kl,
    ppo_clip_loss,
    token_entropy,
)

LN = math.log


def grad_of(loss: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    (g,) = torch.autograd.grad(loss, leaf)
    return g


def leaf(values: list[list[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


# two rollouts, four positions; rollout 0: one prompt token then three trainable tokens, one of which
# (position 2) has ω = 3 > 2; rollout 1: two trainable tokens then padding
LOGP_ROLLOUT = torch.tensor([[-1.0, -2.0, -2.0, -1.0], [-0.5, -1.5, 0.0, 0.0]], dtype=torch.float64)
RATIOS = torch.tensor([[1.0, 1.5, 3.0, 0.5], [1.0, 2.0, 1.0, 1.0]], dtype=torch.float64)
MASK = torch.tensor([[0, 1, 1, 1], [1, 1, 0, 0]])
ADV = torch.tensor([2.0, -1.0], dtype=torch.float64)  # one per rollout
N_TRAINABLE = 5  # the ω = 3 token included


def batch() -> torch.Tensor:
    return leaf((LOGP_ROLLOUT + RATIOS.log()).tolist())


# ---------------------------------------------------------------------------------------- advantages


def test_advantages_are_reward_minus_group_mean_without_std() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    a = group_advantages(rewards, 4)
    assert torch.allclose(a, torch.tensor([0.75, -0.25, -0.25, -0.25, 0.25, 0.25, -0.75, 0.25]))


def test_std_division_divides_each_group_by_its_population_std() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    a = group_advantages(rewards, 4, std_normalise=True)
    std = math.sqrt(0.75 * 0.25)  # both groups: one reward in four differs, population std
    plain = group_advantages(rewards, 4)
    assert torch.allclose(a, plain / (std + STD_EPS))
    # the rare success in a hard group is pushed as hard as the rare failure in an easy one
    assert a[0].item() == pytest.approx(-a[6].item())
    assert a[0].item() == pytest.approx(0.75 / std, rel=1e-5)


@pytest.mark.parametrize("std_normalise", [False, True])
def test_group_of_equal_rewards_gives_zero_advantage_and_zero_gradient(std_normalise: bool) -> None:
    rewards = torch.tensor([1.0, 1.0, 0.0, 0.0])  # group size 2: two groups, each all-equal
    a = group_advantages(rewards, 2, std_normalise=std_normalise)
    assert torch.equal(a, torch.zeros(4))
    logp = leaf([[-1.0, -2.0], [-0.5, -0.1], [-3.0, -1.0], [-0.2, -0.2]])
    loss, _ = cispo_loss(logp, logp.detach() - 0.1, a, torch.ones(4, 2))
    assert torch.equal(grad_of(loss, logp), torch.zeros(4, 2, dtype=torch.float64))


def test_group_size_must_divide_the_rewards() -> None:
    with pytest.raises(ValueError):
        group_advantages(torch.zeros(5), 2)


# ------------------------------------------------------------------------------------- CISPO + IcePop


def test_importance_weight_is_exp_of_the_logprob_difference() -> None:
    w = importance_weights(torch.tensor([LN(0.3)]), torch.tensor([LN(0.6)]))
    assert w.item() == pytest.approx(0.5)


def test_token_above_max_ratio_gets_exactly_zero_gradient_neighbours_do_not() -> None:
    logp = batch()
    loss, metrics = cispo_loss(logp, LOGP_ROLLOUT, ADV, MASK)
    g = grad_of(loss, logp)
    assert g[0, 2].item() == 0.0  # ω = 3: masked, not clipped (clipping would leave −2·A/N)
    assert g[0, 1].item() != 0.0 and g[0, 3].item() != 0.0
    assert metrics["masked_fraction"] == pytest.approx(1 / N_TRAINABLE)


def test_unmasked_gradient_is_minus_omega_a_over_all_trainable_tokens() -> None:
    logp = batch()
    loss, metrics = cispo_loss(logp, LOGP_ROLLOUT, ADV, MASK)
    g = grad_of(loss, logp)
    adv = ADV.unsqueeze(1).expand_as(RATIOS)
    kept = MASK.bool() & (RATIOS <= 2.0)
    # N = 5 counts the masked ω = 3 token: dividing by the 4 survivors would inflate their step
    expected = torch.where(kept, -RATIOS * adv / N_TRAINABLE, 0.0)
    assert torch.allclose(g, expected)
    assert g[1, 1].item() == pytest.approx(-2.0 * -1.0 / 5)  # ω = 2 exactly is kept
    assert metrics["trainable_tokens"] == N_TRAINABLE


def test_loss_value_is_minus_weighted_logprob_sum_over_n() -> None:
    logp = batch()
    loss, _ = cispo_loss(logp, LOGP_ROLLOUT, ADV, MASK)
    adv = ADV.unsqueeze(1).expand_as(RATIOS)
    kept = MASK.bool() & (RATIOS <= 2.0)
    expected = -(torch.where(kept, RATIOS * adv * logp.detach(), 0.0)).sum() / N_TRAINABLE
    assert loss.item() == pytest.approx(expected.item())


def test_prompt_and_padding_tokens_get_zero_gradient_even_with_garbage_logprobs() -> None:
    logp = leaf([[-math.inf, -1.0, -0.5], [-2.0, -1.0, float("nan")]])
    rollout = torch.tensor([[0.0, -1.0, -0.5], [math.inf, -1.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[0, 1, 1], [0, 1, 0]])
    loss, metrics = cispo_loss(logp, rollout, torch.tensor([1.0, 1.0]), mask)
    g = grad_of(loss, logp)
    assert math.isfinite(loss.item())
    assert g[0, 0].item() == 0.0 and g[1, 0].item() == 0.0 and g[1, 2].item() == 0.0
    assert torch.allclose(g[:, 1], torch.full((2,), -1 / 3, dtype=torch.float64))
    assert metrics["mismatch_kl"] == 0.0 and metrics["mean_ratio"] == 1.0


def test_per_token_advantages_equal_broadcast_per_rollout_advantages() -> None:
    logp_a, logp_b = batch(), batch()
    loss_a, _ = cispo_loss(logp_a, LOGP_ROLLOUT, ADV, MASK)
    loss_b, _ = cispo_loss(logp_b, LOGP_ROLLOUT, ADV.unsqueeze(1).expand(2, 4).clone(), MASK)
    assert torch.allclose(grad_of(loss_a, logp_a), grad_of(loss_b, logp_b))


def test_per_rollout_normalisation_weighs_each_token_by_one_over_r_times_its_rollout_length() -> None:
    logp = batch()
    loss, _ = cispo_loss(logp, LOGP_ROLLOUT, ADV, MASK, normalisation="per_rollout")
    g = grad_of(loss, logp)
    # R = 2 rollouts with n_0 = 3, n_1 = 2 trainable tokens: −ω·A/(R·n_i)
    assert g[0, 1].item() == pytest.approx(-1.5 * 2.0 / (2 * 3))
    assert g[0, 3].item() == pytest.approx(-0.5 * 2.0 / (2 * 3))
    assert g[1, 0].item() == pytest.approx(-1.0 * -1.0 / (2 * 2))
    assert g[1, 1].item() == pytest.approx(-2.0 * -1.0 / (2 * 2))
    assert g[0, 2].item() == 0.0 and g[0, 0].item() == 0.0
    # differs from the batch-token default: the short rollout's tokens weigh more
    logp2 = batch()
    default, _ = cispo_loss(logp2, LOGP_ROLLOUT, ADV, MASK)
    assert not torch.allclose(g, grad_of(default, logp2))


def test_micro_batches_with_the_whole_batch_counts_sum_to_the_full_batch_gradient() -> None:
    for normalisation in ("batch_tokens", "per_rollout"):
        full = batch()
        loss, _ = cispo_loss(full, LOGP_ROLLOUT, ADV, MASK, normalisation=normalisation)
        expected = grad_of(loss, full)
        parts = []
        for i in range(2):
            logp = batch()[i : i + 1].detach().requires_grad_(True)
            part, _ = cispo_loss(
                logp, LOGP_ROLLOUT[i : i + 1], ADV[i : i + 1], MASK[i : i + 1],
                normalisation=normalisation, num_tokens=N_TRAINABLE, num_rollouts=2,
            )
            parts.append(grad_of(part, logp))
        assert torch.allclose(torch.cat(parts), expected)


def test_unknown_normalisation_is_refused() -> None:
    with pytest.raises(ValueError):
        cispo_loss(batch(), LOGP_ROLLOUT, ADV, MASK, normalisation="sequence")  # type: ignore[arg-type]


def test_mismatch_kl_is_zero_when_trainer_and_rollout_agree_and_k3_otherwise() -> None:
    logp = batch()
    _, metrics = cispo_loss(logp, logp.detach().clone(), ADV, MASK)
    assert metrics["mismatch_kl"] == 0.0
    assert metrics["masked_fraction"] == 0.0 and metrics["mean_ratio"] == 1.0
    _, metrics = cispo_loss(batch(), LOGP_ROLLOUT, ADV, MASK)
    omegas = [1.5, 3.0, 0.5, 1.0, 2.0]  # the trainable tokens, masked one included
    assert metrics["mismatch_kl"] == pytest.approx(sum(w - LN(w) - 1 for w in omegas) / 5)
    assert metrics["mean_ratio"] == pytest.approx(sum(omegas) / 5)
    assert mismatch_kl(batch(), LOGP_ROLLOUT, MASK).item() == pytest.approx(metrics["mismatch_kl"])


# ------------------------------------------------------------------------------------------ PPO-clip


@pytest.mark.parametrize(
    ("ratio", "advantage", "clipped"),
    [
        (1.5, 1.0, True),  # pushed up past 1+ε already: no further push
        (0.5, -1.0, True),  # pushed down past 1−ε already: no further push
        (0.5, 1.0, False),  # moved the wrong way: full gradient −ρ·A/N
        (1.5, -1.0, False),
        (1.1, 1.0, False),  # inside the band
        (0.9, -1.0, False),
    ],
)
def test_ppo_clip_gradient_vanishes_outside_the_band_in_the_advantage_direction(
    ratio: float, advantage: float, clipped: bool
) -> None:
    old = torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    logp = leaf([[-1.0 + LN(ratio), -1.0]])
    loss, metrics = ppo_clip_loss(logp, old, torch.tensor([advantage]), torch.tensor([[1, 1]]), clip_eps=0.2)
    g = grad_of(loss, logp)
    expected = 0.0 if clipped else -ratio * advantage / 2
    assert g[0, 0].item() == pytest.approx(expected)
    assert g[0, 1].item() == pytest.approx(-1.0 * advantage / 2)  # the ρ = 1 neighbour
    assert metrics["clip_fraction"] == pytest.approx(0.5 if clipped else 0.0)


def test_ppo_clip_high_widens_only_the_upper_bound() -> None:
    old = torch.tensor([[-1.0]], dtype=torch.float64)
    logp = leaf([[-1.0 + LN(1.25)]])
    loss, _ = ppo_clip_loss(
        logp, old, torch.tensor([1.0]), torch.tensor([[1]]), clip_eps=0.2, clip_eps_high=0.28
    )
    assert grad_of(loss, logp).item() == pytest.approx(-1.25)


def test_ppo_clip_ignores_prompt_tokens_and_reports_zero_mismatch_on_policy() -> None:
    logp = leaf([[-math.inf, -1.0, -2.0]])
    loss, metrics = ppo_clip_loss(logp, logp.detach().clone(), torch.tensor([1.0]), torch.tensor([[0, 1, 1]]))
    g = grad_of(loss, logp)
    assert g[0, 0].item() == 0.0
    assert torch.allclose(g[0, 1:], torch.full((2,), -0.5, dtype=torch.float64))
    assert metrics["mismatch_kl"] == 0.0


# ------------------------------------------------------------------------------------------- entropy


def test_token_entropy_over_trainable_positions() -> None:
    v = 8
    logits = torch.zeros(1, 3, v)
    logits[0, 1, 0] = 1e4  # a one-hot distribution: entropy 0
    logits[0, 2] = float("nan")  # padding junk, masked out
    mask = torch.tensor([[1, 1, 0]])
    assert token_entropy(logits, mask).item() == pytest.approx(math.log(v) / 2)
    assert token_entropy(logits, mask, reduction="sum").item() == pytest.approx(math.log(v))
    per = token_entropy(logits, mask, reduction="none")
    assert per.shape == (1, 3)
    assert per[0, 0].item() == pytest.approx(math.log(v))
    assert per[0, 1].item() == pytest.approx(0.0, abs=1e-6) and per[0, 2].item() == 0.0
    assert token_entropy(logits, torch.zeros(1, 3)).item() == 0.0


def test_regression_mismatch_kl_never_rounds_below_zero() -> None:
    """Nearly equal log-probs made exp(r) - r - 1 cancel to a small negative number in fp32, and the
    trainer reported a negative mismatch KL."""
    torch.manual_seed(0)
    logp_rollout = -torch.rand(64, 32) * 5
    logp_train = logp_rollout + torch.randn(64, 32) * 1e-6
    assert float(mismatch_kl(logp_train, logp_rollout, torch.ones(64, 32))) >= 0.0
    assert float(mismatch_kl(logp_rollout, logp_rollout, torch.ones(64, 32))) == 0.0
