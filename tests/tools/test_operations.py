"""The tool workflows against a small fake of our own ``QueryService`` protocol.

The fake lets a test make the service misbehave in ways a real corpus cannot be made to
(a backend returning foreign hits, a header replaced between preflight and payload, a repeated
cursor); end-to-end behaviour on real files is in ``tools/test_toolkit.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.model import SessionHeader, TitleSnapshot
from sessionquery.query.backend import SearchMatch
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import (
    CwdIn,
    EventFilter,
    IdIn,
    ParentIn,
    SeqBetween,
    SessionFilter,
    session_matches,
)
from sessionquery.query.types import (
    EventSearchHit,
    EventSearchPage,
    EventTrace,
    EventWindow,
    LineageTrace,
    PartialIndex,
    SessionRecord,
    SessionSearchHit,
    SessionSearchPage,
    TitleResult,
)
from sessionquery.tools import SessionQueryTools
from sessionquery.tools.access import ToolCaller
from sessionquery.tools.boundary import DeadlineToken, ServiceBoundary
from sessionquery.tools.operations import COLLECTION_ATTEMPTS, PAGE_LIMIT, Operations
from sessionquery.tools.specs import parse_event_search, parse_session_search, parse_trace

CALLER = ToolCaller("me", "/w", 5)


def _record(session_id: str, cwd: str | None = "/w", parent: str | None = None) -> SessionRecord:
    header = SessionHeader(id=session_id, created_at=1000, cwd=cwd, parent_session=parent)
    return SessionRecord(header, live=False, persisted=True)


def _hit(record: SessionRecord) -> SessionSearchHit:
    best = EventSearchHit(record.id, 1, "user/message", 1000, "current", "match")
    return SessionSearchHit(record, best)


class FakeQuery:
    """Records every call; serves fixed records and scripted search pages."""

    read_window_max = 50

    def __init__(self, records: Sequence[SessionRecord]) -> None:
        self.records = {r.id: r for r in records}
        self.session_pages: dict[str | None, SessionSearchPage] = {}
        self.event_pages: dict[str | None, EventSearchPage] = {}
        self.calls: list[tuple[str, Any]] = []
        self.title_errors: dict[str, SessionQueryError] = {}
        self.title_headers: dict[str, SessionHeader] = {}
        self.trace_target: SessionRecord | None = None

    def filter_sessions(
        self, filters: Sequence[SessionFilter], *, cancel: CancelToken | None = None
    ) -> list[SessionRecord]:
        self.calls.append(("filter_sessions", tuple(filters)))
        return [
            r
            for r in self.records.values()
            if session_matches(
                filters,
                id=r.id,
                cwd=r.header.cwd,
                created_at=r.header.created_at,
                parent=r.header.parent_session,
                live=r.live,
                persisted=r.persisted,
            )
        ]

    def read_title_snapshots(
        self, ids: Sequence[str], *, cancel: CancelToken | None = None
    ) -> list[TitleResult]:
        self.calls.append(("read_title_snapshots", tuple(ids)))
        results = []
        for session_id in dict.fromkeys(ids):
            if session_id in self.title_errors:
                results.append(TitleResult(session_id, None, None, self.title_errors[session_id]))
                continue
            header = self.title_headers.get(session_id, self.records[session_id].header)
            title = TitleSnapshot(f"Title of {session_id}", (), None, 0, 0)
            results.append(TitleResult(session_id, header, title, None))
        return results

    def trace_session(self, session_id: str, *, cancel: CancelToken | None = None) -> LineageTrace:
        self.calls.append(("trace_session", session_id))
        target = self.trace_target or self.records[session_id]
        return LineageTrace(target, (), (), True, target, None)

    def trace_event(
        self, session_id: str, seq: int, *, cancel: CancelToken | None = None
    ) -> EventTrace:
        raise AssertionError("not used")

    def read_event(
        self,
        session_id: str,
        seq: int,
        *,
        before: int = 0,
        after: int = 0,
        cancel: CancelToken | None = None,
    ) -> EventWindow:
        raise AssertionError("not used")

    def search_sessions(
        self,
        query: str,
        *,
        session_filters: Sequence[SessionFilter] = (),
        event_filters: Sequence[EventFilter] = (),
        limit: int | None = None,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
        match: SearchMatch = "phrase",
        allow_partial: bool = False,
    ) -> SessionSearchPage:
        self.calls.append(("search_sessions", (tuple(session_filters), cursor, limit)))
        return self.session_pages[cursor]

    def search_events(
        self,
        session_id: str,
        query: str,
        *,
        filters: Sequence[EventFilter] = (),
        limit: int | None = None,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
        match: SearchMatch = "phrase",
        allow_partial: bool = False,
    ) -> EventSearchPage:
        self.calls.append(("search_events", (session_id, tuple(filters), cursor)))
        return self.event_pages[cursor]

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def _ops(fake: FakeQuery, max_results: int = 100, caller: ToolCaller = CALLER) -> Operations:
    return Operations(fake, caller, ServiceBoundary(None, None), max_results)


def _records() -> list[SessionRecord]:
    return [
        _record("me"),
        _record("a"),
        _record("b"),
        _record("c"),
        _record("child", parent="a"),
        _record("x", cwd="/other"),
    ]


def test_session_search_pages_internally_and_skips_own_and_foreign_hits() -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {
        None: SessionSearchPage([_hit(r["me"]), _hit(r["a"])], "p2"),
        "p2": SessionSearchPage([_hit(r["x"]), _hit(r["b"])], None),
    }
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert "Session search results (2):" in text
    assert "Session a " in text and "Session b " in text
    assert "Session me " not in text and "Session x " not in text
    searches = [args for name, args in fake.calls if name == "search_sessions"]
    assert [cursor for _, cursor, _ in searches] == [None, "p2"]
    assert all(CwdIn(("/w",)) in filters for filters, _, _ in searches)
    assert all(limit == PAGE_LIMIT for _, _, limit in searches)
    assert fake.names().count("read_title_snapshots") == 1


def test_session_search_stops_at_the_cap_once_one_more_hit_is_seen() -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {
        None: SessionSearchPage([_hit(r["a"]), _hit(r["b"])], "p2"),
        "p2": SessionSearchPage([_hit(r["c"])], "p3"),
    }
    text = _ops(fake, max_results=2).session_search(parse_session_search({"query": "q"}))
    assert "Session search results (2):" in text
    assert text.endswith("Narrow the query or add filters to find the others.")
    assert fake.names().count("search_sessions") == 2


class MovingCorpus(FakeQuery):
    """A fake whose continuation pages go stale the first ``stale`` times they are asked for,
    as a backend's do when another process writes between two pages."""

    def __init__(self, records: Sequence[SessionRecord], stale: int) -> None:
        super().__init__(records)
        self.stale = stale
        self.limits: list[int | None] = []

    def search_sessions(self, query: str, **options: Any) -> SessionSearchPage:
        cursor, limit = options.get("cursor"), options.get("limit")
        self.limits.append(limit)
        if cursor is not None and self.stale > 0:
            self.stale -= 1
            raise SessionQueryError(ErrorCode.STALE_CURSOR, "stale")
        return super().search_sessions(query, **options)

    def search_events(self, session_id: str, query: str, **options: Any) -> EventSearchPage:
        if options.get("cursor") is not None and self.stale > 0:
            self.stale -= 1
            raise SessionQueryError(ErrorCode.STALE_CURSOR, "stale")
        return super().search_events(session_id, query, **options)


def _two_pages(fake: FakeQuery) -> None:
    r = fake.records
    fake.session_pages = {
        None: SessionSearchPage([_hit(r["me"]), _hit(r["a"])], "p2"),
        "p2": SessionSearchPage([_hit(r["b"]), _hit(r["c"])], None),
    }


def test_a_continuation_gone_stale_restarts_the_collection_transparently() -> None:
    fake = MovingCorpus(_records(), stale=COLLECTION_ATTEMPTS - 1)
    _two_pages(fake)
    result = SessionQueryTools(fake).call("session_search", {"query": "q"}, CALLER)
    assert not result.is_error, result.text
    assert "Session search results (3):" in result.text
    assert "Result cap reached" not in result.text
    assert len(fake.limits) == 2 * COLLECTION_ATTEMPTS


def test_a_corpus_that_keeps_moving_gives_the_longest_consistent_run_marked_capped() -> None:
    fake = MovingCorpus(_records(), stale=10**6)
    _two_pages(fake)
    result = SessionQueryTools(fake).call("session_search", {"query": "q"}, CALLER)
    assert not result.is_error, result.text
    assert "STALE" not in result.text
    assert "Session search results (1):" in result.text and "Session a " in result.text
    assert "Result cap reached: these are the 1 best matching sessions" in result.text
    assert len(fake.limits) == 2 * COLLECTION_ATTEMPTS


def test_an_event_search_whose_session_keeps_moving_never_answers_stale() -> None:
    fake = MovingCorpus(_records(), stale=10**6)
    header = fake.records["a"].header
    first = [EventSearchHit("a", seq, "user/message", 1000, "current", "x") for seq in (3, 1)]
    fake.event_pages = {
        None: EventSearchPage(header, first, "e2"),
        "e2": EventSearchPage(header, [first[0]], None),
    }
    result = SessionQueryTools(fake).call(
        "session_event_search", {"query": "q", "session_id": "a"}, CALLER
    )
    assert not result.is_error, result.text
    assert "seq 3" in result.text and "seq 1" in result.text
    assert "Result cap reached: these are the 2 best matching events" in result.text


def test_a_full_answer_is_one_backend_call_of_the_largest_page() -> None:
    records = [_record(f"s{n}") for n in range(PAGE_LIMIT)]
    fake = FakeQuery(records)
    fake.session_pages = {None: SessionSearchPage([_hit(r) for r in records], "more")}
    caller = ToolCaller(cwd="/w")  # no own session to skip: the next page is all acceptable
    text = _ops(fake, caller=caller).session_search(parse_session_search({"query": "q"}))
    assert f"Session search results ({PAGE_LIMIT}):" in text
    assert "Result cap reached" in text
    searches = [args for name, args in fake.calls if name == "search_sessions"]
    assert searches == [((CwdIn(("/w",)),), None, PAGE_LIMIT)]


def test_a_backend_with_a_smaller_max_limit_is_paged_at_its_default_page_size() -> None:
    class Small(FakeQuery):
        def search_sessions(self, query: str, **options: Any) -> SessionSearchPage:
            limit = options.get("limit")
            self.calls.append(("search_sessions", (options.get("cursor"), limit)))
            if limit is not None and limit > 10:
                raise SessionQueryError(ErrorCode.INVALID_LIMIT, "limit must be at most 10")
            return self.session_pages[options.get("cursor")]

    fake = Small(_records())
    _two_pages(fake)
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert "Session search results (3):" in text
    searches = [args for name, args in fake.calls if name == "search_sessions"]
    assert searches == [(None, PAGE_LIMIT), (None, None), ("p2", None)]


def test_session_search_exactly_at_the_cap_is_not_capped() -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {None: SessionSearchPage([_hit(r["a"]), _hit(r["b"])], None)}
    text = _ops(fake, max_results=2).session_search(parse_session_search({"query": "q"}))
    assert "Result cap reached" not in text


def test_repeated_continuation_cursor_is_invalid_cursor() -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {
        None: SessionSearchPage([_hit(r["a"])], "loop"),
        "loop": SessionSearchPage([_hit(r["b"])], "loop"),
    }
    with pytest.raises(SessionQueryError) as info:
        _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert info.value.code is ErrorCode.INVALID_CURSOR


def test_parent_ids_are_deduplicated_and_authorized_in_one_query_before_searching() -> None:
    fake = FakeQuery(_records())
    fake.session_pages = {None: SessionSearchPage([_hit(fake.records["child"])], None)}
    args = parse_session_search({"query": "q", "parent_session_ids": ["a", "x", "a", "me"]})
    text = _ops(fake).session_search(args)
    first_name, first_filters = fake.calls[0]
    assert first_name == "filter_sessions"
    assert first_filters == (IdIn(("a", "x", "me")), CwdIn(("/w",)))
    search_filters = next(args for name, args in fake.calls if name == "search_sessions")[0]
    assert ParentIn(("a", "me")) in search_filters
    assert "   Parent: a" in text.split("\n")


def test_event_search_on_own_session_caps_seq_to_before_the_current_step() -> None:
    fake = FakeQuery(_records())
    fake.event_pages = {None: EventSearchPage(fake.records["me"].header, [], None)}
    _ops(fake).session_event_search(parse_event_search({"query": "q", "seq_to": 99}))
    search = next(args for name, args in fake.calls if name == "search_events")
    assert search[0] == "me"
    assert SeqBetween(None, 4) in search[1]


def test_event_search_page_for_a_replaced_session_is_unauthorized() -> None:
    fake = FakeQuery(_records())
    moved = SessionHeader(id="a", created_at=1000, cwd="/elsewhere")
    fake.event_pages = {None: EventSearchPage(moved, [], None)}
    with pytest.raises(SessionQueryError) as info:
        _ops(fake).session_event_search(parse_event_search({"query": "q", "session_id": "a"}))
    assert info.value.code is ToolErrorCode.UNAUTHORIZED


def test_trace_whose_payload_header_moved_workspace_is_unauthorized() -> None:
    fake = FakeQuery(_records())
    fake.trace_target = _record("a", cwd="/elsewhere")
    with pytest.raises(SessionQueryError) as info:
        _ops(fake).session_trace(parse_trace({"session_id": "a"}))
    assert info.value.code is ToolErrorCode.UNAUTHORIZED


def test_title_read_failure_shows_the_code_instead_of_the_title() -> None:
    fake = FakeQuery(_records())
    fake.title_errors["a"] = SessionQueryError(ErrorCode.CORRUPT_SESSION, "/secret/a.jsonl line 3")
    text = _ops(fake).session_trace(parse_trace({"session_id": "a"}))
    assert text.split("\n")[0] == (
        "Session a \u2014 untitled (title unavailable: SESSION_QUERY_CORRUPT_SESSION)"
    )
    assert "secret" not in text


def test_title_header_outside_the_workspace_fails_the_whole_call() -> None:
    fake = FakeQuery(_records())
    fake.title_headers["a"] = SessionHeader(id="a", created_at=1000, cwd="/elsewhere")
    with pytest.raises(SessionQueryError) as info:
        _ops(fake).session_trace(parse_trace({"session_id": "a"}))
    assert info.value.code is ToolErrorCode.UNAUTHORIZED


def test_empty_time_range_skips_the_search() -> None:
    fake = FakeQuery(_records())
    args = parse_session_search(
        {
            "query": "q",
            "event_time_from": "2025-01-01T00:00:00.0001Z",
            "event_time_to": "2025-01-01T00:00:00.0002Z",
        }
    )
    assert _ops(fake).session_search(args) == "No prior session matches found."
    assert "search_sessions" not in fake.names()


def test_a_session_repeated_across_pages_is_listed_once() -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {
        None: SessionSearchPage([_hit(r["a"])], "p2"),
        "p2": SessionSearchPage([_hit(r["a"]), _hit(r["b"])], None),
    }
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert "Session search results (2):" in text


def test_a_search_hit_whose_session_moved_workspace_is_dropped_not_an_error() -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {None: SessionSearchPage([_hit(r["a"]), _hit(r["b"])], None)}
    fake.title_headers["a"] = SessionHeader(id="a", created_at=1000, cwd="/elsewhere")
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert "Session search results (1):" in text
    assert "Session b " in text
    assert "Session a " not in text and "elsewhere" not in text


@pytest.mark.parametrize(
    "error",
    [
        SessionQueryError(ErrorCode.SESSION_NOT_FOUND, "/secret/a.jsonl is gone"),
        SessionQueryError(ToolErrorCode.UNAUTHORIZED, "outside"),
    ],
)
def test_a_search_hit_whose_session_is_gone_or_hidden_is_dropped(error: SessionQueryError) -> None:
    fake = FakeQuery(_records())
    r = fake.records
    fake.session_pages = {None: SessionSearchPage([_hit(r["a"]), _hit(r["b"])], None)}
    fake.title_errors["a"] = error
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert "Session search results (1):" in text
    assert "Session a " not in text and "secret" not in text


def test_a_search_whose_every_hit_was_dropped_says_no_matches() -> None:
    fake = FakeQuery(_records())
    fake.session_pages = {None: SessionSearchPage([_hit(fake.records["a"])], None)}
    fake.title_headers["a"] = SessionHeader(id="a", created_at=1000, cwd="/elsewhere")
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert text == "No prior session matches found."


def test_a_search_hit_with_a_corrupt_title_stays_with_the_title_unavailable() -> None:
    fake = FakeQuery(_records())
    fake.session_pages = {None: SessionSearchPage([_hit(fake.records["a"])], None)}
    fake.title_errors["a"] = SessionQueryError(ErrorCode.CORRUPT_SESSION, "/secret/a.jsonl")
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    assert "untitled (title unavailable: SESSION_QUERY_CORRUPT_SESSION)" in text


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            SessionQueryError(
                ErrorCode.INDEX_BUILDING,
                "/secret/index.sqlite building",
                context={"sessions_indexed": 3, "sessions_total": 7},
            ),
            "the history index is still being built: 3 of 7 sessions; try again shortly",
        ),
        (
            SessionQueryError(ErrorCode.BUSY, "/secret/store kept changing"),
            "session history is busy with other writers; try again shortly",
        ),
    ],
)
def test_retryable_search_failures_tell_the_model_to_try_again(
    error: SessionQueryError, message: str
) -> None:
    class Busy(FakeQuery):
        def search_sessions(self, query: str, **_: Any) -> SessionSearchPage:
            raise error

    tools = SessionQueryTools(Busy(_records()))
    result = tools.call("session_search", {"query": "q"}, CALLER)
    assert (result.is_error, result.code) == (True, error.code.value)
    assert result.text == f"{error.code.value}: {message}"


def test_a_correction_is_shown_only_for_a_word_the_answers_snippets_hold() -> None:
    fake = FakeQuery(_records())
    hit = SessionSearchHit(
        fake.records["a"], EventSearchHit("a", 1, "user/message", 0, "current", "Fix the test")
    )
    corrections = {"teh": "the", "secrt": "secret"}  # "secret": no snippet of this answer
    fake.session_pages = {None: SessionSearchPage([hit], corrections=corrections)}
    text = _ops(fake).session_search(parse_session_search({"query": "teh secrt"}))
    first = text.split("\n", 1)[0]
    assert first == "Showing results for \u201cthe\u201d instead of \u201cteh\u201d."
    assert "secret" not in text and "secrt" not in text


@pytest.mark.parametrize(
    ("progress", "line"),
    [
        (PartialIndex(3, 7), "(3 of 7 sessions indexed)"),
        (PartialIndex(0, None), "(0 sessions indexed so far)"),
    ],
)
def test_an_answer_from_an_unfinished_build_is_headed_by_how_much_is_indexed(
    progress: PartialIndex, line: str
) -> None:
    fake = FakeQuery(_records())
    hits = [_hit(fake.records["a"])] if progress.sessions_indexed else []
    fake.session_pages = {None: SessionSearchPage(hits, partial=progress)}
    text = _ops(fake).session_search(parse_session_search({"query": "q"}))
    first = text.split("\n", 1)[0]
    assert first.startswith(f"The history index is still being built {line}: ")
    assert ("Session search results (1):" in text) == bool(hits)


class _Building(FakeQuery):
    """The first search waits out the token it gets (as a search queued behind a build that
    is not a first one would), the second answers."""

    def __init__(self, records: Sequence[SessionRecord]) -> None:
        super().__init__(records)
        self.deadlines: list[float | None] = []

    def search_sessions(self, query: str, **kwargs: Any) -> SessionSearchPage:
        cancel: CancelToken = kwargs["cancel"]
        self.deadlines.append(cancel.deadline)
        assert kwargs["allow_partial"] is True
        if len(self.deadlines) == 1:
            assert cancel.deadline is not None
            # As the backend waits for a build's lock: until the token's deadline.
            threading.Event().wait(max(0.0, cancel.deadline - time.monotonic()))
            cancel.check()
        return SessionSearchPage([_hit(self.records["a"])])


def test_a_search_waits_only_briefly_for_a_build_then_gets_the_rest_of_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sessionquery.tools import operations

    monkeypatch.setattr(operations, "BUILD_PATIENCE_MS", 50)
    fake = _Building(_records())
    outer = DeadlineToken(60_000)
    ops = Operations(fake, CALLER, ServiceBoundary(None, outer), 100)
    text = ops.session_search(parse_session_search({"query": "q"}))
    assert text.startswith("Session search results (1):")
    first, second = fake.deadlines
    assert first is not None and outer.deadline is not None
    assert first < outer.deadline - 50  # the patient attempt ends long before the deadline
    assert second == outer.deadline  # the retry has the whole deadline
