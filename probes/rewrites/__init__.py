"""Behaviour-preserving rewrites of gold's code: the correct_alternative probes."""

from probes.rewrites.operators import rewrites

__all__ = ["rewrites"]
