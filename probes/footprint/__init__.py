"""The fix's footprint: inputs where the buggy and gold trees behave differently, drawn by Hypothesis from
gold's diff and the tests' own calls (``probes.footprint.search``), from a vocabulary of the diff
(``probes.footprint.vocabulary``). Strengthening turns its untested part into tests."""

from probes.footprint.search import Footprint, FootprintSearch, Found
from probes.footprint.vocabulary import Vocabulary, fold, vocabulary

__all__ = ["Footprint", "FootprintSearch", "Found", "Vocabulary", "fold", "vocabulary"]
