"""Train/inference mismatch of a tiny random Qwen3.5 GatedDeltaNet hybrid on CPU, by precision and cache.

The engine side is incremental decoding with a cache: prefill a random prompt, then sample (T = 1)
and feed one token at a time, keeping each step's next-token distribution. The trainer side is one
full forward over the finished sequence. transformers' reference torch kernels do both (chunked delta
rule for a forward of several tokens, recurrent rule for one), so the two differ by arithmetic only.

(a) Mismatch per precision, on the decoded positions:
    kl        mean over positions of the exact KL(engine ‖ trainer) between next-token distributions
    k3        training.objectives.mismatch_kl on the sampled tokens: mean(ω − log ω − 1), ω the
              trainer/engine probability ratio, what the trainer logs (a noisy estimate of kl)
    vs fp32   mean KL(fp32 trainer ‖ this trainer) on the same sequence: how far the precision moves
              the model itself
    vs keep   mean KL(bf16+fp32 trainer ‖ this trainer): the mismatch this trainer would have against
              an engine that keeps the fp32 choices, i.e. the cost of the silent cast alone
  precisions: fp32 (the noise floor: same math, two computation orders); bf16+fp32 (``cast_model``:
  A_log, dt_bias, the gated norm weight and the RoPE buffers fp32); bf16 gate cast (those parameters
  bf16, RoPE buffers fp32: a ``from_pretrained(dtype=bfloat16)`` load, transformers marking nothing
  keep-in-fp32); bf16 .to() (everything bf16: the silent cast).

(b) Stale cache after a weight update, for fp32 and bf16+fp32: decode half the continuation under
    weights W0, take one AdamW step (weight decay 0) on the NLL of the decoded tokens, giving W1
    (a first AdamW step moves every parameter by about lr), then decode the rest under W1 either
    through the W0 cache (stale) or after re-prefilling the whole history under W1. Each is compared
    (exact kl) with a fresh full forward under W1 on the continuation. Printed: both kls, their ratio
    (the re-prefilled kl is that precision's own noise floor), the stale kl over the bf16+fp32 noise
    floor of (a), and the policy step itself, KL(W0 ‖ W1) of full forwards on the continuation.

A random model with the usual 0.02 init predicts near-uniform tokens (entropy ≈ log V), which shrinks
every kl by orders of magnitude; ``--init-std`` sharpens it towards a trained LM's entropy (printed).
Figures are means over seeds × batch rows; sd is the spread over seeds.

    python benchmarks/hybrid_numerics.py [--lengths 128 256] [--seeds 3] [--batch 4] [--lrs 1e-3 1e-5]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from torch import Tensor, nn
from transformers import Cache

from training.models import FP32_PARAMS, cast_model, matches, tiny_model
from training.objectives import mismatch_kl, token_entropy

BF16 = torch.bfloat16
PROMPT = 32
PRECISIONS = ("fp32", "bf16+fp32", "bf16 gate cast", "bf16 .to()")
STALE_PRECISIONS = ("fp32", "bf16+fp32")


def in_precision(model: nn.Module, precision: str) -> nn.Module:
    """``model`` (fp32, changed in place) as one of ``PRECISIONS``."""
    if precision == "fp32":
        return model
    if precision == "bf16 .to()":
        return model.to(BF16)
    model = cast_model(model, BF16)
    if precision == "bf16 gate cast":
        for name, param in model.named_parameters():
            if matches(name, FP32_PARAMS):
                param.data = param.data.to(BF16)
    return model


def fp32_model(seed: int, init_std: float) -> nn.Module:
    return tiny_model("hybrid", seed=seed, initializer_range=init_std)


@torch.no_grad()
def rollout(
    model: nn.Module, ids: Tensor, new_tokens: int, generator: torch.Generator, cache: Cache | None = None
) -> tuple[Tensor, Tensor, Cache]:
    """Sample ``new_tokens`` after ``ids`` [B, P] the engine's way: forward what ``cache`` lacks, then
    one token per forward. Returns the extended ids, the fp64 log-probs each token was drawn from
    [B, new_tokens, V], and the cache, which holds every token but the last one sampled."""
    past = 0 if cache is None else cache.get_seq_length()
    out = model(ids[:, past:], cache=cache, use_cache=True)
    cache = out.past_key_values
    rows = []
    for step in range(new_tokens):
        logp = torch.log_softmax(out.logits[:, -1].double(), dim=-1)
        token = torch.multinomial(logp.exp(), 1, generator=generator)
        rows.append(logp)
        ids = torch.cat([ids, token], dim=1)
        if step < new_tokens - 1:
            out = model(token, cache=cache, use_cache=True)
    return ids, torch.stack(rows, dim=1), cache


@torch.no_grad()
def full_logp(model: nn.Module, ids: Tensor, start: int) -> Tensor:
    """fp64 log-probs of one full forward for the tokens ``ids[:, start:]`` [B, T − start, V]."""
    return torch.log_softmax(model(ids).logits[:, start - 1 : -1].double(), dim=-1)


def kl(p: Tensor, q: Tensor) -> float:
    """Mean over positions of KL(p ‖ q), both given as log-probs [..., V]."""
    return float((p.exp() * (p - q)).sum(dim=-1).mean())


def k3(engine: Tensor, trainer: Tensor, tokens: Tensor) -> float:
    pick = tokens.unsqueeze(-1)
    logp_engine, logp_trainer = engine.gather(-1, pick).squeeze(-1), trainer.gather(-1, pick).squeeze(-1)
    return float(mismatch_kl(logp_trainer, logp_engine, torch.ones_like(tokens)))


def prompt(batch: int, seed: int) -> tuple[Tensor, torch.Generator]:
    """A random byte prompt and the generator that samples its continuation: the same draws for every
    precision, so their (nearly equal) distributions mostly sample the same tokens."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (batch, PROMPT), generator=generator), generator


def adamw_step(model: nn.Module, ids: Tensor, lr: float) -> None:
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model(ids, labels=ids).loss.backward()
    optimiser.step()
    model.eval()


def cache_dtypes(cache: Cache) -> str:
    """The dtypes the hybrid's cache holds, read off the object (transformers' layer attributes)."""
    found: dict[str, set[str]] = {"recurrent state": set(), "conv state": set(), "attention KV": set()}
    for layer in cache.layers:
        for kind, states in (("recurrent state", "recurrent_states"), ("conv state", "conv_states")):
            found[kind].update(str(t.dtype) for t in getattr(layer, states, {}).values() if t is not None)
        if getattr(layer, "keys", None) is not None:
            found["attention KV"].add(str(layer.keys.dtype))
    return ", ".join(f"{kind} {'/'.join(sorted(dtypes))}" for kind, dtypes in found.items())


def mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


Figures = dict[str, list[float]]  # figure name -> one value per seed


def mismatch(length: int, seeds: int, batch: int, init_std: float) -> tuple[dict[str, Figures], str]:
    """Part (a): per precision, kl, k3, vs fp32, vs keep and the fp32 entropy H; and the dtypes of the
    bf16+fp32 cache."""
    names = ("kl", "k3", "vs fp32", "vs keep", "H")
    results: dict[str, Figures] = {p: {name: [] for name in names} for p in PRECISIONS}
    dtypes = ""
    for seed in range(seeds):
        reference = fp32_model(seed, init_std)
        kept = in_precision(copy.deepcopy(reference), "bf16+fp32")
        for precision in PRECISIONS:
            model = in_precision(copy.deepcopy(reference), precision)
            ids, generator = prompt(batch, seed)
            ids, engine, cache = rollout(model, ids, length - PROMPT, generator)
            trainer = full_logp(model, ids, PROMPT)
            exact = full_logp(reference, ids, PROMPT)
            row = results[precision]
            row["kl"].append(kl(engine, trainer))
            row["k3"].append(k3(engine, trainer, ids[:, PROMPT:]))
            row["vs fp32"].append(kl(exact, trainer))
            row["vs keep"].append(kl(full_logp(kept, ids, PROMPT), trainer))
            row["H"].append(float(token_entropy(exact, torch.ones(exact.shape[:-1]))))
            if precision == "bf16+fp32":
                dtypes = cache_dtypes(cache)
    return results, dtypes


def stale_drift(
    precision: str, length: int, seeds: int, batch: int, init_std: float, lrs: list[float]
) -> dict[float, Figures]:
    """Part (b) for one precision: per step size, the lists over seeds of the stale and re-prefilled
    kl and of the policy step. The step is taken on fp32 master weights and cast like W0, as a
    mixed-precision trainer does: a step applied to bf16 weights would mostly round away."""
    out: dict[float, Figures] = {lr: {"stale": [], "re-prefill": [], "step": []} for lr in lrs}
    for seed in range(seeds):
        master = fp32_model(seed, init_std)
        w0 = in_precision(copy.deepcopy(master), precision)
        ids, generator = prompt(batch, seed)
        history, _, cache = rollout(w0, ids, (length - PROMPT) // 2, generator)
        start, draws = history.shape[1], generator.get_state()
        for lr in lrs:
            stepped = copy.deepcopy(master)
            adamw_step(stepped, history, lr)
            w1 = in_precision(stepped, precision)
            for name, past in (("stale", cache), ("re-prefill", None)):
                generator.set_state(draws)
                full, engine, _ = rollout(w1, history, length - start, generator, copy.deepcopy(past))
                trainer = full_logp(w1, full, start)
                out[lr][name].append(kl(engine, trainer))
            out[lr]["step"].append(kl(full_logp(w0, full, start), trainer))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 256], help="tokens, prompt included")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4, help="sequences decoded together per seed")
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 1e-5], help="AdamW step sizes for (b)")
    parser.add_argument("--init-std", type=float, default=0.1, help="initializer_range (0.02: near-uniform tokens)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a tiny model loses to more)")
    args = parser.parse_args()
    if min(args.lengths) <= PROMPT + 2:
        parser.error(f"--lengths must exceed the {PROMPT}-token prompt by more than 2")
    torch.set_num_threads(args.threads)
    started = time.perf_counter()

    for length in args.lengths:
        results, dtypes = mismatch(length, args.seeds, args.batch, args.init_std)
        entropy = statistics.fmean(results["fp32"]["H"])
        print(f"\n(a) T={length} (prompt {PROMPT}), {args.seeds} seeds × {args.batch}, H(fp32) {entropy:.2f} nats")
        print(f"{'precision':16} {'kl':>9} {'kl sd':>9} {'k3':>9} {'kl/fp32 kl':>10} {'vs fp32':>9} {'vs keep':>9}")
        floor = statistics.fmean(results["fp32"]["kl"])
        for precision, row in results.items():
            mean, sd = mean_sd(row["kl"])
            print(
                f"{precision:16} {mean:9.2e} {sd:9.2e} {statistics.fmean(row['k3']):9.2e} {mean / floor:10.3g} "
                f"{statistics.fmean(row['vs fp32']):9.2e} {statistics.fmean(row['vs keep']):9.2e}"
            )
        print(f"    bf16+fp32 cache after decoding: {dtypes}")
        noise = statistics.fmean(results["bf16+fp32"]["kl"])

        print(f"(b) stale cache, T={length}: W0 decodes from {PROMPT}, W1 from {PROMPT + (length - PROMPT) // 2}")
        print(
            f"{'precision':10} {'lr':>7} {'KL(W0‖W1)':>10} {'stale':>9} {'re-prefill':>10} "
            f"{'stale/re-pf':>11} {'stale/noise':>11}"
        )
        for precision in STALE_PRECISIONS:
            for lr, row in stale_drift(precision, length, args.seeds, args.batch, args.init_std, args.lrs).items():
                stale, fresh = statistics.fmean(row["stale"]), statistics.fmean(row["re-prefill"])
                print(
                    f"{precision:10} {lr:7.0e} {statistics.fmean(row['step']):10.2e} {stale:9.2e} {fresh:10.2e} "
                    f"{stale / fresh:11.3g} {stale / noise:11.3g}"
                )
    print(f"\nnoise = the bf16+fp32 kl of (a) at the same length; {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
