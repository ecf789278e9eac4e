"""The host's side of the run-time guard (``harness/grading/plugins/swedeck_guard.py``).

Per pytest command of a grade the host reserves the guard's log, writes its job once it has judged
the change (the files the change added or modified, the hidden tests the host writes, the reports
the seal covers) and gives the command a secret key. After the command it reads the log: a
``TAMPER`` line is the guard's finding; a session that wrote its JUnit report must end with a
``SEAL`` line keyed with the secret over the reports the host then reads. Code under test can cut
the log or end the process before the seal, never write a seal, so anything but a clean seal over
the same reports is a finding too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable, Mapping, Sequence

from harness.grading import codefiles
from harness.grading.capabilities import TEST_INFRA_NAMES
from harness.grading.shipping import ship
from harness.grading.tree import Entry, tree_changes
from harness.records import TestRun
from harness.sandboxes.sandbox import IO_DIR, REPORT_BYTES, Sandbox, Unreadable

PLUGIN = "swedeck_guard"
EXIT = 88  # swedeck_guard.EXIT: the guard ended the process


ENABLED = True  # off only where a benchmark or a control measures a grade without it


def paths(token: str, i: int) -> tuple[str, str]:
    """The IO folder's job and log of command ``i`` of the grade ``token``."""
    return f"{IO_DIR}/guard-{token}-{i}.json", f"{IO_DIR}/guard-{token}-{i}.log"


def arm(sandbox: Sandbox, env: dict[str, str], token: str, i: int, *, ours: bool) -> None:
    """Put the guard into pytest command ``i``'s environment ``env``, ahead of every other plugin (in
    force before anything of the tree is imported), with a secret key of its own and its log
    reserved; not into ``ours``, the harness's own runs of its own trees (instrumented, observed,
    covered), which plant no canaries either."""
    if not ENABLED or ours:
        return
    if i == 0:
        ship(sandbox, [PLUGIN])
    job, log = paths(token, i)
    sandbox.output(log)
    env["PYTEST_ADDOPTS"] = f"-p {PLUGIN} " + env["PYTEST_ADDOPTS"]
    env |= {"SWEDECK_GUARD": job, "SWEDECK_GUARD_KEY": secrets.token_hex(16)}


def write_jobs(
    sandbox: Sandbox, token: str, envs: Sequence[tuple[dict[str, str], str, str]], before: dict[str, Entry], after: dict[str, Entry],
    hidden: Mapping[str, object], patch: str, files: Mapping[str, bytes | None],
) -> None:
    """The job of each guarded command of ``envs`` (environment, JUnit and outcome records' paths),
    once the host has judged the change: the files it added or modified, the hidden tests, and per
    modified Python file the lines the change added there (its other lines are the pristine tree's:
    a library's own deprecation helper reading its caller's frame is not the change's act). Those
    lines are read from the file as the change left it (``files``: as the audit read them), as the
    audit reads them: those whose text is one of the patch's added lines, wherever the apply put
    them. (Numbered from the patch's hunk headers, a patch whose headers lie applied at an offset, and
    the lines it added were counted as the tree's.) Where a file is not in ``files``, every line of
    it is the change's."""
    changes = tree_changes(before, after)
    changed, protected = sorted(changes.added | changes.modified), sorted(hidden)
    added = codefiles.added_lines(patch)
    lines = {path: numbers for path in changes.modified if (numbers := _added_lines(path, files.get(path), added.get(path))) is not None}
    for i, (env, junit, outcomes) in enumerate(envs):
        if "SWEDECK_GUARD" in env:
            log = paths(token, i)[1]
            body = {"root": sandbox.workdir, "changed": changed, "lines": lines, "protected": protected, "log": log, "junit": junit,
                    "outcomes": outcomes, "startup": sorted(TEST_INFRA_NAMES)}  # fmt: skip
            sandbox.write_file(env["SWEDECK_GUARD"], json.dumps(body))


def _added_lines(path: str, blob: bytes | None, added: set[str] | None) -> list[int] | None:
    """The line numbers of a modified Python file that the change added (``added``: the texts of the
    patch's added lines for it), None where all of them count."""
    if blob is None or not path.endswith((".py", ".pyw")):
        return None
    source = codefiles.decode(blob)
    if source.error:
        return None
    return sorted(codefiles.new_lines(blob, source, added))


def judge(run: TestRun, sandbox: Sandbox, env: Mapping[str, str], junit: str, outcomes: str, exit_code: int | None, i: int) -> None:
    """The guard's word on command ``i`` of ``run``: its findings end the run as ``tamper_suspected``."""
    if "SWEDECK_GUARD" not in env or run.outcome == "tamper_suspected":
        return
    log = env["SWEDECK_GUARD"].removesuffix(".json") + ".log"  # paths()
    reports = [_read(sandbox, junit), _read(sandbox, outcomes)]
    found = findings(_read(sandbox, log), env["SWEDECK_GUARD_KEY"], reports, exit_code, ran=bool(reports[0]))
    if found:
        run.outcome, run.detail, run.tamper = "tamper_suspected", f"command {i}: " + "; ".join(found), run.tamper + found


def _read(sandbox: Sandbox, path: str) -> bytes:
    try:
        return sandbox.read_file(path, limit=REPORT_BYTES)
    except (FileNotFoundError, Unreadable):  # a report refused is the reports' own finding
        return b""


def _mac(key: str, message: str) -> str:
    return hmac.new(key.encode(), message.encode(), hashlib.sha256).hexdigest()


def findings(log: bytes, key: str, reports: Iterable[bytes], exit_code: int | None, ran: bool) -> list[str]:
    """What the guard's ``log`` says of one command: its own findings, else a missing, forged or
    stale seal where the guard loaded or the session ``ran`` (wrote its JUnit report), its exit
    where it left no line, a log without the guard's first line. ``reports``: the bytes of the sealed
    reports as the host read them."""
    found, seals, loaded = [], [], False
    for line in log.decode(errors="replace").splitlines():
        word, _, rest = line.partition(" ")
        if word == "TAMPER":
            try:
                found.append(bytes.fromhex(rest).decode(errors="replace"))
            except ValueError:
                found.append("the guard's log holds a line it did not write")
        elif word == "LOADED":
            loaded = True
        elif word == "SEAL":
            seals.append(rest.split())
        elif word == "UNGUARDED" and hmac.compare_digest(rest, _mac(key, "unguarded")):
            return []  # an interpreter without audit hooks: the twins and the audit stand alone
        elif line:
            found.append("the guard's log holds a line it did not write")
    if found:
        return found
    digests = [hashlib.sha256(data).hexdigest() for data in reports]
    valid = [seal for seal in seals if len(seal) == 1 + len(digests) and hmac.compare_digest(seal[0], _mac(key, "seal " + " ".join(seal[1:])))]
    if seals and len(valid) != len(seals):
        return ["the guard's log holds a seal it did not write"]
    if exit_code == EXIT:
        return ["the run-time guard ended the tests (its record was cut)"]
    if (ran or loaded) and not valid:
        return ["the tests' session ended without the run-time guard's seal (it exited early, or the guard was cut off)"]
    if not loaded:
        return ["the run-time guard's log was cut (it never says the guard loaded)"]
    if valid and valid[-1][1:] != digests:
        return ["the reports are not the ones the run-time guard sealed (written after the session, or by another process)"]
    return []
