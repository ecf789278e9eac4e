"""The agent harness: the two-tool loop (loop), the raw-turn check (turns), gated rewards (reward), the
cheating audit (audit), the inference-engine seam (engine) and a scripted adversary (adversary)."""
