"""Inference engines behind the ``harness.agent.engine.Engine`` seam: a local transformers engine and a vLLM client.

``LocalEngine`` samples token by token from a transformers causal LM (CPU tests, or one GPU) with a
KV/recurrent cache, so it serves the dense Qwen3 and the Qwen3.5 GatedDeltaNet hybrid alike.
``VLLMClient`` speaks to a vLLM server over HTTP, token-in/token-out through ``/v1/completions``, and
drives the dev/RLHF admin routes around weight updates (``shared/reference/trainer.md`` §3).
``training.engine_server`` serves the same routes on top of a ``LocalEngine``, so the client is tested
without vLLM.

Weight refresh contract (both engines): after new weights land every cache is invalidated and the
kept history of each in-flight trajectory (its prompt plus the tokens sampled so far) is prefilled again
under the new weights before the next token is sampled; a cache computed under old weights is never
extended. ``LocalEngine`` does this in place between two decoding steps. ``VLLMClient`` relies on
vLLM's ``pause(mode="abort")`` and resubmits prompt + partial output once the server resumes (option A in
the reference), with the per-version ``cache_salt`` as a guard against cross-version prefix hits.

Log-probabilities are those of the sampled token under the distribution it was sampled from: at
temperature T > 0 that is ``log_softmax(logits / T)`` (vLLM's ``processed_logprobs``; at T = 1 the raw
log-probs), at T = 0 (greedy) the raw ``log_softmax(logits)``. Against a real vLLM server that means
``--logprobs-mode processed_logprobs`` whenever T != 1.

torch and transformers are imported where the local engine uses them, so the client works on a box
without the ``train`` extra.
"""

from training.engines.base import PAUSE_MODES, UPDATE_METHOD, ManagedEngine, PauseMode
from training.engines.local import LocalEngine, sample_token, scaled_logprobs
from training.engines.specs import LOCAL_MODELS, engine_from_spec
from training.engines.vllm_client import REQUIRED_ROUTES, EngineTimeout, EngineUnavailable, VLLMClient, parse_choice

__all__ = [
    "LOCAL_MODELS",
    "PAUSE_MODES",
    "REQUIRED_ROUTES",
    "UPDATE_METHOD",
    "EngineTimeout",
    "EngineUnavailable",
    "LocalEngine",
    "ManagedEngine",
    "PauseMode",
    "VLLMClient",
    "engine_from_spec",
    "parse_choice",
    "sample_token",
    "scaled_logprobs",
]
