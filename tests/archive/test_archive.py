"""The archive end to end: a Claude Code home is archived, half its transcripts are deleted,
and every session is still listed, searched, read and traced (by the service and the tools),
marked archived; sizes, copies, retention, status and damage."""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
from pathlib import Path

import pytest

from archive_support import claude_home, through, transcripts, units
from conftest import raises_code
from sessionquery.archive import ARCHIVE_FILE, Archive
from sessionquery.errors import ErrorCode, PersistenceCorrupt
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource
from sessionquery.tools import SessionQueryTools, ToolCaller

QUERIES = ("CLAUDE.md", "todo app", "error", "test", "streaming handler")
DAY_MS = 86_400_000


def _source(projects: Path, archive: Archive) -> ClaudeCodeSource:
    return through(ClaudeCodeSource(projects), archive)


def _everything(query: SessionQuery, tools: SessionQueryTools) -> dict[str, object]:
    """What a user or an agent can find: listing, searches, reads, traces and tool answers."""
    records = query.list_sessions()
    out: dict[str, object] = {"ids": [r.id for r in records]}
    for text in QUERIES:
        page = query.search_sessions(text, limit=100, match="words")
        out[f"search {text}"] = [(h.record.id, h.best_match) for h in page.items]
    for record in records:
        log = query.read_session(record.id)
        out[f"read {record.id}"] = log.events
        trace = query.trace_session(record.id)
        out[f"trace {record.id}"] = (
            [a.id for a in trace.ancestors],
            [n.record.id for n in trace.descendants],
            trace.complete,
        )
        if log.events:
            out[f"event {record.id}"] = query.trace_event(record.id, len(log.events) - 1)
    for cwd in sorted({r.header.cwd for r in records if r.header.cwd}):
        caller = ToolCaller(cwd=cwd)
        for text in QUERIES:
            result = tools.call("session_search", {"query": text}, caller)
            out[f"tool {cwd} {text}"] = (result.is_error, result.text)
    return out


def test_after_half_the_transcripts_are_deleted_every_session_is_still_found_marked_archived(
    tmp_path: Path,
) -> None:
    projects = claude_home(tmp_path)
    archive = Archive(tmp_path / "archive")
    report = archive.run([units("claude", projects)])
    files = transcripts(projects)
    assert report.stored == len(files) and not report.problems
    source = _source(projects, archive)
    search = SqliteSearch(tmp_path / "index.sqlite3")
    with SessionQuery(persistence=source, search=search) as query:
        tools = SessionQueryTools(query)
        before = _everything(query, tools)
        listed_before = {entry.header.id: entry for entry in source.list()}
        assert not any(entry.archived for entry in listed_before.values())
        deleted = files[::2]
        for path in deleted:
            path.unlink()
        assert archive.run([units("claude", projects)]).gone == len(deleted)
        after = _everything(query, tools)
        assert after == before
        listed_after = {entry.header.id: entry for entry in source.list()}
        assert listed_after.keys() == listed_before.keys()
        # Same revisions: the index keeps the archived sessions without indexing them again.
        assert {k: e.revision for k, e in listed_after.items()} == {
            k: e.revision for k, e in listed_before.items()
        }
        assert search.update(query.corpus).persisted_indexed == 0
        archived = {r.id for r in query.list_sessions() if r.archived}
        for text in QUERIES:  # search hits carry the mark too, and so do traces
            for hit in query.search_sessions(text, limit=100, match="words").items:
                assert hit.record.archived == (hit.record.id in archived)
        for session_id in archived:
            trace = query.trace_session(session_id)
            assert trace.target.archived
    gone = {str(path.relative_to(projects)) for path in deleted}
    assert archived == {session for session, entry in listed_after.items() if entry.archived}
    assert archived and len(archived) < len(listed_after)
    # A fresh process (new source objects, a fresh index) sees the same.
    fresh_source = _source(projects, Archive(tmp_path / "archive"))
    with SessionQuery(persistence=fresh_source, search=SqliteSearch(":memory:")) as fresh:
        assert _everything(fresh, SessionQueryTools(fresh)) == before
        assert {r.id for r in fresh.list_sessions() if r.archived} == archived
    for path in deleted:
        assert archive.read("claude", projects, str(path.relative_to(projects))) is not None
    assert {u.rel for u in archive.status().rescued} == gone


def test_the_archive_is_within_1_2_times_the_compressed_size_of_the_sources(
    tmp_path: Path,
) -> None:
    projects = claude_home(tmp_path)
    with Archive(tmp_path / "archive") as archive:
        archive.run([units("claude", projects)])
        status = archive.status()
    # The baseline: every transcript compressed on its own by xz at its default preset.
    compressed = sum(len(lzma.compress(p.read_bytes(), preset=6)) for p in transcripts(projects))
    assert status.source_bytes == sum(p.stat().st_size for p in transcripts(projects))
    assert status.file_bytes <= 1.2 * compressed


def test_every_archived_file_reads_back_byte_identical(tmp_path: Path) -> None:
    projects = claude_home(tmp_path)
    with Archive(tmp_path / "archive") as archive:
        archive.run([units("claude", projects)])
        for path in transcripts(projects):
            rel = str(path.relative_to(projects))
            assert archive.read("claude", projects, rel) == path.read_bytes()


def test_a_renamed_and_a_copied_transcript_are_stored_once(tmp_path: Path) -> None:
    projects = claude_home(tmp_path)
    with Archive(tmp_path / "archive") as archive:
        archive.run([units("claude", projects)])
        _count, stored, _raw = archive._db.totals()  # pyright: ignore[reportPrivateUsage]
        first = transcripts(projects)[0]
        second = transcripts(projects)[1]
        first.rename(first.with_name("renamed.jsonl"))
        shutil.copyfile(second, second.with_name("copy.jsonl"))
        with second.with_name("copy.jsonl").open("ab") as handle:
            handle.write(b'{"type":"summary","summary":"grown copy"}\n')
        report = archive.run([units("claude", projects)])
        assert report.stored == 2
        assert report.written < 200  # only the copy's appended line
        _count, stored_after, _raw = archive._db.totals()  # pyright: ignore[reportPrivateUsage]
        assert stored_after - stored < 200
        copy = second.with_name("copy.jsonl")
        assert archive.read("claude", projects, str(copy.relative_to(projects))) == (
            copy.read_bytes()
        )


def test_a_growing_transcript_is_extended_and_an_unchanged_one_is_not_opened(
    tmp_path: Path,
) -> None:
    projects = claude_home(tmp_path)
    with Archive(tmp_path / "archive") as archive:
        archive.run([units("claude", projects)])
        path = transcripts(projects)[-1]
        line = b'{"type":"summary","summary":"one more line"}\n'
        with path.open("ab") as handle:
            handle.write(line)
        report = archive.run([units("claude", projects)])
        assert (report.stored, report.unchanged) == (1, len(transcripts(projects)) - 1)
        assert 0 < report.written < 2 * len(line)
        rel = str(path.relative_to(projects))
        assert archive.read("claude", projects, rel) == path.read_bytes()


def test_codex_rollouts_and_a_missing_folder_are_served_from_the_archive(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions" / "2025" / "09"
    sessions.mkdir(parents=True)
    from locations import CORPUS

    for path in sorted((CORPUS / "agentcmd").glob("rollout-*.jsonl")):
        shutil.copyfile(path, sessions / path.name)
    root = tmp_path / "sessions"
    archive = Archive(tmp_path / "archive")
    archive.run([units("codex", root)])
    before = {e.header.id: e for e in CodexSource(root).list()}
    shutil.rmtree(root)
    source = through(CodexSource(root), archive, "codex")
    combined = MultiSource([source])
    after = {e.header.id: e for e in combined.list()}
    assert after.keys() == before.keys() and all(e.archived for e in after.values())
    with SessionQuery(persistence=combined) as query:
        for session_id, entry in before.items():
            assert len(query.read_session(session_id).events) >= (entry.event_count or 0)
    assert source.problems() == []


def test_a_source_that_exists_is_read_from_its_folder_not_from_the_archive(
    tmp_path: Path,
) -> None:
    projects = claude_home(tmp_path)
    archive = Archive(tmp_path / "archive")
    archive.run([units("claude", projects)])
    path = transcripts(projects)[-1]
    with path.open("ab") as handle:
        handle.write(b'{"type":"summary","summary":"newer than the archive"}\n')
    source = _source(projects, archive)
    assert not any(entry.archived for entry in source.list())
    with SessionQuery(persistence=source) as query:
        found = query.read_title_snapshots([r.id for r in query.list_sessions()])
        assert any(t.title and t.title.title == "newer than the archive" for t in found)


def test_retention_prunes_old_units_and_keeps_recent_ones(tmp_path: Path) -> None:
    projects = claude_home(tmp_path)
    files = transcripts(projects)
    old = files[0]
    now_ms = 1_900_000_000_000
    os.utime(old, ns=((now_ms - 40 * DAY_MS) * 1_000_000,) * 2)
    for path in files[1:]:
        os.utime(path, ns=((now_ms - DAY_MS) * 1_000_000,) * 2)
    with Archive(tmp_path / "archive", clock=lambda: now_ms) as archive:
        archive.run([units("claude", projects)])
        assert len(archive.units()) == len(files)
        assert archive.prune(30) == 1
        assert {u.rel for u in archive.units()} == {str(p.relative_to(projects)) for p in files[1:]}
        with raises_code(ErrorCode.INVALID_CONFIG):
            archive.prune(0)
    with Archive(tmp_path / "archive", clock=lambda: now_ms, keep_days=30) as keeping:
        report = keeping.run([units("claude", projects)])
        assert report.stored == 0  # the old one is neither archived again nor kept
        assert len(keeping.units()) == len(files) - 1
    with raises_code(ErrorCode.INVALID_CONFIG):
        Archive(tmp_path / "archive", keep_days=0)


def test_a_damaged_blob_is_reported_never_served(tmp_path: Path) -> None:
    projects = claude_home(tmp_path)
    archive = Archive(tmp_path / "archive")
    archive.run([units("claude", projects)])
    import sqlite3

    conn = sqlite3.connect(tmp_path / "archive" / ARCHIVE_FILE)
    with conn:
        conn.execute("UPDATE blobs SET data = X'00010203', codec = 'none'")
    conn.close()
    path = transcripts(projects)[0]
    with pytest.raises(PersistenceCorrupt):
        archive.read("claude", projects, str(path.relative_to(projects)))
    path.unlink()
    source = _source(projects, archive)
    listed = source.list()  # listing still works from the metadata of the other files
    assert listed
    assert any("cannot" in p.message or "damaged" in p.message for p in source.problems())


def test_a_file_that_is_not_an_archive_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    folder.mkdir()
    target = folder / ARCHIVE_FILE
    target.write_bytes(b"not a database at all, just bytes" * 10)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    with raises_code(ErrorCode.INVALID_CONFIG):
        Archive(folder)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    import sqlite3

    other = tmp_path / "other"
    other.mkdir()
    conn = sqlite3.connect(other / ARCHIVE_FILE)
    conn.execute("CREATE TABLE mine (x)")
    conn.close()
    with raises_code(ErrorCode.INVALID_CONFIG):
        Archive(other)


def test_an_archive_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    Archive(tmp_path / "archive").close()
    import sqlite3

    conn = sqlite3.connect(tmp_path / "archive" / ARCHIVE_FILE)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with raises_code(ErrorCode.INVALID_CONFIG):
        Archive(tmp_path / "archive")


def test_a_second_run_that_must_not_wait_skips_while_one_holds_the_archive(
    tmp_path: Path,
) -> None:
    projects = claude_home(tmp_path)
    first = Archive(tmp_path / "archive")
    second = Archive(tmp_path / "archive")
    with first._locked(wait=True):  # pyright: ignore[reportPrivateUsage]
        assert second.run([units("claude", projects)], wait=False).skipped
    assert not second.run([units("claude", projects)], wait=False).skipped


def test_the_archive_files_are_private(tmp_path: Path) -> None:
    with Archive(tmp_path / "data" / "archive") as archive:
        assert (archive.folder.stat().st_mode & 0o777) == 0o700
        assert ((archive.folder / ARCHIVE_FILE).stat().st_mode & 0o777) == 0o600


def test_pruning_gives_the_space_back(tmp_path: Path) -> None:
    projects = claude_home(tmp_path)
    now_ms = 1_900_000_000_000
    for path in transcripts(projects):
        os.utime(path, ns=((now_ms - 400 * DAY_MS) * 1_000_000,) * 2)
    with Archive(tmp_path / "archive", clock=lambda: now_ms) as archive:
        archive.run([units("claude", projects)])
        full = archive.status().file_bytes
        assert archive.prune(365) == len(transcripts(projects))
        status = archive.status()
        assert status.units == 0 and status.stored_bytes == 0
        assert status.file_bytes < full / 4
