"""Numerics of the tiny Qwen3 / Qwen3.5-hybrid policies: the fp32-kept tensors and the decode cache.

The fp32 tests catch the silent bf16 cast of A_log & co. (transformers marks none of them
keep-in-fp32); the cache tests pin that incremental decoding is the full forward up to rounding, and
that a cache built under old weights is not, so it must be invalidated after a weight update.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from training.models import (
    FP32_BUFFERS,
    FP32_PARAMS,
    cast_model,
    decode_with_cache,
    fp32_violations,
    keep_fp32,
    matches,
    tiny_model,
)

BF16 = torch.bfloat16


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    # these models are far too small to gain from threads; on a shared box they lose a lot to them
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def kept_names(model: torch.nn.Module) -> list[str]:
    params = [n for n, _ in model.named_parameters() if matches(n, FP32_PARAMS)]
    return params + [n for n, _ in model.named_buffers() if matches(n, FP32_BUFFERS)]


def lm_step(model: torch.nn.Module, lr: float) -> None:
    """One AdamW step on the LM loss of a random batch: every parameter moves by about ``lr``."""
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    ids = torch.randint(0, 256, (2, 24), generator=torch.Generator().manual_seed(1))
    model(ids, labels=ids).loss.backward()
    optimiser.step()
    model.eval()


# ------------------------------------------------------------------------------ fp32-kept tensors


def test_bf16_tiny_hybrid_keeps_gate_params_fp32() -> None:
    model = tiny_model("hybrid", dtype=BF16)
    names = kept_names(model)
    # 3 linear-attention layers × (A_log, dt_bias, norm.weight) + the two RoPE buffers
    assert len(names) == 3 * 3 + 2
    assert fp32_violations(model) == []
    assert model.get_parameter("model.layers.0.linear_attn.A_log").dtype == torch.float32
    assert model.get_parameter("model.layers.0.linear_attn.in_proj_a.weight").dtype == BF16
    # the kept values are the fp32 model's, not a re-widened bf16 rounding
    reference = tiny_model("hybrid")
    for name, param in model.named_parameters():
        if matches(name, FP32_PARAMS):
            assert torch.equal(param, reference.get_parameter(name)), name


def test_plain_cast_is_reported_and_repaired() -> None:
    model = tiny_model("hybrid")
    model.to(BF16)  # the silent cast: transformers lets it through
    assert sorted(fp32_violations(model)) == sorted(kept_names(model))
    keep_fp32(model)
    assert fp32_violations(model) == []
    # the dense model has no gate, but .to() casts its RoPE frequencies all the same
    dense = tiny_model("dense").to(BF16)
    assert fp32_violations(dense) == ["model.rotary_emb.inv_freq", "model.rotary_emb.original_inv_freq"]


def test_cast_model_round_trip_and_load_state_dict_keep_fp32() -> None:
    model = cast_model(tiny_model("hybrid", dtype=BF16), torch.float16)
    assert fp32_violations(model) == []
    assert model.get_parameter("model.layers.0.linear_attn.out_proj.weight").dtype == torch.float16
    # assign=True installs the checkpoint's own tensors; the hook re-casts the kept ones
    bf16_state = {name: tensor.to(BF16) for name, tensor in model.state_dict().items()}
    model.load_state_dict(bf16_state, assign=True)
    assert fp32_violations(model) == []
    assert model.get_parameter("model.layers.0.linear_attn.out_proj.weight").dtype == BF16


def test_optimiser_step_on_bf16_model_keeps_and_moves_fp32_params() -> None:
    kept = tiny_model("hybrid", dtype=BF16)
    silent = tiny_model("hybrid").to(BF16)
    before = kept.get_parameter("model.layers.0.linear_attn.A_log").detach().clone()
    silent_before = silent.get_parameter("model.layers.0.linear_attn.A_log").detach().clone()
    lm_step(kept, lr=1e-4)
    lm_step(silent, lr=1e-4)
    assert fp32_violations(kept) == []
    after = kept.get_parameter("model.layers.0.linear_attn.A_log")
    assert (after != before).all()
    # why it matters: in bf16 a 1e-4 step is below half the spacing of these A_log values (1.5..2.7) and is lost
    assert torch.equal(silent.get_parameter("model.layers.0.linear_attn.A_log"), silent_before)


# ------------------------------------------------------------------------------------ the cache

PROMPT = 70  # past the 64-token chunk of the chunked delta rule, so the prefill spans two chunks
LENGTH = 82


def sequence() -> torch.Tensor:
    return torch.randint(0, 256, (2, LENGTH), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_fp32_incremental_decoding_matches_full_forward(kind: str) -> None:
    model = tiny_model(kind)
    ids = sequence()
    incremental, _ = decode_with_cache(model, ids, PROMPT)
    with torch.no_grad():
        full = model(ids).logits[:, PROMPT - 1 :]
    torch.testing.assert_close(incremental, full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_stale_cache_after_weight_update_differs_until_re_prefilled(kind: str) -> None:
    model = tiny_model(kind)
    ids = sequence()
    _, stale = decode_with_cache(model, ids[:, :PROMPT], PROMPT)  # the cache holds ids[:, :PROMPT]
    lm_step(model, lr=1e-3)
    with torch.no_grad():
        full = model(ids).logits[:, PROMPT:]
    with_stale, _ = decode_with_cache(model, ids, PROMPT + 1, stale)
    re_prefilled, _ = decode_with_cache(model, ids, PROMPT + 1)
    torch.testing.assert_close(re_prefilled, full, atol=1e-5, rtol=0)
    assert (with_stale - full).abs().max() > 1e-3
