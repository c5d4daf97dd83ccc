"""The PostgreSQL store's own pages of the listing (``list_newest``): one query on the listing
index, the listing columns the m003 migration adds, and what a row without them does; the
outline of the listing (``list_outline``) from those columns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sessionquery.errors import PersistenceCorrupt
from sessionquery.model import SessionHeader
from sessionquery.persistence.base import SessionOutline, outline_of
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.persistence.postgres._listing import page_query
from sessionquery.query import CreatedBetween, CwdIn, IdIn, ParentIn


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresPersistence]:
    persistence = PostgresPersistence(postgres_dsn)
    yield persistence
    persistence.close()


def _create(store: PostgresPersistence, sid: str, created: int, **fields: Any) -> None:
    store.create(SessionHeader(id=sid, created_at=created, **fields)).close()


def _newest_ids(store: PostgresPersistence, *filters: Any, after: Any = None) -> list[str]:
    return [e.header.id for e in store.list_newest(list(filters), after=after, limit=100)]


def _ordered(store: PostgresPersistence) -> list[str]:
    entries = sorted(store.list(), key=lambda e: (-e.header.created_at, e.header.id))
    return [entry.header.id for entry in entries]


def test_a_page_is_read_from_the_listing_index_without_sorting(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        PostgresPersistence(postgres_dsn).close()
        conn.execute(
            "INSERT INTO sq_sessions (id, header_json, revision, created_at, cwd) "
            "SELECT 's' || n, '{}', 0, n % 977, '/w/' || (n % 7) "
            "FROM generate_series(1, 20000) AS n"
        )
        conn.execute("ANALYZE sq_sessions")
        sql, params = page_query("id", [CwdIn(["/w/3"])], (500, "s9"), 50)
        (plan,) = conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone() or (None,)
    text = json.dumps(plan)
    assert "sq_sessions_newest" in text and '"Sort"' not in text, text


def test_header_clauses_are_answered_in_the_query(store: PostgresPersistence) -> None:
    _create(store, "a", 30, cwd="/one", parent_session="p")
    _create(store, "b", 20, cwd="/two")
    _create(store, "c", 20)
    _create(store, "d", 10, cwd="/one", parent_session="p")
    assert _newest_ids(store) == ["a", "b", "c", "d"]
    assert _newest_ids(store, CwdIn(["/one", None])) == ["a", "c", "d"]
    assert _newest_ids(store, CwdIn([])) == []
    assert _newest_ids(store, ParentIn([None])) == ["b", "c"]
    assert _newest_ids(store, IdIn(["d", "b", "x"]), CreatedBetween(10.5, None)) == ["b"]
    assert _newest_ids(store, CreatedBetween(None, 20)) == ["b", "c", "d"]
    assert _newest_ids(store, CreatedBetween(2**70, None)) == []
    assert _newest_ids(store, after=(20, "b")) == ["c", "d"]


def test_the_migration_fills_the_listing_columns_of_sessions_stored_before(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    for n in range(7):
        _create(store, f"s{n}", n % 3, cwd=f"/w{n % 2}")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        # The store as the version before the migration left it.
        conn.execute("DROP INDEX sq_sessions_newest")
        conn.execute(
            "ALTER TABLE sq_sessions DROP COLUMN created_at, DROP COLUMN cwd, "
            "DROP COLUMN parent_session"
        )
        conn.execute("DELETE FROM sq_migrations WHERE name = 'm003_listing'")
    again = PostgresPersistence(postgres_dsn)
    try:
        assert _newest_ids(again) == _ordered(again)
        assert _newest_ids(again, CwdIn(["/w1"])) == [i for i in _ordered(again) if int(i[1]) % 2]
    finally:
        again.close()


def test_a_row_without_listing_columns_makes_pages_read_the_whole_listing(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    for n in range(5):
        _create(store, f"s{n}", n)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE sq_sessions SET created_at = NULL WHERE id = 's3'")  # by hand
    assert _newest_ids(store) == ["s4", "s3", "s2", "s1", "s0"]
    assert _newest_ids(store, after=(3, "s3")) == ["s2", "s1", "s0"]


def test_the_outline_has_each_listed_sessions_id_parent_time_and_cwd(
    store: PostgresPersistence,
) -> None:
    _create(store, "a", 30, cwd="/one")
    _create(store, "b", 20, parent_session="a")
    _create(store, "c", 10, cwd="/two", parent_session="gone")
    expected = sorted(outline_of(entry.header) for entry in store.list())
    assert sorted(store.list_outline()) == expected
    assert SessionOutline("b", "a", 20, None) in expected


def test_the_outline_of_a_row_without_listing_columns_is_the_listings(
    store: PostgresPersistence, postgres_dsn: str
) -> None:
    for n in range(3):
        _create(store, f"s{n}", n, cwd=f"/w{n}")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE sq_sessions SET created_at = NULL, cwd = NULL WHERE id = 's1'")
    assert sorted(store.list_outline()) == [
        SessionOutline(f"s{n}", None, n, f"/w{n}") for n in range(3)
    ]
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE sq_sessions SET header_json = '{' WHERE id = 's1'")
    with pytest.raises(PersistenceCorrupt, match="'s1'"):
        store.list_outline()  # as list() refuses it
