"""Putting patches into a sandbox's tree.

Applying is a cascade of strategies, each first checked with ``--check``/``--dry-run`` so a failed
attempt never leaves a half-applied tree and nothing needs resetting between attempts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from harness.sandboxes.sandbox import IO_DIR, Sandbox

PATCH_FILE = IO_DIR + "/{name}.patch"
APPLY_STRATEGIES: list[tuple[str, str | None, str]] = [
    # (name, check command, apply command); {p} is the patch file. Plain git apply is atomic (all
    # files or none), so it needs no separate check; --3way and GNU patch can stop half-way.
    ("git apply", None, "git apply {p}"),
    (
        "git apply --recount --ignore-whitespace",
        None,
        "git apply --recount --ignore-space-change --ignore-whitespace {p}",
    ),
    # --3way refuses files whose index entry looks stale, and a sandbox's tree is a fresh copy (new
    # inodes and ctimes): refresh the index first or this strategy never applies anything
    (
        "git apply --3way",
        "git update-index -q --refresh >/dev/null; git apply --check --3way {p}",
        "git apply --3way {p}",
    ),
    (
        "patch --fuzz=5",
        "patch --batch --forward --fuzz=5 -p1 --dry-run -i {p}",
        "patch --batch --forward --fuzz=5 -p1 -i {p}",
    ),
]
# GNU patch names everything it would touch in its --dry-run output ("checking file x", "checking
# symbolic link y"); git apply refuses paths inside .git, and paths beyond a symlink, by itself
_PATCH_CHECKED = re.compile(r"^checking (file|symbolic link) (.+)$", re.MULTILINE)
_GIT_DIR = re.compile(r"(?:^|/)\.git(?:/|$)")


def write_patch(sandbox: Sandbox, patch: str, name: str) -> str:
    """The patch file's path in the sandbox."""
    path = PATCH_FILE.format(name=name)
    sandbox.write_file(path, patch if patch.endswith("\n") else patch + "\n")
    return path


def apply_patch(
    sandbox: Sandbox, patch: str, name: str, *, first: str = "", then: str = "", tried: Sequence[str] = ()
) -> tuple[str, str]:
    """Apply ``patch`` in the workdir. Returns (strategy, "") on success, ("", why) on failure.
    ``first`` runs before the first attempt and ``then`` right after a successful apply, each in the
    same command as the apply: engine round trips saved. ``tried``: why each of the first strategies
    already failed (``harness.grading.handover``); the cascade goes on from the next one."""
    if not patch.strip():
        return "empty", ""
    p = shlex.quote(write_patch(sandbox, patch, name))
    errors = list(tried)
    for strategy, check, apply in APPLY_STRATEGIES[len(tried) :]:
        # a new file's mode is 644 or 755 whatever umask the sandbox inherited (harness.grading.capabilities)
        command = "umask 022 && " + apply.format(p=p) + (f" && {{ {then}; }}" if then else "")
        check = check and check.format(p=p)
        if first:  # only the very first command run
            if check is None:
                command = f"{{ {first}; }} && {command}"
            else:
                check = f"{{ {first}; }} && {check}"
            first = ""
        if check is None:
            done = sandbox.run(command, timeout=60)
            if done.exit_code == 0:
                return strategy, ""
            errors.append(f"{strategy}: {done.output.strip()[-400:]}")
            continue
        probe = sandbox.run(check, timeout=60)
        unsafe = _unsafe_targets(probe.log_path) if probe.exit_code == 0 else []
        if unsafe:  # a hook or config planted in .git would run during grading's own git commands
            errors.append(f"{strategy}: refused, it writes inside .git or creates a symlink: {', '.join(unsafe)}")
            continue
        if probe.exit_code == 0:
            done = sandbox.run(command, timeout=60)
            if done.exit_code == 0:
                return strategy, ""
            # its check passed, so the failure was mid-way: --3way leaves conflict markers and an
            # unmerged index behind, and no later strategy may run on such a tree
            errors.append(f"{strategy}: passed its check, then failed: {done.output.strip()[-400:]}")
            return "", "\n".join(errors)
        errors.append(f"{strategy}: {probe.output.strip()[-400:]}")
    return "", "\n".join(errors)


def _unsafe_targets(log_path: str) -> list[str]:
    """What a dry run says it would touch inside ``.git``, directly or through a symlink it creates
    (GNU patch creates ``g -> .git`` and then writes ``g/hooks/post-checkout`` through it)."""
    found = _PATCH_CHECKED.findall(Path(log_path).read_text(errors="replace")) if log_path else []
    return [
        name
        for kind, name in found
        if kind == "symbolic link" or _GIT_DIR.search(name.strip().strip("'\""))
    ]
