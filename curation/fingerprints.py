"""Fingerprints of a task's fix, from its corpus row alone: pure functions, no sandbox.

Two corpora ship the same upstream fix under different ids, file layouts and formatting. What stays
the same is the repository, the base commit, the upstream PR, the lines the gold patch changes
outside the tests, their syntax, and the issue text; each becomes a field of ``Fingerprint`` that
``curation.dedup`` compares. The syntax hash uses tree-sitter grammars from
``tree_sitter_language_pack``; a file in a language it has no grammar for falls back to
whitespace-split tokens.
"""

from __future__ import annotations

import base64
import difflib
import functools
import hashlib
import re
import subprocess
import textwrap
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from harness.grading.diffs import FileDiff, is_r2e_test_path, split_diff
from harness.records import Fingerprint, Role, Task

NUM_PERM = 128  # MinHash permutations: a similarity estimate within about ±0.04 (one standard deviation) near 0.7
SHINGLE = 2  # words per issue shingle: a reworded word costs two shingles
SEED = 1
SCHEME = "affine32"  # datasketch 2's hash scheme: the values are uint32

# file extension -> tree-sitter-language-pack grammar, for the languages the corpora hold
GRAMMARS = {
    ".py": "python", ".pyi": "python", ".pyx": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".cs": "csharp", ".php": "php", ".rb": "ruby", ".swift": "swift", ".lua": "lua",
    ".ex": "elixir", ".exs": "elixir", ".dart": "dart",
}  # fmt: skip
_TEST_PART = re.compile(r"(^|[/_.-])(tests?|spec|specs|__tests__|testing)([/_.-]|$)", re.IGNORECASE)
_WORD = re.compile(r"\w+")
_ID_NUMBER = re.compile(r"^(?P<owner>[^/]+?)__(?P<name>.+)-(?P<number>\d+)$")
_PR_COLUMNS = ("pull_number", "pr_number", "pull_request_number", "pr")
_ISSUE_COLUMNS = ("issue_numbers", "issue_number", "resolved_issues")
_DATE_COLUMNS = ("created_at", "pr_created_at", "commit_date", "date")


# ------------------------------------------------------------------------------------------ identity


def normalise_repo(repo: str) -> str:
    """``owner/name`` in lower case, without a host, scheme, ``.git`` or trailing slash."""
    text = repo.strip().lower().rstrip("/")
    text = re.sub(r"^(https?://|git@|ssh://git@)?(www\.)?github\.com[/:]", "", text)
    return text.removesuffix(".git").rstrip("/")


def fork_aliases(roots: Mapping[str, str]) -> dict[str, str]:
    """Repositories (normalised) that share a root commit, each to one name (the first in order)."""
    first: dict[str, str] = {}
    for repo in sorted(roots):
        first.setdefault(roots[repo], repo)
    return {repo: first[root] for repo, root in roots.items() if first[root] != repo}


def qualify(repos: Iterable[str]) -> dict[str, str]:
    """Bare repository names (R2E-Gym's ``repo_name``) to the one ``owner/name`` loaded with that
    name; a bare name that two owners share stays as it is."""
    repos = set(repos)
    owners: dict[str, set[str]] = {}
    for repo in repos:
        if "/" in repo:
            owners.setdefault(repo.rsplit("/", 1)[1], set()).add(repo)
    return {repo: next(iter(owners[repo])) for repo in repos if "/" not in repo and len(owners.get(repo, ())) == 1}


def root_commits(cache: Path) -> dict[str, str]:
    """The root commit of every repository in a repository cache (``owner__name`` clones or
    ``owner__name.bundle`` files), by normalised name; what git cannot read is left out."""
    roots: dict[str, str] = {}
    for entry in sorted(cache.iterdir()) if cache.is_dir() else []:
        name = entry.name.removesuffix(".bundle")
        if "__" not in name:
            continue
        if entry.suffix == ".bundle":
            root = _bundle_root(entry)
        else:
            root = min(_git("rev-list", "--max-parents=0", "--all", cwd=entry.resolve()).split(), default="")
        if root:
            roots[normalise_repo(name.replace("__", "/", 1))] = root
    return roots


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else ""


def _bundle_root(bundle: Path) -> str:
    """A bundle lists its heads, not its root: its history is read through a throwaway fetch."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _git("init", "-q", "--bare", tmp)
        _git("fetch", "-q", str(bundle.resolve()), "+refs/*:refs/*", cwd=Path(tmp))
        return min(_git("rev-list", "--max-parents=0", "--all", cwd=Path(tmp)).split(), default="")


def pr_number(instance_id: str, repo: str, row: Mapping[str, Any]) -> int | None:
    """The upstream PR: a PR column, else the number of a SWE-bench-style id ``owner__name-N`` whose
    owner and name are the repository's (SWE-bench, SWE-Gym and SWE-rebench name tasks by their PR)."""
    for column in _PR_COLUMNS:
        value = row.get(column)
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            return int(value)
    found = _ID_NUMBER.match(instance_id.strip())
    if found and normalise_repo(f"{found['owner']}/{found['name']}") == normalise_repo(repo):
        return int(found["number"])
    return None


def issue_numbers(row: Mapping[str, Any]) -> list[int]:
    for column in _ISSUE_COLUMNS:
        value = row.get(column)
        if isinstance(value, int):
            return [value]
        if isinstance(value, (list, tuple)):
            return sorted({int(v) for v in value if isinstance(v, int) or (isinstance(v, str) and v.isdigit())})
    return []


def created_at(row: Mapping[str, Any]) -> str:
    """The row's creation date as ISO 8601 UTC: an ISO string, or epoch seconds or milliseconds."""
    for column in _DATE_COLUMNS:
        value = row.get(column)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, UTC).isoformat()
        if isinstance(value, datetime):
            return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
        if isinstance(value, str) and value.strip():
            try:
                parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                continue
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    return ""


# ------------------------------------------------------------------------------------------ the gold patch


def is_test_file(path: str) -> bool:
    """Test files by any corpus's rule: R2E's, and a ``test``/``spec`` part of the path in any language."""
    return is_r2e_test_path(path) or bool(_TEST_PART.search(path))


def code_files(patch: str) -> list[FileDiff]:
    """The gold patch's files outside the tests, by path; a patch that does not parse has none."""
    try:
        files = split_diff(patch)
    except ValueError:
        return []
    return sorted((f for f in files if not is_test_file(f.path)), key=lambda f: f.path)


def _hunks(diff: FileDiff) -> list[tuple[list[str], list[str]]]:
    """Each hunk's old side and new side (context included), as lines without their marker."""
    hunks: list[tuple[list[str], list[str]]] = []
    for line in diff.text.splitlines():
        if line.startswith("@@"):
            hunks.append(([], []))
        elif hunks and line[:1] in (" ", "-", "+") and not line.startswith(("---", "+++")):
            old, new = hunks[-1]
            if line[:1] != "+":
                old.append(line[1:])
            if line[:1] != "-":
                new.append(line[1:])
        elif hunks and line == "":
            hunks[-1][0].append("")
            hunks[-1][1].append("")
    return hunks


def patch_hash(patch: str) -> str:
    """Hash of what the gold changes outside its tests: per file, the removed and the added lines with
    their whitespace squeezed, blank ones dropped, each set sorted. Context lines, hunk headers and
    the order a diff tool interleaves removals and additions in do not count, so the same change
    diffed by another tool or against a shifted file hashes the same."""
    parts = []
    for diff in code_files(patch):
        changed = [line[0] + " ".join(line[1:].split()) for line in diff.text.splitlines()
                   if line[:1] in ("+", "-") and not line.startswith(("+++", "---")) and line[1:].strip()]  # fmt: skip
        parts += [f"F {diff.path}", *sorted(changed)]
    return _digest(parts) if parts else ""


@functools.cache
def _parser(grammar: str):  # noqa: ANN202 - a tree_sitter.Parser
    from tree_sitter_language_pack import get_parser

    return get_parser(grammar)


def tokens(text: str, grammar: str | None) -> list[str]:
    """The leaf tokens of ``text`` as tree-sitter parses it, comments dropped and string quotes
    stripped; a trailing comma before a closing bracket is dropped (formatters add it). A hunk may
    start inside a string or a block: when the whole does not parse, each line is parsed alone, so
    both sides of a change are read the same way whatever their context."""
    if grammar is None:
        return text.split()
    source = textwrap.dedent(text)
    tree = _parser(grammar).parse(source.encode())
    if tree.root_node.has_error:
        out = [t for line in source.splitlines() for t in _leaves(_parser(grammar).parse(line.strip().encode()).root_node)]
    else:
        out = _leaves(tree.root_node)
    return [t for i, t in enumerate(out) if not (t == "tok:," and i + 1 < len(out) and out[i + 1] in ("tok:)", "tok:]", "tok:}"))]


def _leaves(root) -> list[str]:  # noqa: ANN001 - a tree_sitter.Node
    out: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count:
            stack.extend(reversed(node.children))
            continue
        if "comment" in node.type:
            continue
        text = node.text.decode(errors="replace")
        if node.type.endswith(("string_start", "string_end")) or text in ('"', "'", "`"):
            text = text.strip("\"'`")
            if not text:
                continue
        out.append(f"{'id' if 'identifier' in node.type else 'tok'}:{text}")
    return out


def _grammar(path: str) -> str | None:
    return GRAMMARS.get(PurePosixPath(path).suffix.lower())


def syntax_hash(patch: str) -> str:
    """Hash of the gold's change at the syntax level: per hunk, the tokens its old and new sides differ
    by (a token diff, so line breaks and indentation do not count), with the names the change
    introduces (absent from the old side: new locals) numbered in order of appearance."""
    parts: list[str] = []
    for diff in code_files(patch):
        grammar = _grammar(diff.path)
        parts.append(f"F {diff.path}")
        for old_lines, new_lines in _hunks(diff):
            old, new = tokens("\n".join(old_lines), grammar), tokens("\n".join(new_lines), grammar)
            known = set(old)
            renamed: dict[str, str] = {}
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
                if op == "equal":
                    continue
                removed = old[i1:i2]
                added = [_rename(t, known, renamed) for t in new[j1:j2]]
                parts.append("-" + " ".join(removed) + " +" + " ".join(added))
    return _digest(parts) if len(parts) > len(code_files(patch)) else ""


def _rename(token: str, known: set[str], renamed: dict[str, str]) -> str:
    if not token.startswith("id:") or token in known:
        return token
    return renamed.setdefault(token, f"id:${len(renamed)}")


def languages(patch: str) -> list[str]:
    return sorted({_grammar(f.path) or "other" for f in code_files(patch)})


# ------------------------------------------------------------------------------------------ the issue


def shingles(text: str) -> set[bytes]:
    words = _WORD.findall(text.lower())
    if len(words) < SHINGLE:
        return {" ".join(words).encode()} if words else set()
    return {" ".join(words[i : i + SHINGLE]).encode() for i in range(len(words) - SHINGLE + 1)}


def issue_minhashes(texts: Iterable[str]) -> list[str]:
    """datasketch MinHashes of each issue's word shingles, in bulk (one permutation table for all),
    encoded by ``encode_minhash``; "" for an issue without words."""
    from datasketch import MinHash

    sets = [sorted(shingles(t)) for t in texts]
    hashes = MinHash.bulk(sets, num_perm=NUM_PERM, seed=SEED)
    return [encode_minhash(m.hashvalues) if words else "" for m, words in zip(hashes, sets)]


def encode_minhash(values: np.ndarray) -> str:
    return base64.b64encode(np.asarray(values, dtype="<u4").tobytes()).decode()


def decode_minhash(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<u4")


def lean_minhash(text: str):  # noqa: ANN201 - a datasketch LeanMinHash, what MinHashLSH indexes
    from datasketch import LeanMinHash

    return LeanMinHash(seed=SEED, hashvalues=decode_minhash(text), scheme=SCHEME)


def similarity(a: str, b: str) -> float:
    """The issues' Jaccard similarity as their MinHashes estimate it (0 when either has no words)."""
    if not a or not b:
        return 0.0
    return float(np.mean(decode_minhash(a) == decode_minhash(b)))


# ------------------------------------------------------------------------------------------ the record


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def fingerprint(task: Task, row: Mapping[str, Any] | None = None, *, version: str = "", location: str = "",
                role: Role = "train", minhash: str | None = None) -> Fingerprint:  # fmt: skip
    """A task's fingerprint. ``row`` is its corpus row (PR, issue and date columns); without one, the
    raw columns the adapter kept (``Answer.leaky_columns``) stand in. ``minhash`` when computed in bulk."""
    row = row if row is not None else task.answer.leaky_columns
    gold = task.answer.gold_patch
    f2p = sorted(task.answer.fail_to_pass)
    return Fingerprint(
        member=f"{task.source}:{task.instance_id}",
        instance_id=task.instance_id,
        source=task.source,
        version=version,
        location=location,
        role=role,
        repo=normalise_repo(task.repo),
        base_commit=task.base_commit.strip().lower(),
        pr=pr_number(task.instance_id, task.repo, row),
        issues=issue_numbers(row),
        created_at=created_at(row),
        patch_hash=patch_hash(gold),
        syntax_hash=syntax_hash(gold),
        languages=languages(gold),
        fail_to_pass=f2p,
        fail_to_pass_hash=_digest(f2p) if f2p else "",
        issue_minhash=minhash if minhash is not None else issue_minhashes([task.problem_statement])[0],
    )
