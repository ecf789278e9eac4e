"""Data-level plausible-but-wrong operators: regexes, container entries, decorators, string constants."""

from probes.data_ops.operators import DATA_OPERATORS, data_mutants

__all__ = ["DATA_OPERATORS", "data_mutants"]
