"""Probes parse Python through the harness's thread-safe ``parse`` (see ``harness.pyast``)."""

from harness.pyast import parse

__all__ = ["parse"]
