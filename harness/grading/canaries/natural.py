"""The model of real values the twins are drawn against (``twins.draw``'s ``natural``): how natural a
value is in a literal's place of a planted file, as ``log w``."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from harness.grading.canaries.twins import Leaf, Words, characters, pattern

# the weights of the model of real values (``naturalness``), fitted on the sample and data/real's
# development part with benchmarks/canary_tells.py (where the original's rank under each tell there
# is nearest uniform; the held-out part was not read): character pairs of a string and of a number,
# how often the file uses a string's words, a number's digits place by place
_PAIRS_STRING, _PAIRS_NUMBER, _WORDS, _PLACES = 0.45, 1.3, 0.85, 0.6
_SMOOTHING = 1.0  # pseudo-count of a character pair, spread by how common its second character is


def naturalness(vocabulary: Words, segment: str, spot: Leaf, copies: int) -> Callable[[str], float]:
    """``log w`` of a value in the literal's place: a log-linear model of real expected values, read
    off the planted file without its k+1 values (the file without the literal, and the test's
    segment without it ``copies`` times more: each twin repeats it). Its features: the value's
    characters with the ones just before and after it, pair by pair; a string's words, by how often
    the file uses them; a number's digits, each in its place among the file's numbers written alike
    (the place model is none for one digit, which its neighbours in the pairs already weigh)."""
    left, right = segment[spot.begin - 1 : spot.begin], segment[spot.end : spot.end + 1]
    own = segment[max(spot.begin - 1, 0) : spot.end + 1]  # the literal with its neighbours
    rest = segment[: max(spot.begin - 1, 0)] + "\0" + segment[spot.end + 1 :]
    pairs = _pairs(vocabulary, own, rest, copies)
    if spot.text[:1].isdigit():
        places = _places(vocabulary, spot.text)
        return lambda value: _PAIRS_NUMBER * pairs(left + value + right) + _PLACES * places(value)
    words = _words(vocabulary, spot.text, rest, copies)
    return lambda value: _PAIRS_STRING * pairs(left + value + right) + _WORDS * words(value)


def _pairs(vocabulary: Words, own: str, rest: str, copies: int) -> Callable[[str], float]:
    """Log-likelihood of a text under a character-pair model (each character given the one before)."""
    (minus, minus_pairs), (plus, plus_pairs) = characters(own), characters(rest)
    total = sum(vocabulary.characters.values()) - len(own) + copies * len(rest)
    kinds = len(vocabulary.characters) + 1

    def single(c: str) -> int:
        return vocabulary.characters[c] - minus[c] + copies * plus[c]

    def pair(ab: str) -> int:
        return vocabulary.pairs[ab] - minus_pairs[ab] + copies * plus_pairs[ab]

    def likelihood(text: str) -> float:
        return sum(math.log((pair(a + b) + _SMOOTHING * (single(b) + 1) / (total + kinds)) / (single(a) + _SMOOTHING)) for a, b in zip(text, text[1:]))

    return likelihood


def _words(vocabulary: Words, literal: str, rest: str, copies: int) -> Callable[[str], float]:
    own, plus = Counter(re.findall(r"[A-Za-z]+", literal)), Counter(re.findall(r"[A-Za-z]+", rest))
    return lambda value: sum(math.log(1 + vocabulary.words[w] - own[w] + copies * plus[w]) for w in re.findall(r"[A-Za-z]+", value))


def _places(vocabulary: Words, literal: str) -> Callable[[str], float]:
    """Log-likelihood of a number's digits, each in its place, among the file's other numbers of the
    same pattern, smoothed toward how often the file's numbers use each digit."""
    if len(literal) < 2:
        return lambda value: 0.0
    alike = Counter({n: c for n, c in vocabulary.numbers.items() if pattern(n) == pattern(literal)}) - Counter({literal: 1})
    at = [Counter() for _ in literal]
    for number, count in alike.items():
        for i, digit in enumerate(number):
            at[i][digit] += count
    digits = vocabulary.digits
    everywhere, alike_total = sum(digits.values()) + 10, sum(alike.values())

    def likelihood(value: str) -> float:
        return sum(math.log((at[i][d] + (digits[d] + 1) / everywhere) / (alike_total + 1)) for i, d in enumerate(value) if d != ".")

    return likelihood
