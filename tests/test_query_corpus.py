"""Tests for sessionquery.query.corpus: live-first loads, cold reads and error mapping."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from sessionquery.errors import ErrorCode, PersistenceCorrupt, SessionQueryError
from sessionquery.live import SessionStore
from sessionquery.model import SessionEvent, SessionHeader, interrupted_turn_closers
from sessionquery.persistence.base import PersistedSession
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.backend import Corpus
from sessionquery.query.cache import PreparedCache
from sessionquery.query.corpus import ServiceCorpus
from strategies import valid_logs

HEADER = SessionHeader(id="s", created_at=0, cwd="/w")


def store_log(persistence: JsonlPersistence, events: list[SessionEvent]) -> None:
    with persistence.create(HEADER) as handle:
        handle.append(events)


@given(valid_logs(open_tail=True))
def test_a_cold_read_is_the_stored_log_plus_its_closers(events: list[SessionEvent]) -> None:
    with tempfile.TemporaryDirectory() as root:
        persistence = JsonlPersistence(root)
        store_log(persistence, events)
        path = Path(persistence.path_of("s"))
        before = path.read_bytes()
        corpus = ServiceCorpus(None, persistence, PreparedCache(2))
        cold = corpus.read_persisted("s")
        assert cold.events == tuple(events) + tuple(interrupted_turn_closers(events))
        # A cached read is the same value as the uncached one.
        assert corpus.read_persisted("s") == cold
        assert ServiceCorpus(None, persistence, PreparedCache(1)).read_persisted("s") == cold
        assert path.read_bytes() == before


def test_the_service_corpus_satisfies_the_backend_protocol() -> None:
    assert isinstance(ServiceCorpus(None, None, PreparedCache(1)), Corpus)


class _Handle:
    """A read handle of our own protocol whose read and close can fail."""

    def __init__(self, read_error: Exception | None, close_error: Exception | None) -> None:
        self.read_error = read_error
        self.close_error = close_error
        self.closed = False
        self.header = HEADER
        self.inherited_event_count = 0

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        if self.read_error is not None:
            raise self.read_error
        return []

    def close(self) -> None:
        self.closed = True
        if self.close_error is not None:
            raise self.close_error

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


class _Persistence:
    def __init__(self, handle: _Handle) -> None:
        self.handle = handle

    def list(self) -> list[Any]:
        return []

    def stat(self, session_id: str) -> Any:
        return PersistedSession(HEADER, "r1") if session_id == "s" else None

    def open_read(self, session_id: str) -> _Handle:
        return self.handle


@pytest.mark.parametrize(
    ("read_error", "close_error", "code"),
    [
        (
            PersistenceCorrupt("line 3: bad json"),
            OSError("close failed"),
            ErrorCode.CORRUPT_SESSION,
        ),
        (OSError("read failed"), None, ErrorCode.PERSISTENCE_FAILED),
        (None, OSError("close failed"), ErrorCode.PERSISTENCE_FAILED),
    ],
)
def test_read_and_close_failures_are_mapped_and_the_read_failure_wins(
    read_error: Exception | None, close_error: Exception | None, code: ErrorCode
) -> None:
    handle = _Handle(read_error, close_error)
    corpus = ServiceCorpus(None, _Persistence(handle), PreparedCache(1))
    with pytest.raises(SessionQueryError) as caught:
        corpus.read_persisted("s")
    assert caught.value.code is code and "'s'" in caught.value.message
    assert handle.closed


class _BrokenPersistence:
    """A foreign persistence whose every call fails with an arbitrary exception."""

    def list(self) -> list[Any]:
        raise RuntimeError("backend lost its connection")

    def stat(self, session_id: str) -> Any:
        raise RuntimeError("backend lost its connection")

    def open_read(self, session_id: str) -> _Handle:
        raise RuntimeError("backend lost its connection")


def test_any_foreign_storage_failure_is_mapped_to_persistence_failed() -> None:
    corpus = ServiceCorpus(None, _BrokenPersistence(), PreparedCache(1))
    for action in (corpus.records, corpus.list_persisted, lambda: corpus.read_persisted("s")):
        with pytest.raises(SessionQueryError) as caught:
            action()
        assert caught.value.code is ErrorCode.PERSISTENCE_FAILED
    handle = _Handle(RuntimeError("read exploded"), None)
    corpus = ServiceCorpus(None, _Persistence(handle), PreparedCache(1))
    with pytest.raises(SessionQueryError) as caught:
        corpus.read_persisted("s")
    assert caught.value.code is ErrorCode.PERSISTENCE_FAILED and handle.closed


def test_a_failed_read_is_not_cached() -> None:
    handle = _Handle(OSError("flaky"), None)
    corpus = ServiceCorpus(None, _Persistence(handle), PreparedCache(1))
    with pytest.raises(SessionQueryError):
        corpus.read_persisted("s")
    handle.read_error = None
    assert corpus.read_persisted("s").events == ()


def test_live_sessions_are_listed_from_the_store_only() -> None:
    store = SessionStore()
    session = store.create("live-one", created_at=5)
    session.append("turn/start", {"turn": 1})
    corpus = ServiceCorpus(store, None, PreparedCache(1))
    assert corpus.live_ids() == frozenset({"live-one"})
    assert [s.header.id for s in corpus.live_snapshots()] == ["live-one"]
    assert [r.id for r in corpus.records()] == ["live-one"]


def test_backend_reads_use_the_cache_but_do_not_fill_it(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    store_log(persistence, [])
    cache = PreparedCache(2)
    corpus = ServiceCorpus(None, persistence, cache)
    corpus.read_persisted("s")
    assert cache.ids() == []
    with corpus.open_log("s") as log:
        pass
    assert cache.ids() == ["s"]
    assert corpus.read_persisted("s").events is log.events
