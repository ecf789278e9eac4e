"""What sharding the policy over two trainer devices buys: training state per rank, and step time.

Builds a random Qwen3-style model (``--hidden``, ``--layers``), saves it as a checkpoint folder and
opens it as the trainer does (``training.policy.open_policy``), once on one device and once sharded
with FSDP2 over two (``--devices``, default two CPU ranks over gloo). Each takes the same optimiser
steps on the same batches; the script prints, for both:

  state/rank MiB   weights + gradients + AdamW moments each rank holds (the largest rank)
  step s           mean wall time of one optimiser step (after a warm-up step)

then the ratio sharded / one device. The memory ratio is the point: the fp32 masters and both AdamW
moments are 16 bytes a parameter, which is what stops a 9B policy from fitting one GPU beside its
activations; two ranks hold about half each (the target: at most 0.55). On CPU the two ranks share
the machine's cores and talk through gloo, so the step time says little about two GPUs over NVLink.

    python benchmarks/sharding.py [--hidden 512] [--layers 8] [--rows 16] [--steps 3] [--devices cpu,cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch

from training.config import TrainConfig
from training.policy import open_policy

TARGET_MEMORY_RATIO = 0.55
VOCAB = 4096


def checkpoint(folder: Path, hidden: int, layers: int) -> Path:
    from transformers import AutoModelForCausalLM

    from training.models import tiny_config

    config = tiny_config("dense", vocab_size=VOCAB)
    config.update({"hidden_size": hidden, "intermediate_size": 3 * hidden, "num_hidden_layers": layers,
                   "num_attention_heads": hidden // 64, "num_key_value_heads": max(1, hidden // 256), "head_dim": 64,
                   "layer_types": ["full_attention"] * layers})  # fmt: skip
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    return folder


def batches(rows: int, width: int, steps: int) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [
        {"tokens": torch.randint(1, VOCAB, (rows, width), generator=g),
         "mask": torch.ones(rows, width - 1),
         "logp_rollout": torch.full((rows, width - 1), -8.0),
         "rewards": torch.randint(0, 2, (rows,), generator=g).float()}
        for _ in range(steps + 1)
    ]  # fmt: skip


def measure(config: TrainConfig, data: list[dict[str, torch.Tensor]]) -> tuple[int, float]:
    from training.policy import build_policy

    policy = open_policy(build_policy(config, VOCAB), config, VOCAB)
    try:
        policy.step(data[0])  # warm-up: allocates the optimiser state
        times = []
        for batch in data[1:]:
            started = time.perf_counter()
            policy.step(batch)
            times.append(time.perf_counter() - started)
        return max(policy.memory()), statistics.mean(times)
    finally:
        policy.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--devices", default="cpu,cpu")
    args = parser.parse_args()
    __import__("transformers").utils.logging.disable_progress_bar()
    devices = args.devices.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        model = str(checkpoint(Path(tmp) / "model", args.hidden, args.layers))
        data = batches(args.rows, args.width, args.steps)
        base = TrainConfig(model=model, devices=devices[:1], group_size=args.rows, groups_per_update=1)
        rows = {"1 device": measure(base, data), f"{len(devices)} devices": measure(base.model_copy(update={"devices": devices}), data)}
    print(f"policy: hidden {args.hidden}, {args.layers} layers, vocab {VOCAB}; batch {args.rows} x {args.width} tokens")
    print(f"{'':>12} {'state/rank MiB':>15} {'step s':>8}")
    for name, (memory, seconds) in rows.items():
        print(f"{name:>12} {memory / 2**20:>15.1f} {seconds:>8.2f}")
    (one_mem, one_s), (sharded_mem, sharded_s) = rows.values()
    ratio = sharded_mem / one_mem
    print(f"{'ratio':>12} {ratio:>15.2f} {sharded_s / one_s:>8.2f}")
    print(f"memory per rank {ratio:.2f}x of one device (target <= {TARGET_MEMORY_RATIO}): {'met' if ratio <= TARGET_MEMORY_RATIO else 'MISSED'}")


if __name__ == "__main__":
    main()
