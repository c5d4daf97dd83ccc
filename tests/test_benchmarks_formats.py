"""The formats benchmark's generator writes a home every importer reads without a problem."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from locations import BENCHMARKS
from sessionquery.app import App, kind_of
from sessionquery.config import Config

sys.path.insert(0, str(BENCHMARKS))

from formats_bench import KINDS, generate_formats, render

pytestmark = pytest.mark.slow  # a generated home of every format


def test_the_generated_home_holds_every_format_and_lists_completely(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written = generate_formats(home, 64, 2_000_000, seed=7)
    assert set(written["sessions"]) == set(KINDS) and all(written["sessions"].values())
    config = Config.for_home(tmp_path / "sq", user_home=home)
    app = App(config)
    listing = app.persistence().list()
    kinds = {entry.kind for entry in app.selection.sources}
    assert kinds == {"claude", "codex", *KINDS}
    assert len([e for e in listing if e.header.parent_session is None]) >= 64
    problems = [p for p in app.problems() if "cwd is None" not in p.message]
    assert problems == []  # (Cursor's generated projects name no folder of this machine)
    (cursor,) = [entry for entry in app.selection.sources if entry.kind == "cursor"]
    found = kind_of("cursor").open(cursor.path, also=cursor.companions).list()
    assert len(found) == written["sessions"]["cursor"]  # the transcripts' copies listed once
    assert all(entry.header.created_at > 0 for entry in found)


def test_the_section_says_whether_the_bar_is_met() -> None:
    figures = {
        "sessions": 10,
        "reps": 3,
        "load": (1.0, 1.0, 1.0),
        "plain": {"files": 12, "bytes": 1_000_000, "seconds": [1.0, 1.0, 1.0]},
        "every": {"files": 11, "bytes": 1_000_000, "seconds": [1.2, 1.4, 1.3], "kinds": {}},
    }
    section = render(figures)
    assert section.startswith("## Every format: no-change list\n")
    assert "| 1.30 s | 1.30\u00d7 | at most 1.5\u00d7: met |" in section
