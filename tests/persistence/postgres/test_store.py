"""PostgresPersistence against a real PostgreSQL server (the session's throwaway cluster)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import user
from postgres_support import PostgresServer
from sessionquery import SessionQuery, SessionStore
from sessionquery.errors import (
    ErrorCode,
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceError,
    PersistenceExists,
    PersistenceNotFound,
    PersistenceOwned,
    PersistenceWriteFailed,
)
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.base import (
    ChangeJournal,
    ChangeTokenSource,
    DocumentSource,
    SessionPersistence,
)
from sessionquery.persistence.postgres import SCHEMA_VERSION, PostgresPersistence


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresPersistence]:
    persistence = PostgresPersistence(postgres_dsn)
    yield persistence
    persistence.close()


@pytest.fixture(scope="module")
def module_store(postgres_server: PostgresServer) -> Iterator[PostgresPersistence]:
    dsn = postgres_server.new_database()
    persistence = PostgresPersistence(dsn)
    yield persistence
    persistence.close()
    postgres_server.drop_database(dsn)


def write(store: PostgresPersistence, session_id: str, *texts: str) -> None:
    with store.create(SessionHeader(id=session_id, created_at=1, cwd="/w")) as handle:
        handle.append([user(i, text) for i, text in enumerate(texts)])


def test_the_store_offers_the_protocol_and_its_optional_capabilities(
    store: PostgresPersistence,
) -> None:
    assert isinstance(store, SessionPersistence)
    assert isinstance(store, ChangeTokenSource)
    assert isinstance(store, ChangeJournal)
    assert isinstance(store, DocumentSource)


def test_written_events_read_back_equal_and_are_listed(store: PostgresPersistence) -> None:
    write(store, "a", "hello", "world")
    (entry,) = store.list()
    assert entry.header.id == "a"
    assert entry.event_count == 2
    with store.open_read("a") as handle:
        assert [e.data["content"][0]["text"] for e in handle.read()] == ["hello", "world"]
        assert handle.read(1, 5) == [user(1, "world")]
        assert handle.read(2) == []
    assert store.stat("a") == entry
    assert store.stat("missing") is None


def test_a_listing_reads_a_header_changed_in_the_database_since_the_last_listing(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    write(store, "a", "hello")
    write(store, "b", "world")
    first = {entry.header.id: entry.header for entry in store.list()}
    assert first["a"].cwd == "/w"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE sq_sessions SET header_json = replace(header_json, '/w', '/moved') "
            "WHERE id = 'a'"
        )
        conn.execute("DELETE FROM sq_events WHERE session_id = 'b'")
        conn.execute("DELETE FROM sq_sessions WHERE id = 'b'")
    again = {entry.header.id: entry.header for entry in store.list()}
    assert set(again) == {"a"}
    assert again["a"].cwd == "/moved"
    assert store.list()[0].header == again["a"]


@settings(max_examples=25)
@given(
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    ),
    session_id=st.text(min_size=1, max_size=40).filter(
        lambda s: s.isprintable() and all(not 0xD800 <= ord(c) <= 0xDFFF for c in s)
    ),
)
def test_any_event_data_and_any_valid_id_round_trip(
    module_store: PostgresPersistence, data: object, session_id: str
) -> None:
    event = SessionEvent(type="custom/thing", seq=0, time=5, data=data)
    try:
        with module_store.create(SessionHeader(id=session_id, created_at=1)) as handle:
            handle.append([event])
        with module_store.open_read(session_id) as reader:
            assert reader.read() == [event]
        assert module_store.stat(session_id).header.id == session_id  # type: ignore[union-attr]
    finally:
        module_store.delete(session_id)


def test_a_second_writer_of_one_session_is_refused_until_the_first_closes(
    store: PostgresPersistence,
) -> None:
    handle = store.create(SessionHeader(id="a", created_at=1))
    with pytest.raises(PersistenceOwned):
        store.open_write("a")
    with pytest.raises(PersistenceOwned):
        store.delete("a")
    handle.close()
    reopened = store.open_write("a")
    reopened.append([user(0, "again")])
    reopened.close()
    assert store.stat("a") is not None
    assert store.stat("a").event_count == 1  # type: ignore[union-attr]


def test_a_writer_in_another_process_is_refused(store: PostgresPersistence) -> None:
    handle = store.create(SessionHeader(id="shared", created_at=1))
    script = textwrap.dedent(
        f"""
        from sessionquery.errors import PersistenceOwned
        from sessionquery.persistence.postgres import PostgresPersistence
        store = PostgresPersistence({store.dsn!r})
        try:
            store.open_write("shared")
        except PersistenceOwned:
            print("refused")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "refused"
    handle.close()


def test_creating_a_stored_id_raises_exists_and_changes_nothing(
    store: PostgresPersistence,
) -> None:
    write(store, "a", "one")
    token = store.change_token()
    with pytest.raises(PersistenceExists):
        store.create(SessionHeader(id="a", created_at=2))
    assert store.change_token() == token
    assert store.stat("a").event_count == 1  # type: ignore[union-attr]


def test_an_append_with_a_stale_seq_is_refused_and_writes_nothing(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    handle = store.create(SessionHeader(id="a", created_at=1))
    handle.append([user(0, "mine")])
    # Someone bypasses the lock and writes seq 0 first: the handle's flush must not mix in.
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sq_events (session_id, seq, event_json) VALUES (%s, 0, %s)",
            ("a", '{"type":"x","seq":0,"time":1,"data":null}'),
        )
        conn.execute("UPDATE sq_sessions SET event_count = 1 WHERE id = 'a'")
    with pytest.raises(PersistenceOwned):
        handle.flush()
    assert handle.event_count == 1  # still queued, nothing lost
    with store.open_read("a") as reader:
        assert reader.read()[0].type == "x"
    handle._conn.close()  # abandon the refused writer (close() would retry the flush)


def test_appending_a_gap_or_a_non_event_is_a_value_error(store: PostgresPersistence) -> None:
    with store.create(SessionHeader(id="a", created_at=1)) as handle:
        with pytest.raises(ValueError, match="next seq"):
            handle.append([user(1, "gap")])
        with pytest.raises(ValueError):
            handle.append(["not an event"])  # type: ignore[list-item]
    with pytest.raises(PersistenceClosed):
        handle.append([user(0, "late")])


def test_the_change_token_moves_with_every_change_and_the_journal_names_them(
    store: PostgresPersistence,
) -> None:
    start = store.change_token()
    assert store.change_token() == start
    write(store, "a", "one")
    after_a = store.change_token()
    assert after_a != start
    write(store, "b", "two")
    assert store.changed_since(after_a) == frozenset({"b"})
    assert store.changed_since(start) == frozenset({"a", "b"})
    store.delete("a")
    assert store.changed_since(after_a) == frozenset({"a", "b"})
    assert store.stat("a") is None
    assert store.changed_since(store.change_token()) == frozenset()


@pytest.mark.parametrize("token", ["", "other:1", "x", "nonsense:abc"])
def test_a_foreign_token_makes_the_journal_answer_unknown(
    store: PostgresPersistence, token: str
) -> None:
    assert store.changed_since(token) is None


def test_a_token_from_the_future_makes_the_journal_answer_unknown(
    store: PostgresPersistence,
) -> None:
    store_id = store.change_token().split(":")[0]
    assert store.changed_since(f"{store_id}:999") is None


def test_deleting_an_unknown_session_raises_not_found(store: PostgresPersistence) -> None:
    with pytest.raises(PersistenceNotFound):
        store.delete("missing")
    with pytest.raises(PersistenceNotFound):
        store.open_read("missing")
    with pytest.raises(PersistenceNotFound):
        store.open_write("missing")


def test_reopening_a_store_keeps_its_identity_and_applies_no_migration_twice(
    postgres_dsn: str,
) -> None:
    with PostgresPersistence(postgres_dsn) as first:
        write(first, "a", "one")
        token = first.change_token()
    with PostgresPersistence(postgres_dsn) as second:
        assert second.change_token() == token
    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute("SELECT name FROM sq_migrations").fetchall()
    assert len(rows) == SCHEMA_VERSION


def test_a_newer_schema_is_refused_with_a_clear_error(postgres_dsn: str) -> None:
    PostgresPersistence(postgres_dsn).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO sq_migrations (name) VALUES ('m999_from_the_future')")
    with pytest.raises(PersistenceError, match="newer schema"):
        PostgresPersistence(postgres_dsn)


def test_an_unreachable_server_raises_a_persistence_error() -> None:
    with pytest.raises(PersistenceError, match="cannot connect"):
        PostgresPersistence("host=/nonexistent-socket-dir dbname=x", connect_timeout=1)


def test_verify_reports_damaged_events_without_raising(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    write(store, "good", "fine")
    write(store, "bad", "one", "two")
    assert store.verify() == []
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE sq_events SET event_json = '{' WHERE session_id = 'bad' AND seq = 1")
    (problem,) = store.verify()
    assert (problem.session_id, problem.seq) == ("bad", 1)
    with store.open_read("bad") as handle, pytest.raises(PersistenceCorrupt, match="seq 1"):
        handle.read()


def test_read_documents_equal_a_cold_read_with_crash_tail_closers(
    store: PostgresPersistence,
) -> None:
    with store.create(SessionHeader(id="a", created_at=1)) as handle:
        handle.append(
            [
                SessionEvent(type="turn/start", seq=0, time=1, data={"turn": 0}),
                user(1, "open turn"),
            ]
        )
    log = store.read_documents("a")
    assert [d.text for d in log.documents] == ["open turn", "interrupted"]
    assert log.event_count == 3
    assert log.revision == store.stat("a").revision  # type: ignore[union-attr]


def test_session_store_records_and_session_query_reads_through_postgres(
    store: PostgresPersistence,
) -> None:
    live = SessionStore(store)
    session = live.create("rec", cwd="/w")
    session.append(
        "user/message",
        {
            "id": "u",
            "role": "user",
            "content": [{"type": "text", "text": "hi"}],
            "source": {"kind": "user"},
        },
        surface_op="append",
    )
    live.close("rec")
    query = SessionQuery(None, store)
    (record,) = query.list_sessions()
    assert (record.header.id, record.persisted, record.live) == ("rec", True, False)
    assert query.read_event("rec", 0).target.type == "user/message"


def test_a_missing_session_reads_as_session_not_found(store: PostgresPersistence) -> None:
    query = SessionQuery(None, store)
    with pytest.raises(Exception) as caught:
        query.read_session("missing")
    assert getattr(caught.value, "code", None) == ErrorCode.SESSION_NOT_FOUND


def test_a_writer_whose_connection_was_dropped_retakes_its_lock_and_loses_nothing(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    handle = store.create(SessionHeader(id="a", created_at=1))
    handle.append([user(0, "one")])
    handle.flush()
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchall()
    assert killed == [(True,)]
    handle.append([user(1, "two")])
    with pytest.raises(PersistenceWriteFailed):
        handle.flush()
    assert handle.event_count == 2  # still queued
    handle.flush()
    handle.close()
    with store.open_read("a") as reader:
        assert [e.data["content"][0]["text"] for e in reader.read()] == ["one", "two"]
