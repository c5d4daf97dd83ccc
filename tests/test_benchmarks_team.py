"""Smoke test of ``benchmarks/team_bench.py`` on a tiny history: it runs (its own throwaway
cluster), and replaces only its own section of the results file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from locations import BENCHMARKS


def test_a_tiny_run_replaces_its_section_with_every_row(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text("# results\n\n## Other\n\nkept\n\n## Team history\n\nold\n")
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "team_bench.py"),
            "--machines",
            "3",
            "--sessions",
            "12",
            "--transcripts",
            "1",
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=1800,  # a hang catcher: the run takes a minute or two on a loaded machine
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    assert "## Other\n\nkept\n" in text and "\nold\n" not in text
    section = text[text.index("## Team history") :]
    for row in (
        "| push, one machine at a time",
        "| push of a Claude Code history with realistic event sizes",
        "| relevance search, 20 clients at once, role granted `*`",
        "| phrase search, 20 clients at once, role granted 2 of 8 repositories",
        "| `list_sessions()`, role granted `*` (36 sessions: the whole listing)",
        "| `list_page(limit=50)`, the newest page, role granted 2 of 8 repositories",
    ):
        assert row in section, row
