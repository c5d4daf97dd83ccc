"""Hostile files in every new format: each is a reported problem and the rest is listed."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from formats_support import FixtureHome, fixture_home
from sessionquery.persistence.base import SessionPersistence
from sessionquery.query.service import SessionQuery
from sessionquery.sources._catalog import Catalog
from sessionquery.sources.copilot import CopilotCliSource
from sessionquery.sources.cursor import CursorSource
from sessionquery.sources.gemini import GeminiSource
from sessionquery.sources.opencode import OpenCodeSource
from sessionquery.sources.qwen import QwenSource
from sessionquery.sources.vscode import VscodeCopilotSource

CAP = 4 * 1024 * 1024


def _gemini(home: FixtureHome) -> tuple[Path, Path, Callable[..., Catalog]]:
    chats = home.home / ".gemini" / "tmp" / "gemapp" / "chats"
    return home.home / ".gemini", next(chats.glob("session-*.jsonl")), GeminiSource


def _qwen(home: FixtureHome) -> tuple[Path, Path, Callable[..., Catalog]]:
    chats = home.home / ".qwen" / "projects" / "-home-me-qwenapp" / "chats"
    return home.home / ".qwen", sorted(chats.glob("*.jsonl"))[0], QwenSource


def _copilot(home: FixtureHome) -> tuple[Path, Path, Callable[..., Catalog]]:
    state = home.home / ".copilot" / "session-state"
    return home.home / ".copilot", next(state.glob("*.jsonl")), CopilotCliSource


def _cursor(home: FixtureHome) -> tuple[Path, Path, Callable[..., Catalog]]:
    root = home.home / ".cursor" / "projects"
    return root, next(root.glob("*/agent-transcripts/1a2b*.jsonl")), CursorSource


def _vscode(home: FixtureHome) -> tuple[Path, Path, Callable[..., Catalog]]:
    root = home.home / ".config" / "Code" / "User"
    return root, next(root.glob("workspaceStorage/*/chatSessions/*.jsonl")), VscodeCopilotSource


LAYOUTS = {
    "gemini": _gemini,
    "qwen": _qwen,
    "copilot": _copilot,
    "cursor": _cursor,
    "vscode": _vscode,
}


@pytest.fixture
def home(tmp_path: Path) -> FixtureHome:
    return fixture_home(tmp_path)


def _ids(source: SessionPersistence) -> set[str]:
    return {entry.header.id for entry in source.list()}


def _problems_of(source: Catalog, path: Path) -> list[tuple[int | None, str]]:
    return [(p.line, p.message) for p in source.problems() if Path(p.path) == path]


def _copy_beside(original: Path, name: str, data: bytes) -> Path:
    target = original.with_name(name + original.suffix)
    target.write_bytes(data)
    return target


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_a_truncated_last_line_is_reported_and_everything_else_is_listed(
    kind: str, home: FixtureHome
) -> None:
    root, original, opener = LAYOUTS[kind](home)
    expected = _ids(opener(root))
    data = original.read_bytes().rstrip(b"\n")
    torn = _copy_beside(original, "torn", data[: len(data) - len(data.splitlines()[-1]) // 2])
    source = opener(root)
    assert expected <= _ids(source)
    assert any("truncated" in message for _, message in _problems_of(source, torn))


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_a_line_that_is_not_utf8_is_reported_with_its_line(kind: str, home: FixtureHome) -> None:
    root, original, opener = LAYOUTS[kind](home)
    expected = _ids(opener(root))
    lines = original.read_bytes().splitlines(keepends=True)
    bad = _copy_beside(original, "latin", b"".join([lines[0], b'{"x": "\xff\xfe"}\n', *lines[1:]]))
    source = opener(root)
    assert expected <= _ids(source)
    assert (2, "line is not valid UTF-8 (invalid start byte); skipped") in _problems_of(source, bad)


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_a_symlink_loop_is_reported_and_nothing_hangs(kind: str, home: FixtureHome) -> None:
    root, original, opener = LAYOUTS[kind](home)
    expected = _ids(opener(root))
    loop = original.with_name("loop" + original.suffix)
    os.symlink(loop.name, loop)
    folder = original.parent / "again"
    os.symlink(".", folder)  # a folder link back to its own parent
    source = opener(root)
    assert _ids(source) == expected
    assert _problems_of(source, loop) and "cannot read file" in _problems_of(source, loop)[0][1]


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_a_huge_row_over_the_size_cap_is_reported_and_skipped(kind: str, home: FixtureHome) -> None:
    root, original, opener = LAYOUTS[kind](home)
    expected = _ids(opener(root))
    row = json.dumps({"id": "huge", "type": "user", "content": "x" * CAP}).encode() + b"\n"
    huge = _copy_beside(original, "huge", original.read_bytes() + row)
    source = opener(root, max_file_bytes=CAP)
    assert _ids(source) == expected
    assert any("over the" in message for _, message in _problems_of(source, huge))
    roomy = opener(root)  # under the default cap, the big row is just read (in linear time)
    assert expected <= _ids(roomy)


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_a_file_of_another_kind_of_garbage_lists_nothing_and_says_why(
    kind: str, home: FixtureHome
) -> None:
    root, original, opener = LAYOUTS[kind](home)
    expected = _ids(opener(root))
    garbage = _copy_beside(original, "garbage", b"[1, 2, 3]\n\x00\x01\x02 not json at all\n")
    source = opener(root)
    assert _ids(source) == expected
    assert _problems_of(source, garbage)


# -- OpenCode: the database ----------------------------------------------------------------


def _opencode(home: FixtureHome) -> Path:
    return home.home / ".local" / "share" / "opencode"


@pytest.mark.slow
def test_a_locked_database_is_a_problem_not_an_error(home: FixtureHome, tmp_path: Path) -> None:
    root = tmp_path / "locked"
    shutil.copytree(_opencode(home), root)
    conn = sqlite3.connect(root / "opencode.db", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("BEGIN EXCLUSIVE")
        source = OpenCodeSource(root)
        assert source.list() == []
        (problem,) = source.problems()
        assert "locked" in problem.message and problem.path == str(root / "opencode.db")
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    assert len(OpenCodeSource(root).list()) == 2  # the lock gone, everything is there


def test_a_database_written_while_it_is_read_gives_a_consistent_snapshot(
    home: FixtureHome, tmp_path: Path
) -> None:
    root = tmp_path / "busy"
    shutil.copytree(_opencode(home), root)
    writer = sqlite3.connect(root / "opencode.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM part")  # uncommitted: a reader must not see it
        source = OpenCodeSource(root)
        listing = {e.header.id: e.event_count for e in source.list()}
        assert len(listing) == 2 and source.problems() == []
        assert all(count and count > 8 for count in listing.values())
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_half_written_database_is_a_problem(home: FixtureHome, tmp_path: Path) -> None:
    root = tmp_path / "half"
    root.mkdir()
    data = (_opencode(home) / "opencode.db").read_bytes()
    (root / "opencode.db").write_bytes(data[: len(data) // 3])
    source = OpenCodeSource(root)
    assert source.list() == []
    (problem,) = source.problems()
    assert problem.message.startswith("cannot read database")


def test_a_file_that_is_not_a_database_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "opencode.db").write_bytes(b"\xff\xfe not sqlite \x00" * 100)
    source = OpenCodeSource(tmp_path)
    assert source.list() == []
    assert "not a SQLite database" in source.problems()[0].message


def test_a_huge_row_skips_its_session_only(home: FixtureHome, tmp_path: Path) -> None:
    root = tmp_path / "huge"
    shutil.copytree(_opencode(home), root)
    conn = sqlite3.connect(root / "opencode.db")
    conn.execute(
        "INSERT INTO part VALUES ('prt_huge', 'msg_c2', 'ses_01JF0P9Z8Y7X6W5V4U3T2S1R0Q', 1, 1, ?)",
        (json.dumps({"type": "text", "text": "y" * CAP}),),
    )
    conn.commit()
    conn.close()
    source = OpenCodeSource(root, max_file_bytes=CAP)
    assert _ids(source) == {"ses_01JF0P1A2B3C4D5E6F7G8H9J0K"}
    assert any("over the" in p.message for p in source.problems())
    assert len(OpenCodeSource(root).list()) == 2


def test_a_database_without_the_expected_tables_is_a_problem(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "opencode.db")
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    source = OpenCodeSource(tmp_path)
    assert source.list() == []
    assert "no such table: session" in source.problems()[0].message


@pytest.mark.parametrize("kind", ["gemini", "vscode"])
def test_a_truncated_json_document_is_a_problem_and_the_rest_is_listed(
    kind: str, home: FixtureHome
) -> None:
    root, _, opener = LAYOUTS[kind](home)
    expected = _ids(opener(root))
    document = next(
        p for p in root.rglob("*.json") if p.parent.name in ("chats", "emptyWindowChatSessions")
    )
    data = document.read_bytes()
    torn = document.with_name("torn.json")
    torn.write_bytes(data[: len(data) // 2])
    source = opener(root)
    assert _ids(source) == expected
    assert any("not a JSON" in message for _, message in _problems_of(source, torn))


# -- Cursor: its state.vscdb beside the agent transcripts ------------------------------------


CURSOR_MAIN = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c11"
CURSOR_CHILD = "4d5e6f7a-8b9c-4dad-8e1f-3a4b5c6d7e14"
CURSOR_TRANSCRIPTS_ONLY = {
    CURSOR_MAIN,  # from its transcript when the database cannot be read
    "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d12",
    "3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6e13",
}


def _cursor_home(home: FixtureHome, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the fixture's Cursor data: (projects folder, the database)."""
    projects = tmp_path / "projects"
    shutil.copytree(home.home / ".cursor" / "projects", projects)
    user = tmp_path / "User"
    shutil.copytree(home.home / ".config" / "Cursor" / "User", user)
    return projects, user / "globalStorage" / "state.vscdb"


def _cursor_source(projects: Path, db: Path, max_file_bytes: int = 1 << 28) -> CursorSource:
    return CursorSource(projects, also=[db.parent.parent], max_file_bytes=max_file_bytes)


def _cursor_problems(source: CursorSource, db: Path) -> list[str]:
    return [p.message for p in source.problems() if p.path == str(db)]


def test_a_locked_cursor_database_is_a_problem_and_the_transcripts_are_listed(
    home: FixtureHome, tmp_path: Path
) -> None:
    projects, db = _cursor_home(home, tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("BEGIN EXCLUSIVE")
        source = _cursor_source(projects, db)
        assert _ids(source) == CURSOR_TRANSCRIPTS_ONLY
        (message,) = _cursor_problems(source, db)
        assert "locked" in message
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    assert CURSOR_CHILD in _ids(_cursor_source(projects, db))  # the lock gone, all is there


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: data[: len(data) // 3], "cannot read database"),
        (lambda data: b"\xff\xfe not sqlite" * 99, "not a SQLite database"),
    ],
)
def test_a_half_written_or_foreign_cursor_database_is_a_problem(
    damage: Callable[[bytes], bytes], said: str, home: FixtureHome, tmp_path: Path
) -> None:
    projects, db = _cursor_home(home, tmp_path)
    db.write_bytes(damage(db.read_bytes()))
    source = _cursor_source(projects, db)
    assert _ids(source) == CURSOR_TRANSCRIPTS_ONLY
    (message,) = _cursor_problems(source, db)
    assert message.startswith(said)


def test_a_cursor_database_written_while_it_is_read_gives_a_consistent_snapshot(
    home: FixtureHome, tmp_path: Path
) -> None:
    projects, db = _cursor_home(home, tmp_path)
    expected = {e.header.id: e.event_count for e in _cursor_source(projects, db).list()}
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM cursorDiskKV WHERE key LIKE 'bubbleId:%'")  # uncommitted
        source = _cursor_source(projects, db)
        assert {e.header.id: e.event_count for e in source.list()} == expected
        assert source.problems() == []
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_database_without_cursor_s_table_is_a_problem(tmp_path: Path) -> None:
    db = tmp_path / "User" / "globalStorage" / "state.vscdb"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE ItemTable (key TEXT, value BLOB)")
    conn.commit()
    conn.close()
    source = CursorSource(db)
    assert source.list() == []
    assert "no cursorDiskKV table" in _cursor_problems(source, db)[0]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (b'{"type": 1, "text": "\xff\xfe"}', "not valid UTF-8"),
        (b'{"type": 1, "text": "cut', "not JSON"),
        (b'["a", "list"]', "not a JSON object"),
        (json.dumps({"type": 2, "text": "y" * CAP}).encode(), "over the"),
    ],
)
def test_a_bad_or_huge_cursor_value_is_a_problem_of_its_bubble_only(
    value: bytes, problem: str, home: FixtureHome, tmp_path: Path
) -> None:
    projects, db = _cursor_home(home, tmp_path)
    before = SessionQuery(persistence=_cursor_source(projects, db)).read_session(CURSOR_MAIN)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{CURSOR_MAIN}:bad", value))
    conn.commit()
    conn.close()
    source = _cursor_source(projects, db, max_file_bytes=CAP)
    after = SessionQuery(persistence=source).read_session(CURSOR_MAIN)
    assert [e.data for e in after.events] == [e.data for e in before.events]
    (message,) = _cursor_problems(source, db)
    assert message.startswith(f"composer {CURSOR_MAIN}: bubble bad: ") and problem in message


def test_a_cursor_conversation_whose_composer_data_is_damaged_keeps_its_bubbles(
    home: FixtureHome, tmp_path: Path
) -> None:
    projects, db = _cursor_home(home, tmp_path)
    conn = sqlite3.connect(db)
    conn.execute(
        "UPDATE cursorDiskKV SET value = ? WHERE key = ?",
        (b"{not json", f"composerData:{CURSOR_CHILD}"),
    )
    conn.commit()
    conn.close()
    source = _cursor_source(projects, db)
    log = SessionQuery(persistence=source).read_session(CURSOR_CHILD)
    assert "ocelot_retry" in json.dumps([e.data for e in log.events])  # rows in rowid order
    assert any("value is not JSON" in m for m in _cursor_problems(source, db))
