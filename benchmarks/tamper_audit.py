"""False positives of the tamper audit: how many gold patches in the repository it flags (target 0).

Every file a gold patch writes is audited, as the grader audits a candidate's: Python files and any
other (an archive, a pickle, text that parses as Python).

Every task of the sample corpus, the corpus fixtures and the real fix commits: where the base tree is
here (sample tasks, real commits) the gold patch is applied to a copy of it with ``git apply`` and the
audit reads the changed Python files as the grader does; where the tree lives in a corpus image that
is not here (fixtures), it reads what the patch shows of each file (its hunks' new side). Prints each
flagged line and the count.

    python benchmarks/tamper_audit.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _hunks(patch: str) -> dict[str, bytes]:
    """Per file, the new side of the patch's hunks: context and added lines, as far as the patch shows."""
    from harness.grading.diffs import split_diff

    shown = {}
    for diff in split_diff(patch):
        if diff.new_path:
            body = diff.text.split("\n@@", 1)[1] if "\n@@" in diff.text else ""
            lines = [line[1:] for line in body.splitlines() if line[:1] in (" ", "+")]
            shown[diff.new_path] = "\n".join(lines).encode()
    return shown


def _after_files(task, settings) -> dict[str, bytes | None]:  # noqa: ANN001
    from harness.grading import tamper
    from harness.sandboxes.envs import prepare_tree

    tree = prepare_tree(task, settings)
    work = Path(tempfile.mkdtemp(prefix="tamper-audit-"))
    try:
        copy = work / "tree"
        shutil.copytree(tree, copy, symlinks=True)
        done = subprocess.run(["git", "apply", "-"], cwd=copy, input=task.answer.gold_patch, text=True, capture_output=True)
        if done.returncode:
            raise RuntimeError(f"{task.instance_id}: the gold patch does not apply: {done.stderr[-400:]}")
        files: dict[str, bytes | None] = {}
        for path in sorted(tamper.named_paths(task.answer.gold_patch)):
            target = copy / path
            if target.is_file():
                files[path] = target.read_bytes() if target.stat().st_size <= tamper.MAX_FILE_BYTES else None
        return files
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    cache = Path(tempfile.mkdtemp(prefix="swedeck-tamper-", dir="/var/tmp"))
    os.environ.setdefault("SWEDECK_CACHE", str(cache))
    from curation.sources import load_source
    from data import SAMPLE
    from harness.grading import tamper
    from harness.config import Settings

    fixtures = ROOT / "data" / "fixtures"
    sources = [SAMPLE, ROOT / "data" / "real", *sorted(p for p in fixtures.iterdir() if p.suffix in (".jsonl", ".parquet", ".arrow"))]
    settings = Settings.from_env()
    tasks, from_hunks, flagged, seen = 0, 0, {}, set()
    for source in sources:
        for task in load_source(source).tasks:
            if task.answer.gold_patch in seen:  # the same row in several fixture formats
                continue
            seen.add(task.answer.gold_patch)
            tasks += 1
            if task.repo_source.kind == "image":
                from_hunks += 1
                files: dict[str, bytes | None] = dict(_hunks(task.answer.gold_patch))
            else:
                files = _after_files(task, settings)
            findings = tamper.audit(files, task.answer.gold_patch)
            if findings:
                flagged[task.instance_id] = findings
    for instance_id, findings in sorted(flagged.items()):
        print(instance_id)
        for finding in findings:
            print(f"  {finding}")
    print(f"gold patches audited: {tasks} ({tasks - from_hunks} on their tree, {from_hunks} from their hunks); flagged: {len(flagged)} (target 0)")
    shutil.rmtree(cache, ignore_errors=True)
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
