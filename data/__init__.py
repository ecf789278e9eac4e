"""Bundled sample corpus and corpus fixtures (data, not code)."""

from pathlib import Path

ROOT = Path(__file__).parent
SAMPLE = ROOT / "sample"
FIXTURES = ROOT / "fixtures"
