"""Smoke tests of ``benchmarks/team_bench.py`` and ``benchmarks/team_listing.py`` on tiny
histories: they run (each its own throwaway cluster), and replace only their own section of
the results file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from locations import BENCHMARKS


def _run(script: str, output: Path, *args: str) -> str:
    """The results file after ``script`` replaced its section of it."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args, "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=1800,  # a hang catcher: a run takes a minute or two on a loaded machine
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return output.read_text()


def test_a_tiny_run_replaces_its_section_with_every_row(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text("# results\n\n## Other\n\nkept\n\n## Team history\n\nold\n")
    args = ("--machines", "3", "--sessions", "12", "--transcripts", "1")
    text = _run("team_bench.py", output, *args)
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


def test_the_listing_benchmark_replaces_its_section_with_every_row(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text("# results\n\n## Team listing\n\nold\n\n## Other\n\nkept\n")
    text = _run("team_listing.py", output, "--sessions", "400")
    assert "## Other\n\nkept\n" in text and "\nold\n" not in text
    for row in (
        "| `list_page(limit=50)`, the newest page, role granted `*` (400 visible",
        "| `list_page` of the next 50 (its cursor), role granted 2 of 8 repositories (100 visible",
        "| `list_sessions()` (every visible session), role granted `*`",
        "| `sessionquery list` (50 newest, titles), a new process, role granted `*` (load",
        "| `sessionquery show ID --json`, a new process, role granted 2 of 8 repositories",
    ):
        assert row in text, row
