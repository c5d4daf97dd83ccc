"""Index damage: whatever lies at the index path, the index is rebuilt or refused untouched.

The index is derived data, so a file that is provably ours (our ``application_id``) may be
rebuilt; anything else is refused with ``INDEX_FAILED`` and left byte-for-byte as it was:

* a truncated index file (any length): rebuilt, or refused untouched;
* garbage bytes at the index path: refused untouched;
* a foreign database (another application's tables or ``application_id``, a session file of
  the store itself): refused untouched, with a message that says why;
* our index from a future (or past) schema version: rebuilt in place;
* our index with bytes damaged inside: every search either answers like a fresh index or
  fails with ``INDEX_FAILED`` (never a raw ``sqlite3`` error) and nothing outside the index
  is touched.

After a rebuild, searches give exactly the results of a fresh index.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import raises_code
from reliability.corpus import QUERIES, events, header
from reliability.stats import profile_examples, record
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.search.sqlite.schema import APPLICATION_ID, SCHEMA_VERSION

IDS = [f"d{number}" for number in range(6)]


def _store(root: Path) -> JsonlPersistence:
    store = JsonlPersistence(root)
    for session_id in IDS:
        if store.stat(session_id) is None:
            with store.create(header(session_id)) as handle:
                handle.append(events(session_id, 0, 24))
    return store


def _results(store: JsonlPersistence, index: str | Path) -> list[object]:
    with SessionQuery(persistence=store, search=SqliteSearch(index)) as query:
        found: list[object] = []
        for text in QUERIES:
            found.append(list(query.search_sessions(text, limit=100).items))
            found.append(list(query.search_events(IDS[0], text, limit=100).items))
        return found


def _built_index(tmp_path: Path) -> tuple[JsonlPersistence, Path]:
    store = _store(tmp_path / "store")
    index = tmp_path / "index.sqlite"
    _results(store, index)
    assert not Path(f"{index}-wal").exists() or Path(f"{index}-wal").stat().st_size == 0
    return store, index


def _assert_refused_untouched(store: JsonlPersistence, index: Path) -> str:
    before = index.read_bytes()
    with raises_code(ErrorCode.INDEX_FAILED) as caught:
        SqliteSearch(index)
    assert str(index) in caught.value.message
    lazy = SqliteSearch(index, open_at="first-search")
    with SessionQuery(persistence=store, search=lazy) as query:
        with raises_code(ErrorCode.INDEX_FAILED):
            query.search_sessions("alpha")
        assert query.read_event(IDS[0], 0).target.seq == 0  # exact reads keep working
    assert index.read_bytes() == before, "a refused index file was modified"
    return caught.value.message


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    store = _store(tmp_path_factory.mktemp("fresh") / "store")
    return _results(store, ":memory:")


def test_truncated_index_files_are_rebuilt_or_refused_untouched(
    tmp_path: Path, fresh: list[object]
) -> None:
    store, index = _built_index(tmp_path)
    whole = index.read_bytes()
    rng = random.Random(3)
    lengths = {0, 1, 99, 100, 512, 4096, len(whole) // 2, len(whole) - 1}
    lengths |= {rng.randrange(len(whole)) for _ in range(max(4, profile_examples() // 10))}
    rebuilt = refused = 0
    for length in sorted(lengths):
        index.write_bytes(whole[:length])
        try:
            SqliteSearch(index).close()
        except SessionQueryError as exc:
            assert exc.code == ErrorCode.INDEX_FAILED
            _assert_refused_untouched(store, index)
            refused += 1
            continue
        assert _results(store, index) == fresh, f"truncated to {length} bytes"
        rebuilt += 1
    assert rebuilt and refused
    record("index-damage", truncations=len(lengths))


def test_garbage_at_the_index_path_is_refused_untouched(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    index = tmp_path / "index.sqlite"
    index.write_bytes(b"not a database at all\n" * 300)
    message = _assert_refused_untouched(store, index)
    assert "not a database" in message


def test_a_foreign_database_is_refused_untouched(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    index = tmp_path / "app.db"
    with sqlite3.connect(index) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.close()
    message = _assert_refused_untouched(store, index)
    assert "not an empty database" in message or "sessionquery" in message


def test_a_database_of_another_application_is_refused_untouched(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    index = tmp_path / "other.db"
    conn = sqlite3.connect(index)
    conn.execute("PRAGMA application_id = 1234")
    conn.commit()
    conn.close()
    message = _assert_refused_untouched(store, index)
    assert "another application" in message


def test_our_index_with_a_table_we_do_not_own_is_refused_untouched(tmp_path: Path) -> None:
    store, index = _built_index(tmp_path)
    conn = sqlite3.connect(index)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    message = _assert_refused_untouched(store, index)
    assert "notes" in message


def test_a_session_file_given_as_the_index_path_is_refused_untouched(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    session_file = Path(store.path_of(IDS[0]))
    _assert_refused_untouched(store, session_file)
    with store.open_read(IDS[0]) as handle:
        assert handle.read() == events(IDS[0], 0, 24)


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, SCHEMA_VERSION + 100, 0])
def test_our_index_from_another_schema_version_is_rebuilt(
    tmp_path: Path, fresh: list[object], version: int
) -> None:
    store, index = _built_index(tmp_path)
    conn = sqlite3.connect(index)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("DROP TABLE persisted_sessions")  # a future layout may differ entirely
    conn.commit()
    conn.close()
    assert _results(store, index) == fresh
    conn = sqlite3.connect(index)
    try:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (stored_version,) = conn.execute("PRAGMA user_version").fetchone()
    finally:
        conn.close()
    assert (app_id, stored_version) == (APPLICATION_ID, SCHEMA_VERSION)


def test_a_damaged_generation_in_our_index_is_index_failed_not_a_raw_error(
    tmp_path: Path,
) -> None:
    # One damaged byte found by the property below turned the generation into a NULL;
    # a value of the wrong type is the same damage, reachable without guessing offsets.
    store, index = _built_index(tmp_path)
    conn = sqlite3.connect(index)
    conn.execute("UPDATE search_state SET global_generation = 'damaged'")
    conn.commit()
    conn.close()
    with store.open_write(IDS[1]) as handle:
        handle.append(events(IDS[1], 24, 26))
    with SessionQuery(persistence=store, search=SqliteSearch(index)) as query:
        with raises_code(ErrorCode.INDEX_FAILED):
            query.search_sessions("alpha")


@settings(max_examples=max(5, profile_examples() // 5), deadline=None)
@given(data=st.data())
@pytest.mark.slow
def test_bytes_damaged_inside_our_index_never_escape_as_raw_errors(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp_path = tmp_path_factory.mktemp("damage")
    store, index = _built_index(tmp_path)
    raw = bytearray(index.read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(100, len(raw) - 1))  # past the file header
        raw[at] = data.draw(st.integers(0, 255))
    index.write_bytes(bytes(raw))
    store_files = {p.name: p.read_bytes() for p in (tmp_path / "store").iterdir()}
    try:
        search = SqliteSearch(index)
    except SessionQueryError as exc:
        assert exc.code == ErrorCode.INDEX_FAILED
        return
    with SessionQuery(persistence=store, search=search) as query:
        for text in QUERIES:
            try:
                query.search_sessions(text, limit=100)
                query.search_events(IDS[1], text, limit=100)
            except SessionQueryError as exc:
                assert exc.code == ErrorCode.INDEX_FAILED, exc
    assert {p.name: p.read_bytes() for p in (tmp_path / "store").iterdir()} == store_files
    record("index-damage", damaged_pages=1)
