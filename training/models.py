"""Tiny random Qwen-family models built from a config (no download): the CPU stand-ins for the policy.

``dense`` is a ~100k-parameter Qwen3; ``hybrid`` is a Qwen3.5 GatedDeltaNet hybrid (three linear-
attention layers, one full-attention layer), the shape reference ``trainer.md`` §4 verified on CPU.

Numerics of the hybrid (``trainer.md`` §0, §3.5, §4): a few tensors must stay float32 whatever the
model's dtype (``FP32_PARAMS``, ``FP32_BUFFERS``). transformers marks none of them keep-in-fp32, so a
plain ``model.to(torch.bfloat16)`` silently casts them; ``cast_model`` casts around them,
``keep_fp32`` repairs a model after the fact and ``fp32_violations`` is what the trainer asserts on.

Already float32 without our help, in transformers' reference (torch) kernels used on CPU: the gate
g = −exp(A_log.float())·softplus(a.float() + dt_bias), the delta-rule arithmetic (q/k/v/β/g are cast
to fp32 inside the kernels) and the recurrent state the cache keeps (a ``LinearAttentionLayer``'s
``recurrent_states`` take the kernel's fp32 output). The conv state and the full-attention KV cache
are in the model dtype, as in vLLM (``--mamba-ssm-cache-dtype`` covers the recurrent state only).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import torch
from torch import Tensor, nn

from harness.agent.engine import ByteTokenizer

if TYPE_CHECKING:
    from transformers import Cache

ModelKind = Literal["dense", "hybrid"]

# The GatedDeltaNet decay g = −exp(A_log)·softplus(a + dt_bias) per head. bf16 keeps 8 significant
# bits, so A = exp(A_log) moves by up to |A_log|·2^-9 (~0.5% at A = 16) at every one of thousands of
# recurrent steps, and an optimiser step of 1e-4 on an A_log of magnitude ~2 (bf16 spacing 2^-6)
# rounds to no change at all: the decay cannot train. linear_attn.norm.weight (the gated output
# RMSNorm) with them follows prime-rl's keep_in_fp32_for_weight_transfer; Megatron keeps A_log and
# that norm fp32 to match the released Qwen3.5 checkpoints.
FP32_PARAMS: tuple[str, ...] = ("linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.norm.weight")
# RoPE inverse frequencies: created fp32 by from_config / from_pretrained, but ``.to(dtype)`` casts
# buffers too, and a rounded frequency is a phase error that grows linearly with the position.
FP32_BUFFERS: tuple[str, ...] = ("rotary_emb.inv_freq", "rotary_emb.original_inv_freq")
_HOOKED = "_swedeck_keeps_fp32"  # marks a model whose load_state_dict already re-casts


def tiny_config(  # noqa: ANN201 - a transformers config
    kind: ModelKind, vocab_size: int | None = None, **overrides: object
):
    """``overrides`` go to the config as keyword arguments (e.g. ``initializer_range``)."""
    vocab_size = vocab_size or ByteTokenizer().vocab_size
    if kind == "dense":
        from transformers import Qwen3Config

        return Qwen3Config(
            vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
            tie_word_embeddings=True, **overrides,
        )  # fmt: skip
    from transformers.models.qwen3_5 import Qwen3_5TextConfig

    return Qwen3_5TextConfig(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
        layer_types=["linear_attention"] * 3 + ["full_attention"], linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
        tie_word_embeddings=True, **overrides,
    )  # fmt: skip


def tiny_model(  # noqa: ANN201 - a transformers model
    kind: ModelKind = "dense", *, seed: int = 0, dtype: torch.dtype = torch.float32, **config_overrides: object
):
    """A random model in eval mode, its ``FP32_PARAMS`` / ``FP32_BUFFERS`` float32 whatever ``dtype``.

    Initialised in fp32 and then cast, so models of one seed hold the same weights in every dtype (the
    bf16 one is the rounding of the fp32 one) and the kept tensors carry their fp32 initial values.
    """
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    config = tiny_config(kind, **config_overrides)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=torch.float32)
    return cast_model(model, dtype).eval()


# ------------------------------------------------------------------------------ fp32-kept tensors


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether the dotted ``name`` ends with one of ``patterns`` at a name boundary, so a wrapper's
    prefix (``_fsdp_wrapped_module.``, ``_orig_mod.``) does not hide a kept tensor."""
    return any(name == p or name.endswith("." + p) for p in patterns)


def _fp32_tensors(model: nn.Module) -> Iterator[tuple[str, Tensor]]:
    for name, param in model.named_parameters():
        if matches(name, FP32_PARAMS):
            yield name, param
    for name, buffer in model.named_buffers():
        if matches(name, FP32_BUFFERS):
            yield name, buffer


def fp32_violations(model: nn.Module) -> list[str]:
    """Names of the ``FP32_PARAMS`` / ``FP32_BUFFERS`` of ``model`` that are not float32; [] when sound."""
    return [name for name, tensor in _fp32_tensors(model) if tensor.dtype != torch.float32]


def keep_fp32(model: nn.Module) -> nn.Module:
    """Re-cast the kept tensors of ``model`` to float32 in place, and keep them so across
    ``load_state_dict`` (with ``assign=True`` it would install a checkpoint's bf16 tensors as they are).

    Values already rounded to bf16 stay rounded: to cast a healthy fp32 model use ``cast_model``.
    Parameters keep their identity (``.data`` is swapped), so an optimiser built before still holds
    them; call this before the optimiser has state, whose moments would keep the old dtype.
    """
    for _, tensor in _fp32_tensors(model):
        if tensor.dtype != torch.float32:
            tensor.data = tensor.data.float()
    if not getattr(model, _HOOKED, False):
        model.register_load_state_dict_post_hook(_recast_after_load)
        setattr(model, _HOOKED, True)
    return model


def _recast_after_load(module: nn.Module, _incompatible_keys: object) -> None:
    keep_fp32(module)  # torch rejects a post-hook that returns anything


def cast_model(model: nn.Module, dtype: torch.dtype) -> nn.Module:
    """``model.to(dtype)`` except the kept tensors, which keep their float32 values bit for bit.

    Mixed dtypes are sound in the GatedDeltaNet forward: the gate reads ``A_log.float()`` and
    ``a.float() + dt_bias``, and the gated RMSNorm multiplies its fp32 weight into a product that is
    promoted to fp32 and cast back to the input dtype at the end, so nothing meets a dtype mismatch.
    """
    kept = {name: tensor.detach().to(torch.float32, copy=True) for name, tensor in _fp32_tensors(model)}
    model.to(dtype)
    for name, tensor in _fp32_tensors(model):
        tensor.data = kept[name]
    return keep_fp32(model)


def cast_state(state: dict[str, Tensor], dtype: torch.dtype) -> dict[str, Tensor]:
    """A state dict in ``dtype`` for the engines, its kept tensors float32 (``cast_model`` for a file)."""
    return {
        name: t if not t.is_floating_point() or matches(name, FP32_PARAMS + FP32_BUFFERS) else t.to(dtype)
        for name, t in state.items()
    }


# ------------------------------------------------------------------------------------ decoding


@torch.no_grad()
def decode_with_cache(
    model: nn.Module, ids: Tensor, start: int, cache: Cache | None = None
) -> tuple[Tensor, Cache]:
    """Next-token logits of ``ids`` [B, T] at positions start−1 … T−1, computed as an inference engine
    does: one forward over the tokens the cache lacks up to ``start`` (the prefill, or the
    continuation of ``cache``), then one token per forward through the cache.

    Row i of the result matches row start−1+i of a full forward's logits, so with a sound cache the
    two agree to rounding. ``cache`` (extended in place, and returned) may hold a prefix computed
    under other weights: that is how a stale cache after a weight update is reproduced.
    """
    past = 0 if cache is None else cache.get_seq_length()
    out = model(ids[:, past:start], cache=cache, use_cache=True)
    cache = out.past_key_values
    logits = [out.logits[:, -1]]
    for t in range(start, ids.shape[1]):
        logits.append(model(ids[:, t : t + 1], cache=cache, use_cache=True).logits[:, -1])
    return torch.stack(logits, dim=1), cache


class HFTokenizer:
    """A checkpoint's own tokenizer behind the harness's Tokenizer protocol (special tokens kept)."""

    def __init__(self, path: str) -> None:
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)

    @property
    def vocab_size(self) -> int:
        return len(self.tok)

    @property
    def stop_id(self) -> int:
        return self.tok.convert_tokens_to_ids("<|im_end|>")

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)
