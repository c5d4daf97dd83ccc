"""Tests for sessionquery.query.corpus: live-first loads, cold reads and error mapping."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import given

from conftest import raises_code
from sessionquery.errors import ErrorCode, PersistenceCorrupt, SessionQueryError
from sessionquery.live import SessionStore
from sessionquery.model import SessionEvent, SessionHeader, interrupted_turn_closers
from sessionquery.persistence.base import PersistedSession
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.query.backend import Corpus
from sessionquery.query.cache import PreparedCache
from sessionquery.query.cancel import CancelToken
from sessionquery.query.corpus import ServiceCorpus, busy, settle_attempts
from sessionquery.query.prepared import PreparedLog
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource
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
    with raises_code(code) as caught:
        corpus.read_persisted("s")
    assert "'s'" in caught.value.message
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
        with raises_code(ErrorCode.PERSISTENCE_FAILED):
            action()
    handle = _Handle(RuntimeError("read exploded"), None)
    corpus = ServiceCorpus(None, _Persistence(handle), PreparedCache(1))
    with raises_code(ErrorCode.PERSISTENCE_FAILED):
        corpus.read_persisted("s")
    assert handle.closed


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
    cache: PreparedCache[PreparedLog] = PreparedCache(2)
    corpus = ServiceCorpus(None, persistence, cache)
    corpus.read_persisted("s")
    assert cache.ids() == []
    with corpus.open_log("s") as log:
        pass
    assert cache.ids() == ["s"]
    assert corpus.read_persisted("s").events is log.events


# --------------------------------------------------------------------------- changing stores


def test_settle_attempts_retry_with_pauses_and_stop_within_the_budget() -> None:
    started = time.monotonic()
    attempts = list(settle_attempts(None, budget_s=0.3))
    elapsed = time.monotonic() - started
    assert attempts[:3] == [1, 2, 3] and len(attempts) >= 4
    assert elapsed < 30  # the budget ends them (a hang guard: pauses overrun under load)


def test_settle_attempts_stop_at_the_callers_deadline() -> None:
    started = time.monotonic()
    attempts: list[int] = []
    try:
        attempts.extend(settle_attempts(CancelToken.after(1.0), budget_s=60))
    except SessionQueryError as exc:  # a pause that overran the deadline on a loaded machine
        assert exc.code is ErrorCode.ABORTED
    assert len(attempts) >= 2
    assert time.monotonic() - started < 30  # the deadline (1 s) ended them, not the budget


def test_settle_attempts_raise_aborted_when_cancelled() -> None:
    cancel = CancelToken()
    attempts = settle_attempts(cancel)
    assert next(attempts) == 1
    cancel.cancel()
    with raises_code(ErrorCode.ABORTED):
        next(attempts)


def test_busy_is_retryable_and_says_how_often_it_tried() -> None:
    error = busy("the session store", 7)
    assert error.code is ErrorCode.BUSY and error.retryable
    assert error.context["attempts"] == 7
    assert "try again" in error.message


def test_changed_since_passes_the_journal_through_and_is_none_without_one(
    tmp_path: Path,
) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    store_log(persistence, [])
    corpus = ServiceCorpus(None, persistence, PreparedCache(1))
    token = corpus.change_token()
    assert token is not None
    assert corpus.changed_since(token) == frozenset()
    assert corpus.changed_since("not a token") is None
    assert ServiceCorpus(None, _BrokenPersistence(), PreparedCache(1)).changed_since(token) is None
    assert ServiceCorpus(None, _BrokenPersistence(), PreparedCache(1)).change_token() is None


_WRITER = """
import sys, time
from sessionquery import JsonlPersistence, SessionStore
store = SessionStore(JsonlPersistence(sys.argv[1]))
until = time.monotonic() + float(sys.argv[2])
long = store.create("long", cwd="/w")
turn = 0
while time.monotonic() < until:
    long.append("turn/start", {"turn": turn})
    long.append("user/message", {"id": f"m{turn}", "role": "user", "source": {"kind": "user"},
                "content": [{"type": "text", "text": f"needle turn {turn}"}]}, surface_op="append")
    long.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    if turn % 5 == 0:
        side = store.create(f"side{turn}", cwd="/w")
        side.append("turn/start", {"turn": 0})
        side.append("user/message", {"id": "m", "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": "needle side"}]}, surface_op="append")
        store.close(side.id)
    turn += 1
store.close("long")
print(turn, flush=True)
"""


def _all_hits(query: SessionQuery) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    cursor = None
    while True:
        page = query.search_sessions("needle", limit=100, cursor=cursor)
        found.extend((hit.record.id, hit.best_match.seq) for hit in page.items)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


@pytest.mark.slow
def test_a_writer_process_never_makes_a_search_list_or_read_fail(tmp_path: Path) -> None:
    root = tmp_path / "store"
    persistence = JsonlPersistence(root)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(root), "3"], stdout=subprocess.PIPE, text=True
    )
    calls = 0
    try:
        with SessionQuery(None, persistence, search=SqliteSearch(tmp_path / "i.db")) as query:
            while writer.poll() is None:
                query.search_sessions("needle")
                query.search_events("long", "needle") if persistence.stat("long") else None
                for record in query.list_sessions()[:3]:
                    query.read_session(record.id)
                calls += 1
                assert calls < 100_000
            turns = int(writer.communicate(timeout=60)[0])
            hits = _all_hits(query)
    finally:
        writer.kill()
        writer.wait(timeout=60)
    assert calls > 0 and turns > 0
    # Afterwards the long-running index answers exactly like a fresh one.
    with SessionQuery(None, persistence, search=SqliteSearch(tmp_path / "fresh.db")) as fresh:
        expected = _all_hits(fresh)
    assert hits == expected
    assert len({sid for sid, _ in hits}) == len(hits) == 1 + len(range(0, turns, 5))


def _long_claude_transcript(root: Path, lines: int) -> None:
    records = [
        {
            "type": "user",
            "sessionId": "long-1",
            "cwd": "/work",
            "timestamp": "2025-01-01T00:00:00Z",
            "uuid": f"u{number}",
            "message": {"role": "user", "content": f"line {number}"},
        }
        for number in range(lines)
    ]
    path = root / "-work" / "long-1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


@pytest.mark.parametrize("call", ["list", "stat"])
def test_a_deadline_passing_inside_a_long_listing_or_lookup_stops_it_with_aborted(
    tmp_path: Path, call: str
) -> None:
    _long_claude_transcript(tmp_path, 3 * 2048)  # its first listing parses the whole file
    token = CancelToken()
    stopped: list[str] = []

    class Source(ClaudeCodeSource):
        def _scan(self) -> None:
            token.deadline = time.monotonic()  # the deadline passes as the store is listed
            try:
                super()._scan()
            except SessionQueryError as exc:
                stopped.append(exc.code.value)
                raise

    corpus = SessionQuery(persistence=Source(tmp_path)).corpus
    assert isinstance(corpus, ServiceCorpus)  # stat_persisted is the service's own reader
    with raises_code(ErrorCode.ABORTED):  # not a storage failure
        if call == "list":
            corpus.list_persisted(token)
        else:
            corpus.stat_persisted("long-1", token)
    assert stopped == ["SESSION_QUERY_ABORTED"]  # by a check inside the listing
    assert [entry.header.id for entry in corpus.list_persisted()] == ["long-1"]


def test_persisted_entries_of_a_store_that_pages_itself_read_those_sessions_only(
    postgres_dsn: str,
) -> None:
    with PostgresPersistence(postgres_dsn) as persistence:
        for n, sid in enumerate(["damaged", "wanted", "other"]):
            persistence.create(SessionHeader(id=sid, created_at=n)).close()
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("UPDATE sq_sessions SET header_json = '{' WHERE id = 'damaged'")
        corpus = ServiceCorpus(None, persistence, PreparedCache(1))
        entries = corpus.persisted_entries(["wanted", "gone", "bad\x00id", "wanted"])
        assert [entry.header.id for entry in entries] == ["wanted"]
        assert entries == [persistence.stat("wanted")]
        with pytest.raises(SessionQueryError) as caught:
            corpus.list_persisted()  # the whole listing meets the damaged header
        assert caught.value.code is ErrorCode.PERSISTENCE_FAILED


def test_persisted_entries_of_any_other_store_are_picked_from_its_listing(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    for n, sid in enumerate(["a", "b", "c"]):
        persistence.create(SessionHeader(id=sid, created_at=n)).close()
    corpus = ServiceCorpus(None, persistence, PreparedCache(1))
    entries = corpus.persisted_entries(["c", "a", "x", "\x00"])
    assert sorted(entry.header.id for entry in entries) == ["a", "c"]
