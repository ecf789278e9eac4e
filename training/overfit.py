"""The overfit stress test: train on a small pool until the curve plateaus, and read its ceiling.

The success rate q after u updates is modelled as acquisition against loss,

    dq/du = g·(1 − q) − d·q    ⇒    q(u) = c − (c − q0)·e^(−k·u),  k = g + d,  c = g / (g + d)

so the curve's ceiling is c = 1 − ε with ε = d / (g + d): the share of the pool a recipe keeps losing
as fast as it learns it. A sound recipe on a pool it can memorise climbs to a high ceiling and holds
it; a broken one (here: malformed turns repaired and rewarded, so spraying digits pays) shows a lower
ceiling or collapses, in the same command, on the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from training.config import TrainConfig
from training.envs import ToyEnv
from training.eviction import EvictionConfig
from training.metrics import UpdateMetrics
from training.trainer import train

RECIPES = {"full": True, "broken": False}  # recipe -> strict format gate


class Fit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    g: float
    d: float
    q0: float
    ceiling: float  # c = 1 − ε
    eps: float
    rmse: float

    def curve(self, u: float) -> float:
        return self.ceiling - (self.ceiling - self.q0) * math.exp(-(self.g + self.d) * u)


def fit_acquisition(q: Sequence[float]) -> Fit:
    """Least-squares fit of q(u) = c − (c − q0)·e^(−k·u): for each k on a log grid, (c, q0) solve a
    linear least-squares problem in closed form; the best k wins. No optimiser to get stuck, and the
    bounds 0 ≤ c, q0 ≤ 1 are applied by clipping."""
    n = len(q)
    if n < 3:
        raise ValueError(f"a fit needs at least 3 points, got {n}")
    best: tuple[float, float, float, float] | None = None  # (sse, k, c, q0)
    for i in range(400):
        k = 10 ** (-3 + 4 * i / 399)  # 1e-3 .. 10 per update
        # q(u) = c·(1 − e^(−ku)) + q0·e^(−ku): linear in (c, q0)
        a = [1 - math.exp(-k * u) for u in range(n)]
        b = [math.exp(-k * u) for u in range(n)]
        saa, sbb, sab = sum(x * x for x in a), sum(x * x for x in b), sum(x * y for x, y in zip(a, b))
        saq, sbq = sum(x * y for x, y in zip(a, q)), sum(x * y for x, y in zip(b, q))
        det = saa * sbb - sab * sab
        if abs(det) < 1e-12:
            continue
        c = min(1.0, max(0.0, (saq * sbb - sbq * sab) / det))
        q0 = min(1.0, max(0.0, (sbq * saa - saq * sab) / det))
        sse = sum((c * x + q0 * y - v) ** 2 for x, y, v in zip(a, b, q))
        if best is None or sse < best[0]:
            best = (sse, k, c, q0)
    sse, k, c, q0 = best
    return Fit(g=c * k, d=(1 - c) * k, q0=q0, ceiling=c, eps=1 - c, rmse=math.sqrt(sse / n))


class RecipeResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipe: str
    success: list[float]
    reward: list[float]
    fit: Fit
    final: float  # mean success over the last quarter of the updates
    holds: bool  # the final stretch stays within 10 points of the fitted ceiling


def assess(recipe: str, history: Sequence[UpdateMetrics]) -> RecipeResult:
    success = [m.success_rate for m in history]
    fit = fit_acquisition(success)
    tail = success[-max(3, len(success) // 4) :]
    final = sum(tail) / len(tail)
    return RecipeResult(
        recipe=recipe, success=success, reward=[m.reward for m in history], fit=fit, final=final,
        holds=final >= fit.ceiling - 0.1,
    )  # fmt: skip


def overfit_config(base: TrainConfig) -> TrainConfig:
    """Nothing retires: the test is whether a recipe can keep what it learned on a fixed pool."""
    return base.model_copy(update={"eviction": EvictionConfig(retire_easy=False, hard_after=None, replay_every=None)})


def run_overfit(
    base: TrainConfig, out: Path, *, n_tasks: int = 4, skill: float = 0.3, recipes: Sequence[str] = tuple(RECIPES), on_update=None  # noqa: ANN001
) -> list[RecipeResult]:
    config = overfit_config(base)
    results = []
    for recipe in recipes:
        env = ToyEnv(n_tasks, seed=config.seed, strict=RECIPES[recipe], skill=skill)
        history = train(
            config, env, env.tok, out / recipe,
            demos=lambda rng, env=env: env.demonstration(rng.choice(env.tasks()), rng),
            on_update=(lambda m, r=recipe: on_update(r, m)) if on_update else (lambda m: None),
        )  # fmt: skip
        results.append(assess(recipe, history))
    plot_overfit(results, out / "overfit.png")
    return results


def plot_overfit(results: Sequence[RecipeResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r, colour in zip(results, ("tab:blue", "tab:red", "tab:green", "tab:purple")):
        u = range(len(r.success))
        ax.plot(u, r.success, "o", ms=3, color=colour, alpha=0.6, label=f"{r.recipe}: success (strict)")
        ax.plot(u, [r.fit.curve(x) for x in u], "-", color=colour, label=f"{r.recipe}: fit, ceiling {r.fit.ceiling:.2f}")
        if r.reward != r.success:
            ax.plot(u, r.reward, ":", color=colour, label=f"{r.recipe}: reward it was trained on")
    ax.set(xlabel="update", ylabel="rate", ylim=(-0.02, 1.02), title="overfit stress test: dq/du = g(1-q) - d q")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.part.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
