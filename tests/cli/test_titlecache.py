"""The title cache: a remembered title is used only for the revision it was read from, the
first titles are read within a budget, and a foreign file at its path is left alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sessionquery.cli import _titlecache as titlecache
from sessionquery.examples import build_examples
from sessionquery.persistence import JsonlPersistence, PersistedSession
from sessionquery.query.service import SessionQuery


def _example_query(root: Path) -> tuple[SessionQuery, JsonlPersistence]:
    build_examples(root)
    persistence = JsonlPersistence(root)
    return SessionQuery(persistence=persistence), persistence


def test_remembered_titles_are_used_only_for_the_revision_they_were_read_from(
    tmp_path: Path,
) -> None:
    query, persistence = _example_query(tmp_path / "store")
    cache = tmp_path / "titles.sqlite3"
    ids = [entry.header.id for entry in persistence.list()]
    with query:
        first = titlecache.read_titles(query, persistence.list(), ids, cache)
        assert first["dashboard-websocket"] == "Debug websocket reconnect loop"
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE titles SET title = 'remembered' WHERE id = 'dashboard-websocket'")
        conn.close()
        again = titlecache.read_titles(query, persistence.list(), ids, cache, budget_s=0)
        assert again["dashboard-websocket"] == "remembered"  # read from the file
        moved = [
            PersistedSession(e.header, e.revision + "-changed")
            if e.header.id == "dashboard-websocket"
            else e
            for e in persistence.list()
        ]
        fresh = titlecache.read_titles(query, moved, ids, cache)
        assert fresh["dashboard-websocket"] == "Debug websocket reconnect loop"


def test_titles_beyond_the_first_are_read_only_within_the_budget(tmp_path: Path) -> None:
    query, persistence = _example_query(tmp_path / "store")
    ids = [entry.header.id for entry in persistence.list()]
    ticks = iter(range(0, 1000, 10))
    with query:
        found = titlecache.read_titles(
            query, persistence.list(), ids, None, budget_s=5, always=2, clock=lambda: next(ticks)
        )
    read = [i for i in ids if found[i] is not titlecache.NOT_READ]
    assert len(ids) == 5
    assert read == ids[:4]  # the first batch (of four) always, then the budget was spent
    assert found[ids[4]] is titlecache.NOT_READ


def test_a_foreign_database_at_the_title_cache_path_is_ignored_and_left_untouched(
    tmp_path: Path,
) -> None:
    query, persistence = _example_query(tmp_path / "store")
    foreign = tmp_path / "titles.sqlite3"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    before = foreign.read_bytes()
    with query:
        found = titlecache.read_titles(query, persistence.list(), ["billing-rounding"], foreign)
    assert found["billing-rounding"] == "Fix flaky invoice rounding test"
    assert foreign.read_bytes() == before
