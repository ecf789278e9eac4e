"""Sandboxes: the Sandbox protocol and its errors (sandbox), the backend a config names (backends), the two
backends (bwrap; docker with docker_sandbox), what they start from (envs, images), their limits (cgroups), a
sandbox folder and its release (folders), and the cleanup after killed runs (leftovers)."""
