"""Tests for sessionquery.search.sqlite.schema: the guarded open, rebuilds and the owner lock."""

from __future__ import annotations

import hashlib
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from search_sqlite_support import FakeCorpus, FakePersistence, header, log
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.search.sqlite.schema import APPLICATION_ID, SCHEMA_VERSION


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_db(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "statements",
    [
        ("PRAGMA application_id = 1234", "CREATE TABLE t (x)"),
        ("PRAGMA application_id = 1234",),
        ("CREATE TABLE notes (body TEXT)",),
        (f"PRAGMA application_id = {APPLICATION_ID}", "CREATE TABLE intruder (x)"),
    ],
    ids=["foreign-app-id", "foreign-app-id-empty", "plain-user-table", "ours-with-unknown-table"],
)
def test_a_database_that_is_not_ours_is_refused_and_left_byte_for_byte_unchanged(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    path = tmp_path / "other.db"
    make_db(path, *statements)
    before = digest(path)
    with pytest.raises(SessionQueryError) as caught:
        SqliteSearch(path)
    assert caught.value.code is ErrorCode.INDEX_FAILED
    assert digest(path) == before
    assert not Path(str(path) + "-wal").exists()


def test_a_file_that_is_not_a_database_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text('{"type":"session"}\n' * 200)
    before = digest(path)
    with pytest.raises(SessionQueryError) as caught:
        SqliteSearch(path)
    assert caught.value.code is ErrorCode.INDEX_FAILED
    assert digest(path) == before


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION + 1])
def test_an_index_of_ours_with_another_schema_version_is_rebuilt(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "index.db"
    SqliteSearch(path).close()
    make_db(
        path,
        "INSERT INTO persisted_sessions VALUES (7, 'ghost', 1, NULL, NULL, '{}', 'r', 1)",
        f"PRAGMA user_version = {version}",
    )
    SqliteSearch(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    assert conn.execute("SELECT count(*) FROM persisted_sessions").fetchone() == (0,)
    conn.close()


def test_new_files_are_private_and_missing_parents_are_created_0700(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "index.db"
    SqliteSearch(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700


def test_journal_mode_is_applied_after_validation(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    with SqliteSearch(path, journal_mode="delete"):
        pass
    with SqliteSearch(path):
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()


def test_a_second_instance_on_the_same_path_is_refused_until_the_first_closes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.db"
    first = SqliteSearch(path)
    with pytest.raises(SessionQueryError) as caught:
        SqliteSearch(path)
    assert caught.value.code is ErrorCode.INDEX_FAILED
    first.close()
    SqliteSearch(path).close()


def test_a_second_process_opening_the_index_gets_index_failed(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    script = (
        "import sys\n"
        "from sessionquery.errors import SessionQueryError\n"
        "from sessionquery.search.sqlite import SqliteSearch\n"
        "try:\n"
        "    SqliteSearch(sys.argv[1]).close()\n"
        "except SessionQueryError as exc:\n"
        "    print(exc.code.value)\n"
        "else:\n"
        "    print('opened')\n"
    )
    with SqliteSearch(path):
        held = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    free = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert held.stdout.strip() == ErrorCode.INDEX_FAILED.value
    assert free.stdout.strip() == "opened"


def _one_session(session_id: str, text: str) -> FakeCorpus:
    store = FakePersistence()
    store.put(header(session_id), log(text))
    return FakeCorpus(store)


def test_memory_indexes_are_independent() -> None:
    first, second = _one_session("x", "alpha"), _one_session("y", "beta")
    with SqliteSearch(":memory:") as one, SqliteSearch(":memory:") as two:
        assert [hit.record.id for hit in one.search_sessions(first, "alpha").items] == ["x"]
        assert list(two.search_sessions(second, "alpha").items) == []
        assert one.update(first).persisted_indexed == 0  # the other index left this one alone
