"""What both backends share (``search/base.py``): an event search during an unfinished build.

A session that exists but that the build has not reached yet is not "not found": a partial
event search on it answers the retryable ``INDEX_BUILDING`` with the build's counts (the
tools then tell the model to try again), on SQLite and on PostgreSQL alike.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from builders import log
from postgres_support import PostgresServer
from search_sqlite_support import FakeCorpus, FakePersistence, header
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.cancel import CancelToken
from sessionquery.query.types import SessionLog
from sessionquery.search.postgres import PostgresSearch
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.search.sqlite import durable as durable_module

SESSIONS = [f"s{number}" for number in range(4)]


def _stalling_corpus() -> FakeCorpus:
    """Four sessions; every read after the second stalls until its reconciliation's deadline
    (a big transcript), so a build never gets past two sessions."""
    store = FakePersistence()
    for number, sid in enumerate(SESSIONS):
        store.put(header(sid, number + 1), log(f"entry {number} words"))
    corpus = FakeCorpus(store)
    original = corpus.read_persisted

    def read(session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        if len(corpus.reads) >= 2:
            assert cancel is not None
            while not cancel.expired:
                time.sleep(0.005)
            cancel.check()
        return original(session_id, cancel)

    corpus.read_persisted = read  # type: ignore[method-assign]
    return corpus


def _event_search_in_every_session(index: SqliteSearch | PostgresSearch) -> None:
    corpus = _stalling_corpus()
    building = 0
    for sid in SESSIONS:
        try:
            page = index.search_events(
                corpus, sid, "words", cancel=CancelToken.after(0.8), allow_partial=True
            )
        except SessionQueryError as exc:
            assert exc.code is ErrorCode.INDEX_BUILDING, exc
            if "sessions_total" in exc.context:  # SQLite knows the total, PostgreSQL does not
                assert exc.context["sessions_total"] == len(SESSIONS)
                assert exc.context["sessions_indexed"] in range(len(SESSIONS))
            building += 1
        else:
            assert page.partial is not None and len(page.items) == 1
    assert building > 0


def test_a_partial_event_search_in_a_session_not_indexed_yet_is_index_building_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "BATCH_DOCUMENTS", 1)
    with SqliteSearch(tmp_path / "index.db") as index:
        _event_search_in_every_session(index)


def test_a_partial_event_search_in_a_session_not_indexed_yet_is_index_building_on_postgres(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionquery.search.postgres import sync as sync_module

    monkeypatch.setattr(sync_module, "BATCH_SESSIONS", 1)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as index:
            _event_search_in_every_session(index)
    finally:
        postgres_server.drop_schema(dsn)
