"""The trusted read service over live and persisted sessions (SPEC §6).

:class:`SessionQuery` answers twelve questions about the sessions in its corpus — list, read,
filter, titles, events, surface, one event with neighbours, session lineage, event tracing and
the two searches. The corpus is live-first (:mod:`sessionquery.query.corpus`); persisted logs
are read cold, with crash-tail closers added in memory, through a prepared-log cache that
makes repeated reads of an unchanged log cost no parsing or folding.

Invariants:

* reads never change storage, and every result is detached: events and their data are
  deep-frozen, headers are frozen, and sequences are tuples or fresh lists;
* arguments (filters, windows, ids) are checked before any I/O, and an already cancelled or
  expired :class:`CancelToken` raises ``ABORTED`` before any I/O;
* callers only ever see :class:`SessionQueryError` for failures of the corpus.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sessionquery.closing import Closing
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import validate_session_id
from sessionquery.persistence.base import ArchiveAware, SessionPersistence
from sessionquery.query.backend import Corpus, SearchBackend, SearchMatch, validate_match
from sessionquery.query.cache import PreparedCache
from sessionquery.query.cancel import CancelToken
from sessionquery.query.corpus import LiveStore, ServiceCorpus, mapped
from sessionquery.query.filters import (
    EventFilter,
    SessionFilter,
    event_matches,
    header_matches,
    validate_event_filters,
    validate_session_filters,
)
from sessionquery.query.lineage import trace_lineage
from sessionquery.query.listing import LIST_LIMIT_DEFAULT, ListCursors, check_limit, next_page
from sessionquery.query.outline import LogOutline, LogWindow, OutlinedLog
from sessionquery.query.prepared import PreparedLog
from sessionquery.query.titles import TitleMemo, read_titles
from sessionquery.query.tracing import event_not_found, require_event, trace_event
from sessionquery.query.types import (
    EventDocument,
    EventRecord,
    EventSearchHit,
    EventSearchPage,
    EventTrace,
    EventWindow,
    LineageTrace,
    SessionListPage,
    SessionLog,
    SessionRecord,
    SessionSearchPage,
    SurfaceSnapshot,
    TitleResult,
)

if TYPE_CHECKING:
    from sessionquery.redact import Redactor

__all__ = ["SessionQuery"]


def _config_int(value: object, name: str, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            f"{name} must be an integer of at least {minimum}, not {value!r}",
        )
    return value


def _require_methods(value: object, name: str, methods: Sequence[str]) -> None:
    missing = [method for method in methods if not callable(getattr(value, method, None))]
    if missing:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            f"{name} must provide {', '.join(methods)}; {type(value).__name__} lacks "
            f"{', '.join(missing)}",
        )


def _partial(allow_partial: bool) -> dict[str, bool]:
    """``allow_partial`` for the backend only when asked for, so a backend written before it
    existed keeps working for every other search."""
    return {"allow_partial": True} if allow_partial else {}


def _session_id(value: object) -> str:
    """``value`` as a session id; anything that cannot be an id names no session."""
    try:
        return validate_session_id(value, "session id")
    except ValueError as error:
        raise SessionQueryError(
            ErrorCode.SESSION_NOT_FOUND, f"no session has the id {value!r}: {error}"
        ) from None


class SessionQuery(Closing):
    """Read, filter, trace and search the sessions of a live store and a persistence.

    Args:
        store: the live store (:class:`sessionquery.SessionStore`), or ``None``.
        persistence: the durable store (:class:`sessionquery.SessionPersistence`), or ``None``.
        search: a :class:`SearchBackend` for the two search methods, or ``None``.
        read_window_max: the largest ``before``/``after`` accepted by :meth:`read_event`.
        persisted_read_concurrency: worker threads for cold reads in
            :meth:`read_title_snapshots`.
        prepared_session_cache_size: persisted logs kept parsed and folded (LRU).
        redactor: a :class:`sessionquery.redact.Redactor`: every event, text, title and
            search document is then read redacted (``persistence`` is read through
            :class:`~sessionquery.redact.RedactingPersistence`, live sessions through
            :class:`~sessionquery.redact.RedactingLiveStore`, so a search backend indexes
            only masked text), and search snippets are redacted again on the way out (known
            values added after a session was indexed). A persistence already read through
            this very redactor (its ``redactor`` attribute) is not wrapped again. ``None``
            (the default) reads everything as stored: right for a program's own sessions, not
            for imported histories (pass :func:`sessionquery.redact.default_redactor`).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for an option out of range or an argument that
            does not provide the needed methods.
    """

    def __init__(
        self,
        store: LiveStore | None = None,
        persistence: SessionPersistence | None = None,
        search: SearchBackend | None = None,
        *,
        read_window_max: int = 50,
        persisted_read_concurrency: int = 4,
        prepared_session_cache_size: int = 5,
        redactor: Redactor | None = None,
    ) -> None:
        self._read_window_max = _config_int(read_window_max, "read_window_max", 0)
        self._concurrency = _config_int(persisted_read_concurrency, "persisted_read_concurrency", 1)
        cache_size = _config_int(prepared_session_cache_size, "prepared_session_cache_size", 1)
        if store is not None:
            _require_methods(store, "store", ("get", "sessions"))
        if persistence is not None:
            _require_methods(persistence, "persistence", ("list", "stat", "open_read"))
        if search is not None:
            _require_methods(search, "search", ("search_sessions", "search_events", "close"))
        if redactor is not None:
            _require_methods(redactor, "redactor", ("redact", "redact_json", "find"))
            store, persistence = _redacting(store, persistence, redactor)
        self._redactor = redactor
        self._search = search
        self._search_closed = False
        self._cache: PreparedCache[PreparedLog] = PreparedCache(cache_size)
        outlines: PreparedCache[OutlinedLog] = PreparedCache(cache_size, discard=OutlinedLog.close)
        self._persistence = persistence
        self._corpus = ServiceCorpus(store, persistence, self._cache, outlines)
        self._titles = TitleMemo()
        self._list_cursors = ListCursors()

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def corpus(self) -> Corpus:
        """The live-first corpus view handed to search backends (read-only)."""
        return self._corpus

    @property
    def redactor(self) -> Redactor | None:
        """The redactor every read goes through, or ``None``."""
        return self._redactor

    @property
    def read_window_max(self) -> int:
        """The largest ``before``/``after`` :meth:`read_event` accepts."""
        return self._read_window_max

    def close(self) -> None:
        """Close the search backend, if any; idempotent. Exact reads keep working."""
        if self._search is not None and not self._search_closed:
            self._search_closed = True
            self._search.close()

    # -- sessions ------------------------------------------------------------------------

    def list_sessions(self, *, cancel: CancelToken | None = None) -> list[SessionRecord]:
        """Every session, newest ``created_at`` first, ties by id; reads no logs.

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        return self._corpus.records(cancel)

    def read_session(self, session_id: str, *, cancel: CancelToken | None = None) -> SessionLog:
        """The whole log of one session, replay-validated by the surface fold.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``CORRUPT_SESSION`` (a stored log that
                fails the fold), ``INVALID_SURFACE`` (a live one), ``PERSISTENCE_FAILED``,
                ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        session_id = _session_id(session_id)
        with self._corpus.open_log(session_id, cancel) as log:
            log.fold()
            return SessionLog(log.header, log.inherited_event_count, tuple(log.events))

    def filter_sessions(
        self, filters: Sequence[SessionFilter], *, cancel: CancelToken | None = None
    ) -> list[SessionRecord]:
        """The sessions matching every clause of ``filters``, newest first.

        Raises:
            SessionQueryError: ``INVALID_FILTER`` (before any I/O), then as
                :meth:`list_sessions`.
        """
        clauses = validate_session_filters(filters)
        return [
            record
            for record in self._corpus.records(cancel)
            if header_matches(clauses, record.header, live=record.live, persisted=record.persisted)
        ]

    def list_page(
        self,
        filters: Sequence[SessionFilter] = (),
        *,
        limit: int = LIST_LIMIT_DEFAULT,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
    ) -> SessionListPage:
        """One page of :meth:`filter_sessions` (newest first, ties by id), and the cursor of
        the next (:mod:`sessionquery.query.listing`).

        The pages of one request concatenated are :meth:`filter_sessions` of its filters
        (while the corpus does not change); the cursor holds the last session's place, so a
        session created between two pages never shifts the others. A persistence that lists
        newest first itself (PostgreSQL) answers a page with one query; any other is listed
        whole and cut.

        Args:
            filters: session clauses, ANDed (as :meth:`filter_sessions` takes them).
            limit: the page size, 1 to 1000.
            cursor: ``next_cursor`` of the previous page of the same filters, from this
                service (any limit may follow it).
            cancel: checked before any I/O and between the persistence's pages.

        Raises:
            SessionQueryError: ``INVALID_FILTER``, ``INVALID_LIMIT``, ``INVALID_CURSOR``
                (before any I/O), then as :meth:`list_sessions`.
        """
        clauses = validate_session_filters(filters)
        return next_page(
            self._corpus,
            self._list_cursors,
            clauses,
            limit=check_limit(limit),
            cursor=cursor,
            cancel=cancel,
        )

    def read_title_snapshots(
        self, ids: Iterable[str], *, cancel: CancelToken | None = None
    ) -> list[TitleResult]:
        """The title of each unique id (first-seen order); failures are reported per id.

        Raises:
            SessionQueryError: ``ABORTED`` only (the whole call is cancelled).
            TypeError: when ``ids`` is not an iterable of strings.
        """
        return read_titles(
            self._corpus, ids, concurrency=self._concurrency, cancel=cancel, memo=self._titles
        )

    def trace_session(self, session_id: str, *, cancel: CancelToken | None = None) -> LineageTrace:
        """The ancestors (nearest first) and descendants of one session.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``INVALID_LINEAGE`` (a parent cycle),
                ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        session_id = _session_id(session_id)
        return trace_lineage(self._corpus.records(cancel), session_id)

    # -- events --------------------------------------------------------------------------

    def filter_events(
        self,
        session_id: str,
        filters: Sequence[EventFilter],
        *,
        cancel: CancelToken | None = None,
    ) -> list[EventDocument]:
        """The events with non-empty semantic text matching every clause, in seq order.

        Raises:
            SessionQueryError: ``INVALID_FILTER`` (before any I/O), ``SESSION_NOT_FOUND``,
                ``INVALID_SURFACE`` / ``CORRUPT_SESSION`` (fold failure of a live / stored
                log), ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        clauses = validate_event_filters(filters)
        session_id = _session_id(session_id)
        with self._corpus.open_log(session_id, cancel) as log:
            surface_of = log.fold().surface_of
            documents: list[EventDocument] = []
            for event, text in zip(log.events, log.texts(), strict=True):
                if not text:
                    continue
                surface = surface_of[event.seq]
                if event_matches(
                    clauses,
                    seq=event.seq,
                    time=event.time,
                    type=event.type,
                    surface=surface,
                    text=text,
                ):
                    documents.append(
                        EventDocument(session_id, event.seq, event.type, event.time, surface, text)
                    )
            return documents

    def list_events(
        self, session_id: str, *, cancel: CancelToken | None = None
    ) -> list[EventRecord]:
        """One record per raw event (structural ones included), in seq order.

        Raises:
            SessionQueryError: as :meth:`filter_events`, without ``INVALID_FILTER``.
        """
        session_id = _session_id(session_id)
        with self._corpus.open_log(session_id, cancel) as log:
            surface_of = log.fold().surface_of
            return [
                EventRecord(session_id, event.seq, event.type, event.time, surface_of[event.seq])
                for event in log.events
            ]

    def read_surface(
        self, session_id: str, *, cancel: CancelToken | None = None
    ) -> SurfaceSnapshot:
        """The current surface events in surface (model-history) order.

        Raises:
            SessionQueryError: as :meth:`list_events`.
        """
        session_id = _session_id(session_id)
        with self._corpus.open_log(session_id, cancel) as log:
            nodes = log.fold().nodes
            events = log.events
            return SurfaceSnapshot(
                session=log.header,
                inherited_event_count=log.inherited_event_count,
                captured_through_seq=events[-1].seq if len(events) else None,
                events=tuple(events[seq] for seq in nodes),
            )

    def read_event(
        self,
        session_id: str,
        seq: int,
        *,
        before: int = 0,
        after: int = 0,
        cancel: CancelToken | None = None,
    ) -> EventWindow:
        """One event with up to ``before`` raw events before it and ``after`` after it.

        Raises:
            SessionQueryError: ``INVALID_WINDOW`` (before any I/O), ``SESSION_NOT_FOUND``,
                ``EVENT_NOT_FOUND``, ``CORRUPT_SESSION``, ``PERSISTENCE_FAILED``,
                ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        self._check_window(before, "before")
        self._check_window(after, "after")
        session_id = _session_id(session_id)
        with self._corpus.open_log(session_id, cancel) as log:
            target = require_event(log, seq)
            start = max(0, target.seq - before)
            end = min(len(log.events) - 1, target.seq + after)
            return EventWindow(
                session=log.header,
                inherited_event_count=log.inherited_event_count,
                target=target,
                events=tuple(log.events[index] for index in range(start, end + 1)),
                start_seq=start,
                end_seq=end,
            )

    def read_outline(self, session_id: str, *, cancel: CancelToken | None = None) -> LogOutline:
        """The outline of one session: every event's skeleton and the surface fold, without
        the events' data (:mod:`sessionquery.query.outline`).

        The log is validated as :meth:`read_session` validates it and fails exactly when
        that fails; a stored log whose store gives skeletons (the JSONL store) is read without
        parsing its events' data, and kept outlined (with an open read handle) for
        :meth:`read_window` until its revision changes.

        Raises:
            SessionQueryError: as :meth:`read_session`.
        """
        session_id = _session_id(session_id)
        with self._corpus.outlined_log(session_id, cancel) as log, mapped(session_id, "read"):
            return log.outline()

    def read_window(
        self, session_id: str, seqs: Iterable[int], *, cancel: CancelToken | None = None
    ) -> LogWindow:
        """The whole events at ``seqs`` (in that order) with the outline they were read with;
        each equal to the event :meth:`read_session` returns at that seq. A store that gives
        skeletons reads only their lines.

        Raises:
            SessionQueryError: ``EVENT_NOT_FOUND`` for a seq the log does not have (checked
                against the outline), else as :meth:`read_outline`.
        """
        wanted = list(seqs)
        session_id = _session_id(session_id)
        with self._corpus.outlined_log(session_id, cancel) as log, mapped(session_id, "read"):
            outline = log.outline()
            for seq in wanted:
                if type(seq) is not int or not 0 <= seq < outline.event_count:
                    raise event_not_found(session_id, seq)
            return LogWindow(outline, tuple(log.events(wanted)))

    def trace_event(
        self, session_id: str, seq: int, *, cancel: CancelToken | None = None
    ) -> EventTrace:
        """The replacement and citation relationships of one event.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``EVENT_NOT_FOUND`` (checked before the
                fold), ``INVALID_SURFACE`` / ``CORRUPT_SESSION``, ``PERSISTENCE_FAILED``,
                ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        session_id = _session_id(session_id)
        with self._corpus.open_log(session_id, cancel) as log:
            return trace_event(log, seq)

    # -- search --------------------------------------------------------------------------

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
        """Sessions matching ``query``, each with its best event (delegated to the backend).

        ``match="phrase"`` (default) finds the query as one literal phrase; ``match="words"``
        finds events containing every word of the query in any order (SPEC §13.3);
        ``match="relevance"`` finds events holding any of its words, best answers first
        (SPEC §14.1). ``allow_partial=True`` answers from the indexed part when the
        deadline comes during a first index build (``page.partial``) instead of raising
        ``INDEX_BUILDING``.

        Raises:
            SessionQueryError: ``SEARCH_DISABLED`` without a backend; otherwise whatever the
                backend raises (``INVALID_QUERY``, ``INVALID_FILTER``, ``INVALID_LIMIT``,
                ``INVALID_CURSOR``, ``STALE_CURSOR``, ``INDEX_FAILED``, ``ABORTED``...).
        """
        backend = self._backend()
        match = validate_match(match)
        page = backend.search_sessions(
            self._corpus,
            query,
            session_filters=session_filters,
            event_filters=event_filters,
            limit=limit,
            cursor=cursor,
            cancel=cancel,
            match=match,
            **_partial(allow_partial),
        )
        if self._redactor is not None:
            items = [
                replace(hit, best_match=self._redacted_hit(hit.best_match)) for hit in page.items
            ]
            page = replace(page, items=items)
        return self._archived_marked(page)

    def _archived_marked(self, page: SessionSearchPage) -> SessionSearchPage:
        """The page with ``record.archived`` set for the hits read from an archive."""
        persistence = self._persistence
        if not isinstance(persistence, ArchiveAware):
            return page
        archived = persistence.archived_ids()
        if not archived or not any(hit.record.id in archived for hit in page.items):
            return page
        items = [
            replace(hit, record=replace(hit.record, archived=True))
            if hit.record.persisted and hit.record.id in archived
            else hit
            for hit in page.items
        ]
        return replace(page, items=items)

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
        """Events of one session matching ``query`` (delegated to the backend; ``match`` and
        ``allow_partial`` as in :meth:`search_sessions`).

        Raises:
            SessionQueryError: as :meth:`search_sessions`, plus ``SESSION_NOT_FOUND``.
        """
        backend = self._backend()
        match = validate_match(match)
        page = backend.search_events(
            self._corpus,
            session_id,
            query,
            filters=filters,
            limit=limit,
            cursor=cursor,
            cancel=cancel,
            match=match,
            **_partial(allow_partial),
        )
        if self._redactor is None:
            return page
        return replace(page, items=[self._redacted_hit(hit) for hit in page.items])

    # -- helpers -------------------------------------------------------------------------

    def _redacted_hit(self, hit: EventSearchHit) -> EventSearchHit:
        assert self._redactor is not None
        snippet = self._redactor.redact(hit.snippet)
        return hit if snippet is hit.snippet else replace(hit, snippet=snippet)

    def _backend(self) -> SearchBackend:
        if self._search is None:
            raise SessionQueryError(
                ErrorCode.SEARCH_DISABLED, "search is disabled: no search backend is configured"
            )
        return self._search

    def _check_window(self, value: object, name: str) -> None:
        if type(value) is not int or not 0 <= value <= self._read_window_max:
            raise SessionQueryError(
                ErrorCode.INVALID_WINDOW,
                f"{name} must be an integer between 0 and {self._read_window_max}, not {value!r}",
            )


def _redacting(
    store: LiveStore | None, persistence: SessionPersistence | None, redactor: Redactor
) -> tuple[LiveStore | None, SessionPersistence | None]:
    """``store`` and ``persistence`` seen through ``redactor``. A persistence that is already
    read through this very redactor (a ``RedactingPersistence``, or a wrapper delegating to one,
    whose ``redactor`` attribute is this object) is not wrapped twice."""
    from sessionquery.redact import RedactingLiveStore, RedactingPersistence

    if persistence is not None and getattr(persistence, "redactor", None) is not redactor:
        persistence = RedactingPersistence(persistence, redactor)
    if store is not None:
        store = RedactingLiveStore(store, redactor)
    return store, persistence
