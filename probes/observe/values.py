"""Values tried in place of one argument of an observed call, each with where it came from."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence

from probes.replay import draw

PER_ARGUMENT = 24  # variations of one argument of one seed
SPLICED = 4  # other seen values one string is spliced with or nested in
MAX_SEPARATORS = 6  # punctuation characters of a string left out, one at a time
HYPOTHESIS_EXAMPLES = 5


def _numbers_near(values: Iterable[object]) -> list[int]:
    out: list[int] = []
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool):
            out += [v - 1, v, v + 1]
    return out


def alternatives(value: object, seen: Sequence[object], none_ok: bool, endings: Sequence[str] = ()) -> list[tuple[object, str]]:
    """Values tried in place of one argument, each with where it came from, best first. ``endings``:
    short string literals of the functions gold changed."""
    out: list[tuple[object, str]] = []
    if isinstance(value, bool):
        out.append((not value, "the other truth value"))
    elif isinstance(value, int):
        out += [(v, "boundary") for v in (value - 1, value + 1, 0, -1, 1, -value)]
        out += [(v, "around a number the tests use") for v in _numbers_near(seen)]
    elif isinstance(value, float):
        out += [(v, "boundary") for v in (0.0, -value, value - 0.5, value + 0.5, value * 2)]
    elif isinstance(value, (str, bytes)):
        empty = type(value)()
        out += [(empty, "empty"), (value[:1], "one element"), (value[:-1], "one shorter"), (value + value, "doubled")]
        if isinstance(value, str):
            out += [(v, "a run of digits one longer") for v in longer_digit_runs(value)]
            out += [(v, "another character before the last") for v in other_penultimate(value, seen)]
            out += [(v, "a bracketed group nested once more") for v in deeper_groups(value)]
            out += [(v, "a digit at its extremes") for v in digit_extremes(value)]
            out += [(v, "a separator left out") for v in separators_dropped(value)]
            out += [(value[: -len(e)] + e, "its ending replaced by a literal of the changed code")
                    for e in endings if value and not value.endswith(e)]  # fmt: skip
        for other in list(dict.fromkeys(o for o in seen if type(o) is type(value) and o != value and o))[:SPLICED]:
            half, mid = len(value) // 2, len(other) // 2
            out += [(value[:half] + other[mid:], "spliced with another seen value"),
                    (other[:mid] + value + other[mid:], "nested in another seen value")]  # fmt: skip
    elif isinstance(value, (list, tuple)):
        kind = type(value)
        other_kind = tuple if kind is list else list
        out += [(kind(), "empty"), (kind(value[:1]), "one element"), (kind(value[:-1]), "one shorter"),
                (kind([*value, *value[:1]]), "one longer"), (kind([value]), "nested"),
                (other_kind(value), "the same items in the other sequence type")]  # fmt: skip
    elif isinstance(value, dict):
        out += [({}, "empty"), (dict(list(value.items())[:1]), "one item")]
    if none_ok and value is not None:
        out.insert(1, (None, "None, as the signature's default or the tests' several types allow"))
    out += [(v, "the issue or the tests, same type") for v in seen if type(v) is type(value)]
    # Hypothesis's draws last, and only when the budget is not full without them: each draw is a
    # derandomised run of its own (the same values whenever it runs), a third of parse 0477aa5's
    # observation time when drawn for every argument
    def drawn() -> Iterator[tuple[object, str]]:
        for v in _hypothesis(value, seen):
            yield v, "Hypothesis, inferred from the values seen"

    # keyed by type and repr, and stopped at the budget: a suite with a thousand seen strings made
    # this pairwise comparison the task's bottleneck (packaging's markers)
    unique: dict[tuple[str, str], tuple[object, str]] = {(type(value).__name__, repr(value)): (value, "")}
    for v, how in itertools.chain(out, drawn()):
        unique.setdefault((type(v).__name__, repr(v)), (v, how))
        if len(unique) > PER_ARGUMENT:
            break
    return list(unique.values())[1:]


def longer_digit_runs(text: str) -> list[str]:
    """``text`` with one run of digits one digit longer (its last digit repeated): a field at its width
    limit (``.123456`` -> ``.1234566``); the longest runs first."""
    runs = sorted(re.finditer(r"\d+", text), key=lambda m: -len(m.group()))[:4]
    return [text[: m.end()] + m.group()[-1] + text[m.end() :] for m in runs]


def separators_dropped(text: str) -> list[str]:
    """``text`` without the first occurrence of each of its first few punctuation characters: an
    optional part of a small syntax left out (parse's ``{:+.7f}`` -> ``{:+7f}``: a sign with no
    precision after it)."""
    marks = list(dict.fromkeys(c for c in text if not c.isalnum() and not c.isspace()))[:MAX_SEPARATORS]
    return [text.replace(c, "", 1) for c in marks if len(text) > 1]


def digit_extremes(text: str) -> list[str]:
    """``text`` with its first digit made ``0`` and ``9`` (semver's ``9.3.7``: a check over the
    characters ``0123456789`` that drops one)."""
    at = next((i for i, c in enumerate(text) if c.isdigit()), -1)
    return [] if at < 0 else [text[:at] + d + text[at + 1 :] for d in "09" if d != text[at]]


def deeper_groups(text: str) -> list[str]:
    """``text`` with its first balanced ``(...)`` (then ``[...]``, ``{...}``) group wrapped in one more
    pair: a structure one level deeper than the tests' (packaging's markers within a group within a
    group)."""
    out = []
    for opening, closing in ("()", "[]", "{}"):
        start, depth = text.find(opening), 0
        if start < 0:
            continue
        for i in range(start, len(text)):
            depth += (text[i] == opening) - (text[i] == closing)
            if depth == 0:
                out.append(f"{text[:start]}{opening}{text[start : i + 1]}{closing}{text[i + 1 :]}")
                break
    return out


def other_penultimate(text: str, seen: Sequence[object]) -> list[str]:
    """``text`` with the character before its last one replaced by one that no seen string of this
    argument has there: an ending the tests never pair (``box``, ``fox``, ``tax`` -> ``bbx``)."""
    words = [v for v in [*seen, text] if isinstance(v, str) and len(v) >= 2]
    if len(text) < 2:
        return []
    used = {w[-2] for w in words}
    spare = [c for c in sorted(set("".join(words))) if c not in used and c.isalnum()]
    return [text[:-2] + spare[0] + text[-1]] if spare else []


def _hypothesis(value: object, seen: Sequence[object]) -> list[object]:
    """A few values Hypothesis draws from a strategy inferred from the values seen of this type."""
    from hypothesis import strategies as st

    same = [v for v in seen if type(v) is type(value)] + [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        strategy = st.integers(min_value=min(same) - 3, max_value=max(same) + 3)  # type: ignore[type-var]
    elif isinstance(value, str):
        alphabet = "".join(sorted(set("".join(same)))) or "a"  # type: ignore[arg-type]
        strategy = st.text(alphabet=st.sampled_from(alphabet), max_size=max(len(v) for v in same) + 3)  # type: ignore[arg-type]
    elif isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        strategy = st.lists(st.integers(min_value=min(value) - 2, max_value=max(value) + 2), max_size=len(value) + 2)
    else:
        return []
    return draw(strategy, HYPOTHESIS_EXAMPLES * 3)[:HYPOTHESIS_EXAMPLES]
