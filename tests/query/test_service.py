"""Tests for sessionquery.query.service: the twelve read operations over real stores.

Every operation runs over three corpora built from the same logs: live only (a memory-only
SessionStore), persisted only (JsonlPersistence files under tmp_path, or a PostgreSQL schema:
the corpora run once per storage backend) and mixed (one session
live and written behind to the same persistence, the others only persisted).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import Storage, raises_code
from sessionquery.errors import ErrorCode, PersistenceError
from sessionquery.live import SessionStore
from sessionquery.match_modes import SEARCH_MATCHES
from sessionquery.model import Replace, SessionEvent, SessionHeader
from sessionquery.persistence.base import PersistedSession
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query import (
    AvailabilityIn,
    CancelToken,
    CreatedBetween,
    CwdIn,
    EventSearchPage,
    IdIn,
    ParentIn,
    SeqBetween,
    SessionQuery,
    SessionSearchPage,
    SurfaceIn,
    TextContains,
    TimeBetween,
    TypeIn,
)
from strategies import LogBuilder

CWD = "/work/project"
KINDS = ("live", "persisted", "mixed")


def alpha_log() -> list[SessionEvent]:
    """A log with a tool round trip, a title and two successive compactions.

    Seqs: 0 system, 1 turn/start, 2 user, 3 step/start, 4 assistant(call), 5 tool/call,
    6 tool/result (cites 5), 7 step/end, 8 turn/end, 9 title, 10 compaction of 2,4,6,
    11 turn/start, 12 user, 13 step/start, 14 assistant, 15 step/end, 16 turn/end,
    17 compaction of 10,12 (a replace of a replace). Final surface: 0, 17, 14.
    """
    b = LogBuilder()
    b.system()
    b.turn_start()
    user = b.user("Please fix the failing   test in parser.py")
    b.step_start()
    call = b.new_call_id()
    b.assistant("Running the tests", calls=[(call, "shell", '{"cmd": "pytest"}')])
    call_seq = b.tool_call(call, "shell", '{"cmd": "pytest"}').seq
    b.tool_result(call, "1 failed: test_parse_header", call_seq=call_seq)
    b.step_end()
    b.turn_end()
    b.title("Fixing the parser test", [user.seq])
    b.compact(1, 3, "first summary: the parser test was fixed")
    b.turn_start()
    b.user("now write the docs")
    b.step_start()
    b.assistant("Docs written")
    b.step_end()
    b.turn_end()
    b.compact(1, 2, "second summary")
    return b.events


def small_log(text: str) -> list[SessionEvent]:
    """One complete turn."""
    b = LogBuilder()
    b.turn_start()
    b.user(text)
    b.step_start()
    b.assistant(f"answer to {text}")
    b.step_end()
    b.turn_end()
    return b.events


HEADERS = {
    "alpha": SessionHeader(id="alpha", created_at=1000, cwd=CWD),
    "beta": SessionHeader(id="beta", created_at=2000, cwd=CWD, parent_session="alpha"),
    "gamma": SessionHeader(id="gamma", created_at=1500, cwd=CWD, parent_session="alpha"),
}
LOGS: dict[str, Callable[[], list[SessionEvent]]] = {
    "alpha": alpha_log,
    "beta": lambda: small_log("beta question"),
    "gamma": lambda: small_log("gamma question"),
}


def write_persisted(
    persistence: JsonlPersistence,
    header: SessionHeader,
    events: Sequence[SessionEvent],
    inherited_event_count: int = 0,
) -> None:
    """Store one session log through the persistence's own writer."""
    handle = persistence.create(header, inherited_event_count=inherited_event_count)
    try:
        handle.append(list(events))
        handle.flush()
    finally:
        handle.close()


def record_live(store: SessionStore, header: SessionHeader, events: Sequence[SessionEvent]) -> None:
    """Create a live session with this header and append ``events`` to it."""
    session = store.create(
        header.id,
        cwd=header.cwd,
        parent_session=header.parent_session,
        created_at=header.created_at,
    )
    for event in events:
        session.append(
            event.type,
            event.data,
            surface_op=event.surface_op,
            source_event_seqs=event.source_event_seqs,
            ignorable=event.ignorable,
        )


class Corpus:
    """One of the three corpora, with everything that needs closing."""

    def __init__(self, kind: str, root: Path, backend: Storage | None = None) -> None:
        self.kind = kind
        self.persistence: Any = None
        self.store: SessionStore | None = None
        if kind == "live":
            self.store = SessionStore()
            for name, header in HEADERS.items():
                record_live(self.store, header, LOGS[name]())
        elif kind == "persisted":
            self.persistence = JsonlPersistence(root) if backend is None else backend.persistence
            for name, header in HEADERS.items():
                write_persisted(self.persistence, header, LOGS[name]())
        else:
            self.persistence = JsonlPersistence(root) if backend is None else backend.persistence
            self.store = SessionStore(self.persistence)
            record_live(self.store, HEADERS["alpha"], LOGS["alpha"]())
            self.store.flush()
            for name in ("beta", "gamma"):
                write_persisted(self.persistence, HEADERS[name], LOGS[name]())
        self.query = SessionQuery(self.store, self.persistence)

    def flags(self, session_id: str) -> tuple[bool, bool]:
        """The (live, persisted) flags ``session_id`` should have in this corpus."""
        if self.kind == "live":
            return True, False
        if self.kind == "persisted":
            return False, True
        return session_id == "alpha", True

    def close(self) -> None:
        self.query.close()
        if self.store is not None:
            self.store.close_all()


@pytest.fixture(params=KINDS)
def corpus(request: pytest.FixtureRequest, tmp_path: Path, storage: Storage) -> Iterator[Corpus]:
    built = Corpus(request.param, tmp_path / "store", storage)
    yield built
    built.close()


@pytest.fixture
def persistence(tmp_path: Path) -> JsonlPersistence:
    return JsonlPersistence(tmp_path / "store")


def shape(events: Sequence[SessionEvent]) -> list[tuple[Any, ...]]:
    """Events without their times (live appends are stamped by the store's clock)."""
    return [(e.type, e.seq, e.data, e.surface_op, e.source_event_seqs) for e in events]


# -- every operation over every corpus --------------------------------------------------------


def test_list_sessions_orders_newest_first_with_availability_flags(corpus: Corpus) -> None:
    records = corpus.query.list_sessions()
    assert [r.id for r in records] == ["beta", "gamma", "alpha"]
    for record in records:
        assert (record.live, record.persisted) == corpus.flags(record.id)
        assert record.header == HEADERS[record.id]


def test_read_session_returns_the_whole_log(corpus: Corpus) -> None:
    log = corpus.query.read_session("alpha")
    assert log.session == HEADERS["alpha"]
    assert log.inherited_event_count == 0
    assert shape(log.events) == shape(alpha_log())


def test_filter_sessions_ands_clauses_and_keeps_newest_first(corpus: Corpus) -> None:
    query = corpus.query
    assert [r.id for r in query.filter_sessions([ParentIn(("alpha",))])] == ["beta", "gamma"]
    assert [r.id for r in query.filter_sessions([ParentIn((None,))])] == ["alpha"]
    assert [
        r.id for r in query.filter_sessions([CwdIn((CWD,)), CreatedBetween(start=1000, end=1500)])
    ] == ["gamma", "alpha"]
    assert query.filter_sessions([IdIn(())]) == []
    live_ids = [r.id for r in query.filter_sessions([AvailabilityIn(("live",))])]
    assert live_ids == [r.id for r in query.list_sessions() if r.live]


def test_filter_events_returns_texted_documents_in_seq_order(corpus: Corpus) -> None:
    query = corpus.query
    documents = query.filter_events("alpha", [])
    assert [d.seq for d in documents] == [2, 4, 5, 6, 10, 12, 14, 17]
    assert all(d.text for d in documents)
    hits = query.filter_events("alpha", [TextContains("FAILING test")])
    assert [(d.seq, d.type, d.surface) for d in hits] == [(2, "user/message", "shadowed")]
    assert hits[0].text == "Please fix the failing   test in parser.py"
    current = query.filter_events("alpha", [SurfaceIn(("current",)), TypeIn(("user/message",))])
    assert [d.seq for d in current] == [17]
    assert [d.seq for d in query.filter_events("alpha", [SeqBetween(start=5, end=6)])] == [5, 6]
    assert query.filter_events("alpha", [TimeBetween(end=-1)]) == []


def test_read_title_snapshots_returns_one_result_per_unique_id(corpus: Corpus) -> None:
    results = corpus.query.read_title_snapshots(["gamma", "alpha", "gamma", "nobody"])
    assert [r.session_id for r in results] == ["gamma", "alpha", "nobody"]
    gamma, alpha, nobody = results
    assert gamma.error is None and gamma.title is None and gamma.header == HEADERS["gamma"]
    assert alpha.title is not None and alpha.title.title == "Fixing the parser test"
    assert alpha.title.message_seqs == (2,) and alpha.title.event_seq == 9
    assert nobody.header is None and nobody.error is not None
    assert nobody.error.code is ErrorCode.SESSION_NOT_FOUND


def test_list_events_classifies_every_raw_event(corpus: Corpus) -> None:
    records = corpus.query.list_events("alpha")
    assert [r.seq for r in records] == list(range(18))
    surfaces = {r.seq: r.surface for r in records}
    assert [s for s, c in surfaces.items() if c == "current"] == [0, 14, 17]
    assert [s for s, c in surfaces.items() if c == "shadowed"] == [2, 4, 6, 10, 12]
    assert records[5].type == "tool/call" and records[5].surface == "log-only"
    assert all(r.session_id == "alpha" for r in records)


def test_read_surface_returns_current_events_in_surface_order(corpus: Corpus) -> None:
    snapshot = corpus.query.read_surface("alpha")
    assert [e.seq for e in snapshot.events] == [0, 17, 14]
    assert snapshot.captured_through_seq == 17
    assert snapshot.session == HEADERS["alpha"]


def test_read_event_returns_a_clamped_window(corpus: Corpus) -> None:
    window = corpus.query.read_event("alpha", 1, before=3, after=2)
    assert window.target.seq == 1 and window.target.type == "turn/start"
    assert (window.start_seq, window.end_seq) == (0, 3)
    assert [e.seq for e in window.events] == [0, 1, 2, 3]
    assert window.events[1] is window.target
    tail = corpus.query.read_event("alpha", 17, before=0, after=50)
    assert [e.seq for e in tail.events] == [17] and tail.end_seq == 17


def test_trace_session_walks_ancestors_and_orders_descendants(corpus: Corpus) -> None:
    trace = corpus.query.trace_session("alpha")
    assert trace.ancestors == () and trace.complete and trace.root == trace.target
    assert [n.record.id for n in trace.descendants] == ["gamma", "beta"]
    child = corpus.query.trace_session("beta")
    assert [a.id for a in child.ancestors] == ["alpha"]
    assert child.root is not None and child.root.id == "alpha"
    assert child.unresolved_parent_id is None and child.descendants == ()
    assert (child.target.live, child.target.persisted) == corpus.flags("beta")


def test_trace_event_follows_two_successive_compactions(corpus: Corpus) -> None:
    query = corpus.query
    first = query.trace_event("alpha", 2)
    assert first.target.surface == "shadowed"
    assert first.replaced_by == 10 and first.replacement_chain == (10, 17)
    assert first.replaced_event_seqs == () and first.source_event_seqs == ()
    assert first.derived_event_seqs == (10,)
    summary = query.trace_event("alpha", 10)
    assert summary.replaced_by == 17 and summary.replacement_chain == (17,)
    assert summary.replaced_event_seqs == (2, 4, 6)
    assert summary.source_event_seqs == (2, 4, 6)
    assert summary.derived_event_seqs == (17,)
    final = query.trace_event("alpha", 17)
    assert final.replaced_by is None and final.replacement_chain == ()
    assert final.replaced_event_seqs == (10, 12) and final.target.surface == "current"
    call = query.trace_event("alpha", 5)
    assert call.target.surface == "log-only" and call.derived_event_seqs == (6,)


# -- live shadows persisted ------------------------------------------------------------------


def test_a_live_session_shadows_its_persisted_copy(persistence: JsonlPersistence) -> None:
    write_persisted(persistence, HEADERS["gamma"], LOGS["gamma"]())
    store = SessionStore()
    record_live(store, HEADERS["gamma"], small_log("only in memory"))
    query = SessionQuery(store, persistence)
    (record,) = query.list_sessions()
    assert record.live and record.persisted
    texts = [d.text for d in query.filter_events("gamma", [TextContains("only in memory")])]
    assert texts == ["only in memory", "answer to only in memory"]
    assert SessionQuery(None, persistence).filter_events("gamma", [TextContains("memory")]) == []


def test_a_session_that_goes_live_during_a_cold_read_is_returned_live(tmp_path: Path) -> None:
    store = SessionStore()
    persisted = HEADERS["gamma"]

    class GoesLive(JsonlPersistence):
        def open_read(self, session_id: str) -> Any:
            handle = super().open_read(session_id)
            record_live(store, persisted, small_log("now live"))
            return handle

    persistence = GoesLive(tmp_path / "store")
    write_persisted(persistence, persisted, LOGS["gamma"]())
    log = SessionQuery(store, persistence).read_session("gamma")
    assert log.events[1].data["content"][0]["text"] == "now live"


# -- crash tails and storage safety ----------------------------------------------------------


def test_cold_read_of_a_log_ending_mid_turn_adds_closers_without_touching_the_file(
    persistence: JsonlPersistence,
) -> None:
    b = LogBuilder()
    b.turn_start()
    b.user("run it")
    b.step_start()
    call = b.new_call_id()
    b.assistant(None, calls=[(call, "shell", "{}")])
    b.tool_call(call, "shell", "{}")
    write_persisted(persistence, HEADERS["alpha"], b.events)
    path = Path(persistence.path_of("alpha"))
    before = path.read_bytes()
    query = SessionQuery(None, persistence)
    log = query.read_session("alpha")
    assert [e.type for e in log.events[5:]] == ["tool/result", "step/end", "turn/end"]
    assert log.events[5].source_event_seqs == (4,)
    assert log.events[-1].data["reason"] == {"kind": "interrupted"}
    assert query.read_event("alpha", 7).target.type == "turn/end"
    assert query.corpus.read_persisted("alpha").events == log.events
    assert path.read_bytes() == before


# -- the prepared cache ----------------------------------------------------------------------


class CountingPersistence(JsonlPersistence):
    """A JsonlPersistence that counts cold reads (every read opens a handle)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.opened: list[str] = []

    def open_read(self, session_id: str) -> Any:
        self.opened.append(session_id)
        return super().open_read(session_id)


@pytest.mark.slow
def test_an_unchanged_large_session_is_parsed_once_and_a_changed_one_again(
    tmp_path: Path,
) -> None:
    persistence = CountingPersistence(tmp_path / "store")
    events = [SessionEvent("x/note", seq, seq, {"n": seq}) for seq in range(50_000)]
    write_persisted(persistence, HEADERS["alpha"], events)
    query = SessionQuery(None, persistence)
    assert len(query.read_session("alpha").events) == 50_000
    assert query.read_event("alpha", 49_999).target.data == {"n": 49_999}
    assert len(query.list_events("alpha")) == 50_000
    assert persistence.opened == ["alpha"]
    writer = persistence.open_write("alpha")
    try:
        writer.append([SessionEvent("x/note", 50_000, 1, {"n": "new"})])
        writer.flush()
    finally:
        writer.close()
    assert query.read_event("alpha", 50_000).target.data == {"n": "new"}
    assert persistence.opened == ["alpha", "alpha"]


def test_the_cache_evicts_least_recently_used_sessions(tmp_path: Path) -> None:
    persistence = CountingPersistence(tmp_path / "store")
    for name in ("beta", "gamma"):
        write_persisted(persistence, HEADERS[name], LOGS[name]())
    query = SessionQuery(None, persistence, prepared_session_cache_size=1)
    query.read_session("beta")
    query.read_session("beta")
    query.read_session("gamma")
    query.read_session("beta")
    assert persistence.opened == ["beta", "gamma", "beta"]


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"read_window_max": -1},
        {"read_window_max": True},
        {"read_window_max": 1.5},
        {"persisted_read_concurrency": 0},
        {"persisted_read_concurrency": "4"},
        {"prepared_session_cache_size": 0},
        {"prepared_session_cache_size": None},
    ],
)
def test_invalid_configuration_raises_invalid_config(options: dict[str, Any]) -> None:
    with raises_code(ErrorCode.INVALID_CONFIG):
        SessionQuery(**options)


@pytest.mark.parametrize("argument", ["store", "persistence", "search"])
def test_a_collaborator_without_the_needed_methods_raises_invalid_config(argument: str) -> None:
    with raises_code(ErrorCode.INVALID_CONFIG):
        options: dict[str, Any] = {argument: object()}
        SessionQuery(**options)


@pytest.mark.parametrize(
    "window", [{"before": -1}, {"after": 51}, {"before": True}, {"after": 1.0}, {"before": "2"}]
)
def test_a_bad_window_raises_invalid_window_before_loading(window: dict[str, Any]) -> None:
    with raises_code(ErrorCode.INVALID_WINDOW):
        SessionQuery().read_event("missing", 0, **window)


def test_the_window_limit_follows_read_window_max(corpus: Corpus) -> None:
    query = SessionQuery(corpus.store, corpus.persistence, read_window_max=2)
    assert len(query.read_event("alpha", 5, before=2, after=2).events) == 5
    with raises_code(ErrorCode.INVALID_WINDOW):
        query.read_event("alpha", 5, after=3)


@pytest.mark.parametrize("seq", [18, -1, 999, "3", True, 2.0])
def test_a_missing_seq_raises_event_not_found(corpus: Corpus, seq: Any) -> None:
    with raises_code(ErrorCode.EVENT_NOT_FOUND):
        corpus.query.read_event("alpha", seq)
    with raises_code(ErrorCode.EVENT_NOT_FOUND):
        corpus.query.trace_event("alpha", seq)


READERS: dict[str, Callable[[SessionQuery, Any], object]] = {
    "read_session": lambda q, i: q.read_session(i),
    "filter_events": lambda q, i: q.filter_events(i, []),
    "list_events": lambda q, i: q.list_events(i),
    "read_surface": lambda q, i: q.read_surface(i),
    "read_event": lambda q, i: q.read_event(i, 0),
    "trace_event": lambda q, i: q.trace_event(i, 0),
    "trace_session": lambda q, i: q.trace_session(i),
}


@pytest.mark.parametrize("operation", READERS)
@pytest.mark.parametrize("session_id", ["nobody", "", "bad\x00id", 42, None])
def test_an_unknown_session_raises_session_not_found(
    corpus: Corpus, operation: str, session_id: Any
) -> None:
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        READERS[operation](corpus.query, session_id)


@pytest.mark.parametrize("operation", READERS)
def test_without_any_source_every_read_raises_session_not_found(operation: str) -> None:
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        READERS[operation](SessionQuery(), "alpha")


def test_bad_filters_raise_invalid_filter_before_any_io(tmp_path: Path) -> None:
    class Exploding(JsonlPersistence):
        def list(self) -> list[PersistedSession]:
            raise AssertionError("listed before the filters were checked")

        def stat(self, session_id: str) -> PersistedSession | None:
            raise AssertionError("read before the filters were checked")

    query = SessionQuery(None, Exploding(tmp_path / "store"))
    for call in (
        lambda: query.filter_sessions([SeqBetween(start=1)]),  # type: ignore[list-item]
        lambda: query.filter_sessions("alpha"),  # type: ignore[arg-type]
        lambda: query.filter_sessions([IdIn(("a",)), None]),  # type: ignore[list-item]
        lambda: query.filter_events("alpha", [IdIn(("a",))]),  # type: ignore[list-item]
        lambda: query.filter_events("alpha", 3),  # type: ignore[arg-type]
        lambda: query.filter_events("alpha", [TextContains("   ")]),
        lambda: query.filter_events("alpha", [SeqBetween(start=3, end=1)]),
        lambda: query.filter_events("alpha", [SurfaceIn(("hidden",))]),  # type: ignore[arg-type]
        lambda: query.filter_sessions([CreatedBetween(start=float("nan"))]),
    ):
        with raises_code(ErrorCode.INVALID_FILTER):
            call()


def test_search_without_a_backend_raises_search_disabled() -> None:
    query = SessionQuery()
    with raises_code(ErrorCode.SEARCH_DISABLED):
        query.search_sessions("anything")
    with raises_code(ErrorCode.SEARCH_DISABLED):
        query.search_events("alpha", "anything")


def test_a_damaged_stored_log_raises_corrupt_session(persistence: JsonlPersistence) -> None:
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    path = Path(persistence.path_of("alpha"))
    lines = path.read_bytes().split(b"\n")
    lines[3] = b'{"type": "user/message", "seq": 2,'
    path.write_bytes(b"\n".join(lines))
    query = SessionQuery(None, persistence)
    for operation in READERS.values():
        if operation is READERS["trace_session"]:
            continue
        with raises_code(ErrorCode.CORRUPT_SESSION):
            operation(query, "alpha")
    (result,) = query.read_title_snapshots(["alpha"])
    assert result.error is not None and result.error.code is ErrorCode.CORRUPT_SESSION


def test_a_stored_log_that_fails_the_fold_raises_corrupt_session(
    persistence: JsonlPersistence,
) -> None:
    events = small_log("question")
    # A user message without a surface operation breaks the fold but parses fine.
    events[1] = dataclasses.replace(events[1], surface_op=None)
    write_persisted(persistence, HEADERS["beta"], events)
    query = SessionQuery(None, persistence)
    for name in ("read_session", "filter_events", "list_events", "read_surface", "trace_event"):
        with raises_code(ErrorCode.CORRUPT_SESSION):
            READERS[name](query, "beta")
    # Exact reads of raw events do not fold (reference contract §3.8).
    assert query.read_event("beta", 1).target.surface_op is None


class _BrokenLive:
    """A live session (our own protocol) whose log breaks a surface rule."""

    id = "broken"
    header = SessionHeader(id="broken", created_at=1)
    inherited_event_count = 0
    events = (SessionEvent("user/message", 0, 0, {"role": "user"}),)


class _FakeStore:
    def __init__(self, *sessions: Any) -> None:
        self._sessions = {s.id: s for s in sessions}

    def get(self, session_id: str) -> Any:
        return self._sessions.get(session_id)

    def sessions(self) -> list[Any]:
        return list(self._sessions.values())


def test_a_live_log_that_fails_the_fold_raises_invalid_surface() -> None:
    query = SessionQuery(_FakeStore(_BrokenLive()))
    with raises_code(ErrorCode.INVALID_SURFACE):
        query.read_surface("broken")
    with raises_code(ErrorCode.INVALID_SURFACE):
        query.trace_event("broken", 0)
    with raises_code(ErrorCode.EVENT_NOT_FOUND):
        query.trace_event("broken", 1)


class _FailingPersistence(JsonlPersistence):
    def __init__(self, root: Path, error: Exception, where: str) -> None:
        super().__init__(root)
        self.error = error
        self.where = where

    def list(self) -> list[PersistedSession]:
        if self.where == "list":
            raise self.error
        return super().list()

    def open_read(self, session_id: str) -> Any:
        if self.where == "open_read":
            raise self.error
        return super().open_read(session_id)


@pytest.mark.parametrize(
    "error", [OSError(5, "Input/output error"), PersistenceError("disk on fire")]
)
def test_storage_failures_raise_persistence_failed(tmp_path: Path, error: Exception) -> None:
    reading = _FailingPersistence(tmp_path / "a", error, "open_read")
    write_persisted(reading, HEADERS["alpha"], LOGS["alpha"]())
    with raises_code(ErrorCode.PERSISTENCE_FAILED) as caught:
        SessionQuery(None, reading).read_session("alpha")
    assert "alpha" in str(caught.value)
    listing = _FailingPersistence(tmp_path / "b", error, "list")
    with raises_code(ErrorCode.PERSISTENCE_FAILED):
        SessionQuery(None, listing).list_sessions()
    with raises_code(ErrorCode.PERSISTENCE_FAILED):
        SessionQuery(None, listing).trace_session("alpha")
    (result,) = SessionQuery(None, listing).read_title_snapshots(["alpha"])
    assert result.error is not None and result.error.code is ErrorCode.PERSISTENCE_FAILED


def test_a_session_deleted_after_listing_raises_session_not_found(tmp_path: Path) -> None:
    class Vanishing(JsonlPersistence):
        def open_read(self, session_id: str) -> Any:
            self.delete(session_id)
            return super().open_read(session_id)

    persistence = Vanishing(tmp_path / "store")
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        SessionQuery(None, persistence).read_session("alpha")


def test_incompatible_live_and_persisted_headers_raise_source_conflict(
    persistence: JsonlPersistence,
) -> None:
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    store = SessionStore()
    record_live(store, dataclasses.replace(HEADERS["alpha"], created_at=999), [])
    query = SessionQuery(store, persistence)
    with raises_code(ErrorCode.SOURCE_CONFLICT):
        query.list_sessions()
    with raises_code(ErrorCode.SOURCE_CONFLICT):
        query.trace_session("alpha")
    # A live read never consults the persistence.
    assert query.read_session("alpha").session.created_at == 999


def test_origin_and_agent_preset_differences_are_not_conflicts(
    persistence: JsonlPersistence,
) -> None:
    write_persisted(persistence, HEADERS["alpha"], [])
    store = SessionStore()
    store.create("alpha", cwd=CWD, created_at=1000, origin="fork", agent_preset="fast")
    (record,) = SessionQuery(store, persistence).list_sessions()
    assert record.live and record.persisted and record.header.origin == "fork"


def test_a_listed_header_that_disagrees_with_the_stored_log_raises_source_conflict(
    tmp_path: Path,
) -> None:
    class Disagreeing(JsonlPersistence):
        def stat(self, session_id: str) -> PersistedSession | None:
            entry = super().stat(session_id)
            assert entry is not None
            return dataclasses.replace(entry, header=dataclasses.replace(entry.header, cwd="/x"))

        def list(self) -> list[PersistedSession]:
            return [self.stat(entry.header.id) for entry in super().list()]  # type: ignore[misc]

    persistence = Disagreeing(tmp_path / "store")
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    query = SessionQuery(None, persistence)
    with raises_code(ErrorCode.SOURCE_CONFLICT):
        query.read_session("alpha")
    (result,) = query.read_title_snapshots(["alpha"])
    assert result.error is not None and result.error.code is ErrorCode.SOURCE_CONFLICT


# -- read_title_snapshots --------------------------------------------------------------------


def test_title_errors_stay_with_their_id(persistence: JsonlPersistence) -> None:
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    write_persisted(persistence, HEADERS["beta"], LOGS["beta"]())
    path = Path(persistence.path_of("beta"))
    path.write_bytes(path.read_bytes().replace(b'"turn/start"', b'"turn/start', 1))
    store = SessionStore()
    record_live(store, HEADERS["gamma"], LOGS["gamma"]())
    query = SessionQuery(store, persistence, persisted_read_concurrency=2)
    results = query.read_title_snapshots(["beta", "alpha", "missing", "gamma", "alpha"])
    assert [r.session_id for r in results] == ["beta", "alpha", "missing", "gamma"]
    codes = [r.error.code if r.error else None for r in results]
    assert codes == [ErrorCode.CORRUPT_SESSION, None, ErrorCode.SESSION_NOT_FOUND, None]
    assert results[1].title is not None and results[1].header == HEADERS["alpha"]
    assert results[3].header == HEADERS["gamma"]


def test_read_title_snapshots_runs_at_most_the_configured_number_of_reads(
    tmp_path: Path,
) -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    class Watching(JsonlPersistence):
        def read_title(self, session_id: str) -> Any:  # the title read the service uses
            nonlocal active, peak
            with lock:
                active += 1
                peak = max(peak, active)
            try:
                return super().read_title(session_id)
            finally:
                with lock:
                    active -= 1

    persistence = Watching(tmp_path / "store")
    ids = [f"s{n}" for n in range(12)]
    for n, session_id in enumerate(ids):
        write_persisted(persistence, SessionHeader(id=session_id, created_at=n), small_log("q"))
    results = SessionQuery(None, persistence, persisted_read_concurrency=3).read_title_snapshots(
        ids
    )
    assert [r.session_id for r in results] == ids and all(r.error is None for r in results)
    assert 1 <= peak <= 3


def test_read_title_snapshots_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError):
        SessionQuery().read_title_snapshots("alpha")


def test_read_title_snapshots_without_persistence_reports_not_found_per_id() -> None:
    (result,) = SessionQuery().read_title_snapshots(["x"])
    assert result.error is not None and result.error.code is ErrorCode.SESSION_NOT_FOUND


# -- detachment ------------------------------------------------------------------------------


def test_returned_values_are_detached_from_storage(corpus: Corpus) -> None:
    query = corpus.query
    log = query.read_session("alpha")
    with pytest.raises(TypeError):
        log.events[2].data["content"].append("x")
    with pytest.raises(TypeError):
        log.events[2].data["role"] = "assistant"
    with pytest.raises(dataclasses.FrozenInstanceError):
        log.events[2].seq = 9  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        log.session.cwd = "/elsewhere"  # type: ignore[misc]
    records = query.list_sessions()
    records.clear()
    documents = query.filter_events("alpha", [])
    documents.pop()
    events = query.list_events("alpha")
    events.clear()
    assert len(query.list_sessions()) == 3
    assert len(query.filter_events("alpha", [])) == 8
    assert len(query.list_events("alpha")) == 18
    assert shape(query.read_session("alpha").events) == shape(alpha_log())
    assert isinstance(query.read_surface("alpha").events, tuple)


# -- cancellation ----------------------------------------------------------------------------

OPERATIONS: dict[str, Callable[[SessionQuery, CancelToken], object]] = {
    "list_sessions": lambda q, c: q.list_sessions(cancel=c),
    "read_session": lambda q, c: q.read_session("alpha", cancel=c),
    "filter_sessions": lambda q, c: q.filter_sessions([], cancel=c),
    "filter_events": lambda q, c: q.filter_events("alpha", [], cancel=c),
    "read_title_snapshots": lambda q, c: q.read_title_snapshots(["alpha"], cancel=c),
    "list_events": lambda q, c: q.list_events("alpha", cancel=c),
    "read_surface": lambda q, c: q.read_surface("alpha", cancel=c),
    "read_event": lambda q, c: q.read_event("alpha", 0, cancel=c),
    "trace_session": lambda q, c: q.trace_session("alpha", cancel=c),
    "trace_event": lambda q, c: q.trace_event("alpha", 0, cancel=c),
}


class _Recording(JsonlPersistence):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.calls: list[str] = []

    def list(self) -> list[PersistedSession]:
        self.calls.append("list")
        return super().list()

    def stat(self, session_id: str) -> PersistedSession | None:
        self.calls.append("stat")
        return super().stat(session_id)

    def open_read(self, session_id: str) -> Any:
        self.calls.append("open_read")
        return super().open_read(session_id)


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("token", ["cancelled", "expired"])
def test_an_expired_token_aborts_before_any_io(tmp_path: Path, operation: str, token: str) -> None:
    persistence = _Recording(tmp_path / "store")
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    cancel = CancelToken(deadline=0.0)
    if token == "cancelled":
        cancel = CancelToken()
        cancel.cancel()
    with raises_code(ErrorCode.ABORTED):
        OPERATIONS[operation](SessionQuery(None, persistence), cancel)
    assert persistence.calls == []


def test_cancelling_during_title_reads_aborts_the_whole_call(tmp_path: Path) -> None:
    cancel = CancelToken()

    class CancelsOnFirstRead(JsonlPersistence):
        def read_title(self, session_id: str) -> Any:  # the title read the service uses
            cancel.cancel()
            return super().read_title(session_id)

    persistence = CancelsOnFirstRead(tmp_path / "store")
    ids = [f"s{n}" for n in range(6)]
    for n, session_id in enumerate(ids):
        write_persisted(persistence, SessionHeader(id=session_id, created_at=n), small_log("q"))
    query = SessionQuery(None, persistence, persisted_read_concurrency=1)
    with raises_code(ErrorCode.ABORTED):
        query.read_title_snapshots(ids, cancel=cancel)


def test_a_live_token_lets_every_operation_finish(corpus: Corpus) -> None:
    cancel = CancelToken.after(600)
    for name, operation in OPERATIONS.items():
        assert operation(corpus.query, cancel) == operation(corpus.query, CancelToken()), name
    assert not cancel.expired


# -- lineage edge cases ----------------------------------------------------------------------


def test_a_missing_parent_makes_the_trace_incomplete(persistence: JsonlPersistence) -> None:
    write_persisted(persistence, SessionHeader(id="child", created_at=5, parent_session="gone"), [])
    trace = SessionQuery(None, persistence).trace_session("child")
    assert not trace.complete and trace.root is None
    assert trace.unresolved_parent_id == "gone" and trace.ancestors == ()


def test_a_parent_cycle_raises_invalid_lineage(persistence: JsonlPersistence) -> None:
    write_persisted(persistence, SessionHeader(id="a", created_at=1, parent_session="b"), [])
    write_persisted(persistence, SessionHeader(id="b", created_at=2, parent_session="a"), [])
    store = SessionStore()
    store.create("self", created_at=3, parent_session="self")
    query = SessionQuery(store, persistence)
    for session_id in ("a", "b", "self"):
        with raises_code(ErrorCode.INVALID_LINEAGE):
            query.trace_session(session_id)


def test_lineage_of_any_depth_is_traced_without_recursion() -> None:
    store = SessionStore()
    depth = 3000
    for n in range(depth):
        store.create(f"s{n:05}", created_at=n, parent_session=f"s{n - 1:05}" if n else None)
    query = SessionQuery(store)
    bottom = query.trace_session(f"s{depth - 1:05}")
    assert len(bottom.ancestors) == depth - 1 and bottom.ancestors[0].id == f"s{depth - 2:05}"
    assert bottom.root is not None and bottom.root.id == "s00000"
    top = query.trace_session("s00000")
    node, levels = top.descendants, 0
    while node:
        (child,) = node
        node, levels = child.descendants, levels + 1
    assert levels == depth - 1


# -- corpus view, search delegation, lifecycle -----------------------------------------------


def test_the_corpus_view_exposes_live_and_persisted_sessions(tmp_path: Path) -> None:
    built = Corpus("mixed", tmp_path / "store")
    try:
        corpus = built.query.corpus
        assert corpus.persistence is built.persistence
        assert corpus.live_ids() == frozenset({"alpha"})
        (snapshot,) = corpus.live_snapshots()
        assert snapshot.header == HEADERS["alpha"] and len(snapshot.events) == 18
        assert {e.header.id for e in corpus.list_persisted()} == {"alpha", "beta", "gamma"}
        assert shape(corpus.read_persisted("beta").events) == shape(LOGS["beta"]())
        assert isinstance(corpus.change_token(), str)
        with raises_code(ErrorCode.SESSION_NOT_FOUND):
            corpus.read_persisted("nobody")
    finally:
        built.close()
    assert SessionQuery().corpus.change_token() is None
    assert SessionQuery().corpus.list_persisted() == []


class _FakeSearch:
    """A search backend of our own protocol that records how it was called."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.closed = 0

    def search_sessions(self, corpus: Any, query: str, **options: Any) -> SessionSearchPage:
        self.calls.append(("sessions", (corpus, query), options))
        return SessionSearchPage(items=[])

    def search_events(
        self, corpus: Any, session_id: str, query: str, **options: Any
    ) -> EventSearchPage:
        self.calls.append(("events", (corpus, session_id, query), options))
        return EventSearchPage(session=HEADERS["alpha"], items=[])

    def close(self) -> None:
        self.closed += 1


def test_searches_are_delegated_to_the_backend_with_the_corpus() -> None:
    backend = _FakeSearch()
    cancel = CancelToken()
    with SessionQuery(search=backend) as query:
        query.search_sessions(
            "q", session_filters=[IdIn(("a",))], limit=3, cursor="c", cancel=cancel
        )
        query.search_events("alpha", "q", filters=[TypeIn(("t",))], limit=2, cancel=cancel)
        sessions, events = backend.calls
        assert sessions[1] == (query.corpus, "q")
        assert sessions[2] == {
            "session_filters": [IdIn(("a",))],
            "event_filters": (),
            "limit": 3,
            "cursor": "c",
            "cancel": cancel,
            "match": "phrase",
        }
        assert events[1] == (query.corpus, "alpha", "q")
        assert events[2] == {
            "filters": [TypeIn(("t",))],
            "limit": 2,
            "cursor": None,
            "cancel": cancel,
            "match": "phrase",
        }
        query.close()
    assert backend.closed == 1


def test_the_match_mode_is_passed_to_the_backend_and_an_unknown_one_is_refused() -> None:
    backend = _FakeSearch()
    with SessionQuery(search=backend) as query:
        query.search_sessions("test flaky", match="words")
        query.search_events("alpha", "test flaky", match="words")
        sessions, events = backend.calls
        assert sessions[2]["match"] == "words" and events[2]["match"] == "words"
        for bad in ("Words", "any", None, 1):
            with raises_code(ErrorCode.INVALID_QUERY) as caught:
                query.search_sessions("q", match=bad)  # type: ignore[arg-type]
            assert all(f"'{name}'" in caught.value.message for name in SEARCH_MATCHES)
            with raises_code(ErrorCode.INVALID_QUERY):
                query.search_events("alpha", "q", match=bad)  # type: ignore[arg-type]
        assert len(backend.calls) == 2  # refused before the backend is asked


def test_an_empty_log_reads_with_no_captured_seq(persistence: JsonlPersistence) -> None:
    write_persisted(persistence, HEADERS["gamma"], [])
    query = SessionQuery(None, persistence)
    snapshot = query.read_surface("gamma")
    assert snapshot.captured_through_seq is None and snapshot.events == ()
    assert query.list_events("gamma") == [] and query.filter_events("gamma", []) == []


def test_seeded_sessions_report_their_inherited_event_count(
    persistence: JsonlPersistence,
) -> None:
    header = SessionHeader(id="fork", created_at=1, is_seeded=True, parent_session="alpha")
    write_persisted(persistence, header, small_log("q"), inherited_event_count=6)
    query = SessionQuery(None, persistence)
    assert query.read_session("fork").inherited_event_count == 6
    assert query.read_event("fork", 0).inherited_event_count == 6
    assert query.read_surface("fork").inherited_event_count == 6


def test_replace_events_survive_a_round_trip_through_storage(
    persistence: JsonlPersistence,
) -> None:
    write_persisted(persistence, HEADERS["alpha"], LOGS["alpha"]())
    event = SessionQuery(None, persistence).read_event("alpha", 17).target
    assert event.surface_op == Replace(10, 12) and event.source_event_seqs == (10, 12)


def test_concurrent_reads_through_a_small_cache_agree_with_serial_reads(
    persistence: JsonlPersistence,
) -> None:
    for name, header in HEADERS.items():
        write_persisted(persistence, header, LOGS[name]())
    query = SessionQuery(None, persistence, prepared_session_cache_size=1)
    expected = {name: query.read_session(name) for name in HEADERS}
    failures: list[BaseException] = []

    def reader(offset: int) -> None:
        names = list(HEADERS)
        try:
            for step in range(30):
                name = names[(offset + step) % len(names)]
                assert query.read_session(name) == expected[name]
                assert len(query.list_events(name)) == len(expected[name].events)
        except BaseException as error:  # reported to the main thread below
            failures.append(error)

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()
    assert failures == []
