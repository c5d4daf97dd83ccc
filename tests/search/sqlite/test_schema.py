"""Tests for sessionquery.search.sqlite.schema: guarded open, rebuilds, sharing, write lock."""

from __future__ import annotations

import hashlib
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from search_sqlite_support import FakeCorpus, FakePersistence, header, index_file, log
from sessionquery import SessionQuery
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence import JsonlPersistence
from sessionquery.query.cancel import CancelToken
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.search.sqlite.schema import APPLICATION_ID, SCHEMA_VERSION, WriteLock


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
        conn = index_file(path)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()


def test_two_instances_on_one_path_share_the_index_without_rereading(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    store = FakePersistence()
    store.put(header("a"), log("shared words"))
    first_corpus, second_corpus = FakeCorpus(store), FakeCorpus(store)
    with SqliteSearch(path) as first, SqliteSearch(path) as second:
        assert [hit.record.id for hit in first.search_sessions(first_corpus, "shared").items] == [
            "a"
        ]
        hits = second.search_sessions(second_corpus, "shared").items
        assert [hit.record.id for hit in hits] == ["a"]
    assert first_corpus.reads == ["a"]
    assert second_corpus.reads == []  # indexed by the first instance, found current


_SEARCH_SCRIPT = """
import sys
from sessionquery import SessionQuery
from sessionquery.persistence import JsonlPersistence
from sessionquery.search.sqlite import SqliteSearch
search = SqliteSearch(sys.argv[2])
with SessionQuery(persistence=JsonlPersistence(sys.argv[1]), search=search) as service:
    print(len(service.search_sessions("shared").items))
search.close()
"""


def test_another_process_searches_an_index_this_process_holds_open(tmp_path: Path) -> None:
    root, path = tmp_path / "store", tmp_path / "index.db"
    persistence = JsonlPersistence(root)
    with persistence.create(header("a")) as writer:
        writer.append(log("shared words"))
    with SqliteSearch(path) as held, SessionQuery(persistence=persistence, search=held) as service:
        assert len(service.search_sessions("shared").items) == 1
        other = subprocess.run(
            [sys.executable, "-c", _SEARCH_SCRIPT, str(root), str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert other.stdout.strip() == "1", other.stderr
        assert len(service.search_sessions("shared").items) == 1


def test_a_symlinked_index_path_shares_the_write_lock_of_the_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real" / "index.db"
    real.parent.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real.parent, target_is_directory=True)
    store = FakePersistence()
    store.put(header("a"), log("linked words"))
    holder = WriteLock(real)
    assert holder.try_acquire()
    try:
        with SqliteSearch(alias / "index.db") as linked:
            with pytest.raises(SessionQueryError) as caught:
                linked.update(FakeCorpus(store), cancel=CancelToken.after(0.2))
            assert caught.value.code is ErrorCode.ABORTED  # waited for the real path's lock
            assert not WriteLock(alias / "index.db").try_acquire()
    finally:
        holder.release()
    with SqliteSearch(alias / "index.db") as linked:
        assert linked.update(FakeCorpus(store)).persisted_indexed == 1
    assert (tmp_path / "real" / "index.db.lock").exists()
    assert not (tmp_path / "alias" / "index.db.lock").is_symlink()


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


def test_text_the_index_deletes_does_not_stay_in_the_file(tmp_path: Path) -> None:
    store = FakePersistence()
    store.put(header("a"), log("an old token zqplaintextsecret in a message"))
    path = tmp_path / "index.db"
    with SqliteSearch(path) as index:
        index.update(FakeCorpus(store))
        store.put(header("a"), log("the message rewritten without it"))
        index.update(FakeCorpus(store))
    for suffix in ("", "-wal"):
        file = Path(f"{path}{suffix}")
        if file.exists():
            assert b"zqplaintextsecret" not in file.read_bytes(), suffix
