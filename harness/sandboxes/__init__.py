"""Sandboxes: the Sandbox protocol and its errors (sandbox), the two backends (bwrap, docker), what they
start from (envs, images), their limits (cgroups) and the cleanup after killed runs (leftovers)."""
