"""Tiny random Qwen-family models built from a config (no download): the CPU stand-ins for the policy.

``dense`` is a ~100k-parameter Qwen3; ``hybrid`` is a Qwen3.5 GatedDeltaNet hybrid (three linear-
attention layers, one full-attention layer), the shape reference ``trainer.md`` §4 verified on CPU.
"""

from __future__ import annotations

from typing import Literal

import torch

from harness.engine import ByteTokenizer

ModelKind = Literal["dense", "hybrid"]


def tiny_config(kind: ModelKind, vocab_size: int | None = None):  # noqa: ANN201 - a transformers config
    vocab_size = vocab_size or ByteTokenizer().vocab_size
    if kind == "dense":
        from transformers import Qwen3Config

        return Qwen3Config(
            vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
            tie_word_embeddings=True,
        )  # fmt: skip
    from transformers.models.qwen3_5 import Qwen3_5TextConfig

    return Qwen3_5TextConfig(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
        layer_types=["linear_attention"] * 3 + ["full_attention"], linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
        tie_word_embeddings=True,
    )  # fmt: skip


def tiny_model(kind: ModelKind = "dense", *, seed: int = 0, dtype: torch.dtype = torch.float32):  # noqa: ANN201
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(tiny_config(kind), attn_implementation="sdpa", dtype=dtype).eval()
