"""The five tool workflows: authorize, query through the boundary, re-check, render.

Every workflow follows the same order (reference contract §6.6): normalised arguments in;
resolve the target (the caller's own session when ``session_id`` is omitted); **preflight**
the target with ``filter_sessions([IdIn([id]), CwdIn([caller cwd])])``; run the one service
call that supplies the payload; **post-check** the header that came back with it; read all
titles with one ``read_title_snapshots`` call (each returned header post-checked too); render.

Invariants: every service call goes through :class:`~sessionquery.tools.boundary.ServiceBoundary`;
searches page internally and never show a cursor; ``session_search`` never returns the
caller's own session nor a session outside the caller's workspace.

**Collecting a search answer** (:meth:`Operations._collect`). The tools ask the backend for
pages of up to :data:`PAGE_LIMIT` hits, so an answer of the default cap is one backend call:
one reconciliation and one read of one consistent snapshot, whatever other processes write
meanwhile. When an answer needs further pages and the corpus moved between two of them (the
backend's ``STALE_CURSOR``, which only cursor-paging library callers see), the collection
starts again on the new corpus, at most :data:`COLLECTION_ATTEMPTS` times in all, within the
call's deadline; if the corpus keeps moving, the answer is the longest run of hits read from
one snapshot, marked capped (more hits existed). No tool answer is ever ``STALE_CURSOR``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Final, Protocol, TypeVar

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.match_modes import SERVICE_MATCH, search_mode
from sessionquery.query import filters as clauses
from sessionquery.query.backend import SearchMatch
from sessionquery.query.cancel import CancelToken
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
from sessionquery.tools import render
from sessionquery.tools.access import (
    EXACT_CWD,
    NO_WORKSPACE_SEARCH_MESSAGE,
    ToolCaller,
    WorkspaceRule,
    is_authorized,
    no_current_step,
    project_lineage,
    unauthorized,
)
from sessionquery.tools.boundary import (
    SANITIZED_MESSAGES,
    DeadlineToken,
    ServiceBoundary,
    sanitize,
)
from sessionquery.tools.specs import (
    EventReadArgs,
    EventSearchArgs,
    EventTraceArgs,
    SessionSearchArgs,
    ToolMatch,
    TraceArgs,
)

__all__ = ["COLLECTION_ATTEMPTS", "PAGE_LIMIT", "Operations", "QueryService"]

logger = logging.getLogger(__name__)

H = TypeVar("H")

PAGE_LIMIT: Final = 100
"""The largest page the tools ask for: SPEC §7's default ``max_limit``, so that a whole
answer of the default cap (100 hits) comes from one backend call. A backend configured with
a smaller ``max_limit`` refuses it before any work (``INVALID_LIMIT``) and is then paged at
its own default page size."""

COLLECTION_ATTEMPTS: Final = 4
"""How many times one collection is started when the corpus moves between two of its pages."""

Fetch = Callable[[str | None, int | None], tuple[Sequence[H], str | None]]
"""Reads one page: ``fetch(cursor, limit) -> (hits, next_cursor)``."""


class _Stale(Exception):
    """The corpus moved between two pages of one collection attempt."""

    def __init__(self, prefix: list[Any]) -> None:
        super().__init__("stale continuation")
        self.prefix = prefix


# Title-read outcomes that mean the session is no longer there for this caller.
_GONE_CODES = frozenset({ToolErrorCode.UNAUTHORIZED, ErrorCode.SESSION_NOT_FOUND})


class QueryService(Protocol):
    """The part of :class:`sessionquery.query.SessionQuery` the tools use."""

    @property
    def read_window_max(self) -> int:
        """The largest ``before``/``after`` :meth:`read_event` accepts."""
        ...

    def filter_sessions(
        self, filters: Sequence[clauses.SessionFilter], *, cancel: CancelToken | None = None
    ) -> list[SessionRecord]:
        """Records matching every clause."""
        ...

    def read_title_snapshots(
        self, ids: Sequence[str], *, cancel: CancelToken | None = None
    ) -> list[TitleResult]:
        """One title result per unique id."""
        ...

    def trace_session(self, session_id: str, *, cancel: CancelToken | None = None) -> LineageTrace:
        """The lineage around one session."""
        ...

    def trace_event(
        self, session_id: str, seq: int, *, cancel: CancelToken | None = None
    ) -> EventTrace:
        """The direct relationships of one event."""
        ...

    def read_event(
        self,
        session_id: str,
        seq: int,
        *,
        before: int = 0,
        after: int = 0,
        cancel: CancelToken | None = None,
    ) -> EventWindow:
        """One event with raw neighbours."""
        ...

    def search_sessions(
        self,
        query: str,
        *,
        session_filters: Sequence[clauses.SessionFilter] = (),
        event_filters: Sequence[clauses.EventFilter] = (),
        limit: int | None = None,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
        match: SearchMatch = "phrase",
        allow_partial: bool = False,
    ) -> SessionSearchPage:
        """One page of session hits."""
        ...

    def search_events(
        self,
        session_id: str,
        query: str,
        *,
        filters: Sequence[clauses.EventFilter] = (),
        limit: int | None = None,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
        match: SearchMatch = "phrase",
        allow_partial: bool = False,
    ) -> EventSearchPage:
        """One page of event hits."""
        ...


class Operations:
    """The workflows of one tool execution.

    Args:
        query: the query service.
        caller: who is calling.
        boundary: the sanitizer every service call goes through.
        max_results: the search result cap.
        rule: which sessions the caller's workspace holds (default: the exact cwd).
        match: the search tools' mode when the model does not choose one.
    """

    def __init__(
        self,
        query: QueryService,
        caller: ToolCaller,
        boundary: ServiceBoundary,
        max_results: int,
        *,
        match: ToolMatch = "relevance",
        rule: WorkspaceRule = EXACT_CWD,
    ) -> None:
        self._rule = rule
        self._query = query
        self._caller = caller
        self._boundary = boundary
        self._max = max_results
        self._match: ToolMatch = match
        self._corrections: dict[str, str] = {}
        self._partial: PartialIndex | None = None

    # --- the five tools ---------------------------------------------------------------------

    def session_search(self, args: SessionSearchArgs) -> str:
        """``session_search``: workspace sessions matching the query, best first."""
        cwd = self._caller.cwd
        if cwd is None:
            raise SessionQueryError(ToolErrorCode.UNAUTHORIZED, NO_WORKSPACE_SEARCH_MESSAGE)
        filters = list(args.session_filters)
        if args.parent_ids is not None or args.include_root_sessions:
            requested = args.parent_ids or ()
            allowed = self._authorized_ids(requested)
            parents: list[str | None] = [pid for pid in requested if pid in allowed]
            if args.include_root_sessions:
                parents.append(None)
            if not parents:
                return render.NO_SESSION_MATCHES
            filters.append(clauses.ParentIn(tuple(parents)))
        filters.append(clauses.CwdIn(self._rule.cwds(self._caller)))
        if args.empty:
            return render.NO_SESSION_MATCHES
        fallback = False
        match = args.match or self._match
        own = self._caller.session_id
        # The backend's cwd filter admits only workspace sessions: the one hit the tool may
        # still skip is the caller's own session.
        skippable = frozenset(() if own is None else (own,))

        def collect(match: SearchMatch) -> tuple[list[SessionSearchHit], bool]:
            fetch = partial(
                self._session_page, args.query, tuple(filters), args.event_filters, match=match
            )
            return self._collect(fetch, self._acceptable_hit, _session_key, skippable)

        hits, capped = collect(match)
        retry = search_mode(match).fallback
        if not hits and retry is not None and _several_words(args.query):
            hits, capped = collect(retry)
            fallback = bool(hits)
        cap = len(hits) if capped else self._max  # fewer than the cap when the corpus kept moving
        # A hit whose session changed since it was indexed (deleted, or replaced by one from
        # another workspace) is dropped here: one stale hit never fails the whole answer.
        titles = self._titles([hit.record.id for hit in hits], drop_hidden=True)
        hits = [hit for hit in hits if hit.record.id in titles]
        fallback = fallback and bool(hits)
        visible_parents = self._authorized_ids(
            [p for hit in hits if (p := hit.record.header.parent_session) is not None]
        )
        rows = [
            (hit, titles[hit.record.id], self._parent_text(hit, visible_parents)) for hit in hits
        ]
        corrections = _shown_corrections(self._corrections, [hit.best_match for hit in hits])
        return render.render_session_search(
            rows,
            capped=capped,
            cap=cap,
            words_fallback=fallback,
            corrections=corrections,
            partial=self._progress(),
        )

    def session_event_search(self, args: EventSearchArgs) -> str:
        """``session_event_search``: one session's events matching the query."""
        target = self._target(args.session_id)
        self._preflight(target)
        seq_from, seq_to = args.seq_from, args.seq_to
        if target == self._caller.session_id:
            current = self._caller.current_step_seq
            if current is None:
                raise no_current_step()
            seq_to = current - 1 if seq_to is None else min(seq_to, current - 1)
        title = self._titles([target])[target]
        empty = args.empty or (
            seq_to is not None and (seq_to < 0 or (seq_from is not None and seq_from > seq_to))
        )
        if empty:
            return render.render_event_search(target, title, [], capped=False, cap=self._max)
        filters: list[clauses.EventFilter] = []
        if seq_from is not None or seq_to is not None:
            filters.append(clauses.SeqBetween(seq_from, seq_to))
        filters.extend(args.other_filters)
        match = args.match or self._match

        def collect(match: SearchMatch) -> tuple[list[EventSearchHit], bool]:
            fetch = partial(self._event_page, target, args.query, tuple(filters), match=match)
            return self._collect(fetch, _accept_any, _event_key, frozenset())

        hits, capped = collect(match)
        fallback = False
        retry = search_mode(match).fallback
        if not hits and retry is not None and _several_words(args.query):
            hits, capped = collect(retry)
            fallback = bool(hits)
        cap = len(hits) if capped else self._max  # as in session_search
        return render.render_event_search(
            target,
            title,
            hits,
            capped=capped,
            cap=cap,
            words_fallback=fallback,
            corrections=_shown_corrections(self._corrections, hits),
            partial=self._progress(),
        )

    def session_trace(self, args: TraceArgs) -> str:
        """``session_trace``: the visible lineage around one session."""
        target = self._target(args.session_id)
        self._preflight(target)
        trace = self._boundary.run(lambda token: self._query.trace_session(target, cancel=token))
        self._post_check(trace.target.id, trace.target.header.cwd, target)
        lineage = project_lineage(trace, self._caller, self._rule)
        titles = self._titles(lineage.visible_ids())
        return render.render_trace(lineage, titles)

    def session_event_trace(self, args: EventTraceArgs) -> str:
        """``session_event_trace``: every direct relationship of one event."""
        target = self._target(args.session_id)
        self._preflight(target)
        trace = self._boundary.run(
            lambda token: self._query.trace_event(target, args.seq, cancel=token)
        )
        self._post_check(trace.session.id, trace.session.cwd, target)
        title = self._titles([target])[target]
        return render.render_event_trace(trace, title)

    def session_event_read(self, args: EventReadArgs) -> str:
        """``session_event_read``: one full event and optional neighbour summaries."""
        target = self._target(args.session_id)
        self._preflight(target)
        window = self._boundary.run(
            lambda token: self._query.read_event(
                target, args.seq, before=args.before, after=args.after, cancel=token
            )
        )
        self._post_check(window.session.id, window.session.cwd, target)
        title = self._titles([target])[target]
        return render.render_event_read(window, title)

    # --- authorization ----------------------------------------------------------------------

    def _target(self, session_id: str | None) -> str:
        target = session_id if session_id is not None else self._caller.session_id
        if target is None:
            raise SessionQueryError(
                ToolErrorCode.INVALID_ARGUMENTS,
                "session_id is required because this caller has no session of its own",
            )
        return target

    def _preflight(self, target: str) -> None:
        caller = self._caller
        if target != caller.session_id and caller.cwd is None:
            raise unauthorized()
        records = self._workspace_records((target,))
        if len(records) != 1:
            raise unauthorized()
        record = records[0]
        self._post_check(record.id, record.header.cwd, target)

    def _post_check(self, seen_id: str, seen_cwd: str | None, target: str) -> None:
        if seen_id != target or not self._rule.visible(seen_id, seen_cwd, self._caller):
            raise unauthorized()

    def _authorized_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` the caller may name: those :func:`is_authorized` admits (its own
        id too only when its recorded cwd is the caller's: a caller acting as a session of
        another workspace must not see that session's id as a parent)."""
        wanted = list(dict.fromkeys(ids))
        cwd = self._caller.cwd
        if cwd is None:  # a caller without a workspace may name only its own session
            wanted = [i for i in wanted if i == self._caller.session_id]
        if not wanted:
            return set()
        records = self._workspace_records(tuple(wanted))
        return {r.id for r in records if is_authorized(r.header, self._caller, self._rule)}

    def _workspace_records(self, ids: tuple[str, ...]) -> list[SessionRecord]:
        """The records of ``ids`` whose cwd is in the caller's workspace (one service call,
        through the boundary like every other)."""

        def call(token: CancelToken | None) -> list[SessionRecord]:
            workspace = clauses.CwdIn(self._rule.cwds(self._caller))
            return self._query.filter_sessions([clauses.IdIn(ids), workspace], cancel=token)

        return self._boundary.run(call)

    def _acceptable_hit(self, hit: SessionSearchHit) -> bool:
        record = hit.record
        return record.id != self._caller.session_id and is_authorized(
            record.header, self._caller, self._rule
        )

    @staticmethod
    def _parent_text(hit: SessionSearchHit, visible: set[str]) -> str:
        parent = hit.record.header.parent_session
        if parent is None:
            return "root"
        return parent if parent in visible else render.OUTSIDE_PARENT_MARKER

    # --- titles -----------------------------------------------------------------------------

    def _titles(self, ids: Sequence[str], *, drop_hidden: bool = False) -> dict[str, str]:
        """Display titles for ``ids`` from one ``read_title_snapshots`` call.

        A session that no longer passes the workspace check (its header moved workspace, or
        it is gone) fails the whole call, or with ``drop_hidden`` is left out of the result.
        """
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        results = self._boundary.run(
            lambda token: self._query.read_title_snapshots(unique, cancel=token)
        )
        titles = dict.fromkeys(unique, render.UNTITLED)
        for result in results:
            session_id = result.session_id
            if session_id not in titles:
                continue
            if result.error is None and result.header is not None:
                header = result.header
                if drop_hidden and (
                    header.id != session_id or not is_authorized(header, self._caller, self._rule)
                ):
                    del titles[session_id]
                    continue
                self._post_check(header.id, header.cwd, session_id)
                titles[session_id] = render.display_title(result.title)
                continue
            safe = sanitize(result.error) if result.error is not None else sanitize(ValueError())
            logger.warning("session title read failed: %r", result.error)
            if drop_hidden and safe.code in _GONE_CODES:
                del titles[session_id]
                continue
            if safe.code is ToolErrorCode.UNAUTHORIZED:
                raise safe
            titles[session_id] = render.title_unavailable(safe.code.value)
        return titles

    # --- searching --------------------------------------------------------------------------

    def _session_page(
        self,
        query: str,
        session_filters: tuple[clauses.SessionFilter, ...],
        event_filters: tuple[clauses.EventFilter, ...],
        cursor: str | None,
        limit: int | None,
        *,
        match: SearchMatch = "phrase",
    ) -> tuple[Sequence[SessionSearchHit], str | None]:
        search = partial(
            self._query.search_sessions,
            query,
            session_filters=session_filters,
            event_filters=event_filters,
            limit=limit,
            cursor=cursor,
        )

        def call(token: CancelToken | None) -> SessionSearchPage:
            if match == SERVICE_MATCH:  # no ``match``: every service's default
                return search(cancel=token, allow_partial=True)
            return search(cancel=token, match=match, allow_partial=True)

        page = self._boundary.run(partial(_patiently, call) if cursor is None else call)
        self._seen(page.corrections, page.partial, cursor)
        return page.items, page.next_cursor

    def _event_page(
        self,
        target: str,
        query: str,
        filters: tuple[clauses.EventFilter, ...],
        cursor: str | None,
        limit: int | None,
        *,
        match: SearchMatch = "phrase",
    ) -> tuple[Sequence[EventSearchHit], str | None]:
        search = partial(
            self._query.search_events, target, query, filters=filters, limit=limit, cursor=cursor
        )

        def call(token: CancelToken | None) -> EventSearchPage:
            if match == SERVICE_MATCH:  # as in _session_page
                return search(cancel=token, allow_partial=True)
            return search(cancel=token, match=match, allow_partial=True)

        page = self._boundary.run(partial(_patiently, call) if cursor is None else call)
        self._post_check(page.session.id, page.session.cwd, target)
        self._seen(page.corrections, page.partial, cursor)
        return page.items, page.next_cursor

    def _seen(
        self, corrections: Mapping[str, str], progress: PartialIndex | None, cursor: str | None
    ) -> None:
        """Keep what the first page of a collection says about the whole answer."""
        if cursor is None:
            self._corrections = dict(corrections)
            self._partial = progress

    def _progress(self) -> tuple[int, int | None] | None:
        progress = self._partial
        return None if progress is None else (progress.sessions_indexed, progress.sessions_total)

    def _collect(
        self,
        fetch: Fetch[H],
        accept: Callable[[H], bool],
        key: Callable[[H], object],
        skippable: frozenset[object],
    ) -> tuple[list[H], bool]:
        """The accepted hits, best first, up to the cap, and whether more existed (capped).

        Args:
            fetch: reads one page.
            accept: whether a hit may be shown.
            key: a hit's identity; a hit seen twice in one attempt is shown once.
            skippable: the keys of the only hits ``accept`` refuses on a correct backend
                (the caller's own session): once each of them was seen, a further page
                holds acceptable hits only, so a full answer with a next cursor is capped
                without reading that page.

        Raises:
            SessionQueryError: what a page read raises, except ``STALE_CURSOR`` (see the
                module docstring); ``INVALID_CURSOR`` for a backend repeating a cursor.
        """
        limit: int | None = min(self._max + 1 + len(skippable), PAGE_LIMIT)
        longest: list[H] = []
        attempts = 0
        while True:
            try:
                return self._collect_once(fetch, accept, key, skippable, limit)
            except _Stale as stale:
                attempts += 1
                prefix: list[H] = stale.prefix
                if len(prefix) > len(longest):
                    longest = prefix
                if attempts >= COLLECTION_ATTEMPTS:
                    logger.info("the corpus kept moving between search pages; answering capped")
                    return longest, True
                logger.debug("the corpus moved between two search pages; collecting again")
            except SessionQueryError as exc:
                if exc.code is not ErrorCode.INVALID_LIMIT or limit is None:
                    raise
                limit = None  # a backend whose max_limit is below PAGE_LIMIT: its default

    def _collect_once(
        self,
        fetch: Fetch[H],
        accept: Callable[[H], bool],
        key: Callable[[H], object],
        skippable: frozenset[object],
        limit: int | None,
    ) -> tuple[list[H], bool]:
        """One attempt of :meth:`_collect`: follow cursors from the first page.

        Raises:
            _Stale: a continuation page was stale; carries the hits accepted before it.
        """
        accepted: list[H] = []
        seen: set[object] = set()
        cursors: set[str] = set()
        cursor: str | None = None
        while True:
            try:
                items, next_cursor = fetch(cursor, limit)
            except SessionQueryError as exc:
                if exc.code is ErrorCode.STALE_CURSOR and cursor is not None:
                    raise _Stale(accepted) from None
                raise
            for item in items:
                item_key = key(item)
                if item_key in seen:
                    continue
                seen.add(item_key)
                if not accept(item):
                    continue
                if len(accepted) >= self._max:
                    return accepted, True
                accepted.append(item)
            if next_cursor is None:
                return accepted, False
            if len(accepted) >= self._max and skippable <= seen:
                return accepted, True
            if next_cursor in cursors:
                logger.warning("search backend repeated a continuation cursor")
                raise SessionQueryError(
                    ErrorCode.INVALID_CURSOR, SANITIZED_MESSAGES[ErrorCode.INVALID_CURSOR]
                )
            cursors.add(next_cursor)
            cursor = next_cursor


def _session_key(hit: SessionSearchHit) -> object:
    return hit.record.id


def _event_key(hit: EventSearchHit) -> object:
    return hit.seq


def _accept_any(_hit: EventSearchHit) -> bool:
    return True


_WORD = re.compile(r"[^\W_]+")

BUILD_PATIENCE_MS: Final = 2_000
"""How long the first page of a search waits for an unfinished index build before it answers
from the part already indexed: a model asking during a first build gets hits at once rather
than after the whole search deadline."""

P = TypeVar("P")


def _patiently(call: Callable[[CancelToken | None], P], token: CancelToken | None) -> P:
    """``call`` under :data:`BUILD_PATIENCE_MS`, and again under ``token`` when only that
    patience ran out (a slow search, or a build that is not a first one, gets its whole
    deadline)."""
    if token is None:
        return call(token)
    patience = DeadlineToken(BUILD_PATIENCE_MS, token)
    try:
        return call(patience)
    except SessionQueryError as exc:
        if exc.code is not ErrorCode.ABORTED or token.expired:
            raise
        return call(token)


def _shown_corrections(
    corrections: Mapping[str, str], hits: Sequence[EventSearchHit]
) -> dict[str, str]:
    """The corrections the model may see: only those whose searched word is in one of the
    hits' snippets, text of the caller's own workspace. The backend picks a correction from
    the whole index's words, so a word only another workspace holds is never shown."""
    snippets = [set(_WORD.findall(hit.snippet.casefold())) for hit in hits]
    return {
        typed: searched
        for typed, searched in corrections.items()
        if any(searched.casefold() in words for words in snippets)
    }


def _several_words(query: str) -> bool:
    """Whether ``query`` has two or more words (runs of letters and digits), so that a
    search finding nothing is retried in its mode's ``fallback`` (a phrase as
    ``match="words"``, SPEC §13.3)."""
    return len(_WORD.findall(query)) >= 2
