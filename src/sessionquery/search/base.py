"""What both search backends share: their settings, their guards and the shape of a search.

:class:`~sessionquery.search.sqlite.SqliteSearch` and
:class:`~sessionquery.search.postgres.PostgresSearch` differ in how they keep and query their
index; everything around that is here, once, so the two cannot drift apart:

* the settings every backend takes (``open_at``, ``default_limit``, ``max_limit``,
  ``snippet_chars``), checked the same way (``INVALID_CONFIG``);
* the guards (disabled, closed) and the lifecycle (``close`` under the connection lock, the
  context manager);
* ``update``'s guards and contract (the backend brings its index up to date its own way);
* every search's steps around the index: refuse when disabled (``SEARCH_DISABLED``) or already
  cancelled (``ABORTED``), check the request (:mod:`..request`), compile the filters in the
  backend's dialect (:mod:`..predicates`), decode the cursor, let the backend read one page
  (:meth:`SearchBase._sessions`, :meth:`SearchBase._events`) and hand out the next cursor;
* the cache of parsed session headers.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final, Generic, Literal, TypeVar

from sessionquery.closing import Closing
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionHeader
from sessionquery.query.backend import Corpus, SearchMatch
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.filters import EventFilter, SessionFilter
from sessionquery.query.types import (
    EventSearchHit,
    EventSearchPage,
    PartialIndex,
    SessionSearchHit,
    SessionSearchPage,
)
from sessionquery.search.cursor import CursorCodec, CursorPosition, Scope
from sessionquery.search.predicates import (
    EVENT_PREDICATE_LIMIT,
    SESSION_PREDICATE_LIMIT,
    CompiledFilters,
    FilterDialect,
)
from sessionquery.search.request import SearchRequest, event_request, session_request
from sessionquery.search.update import IndexUpdate, ProgressCallback

__all__ = ["OpenAt", "SearchBase", "Window", "not_indexed_yet"]

OpenAt = Literal["startup", "first-search", "never"]
"""When a backend opens its index: now, at the first search, or never (search disabled)."""

_OPEN_AT: Final = ("startup", "first-search", "never")
_MAX_SAFE_LIMIT: Final = 2**53 - 2
_MAX_SNIPPET_CHARS: Final = 2**31 - 1
_HEADER_CACHE_SIZE: Final = 4096
"""Parsed headers kept per index; a hit's header is parsed and validated once, not per search."""

ConnT = TypeVar("ConnT")
HitT = TypeVar("HitT")


def not_indexed_yet(partial: PartialIndex) -> SessionQueryError:
    """The error of an event search whose session the unfinished build has not reached yet:
    the retryable ``INDEX_BUILDING`` with the build's counts, not ``SESSION_NOT_FOUND`` (the
    session exists; the index does not hold it yet)."""
    done, total = partial.sessions_indexed, partial.sessions_total
    if total is None:  # no honest total yet (still listing, or a backend that keeps none)
        return SessionQueryError(
            ErrorCode.INDEX_BUILDING,
            f"the history index is still being built ({done:,} sessions indexed so far); "
            "try again shortly",
        )
    return SessionQueryError(
        ErrorCode.INDEX_BUILDING,
        f"the history index is still being built: {done:,} of {total:,} sessions; "
        "try again shortly",
        context={"sessions_indexed": done, "sessions_total": total},
    )


@dataclass(frozen=True, slots=True)
class Window(Generic[HitT]):
    """One page of hits as a backend read it.

    Attributes:
        hits: the page, at most the request's page size.
        more: whether another hit follows the page (it gets a next cursor).
        generation: the generation the page was read at (bound into its cursor).
        offset: where the page starts.
        corrections: query words searched as others (relevance), typed → searched.
        partial: set when the page was read from an unfinished build (``allow_partial``).
    """

    hits: list[HitT]
    more: bool
    generation: str
    offset: int
    corrections: Mapping[str, str] = field(default_factory=dict)
    partial: PartialIndex | None = None


def _positive_int(
    value: object, name: str, error: Callable[[str], SessionQueryError], maximum: int
) -> int:
    if type(value) is not int or not 1 <= value <= maximum:
        raise error(f"{name} must be an integer between 1 and {maximum}, not {value!r}")
    return value


class SearchBase(Closing, ABC, Generic[ConnT]):
    """The common body of a search backend holding one connection of type ``ConnT``.

    A subclass checks its own arguments, then calls ``super().__init__``; it names its filter
    dialect in ``_FILTERS`` and implements :meth:`_disconnect`, :meth:`_update`,
    :meth:`_sessions` and :meth:`_events`.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` (built by ``config_error``) for an invalid
            setting.
    """

    _FILTERS: ClassVar[FilterDialect]
    _DAMAGED_HEADER: ClassVar[str] = "session-search index holds a damaged session header"

    def __init__(
        self,
        *,
        open_at: OpenAt,
        default_limit: int,
        max_limit: int,
        snippet_chars: int,
        config_error: Callable[[str], SessionQueryError],
    ) -> None:
        if open_at not in _OPEN_AT:
            raise config_error(f"open_at must be one of {', '.join(_OPEN_AT)}, not {open_at!r}")
        self._max_limit = _positive_int(max_limit, "max_limit", config_error, _MAX_SAFE_LIMIT)
        self._default_limit = _positive_int(
            default_limit, "default_limit", config_error, _MAX_SAFE_LIMIT
        )
        if self._default_limit > self._max_limit:
            raise config_error(
                f"default_limit {default_limit} must not exceed max_limit {max_limit}"
            )
        self._snippet_chars = _positive_int(
            snippet_chars, "snippet_chars", config_error, _MAX_SNIPPET_CHARS
        )
        self._open_at: OpenAt = open_at
        self._lock = threading.Lock()
        """Guards the connection: held for one statement group (a query, a batch of writes)."""
        self._conn: ConnT | None = None
        self._closed = False
        self._codec = CursorCodec()
        self._headers: dict[str, SessionHeader] = {}

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close this instance's connection; idempotent. Later searches fail with
        ``INDEX_FAILED``. Other instances and processes on the same index are unaffected."""
        self._closed = True
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                self._disconnect(conn)

    @abstractmethod
    def _disconnect(self, conn: ConnT) -> None:
        """Close ``conn`` (the lock is held)."""

    def _check_enabled(self) -> None:
        if self._open_at == "never":
            raise SessionQueryError(
                ErrorCode.SEARCH_DISABLED, "session search is disabled (open_at='never')"
            )

    def _check_open(self) -> None:
        if self._closed:
            raise SessionQueryError(ErrorCode.INDEX_FAILED, "session-search index is closed")

    # -- public operations -------------------------------------------------------------

    def update(
        self,
        corpus: Corpus,
        *,
        cancel: CancelToken | None = None,
        progress: ProgressCallback | None = None,
    ) -> IndexUpdate:
        """Bring the index up to date now (what every search does first) and report it.

        Args:
            corpus: the service's corpus (``SessionQuery.corpus``).
            cancel: aborts between sessions and inside statements; every batch committed
                before it expired stays (the next update continues).
            progress: called as ``progress(done, total)`` while persisted sessions are
                (re)indexed: ``(0, total)`` as soon as the stale sessions are known, then
                after each session.

        Raises:
            SessionQueryError: ``SEARCH_DISABLED``, ``INDEX_FAILED``, ``ABORTED``,
                ``PERSISTENCE_FAILED``, ``CORRUPT_SESSION``, ``SOURCE_CONFLICT`` or
                ``INVALID_SURFACE``.
        """
        self._check_enabled()
        check_cancel(cancel)
        return self._update(corpus, cancel, progress)

    def search_sessions(
        self,
        corpus: Corpus,
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
        """Sessions whose events contain ``query`` as a phrase (``match="words"``: every word
        of it, any order; ``"relevance"``: any of its words, best answers first), each with
        its best event (SPEC §7, §13.3, §14.1). With ``allow_partial``, a deadline that would
        pass during an unfinished build answers from the indexed part (``page.partial``).

        Raises:
            SessionQueryError: ``SEARCH_DISABLED``, ``INVALID_QUERY``, ``INVALID_FILTER``,
                ``INVALID_LIMIT``, ``INVALID_CURSOR``, ``STALE_CURSOR``, ``ABORTED``,
                ``INDEX_FAILED``, ``INDEX_BUILDING`` (a backend that reports an unfinished
                build instead of ``ABORTED``) and the corpus errors of :meth:`update`.
        """
        self._check_enabled()
        check_cancel(cancel)
        request = session_request(
            query,
            match,
            session_filters,
            event_filters,
            limit,
            default_limit=self._default_limit,
            max_limit=self._max_limit,
            allow_partial=allow_partial,
        )
        check_cancel(cancel)  # normalising a long query took a while
        compiled = self._FILTERS.compile(
            request.session_filters,
            request.event_filters,
            predicate_limit=SESSION_PREDICATE_LIMIT,
        )
        position = self._decode(cursor, "sessions", request.fingerprint)
        window = self._sessions(corpus, request, compiled, position=position, cancel=cancel)
        return SessionSearchPage(
            items=window.hits,
            next_cursor=self._next_cursor("sessions", request, window),
            corrections=dict(window.corrections),
            partial=window.partial,
        )

    def search_events(
        self,
        corpus: Corpus,
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
        """Events of one session containing ``query`` as a phrase (``match`` and
        ``allow_partial`` as in :meth:`search_sessions`), best first (SPEC §7, §13.3).

        Raises:
            SessionQueryError: as :meth:`search_sessions`, plus ``SESSION_NOT_FOUND`` when the
                id is neither live nor persisted, and ``INVALID_FILTER`` for a non-string id.
        """
        self._check_enabled()
        check_cancel(cancel)
        request = event_request(
            session_id,
            query,
            match,
            filters,
            limit,
            default_limit=self._default_limit,
            max_limit=self._max_limit,
            allow_partial=allow_partial,
        )
        check_cancel(cancel)  # normalising a long query took a while
        compiled = self._FILTERS.compile(
            (), request.event_filters, predicate_limit=EVENT_PREDICATE_LIMIT
        )
        position = self._decode(cursor, "events", request.fingerprint)
        header, window = self._events(
            corpus, session_id, request, compiled, position=position, cancel=cancel
        )
        return EventSearchPage(
            session=header,
            items=window.hits,
            next_cursor=self._next_cursor("events", request, window),
            corrections=dict(window.corrections),
            partial=window.partial,
        )

    @abstractmethod
    def _update(
        self, corpus: Corpus, cancel: CancelToken | None, progress: ProgressCallback | None
    ) -> IndexUpdate:
        """Bring the index up to date (the backend's part of :meth:`update`)."""

    @abstractmethod
    def _sessions(
        self,
        corpus: Corpus,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        """Bring the index up to date and read one page of session hits from ``position``.

        Raises:
            SessionQueryError: ``STALE_CURSOR`` for a position of another generation
                (:func:`~sessionquery.search.cursor.page_offset`), ``ABORTED``,
                ``INDEX_FAILED`` and the corpus errors.
        """

    @abstractmethod
    def _events(
        self,
        corpus: Corpus,
        session_id: str,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> tuple[SessionHeader, Window[EventSearchHit]]:
        """Bring the index up to date and read one page of one session's event hits.

        Raises:
            SessionQueryError: as :meth:`_sessions`, plus ``SESSION_NOT_FOUND``.
        """

    # -- helpers ---------------------------------------------------------------------

    def _decode(self, cursor: object, scope: Scope, fingerprint: str) -> CursorPosition | None:
        if cursor is None:
            return None
        return self._codec.decode(cursor, scope, fingerprint)

    def _next_cursor(
        self, scope: Scope, request: SearchRequest, window: Window[HitT]
    ) -> str | None:
        if not window.more:
            return None
        offset = window.offset + request.page_size
        return self._codec.encode(scope, request.fingerprint, window.generation, offset)

    def _header(self, header_json: str) -> SessionHeader:
        """The header stored as ``header_json``, parsed once (headers are immutable).

        Raises:
            SessionQueryError: ``INDEX_FAILED`` when the stored header does not parse.
        """
        header = self._headers.get(header_json)
        if header is None:
            if len(self._headers) >= _HEADER_CACHE_SIZE:
                self._headers.clear()
            try:
                header = SessionHeader.from_json(json.loads(header_json))
            except (ValueError, TypeError) as exc:  # bytes damaged inside the index
                raise SessionQueryError(ErrorCode.INDEX_FAILED, self._DAMAGED_HEADER) from exc
            self._headers[header_json] = header
        return header
