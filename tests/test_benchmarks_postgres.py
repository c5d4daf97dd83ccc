"""Smoke test of ``benchmarks/postgres.py --quick``: it runs, writes its own section of the
results file without touching the others, and finds both backends' answers identical."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from locations import BENCHMARKS
from postgres_support import PostgresServer


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
