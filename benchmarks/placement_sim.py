"""How rollout placement changes staleness in the async trainer: session-hash vs load-aware, simulated.

Runs ``training.simulator`` (a discrete-event model of the fleet: engines with continuous batching,
sandboxed multi-turn rollouts with long-tailed turn counts, a trainer that drops groups older than the
staleness cap, weight refreshes that pause the engines) under both placement policies, on the same
seeds and therefore the same tasks, turns and tool times. For each seed and on average it prints:

  drops/upd     stale groups dropped per update
  lag           mean policy lag of the trained groups (trainer version - oldest token's version)
  lag+dropped   the same over dropped groups too: dropping the stalest groups flatters ``lag``
  update s      mean simulated time between updates
  idle          share of the time the trainer waited for a batch

then the ratio load_aware / session_hash. Load-aware's cap is the engines' own ``max_running``, so
both policies see the same per-engine capacity. Targets, from the paper's 6-engine run (stale drops
27 -> 0.8 per update, lag 3.1 -> 2.0): load-aware drops at most a fifth as many groups as session
hash, with a lower lag.

Why hash placement makes stragglers. The hash ignores load, so each engine receives a fixed share of
new groups whatever it already holds. An engine that drew a few long groups keeps them for a long time
while its share of new groups keeps arriving: long rollouts accumulate there. Its batch fills (every
decode step costs more per added sequence) and then overflows, so turns queue behind one another while
other engines run half-empty. Every group on that engine, long or short, finishes late; its oldest
token was sampled many updates ago, and past the staleness cap the whole group is thrown away.
Load-aware placement sends each group to the engine with the fewest in-flight rollouts, so no engine
runs hot, and holds a group back while every engine is at its cap: a held group has not sampled a
token yet, so it does not age, whereas under hash it would start and then wait mid-rollout. The
``--ablate`` row (load-aware with no cap) separates the two effects: balance alone buys throughput
(shorter updates); the cap is what keeps groups fresh when admission runs ahead of the engines.

The defaults model that run: 6 engines, groups of 8, 20 groups per update, 80 groups admitted (batch x
staleness cap, the most the staleness budget can absorb), lognormal turn counts (median 12, a
per-task factor, up to 100 turns). Nothing about the outcome is set by hand: change the fleet with
``--set`` and the comparison follows the mechanics.

    python benchmarks/placement_sim.py [--seeds 3] [--updates 30] [--set engines=8 --set turns_sigma=0.7] [--ablate]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import ValidationError

from training.placement import LoadAware, Placement, SessionHash
from training.simulator import FleetConfig, SimResult, simulate

TARGET_DROP_RATIO = 0.2
COLUMNS = ("stale_drops_per_update", "mean_lag", "mean_lag_with_dropped", "mean_update_s", "trainer_idle_fraction")
UNCAPPED = 10**9


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings for FleetConfig; pydantic turns the values into its field types."""
    overrides = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {pair!r}")
        overrides[key] = value
    return overrides


def policies(config: FleetConfig, ablate: bool) -> list[tuple[str, Placement]]:
    """Session hash, and load-aware capped at the engines' own batch limit (plus uncapped with ``ablate``)."""
    rows: list[tuple[str, Placement]] = [
        ("session_hash", SessionHash()),
        ("load_aware", LoadAware(cap=config.max_running)),
    ]
    if ablate:
        rows.append(("load_aware, no cap", LoadAware(cap=UNCAPPED)))
    return rows


def row(label: str, values: list[float]) -> str:
    drops, lag, lag_all, update_s, idle = values
    return f"{label:28} {drops:9.2f} {lag:6.2f} {lag_all:11.2f} {update_s:9.1f} {idle:5.0%}"


def ratio_row(label: str, ratios: list[float]) -> str:
    drops, lag, lag_all, update_s, idle = ratios
    return f"{label:28} {drops:9.2f} {lag:6.2f} {lag_all:11.2f} {update_s:9.2f} {idle:5.2f}"


def describe(config: FleetConfig, seeds: int) -> None:
    print(
        f"Fleet: {config.engines} engines (at most {config.max_running} running each, step "
        f"{config.step_base_s * 1e3:g} + {config.step_per_seq_s * 1e3:g} ms/seq), {config.groups_in_flight} "
        f"groups of {config.group_size} admitted, {config.batch_groups} groups per update, staleness cap "
        f"{config.staleness_cap}"
    )
    print(
        f"Rollouts: turns lognormal median {config.turns_median:g} (sigma {config.turns_sigma:g}, task sigma "
        f"{config.task_sigma:g}, at most {config.max_turns}), {config.tokens_median:g} tokens per turn, "
        f"env step median {config.env_median_s:g} s; update = train {config.train_s:g} s + sync {config.sync_s:g} s"
    )
    print(
        f"{seeds} seeds x {config.n_updates} measured updates (after {config.warmup_updates} warmup), "
        "the same workload for every policy\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, each run under every policy")
    parser.add_argument("--updates", type=int, default=None, help="measured updates per run (default: the config's)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a FleetConfig field (repeatable)",
    )  # fmt: skip
    parser.add_argument("--ablate", action="store_true", help="also run load-aware without its cap")
    args = parser.parse_args()

    overrides = parse_overrides(args.overrides)
    if args.updates is not None:
        overrides["n_updates"] = str(args.updates)
    try:
        base = FleetConfig(**overrides)
    except ValidationError as err:
        raise SystemExit(f"bad --set: {err}") from None
    describe(base, args.seeds)

    started = time.perf_counter()
    header = f"{'seed  policy':28} {'drops/upd':>9} {'lag':>6} {'lag+dropped':>11} {'update s':>9} {'idle':>5}"
    print(header)
    print("-" * len(header))
    results: dict[str, list[SimResult]] = {}
    for seed in range(args.seeds):
        config = base.model_copy(update={"seed": seed})
        for label, policy in policies(config, args.ablate):
            result = simulate(config, policy)
            results.setdefault(label, []).append(result)
            print(row(f"{seed:<5} {label}", [getattr(result, c) for c in COLUMNS]))
    print("-" * len(header))
    means = {
        label: [statistics.fmean(getattr(r, c) for r in runs) for c in COLUMNS] for label, runs in results.items()
    }
    for label, values in means.items():
        print(row(f"mean  {label}", values))
    hashed, aware = means["session_hash"], means["load_aware"]
    ratios = [a / h if h else float("nan") for a, h in zip(aware, hashed, strict=True)]
    print(ratio_row("ratio load_aware/hash", ratios))

    drop_ratio, lag_ratio = ratios[0], ratios[1]
    drops_met = drop_ratio <= TARGET_DROP_RATIO
    lag_met = lag_ratio < 1.0
    print(
        f"\nstale drops per update {hashed[0]:.2f} -> {aware[0]:.2f} (x{drop_ratio:.2f}; target <= x{TARGET_DROP_RATIO}: "
        f"{'met' if drops_met else 'MISSED'}); paper 27 -> 0.8"
    )
    print(
        f"mean policy lag {hashed[1]:.2f} -> {aware[1]:.2f} (x{lag_ratio:.2f}; target lower: "
        f"{'met' if lag_met else 'MISSED'}); with dropped groups {hashed[2]:.2f} -> {aware[2]:.2f}; paper 3.1 -> 2.0"
    )
    print(f"mean update time {hashed[3]:.1f} s -> {aware[3]:.1f} s (x{ratios[3]:.2f})")
    print(f"\n({time.perf_counter() - started:.1f} s; command: {shlex.join(sys.argv)})")


if __name__ == "__main__":
    main()
