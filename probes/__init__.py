"""Counterfactual probes: model-free patches derived from gold (``generate``) and their grading (``runner``)."""
