"""The history generator (``benchmarks/history.py``): deterministic, sized, importable."""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from locations import BENCHMARKS
from sessionquery import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource

sys.path.insert(0, str(BENCHMARKS))

from history import HistorySpec, generate_history, needle

SMALL = HistorySpec(
    transcripts=24,
    target_bytes=2_400_000,
    codex_share=0.3,
    subagent_share=0.5,
    inline_sidechain_share=0.5,
    seed=7,
)


def _digests(home: Path) -> dict[str, tuple[str, int]]:
    return {
        path.relative_to(home).as_posix(): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(home.rglob("*.jsonl"))
    }


@pytest.mark.slow
def test_the_same_spec_writes_byte_identical_files_with_identical_mtimes(tmp_path: Path) -> None:
    first = generate_history(tmp_path / "a", SMALL)
    second = generate_history(tmp_path / "b", SMALL)
    assert _digests(tmp_path / "a") == _digests(tmp_path / "b")
    assert first.needles == second.needles
    other = generate_history(tmp_path / "c", replace(SMALL, seed=8))
    assert _digests(tmp_path / "c") != _digests(tmp_path / "a")
    assert other.transcripts == SMALL.transcripts


def test_the_home_is_close_to_the_target_size_and_counts_are_true(tmp_path: Path) -> None:
    manifest = generate_history(tmp_path, SMALL)
    files = list(tmp_path.rglob("*.jsonl"))
    assert manifest.files == len(files)
    assert manifest.bytes == sum(path.stat().st_size for path in files)
    assert manifest.lines == sum(path.read_bytes().count(b"\n") for path in files)
    assert 0.8 * SMALL.target_bytes <= manifest.bytes <= 1.3 * SMALL.target_bytes
    assert manifest.transcripts == SMALL.transcripts == len(manifest.needles)


def test_both_importers_read_the_home_without_a_single_problem(tmp_path: Path) -> None:
    manifest = generate_history(tmp_path, SMALL)
    claude = ClaudeCodeSource(manifest.claude_projects)
    codex = CodexSource(manifest.codex_sessions)
    listed = claude.list() + codex.list()
    assert claude.problems() == []
    assert codex.problems() == []
    ids = {entry.header.id for entry in listed}
    assert {session for _, session in manifest.needles.values()} <= ids
    assert any(entry.header.origin == "subagent" for entry in listed)
    assert any("/sidechain-" in entry.header.id for entry in listed)


def test_each_needle_word_finds_exactly_its_own_transcript(tmp_path: Path) -> None:
    manifest = generate_history(tmp_path / "home", SMALL)
    corpus = MultiSource(
        [ClaudeCodeSource(manifest.claude_projects), CodexSource(manifest.codex_sessions)]
    )
    search = SqliteSearch(tmp_path / "index.sqlite3")
    with SessionQuery(persistence=corpus, search=search) as query:
        for index in (0, 5, SMALL.transcripts - 1):
            _, session = manifest.needles[needle(index)]
            hits = query.search_sessions(needle(index)).items
            assert [hit.record.header.id for hit in hits] == [session]


def test_a_home_that_already_holds_a_claude_folder_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    marker = tmp_path / ".claude" / "keep.txt"
    marker.write_text("mine")
    with pytest.raises(FileExistsError):
        generate_history(tmp_path, SMALL)
    assert marker.read_text() == "mine"
    assert not (tmp_path / ".codex").exists()


@pytest.mark.slow
def test_the_end_to_end_benchmark_runs_on_a_tiny_history(tmp_path: Path) -> None:
    from history_bench import render, run

    manifest = generate_history(tmp_path / "home", replace(SMALL, transcripts=6))
    figures = run(manifest, tmp_path, reps=1)
    assert figures["search_finds_needle"] is True
    assert figures["search_after_append_found"] is True
    assert figures["documents"] > 0 and figures["peak_rss_mb"] > 0
    table = render(figures)
    assert "first `sessionquery index`" in table and "peak RSS" in table
