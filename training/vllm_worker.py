"""The vLLM worker extension the trainer's weight refresh calls.

Start each engine with ``--worker-extension-cls training.vllm_worker.WeightsFromPath`` (and
``VLLM_SERVER_DEV_MODE=1`` for the ``/collective_rpc`` route). ``VLLMClient.update_weights_from_path``
then has every worker load the state dict the trainer saved with ``torch.save`` (Hugging Face names,
fp32 masters) into the model it serves; vLLM's ``load_weights`` maps the names onto its fused layers
and casts to the dtype each parameter was loaded in, so gate parameters it keeps in fp32 stay fp32.

vLLM mixes this class into its worker, which provides ``model_runner``; nothing here imports vLLM, so
the trainer side needs none of it.
"""

from __future__ import annotations

from typing import Any

import torch


class WeightsFromPath:
    model_runner: Any  # the vLLM worker's

    def update_weights_from_path(self, path: str, version: str | None = None) -> None:
        """``version`` is accepted for the route's sake; the server records it (``/update_weight_version``)."""
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        self.model_runner.model.load_weights(weights=state.items())
