"""Where the test suite's own files and the repository's other folders are, from any test.

Test modules live in a tree that mirrors ``src/sessionquery``; they name these places through
this module instead of counting ``Path(__file__).parents``, so moving a test never breaks a path.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BENCHMARKS", "CORPUS", "DOCS", "GOLDEN", "ROOT", "TESTS"]

TESTS = Path(__file__).resolve().parent
"""The ``tests/`` folder (support modules, fixtures, golden files)."""

ROOT = TESTS.parent
"""The repository's root."""

BENCHMARKS = ROOT / "benchmarks"
DOCS = ROOT / "docs"
GOLDEN = TESTS / "golden"
CORPUS = TESTS / "data" / "real"
"""Real transcripts the project vendors (``tests/data/README.md``)."""
