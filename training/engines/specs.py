"""Which engine a spec names: ``local`` (a tiny model in this process) or a vLLM server's URL."""

from __future__ import annotations

from typing import Literal

from harness.agent.engine import ByteTokenizer, Tokenizer
from training.engines.local import LocalEngine
from training.engines.vllm_client import VLLMClient

LOCAL_MODELS: dict[str, Literal["dense", "hybrid"]] = {"tiny-dense": "dense", "tiny-hybrid": "hybrid"}


def engine_from_spec(
    spec: str,
    model_name: str = "tiny-dense",
    *,
    tokenizer: Tokenizer | None = None,
    seed: int = 0,
    timeout: float = 60.0,
) -> LocalEngine | VLLMClient:
    """``"local"``: a ``LocalEngine`` over a tiny random model (``model_name`` ``tiny-dense`` or
    ``tiny-hybrid``, weights from ``seed``); ``"http(s)://host:port"``: a ``VLLMClient`` serving
    ``model_name``. The tokenizer defaults to the byte tokenizer the tiny models use."""
    tokenizer = tokenizer or ByteTokenizer()
    if spec == "local":
        if model_name not in LOCAL_MODELS:
            raise ValueError(f"the local engine runs {sorted(LOCAL_MODELS)}, not {model_name!r}")
        from training.models import tiny_model

        return LocalEngine(tiny_model(LOCAL_MODELS[model_name], seed=seed), tokenizer)
    if spec.startswith(("http://", "https://")):
        return VLLMClient(spec, model_name, tokenizer, timeout)
    raise ValueError(f"engine spec {spec!r} is neither 'local' nor an http(s):// URL")
