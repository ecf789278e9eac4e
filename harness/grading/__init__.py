"""Grading: the one grader, its trust boundary (capabilities: what a candidate may change; trusted,
patching, tamper, canaries) and the parsers and in-sandbox pytest plugins it reads test runs with."""
