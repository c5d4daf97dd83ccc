"""Smoke tests of ``benchmarks/postgres.py --quick`` and ``benchmarks/pg_questions.py``: each
runs, writes its own section of the results file without touching the others, and finds the
answers it compares identical."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from locations import BENCHMARKS
from postgres_support import PostgresServer

sys.path.insert(0, str(BENCHMARKS))

from quality_questions import KINDS, QUESTIONS

pytestmark = pytest.mark.slow  # a benchmark run against PostgreSQL


def test_quick_run_replaces_its_section_and_reports_identical_results(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text("# results\n\n## Other\n\nkept\n\n## PostgreSQL backend\n\nold\n")
    dsn = postgres_server.new_database()
    try:
        done = subprocess.run(
            [
                sys.executable,
                str(BENCHMARKS / "postgres.py"),
                "--quick",
                "--dsn",
                dsn,
                "--output",
                str(output),
            ],
            capture_output=True,
            text=True,
            timeout=400,
            check=False,
        )
    finally:
        postgres_server.drop_database(dsn)
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    assert "## Other\n\nkept" in text
    assert "\nold\n" not in text
    assert text.count("## PostgreSQL backend") == 1
    for query in ("rare word", "common word", "two-word phrase", "filtered"):
        assert f"* {query}: " in text
    assert "**differs**" not in text
    assert text.count(", identical") == 5 + 6  # + the six relevance questions


def _pg_questions(postgres_server: PostgresServer, output: Path, heading: str, *args: str) -> str:
    """``pg_questions.py ARGS --output OUTPUT`` against an empty database, comparing HEAD with
    this tree, after OUTPUT held ``heading`` and another section; the file's text after."""
    output.write_text(f"# results\n\n{heading}\n\nold\n\n## Other\n\nkept\n")
    dsn = postgres_server.new_database()
    try:
        done = subprocess.run(
            [
                sys.executable,
                str(BENCHMARKS / "pg_questions.py"),
                *("--dsn", dsn, "--before", "HEAD", *args, "--output", str(output)),
            ],
            capture_output=True,
            text=True,
            timeout=600,  # a hang catcher: an empty database answers each question at once
            check=False,
        )
    finally:
        postgres_server.drop_database(dsn)
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    assert "## Other\n\nkept\n" in text and "\nold\n" not in text
    assert text.count(heading) == 1
    return text


@pytest.mark.parametrize(
    ("match", "heading"),
    [
        ("relevance", "## Relevance on PostgreSQL for the quality questions"),
        ("phrase", "## Phrase search on PostgreSQL for the quality questions"),
    ],
)
def test_the_quality_questions_benchmark_compares_two_sources_and_replaces_its_section(
    tmp_path: Path, postgres_server: PostgresServer, match: str, heading: str
) -> None:
    text = _pg_questions(postgres_server, tmp_path / "RESULTS.md", heading, "--match", match)
    for kind in {question.kind for question in QUESTIONS}:
        assert kind in KINDS and f"\n| {kind} | p50 " in text, kind
    assert f"for {len(QUESTIONS)} of {len(QUESTIONS)} questions" in text
    assert f'match="{match}"' in text


def test_the_common_words_benchmark_compares_two_sources_in_both_modes(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    from pg_questions import COMMON, COMMON_SECTION

    text = _pg_questions(postgres_server, tmp_path / "RESULTS.md", COMMON_SECTION, "--common")
    for question in COMMON:
        assert f"\n| `{question}` | " in text, question
    assert f"for {4 * len(COMMON)} of {4 * len(COMMON)} searches" in text
