"""What each viewer route reads and which page it renders (the HTTP side is in ``app.py``).

Invariants: request parameters are checked here and a bad one is ``BAD_REQUEST`` naming it;
searches carry a deadline (:data:`SEARCH_DEADLINE_S`) so a search during a first index build
answers "still building" instead of hanging; a page reads no title that is not remembered
(:data:`TITLE_BUDGET_S`) except the title of the session it shows, and asks for the rest.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.match_modes import PEOPLE_MATCH, SEARCH_MATCHES
from sessionquery.query.backend import SearchMatch
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import CwdIn
from sessionquery.web.catalog import NOT_READ, Catalog, Row
from sessionquery.web.conversation import VIEWS, View
from sessionquery.web.failures import BAD_REQUEST, WebError
from sessionquery.web.layout import url
from sessionquery.web.markup import Markup, join
from sessionquery.web.pages import (
    PAGE_SIZE,
    ListFilters,
    lineage_page,
    search_page,
    sessions_page,
)
from sessionquery.web.render import render_item
from sessionquery.web.session_page import WINDOW, server_links, session_page, window_html
from sessionquery.web.timefmt import iso_time

__all__ = ["DEFAULT_MATCH", "SEARCH_DEADLINE_S", "TITLE_BUDGET_S", "Request", "Routes"]

DEFAULT_MATCH: SearchMatch = PEOPLE_MATCH
"""The search page's default mode: any of the words, ranked by relevance (SPEC §14.1)."""

MATCHES: tuple[str, ...] = (
    DEFAULT_MATCH,
    *(m for m in SEARCH_MATCHES if m != DEFAULT_MATCH),
)
"""The modes the search page offers, its default first."""
SEARCH_DEADLINE_S = 3.0
TITLE_BUDGET_S = 0.0
"""Seconds a page spends reading titles (a title is a whole-log read): none, the page shows
the remembered ones and asks ``/api/titles`` for the rest once it is on screen."""
TITLE_API_BUDGET_S = 1.0
SEARCH_PAGE = 20
_HITS_IN_SESSION = 100
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _bad(message: str) -> WebError:
    return WebError(400, BAD_REQUEST, message)


@dataclass(frozen=True, slots=True)
class Request:
    """A request's query-string parameters."""

    params: Mapping[str, list[str]]

    def get(self, name: str, default: str = "") -> str:
        """The first value of ``name``."""
        values = self.params.get(name)
        return values[0] if values else default

    def all(self, name: str) -> list[str]:
        """Every value of ``name``."""
        return list(self.params.get(name, []))

    def number(self, name: str, default: int, *, minimum: int = 0) -> int:
        """``name`` as a non-negative integer."""
        text = self.get(name)
        if not text:
            return default
        if not text.isdigit() or len(text) > 12 or int(text) < minimum:
            raise _bad(f"{name} must be an integer of at least {minimum}, not {text!r}")
        return int(text)

    def choice(self, name: str, choices: Sequence[str], default: str) -> str:
        """``name`` if it is one of ``choices``."""
        value = self.get(name) or default
        if value not in choices:
            raise _bad(f"{name} must be one of {', '.join(choices)}, not {value!r}")
        return value

    def view(self) -> View:
        """The ``view`` parameter."""
        return cast(View, self.choice("view", VIEWS, "log"))


def _day_ms(text: str, name: str, *, end: bool) -> int | None:
    if not text:
        return None
    if not _DATE.match(text):
        raise _bad(f"{name} must be a date such as 2025-03-07, not {text!r}")
    from datetime import UTC, datetime

    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise _bad(f"{name} is not a real date: {text!r}") from None
    start = int(day.timestamp() * 1000)
    return start + 86_400_000 - 1 if end else start


def _kept(row: Row, filters: ListFilters, since: int | None, until: int | None) -> bool:
    header = row.record.header
    checks = (
        not filters.source or row.source == filters.source,
        not filters.cwd or header.cwd == filters.cwd,
        since is None or header.created_at >= since,
        until is None or header.created_at <= until,
        filters.availability != "live" or row.record.live,
        filters.availability != "persisted" or row.record.persisted,
        filters.archived != "hide" or not row.archived,
        filters.archived != "only" or row.archived,
        filters.lineage != "roots" or header.parent_session is None,
        filters.lineage != "children" or header.parent_session is not None,
    )
    return all(checks)


def _workspaces(rows: Sequence[Row]) -> list[str]:
    counts: dict[str, int] = {}
    for row in rows:
        if row.record.header.cwd:
            counts[row.record.header.cwd] = counts.get(row.record.header.cwd, 0) + 1
    return sorted(counts, key=lambda cwd: (-counts[cwd], cwd))[:200]


class Routes:
    """The handlers behind each route.

    Args:
        catalog: what the pages read.
        export: renders one session's HTML export.
    """

    def __init__(self, catalog: Catalog, *, export: Callable[[str], str] | None) -> None:
        self.catalog = catalog
        self._export = export

    # -- pages ---------------------------------------------------------------------------

    def sessions(self, request: Request) -> Markup:
        """The sessions list."""
        filters = ListFilters(
            source=request.get("source"),
            cwd=request.get("cwd"),
            since=request.get("from"),
            until=request.get("to"),
            availability=request.choice("avail", ("", "live", "persisted"), ""),
            archived=request.choice("archived", ("", "hide", "only"), ""),
            lineage=request.choice("lineage", ("", "roots", "children"), ""),
            page=request.number("page", 1, minimum=1),
        )
        since = _day_ms(filters.since, "from", end=False)
        until = _day_ms(filters.until, "to", end=True)
        rows = self.catalog.rows()
        kept = [row for row in rows if _kept(row, filters, since, until)]
        start = (filters.page - 1) * PAGE_SIZE
        shown = kept[start : start + PAGE_SIZE]
        titles = self.catalog.titles([row.id for row in shown], TITLE_BUDGET_S)
        return sessions_page(
            shown,
            len(kept),
            filters,
            titles,
            sources=sorted({row.source for row in rows}),
            cwds=_workspaces(rows),
            stamp=self.catalog.stamp(),
        )

    def search(self, request: Request) -> Markup:
        """Search results (one page; ``cursor`` continues)."""
        text = request.get("q").strip()
        mode = request.choice("mode", MATCHES, DEFAULT_MATCH)
        cwd = request.get("cwd")
        cwds = _workspaces(self.catalog.rows())
        common: dict[str, Any] = {"cwd": cwd, "cwds": cwds}
        if not text:
            return search_page("", mode, MATCHES, [], {}, next_url=None, **common)
        filters = [CwdIn((cwd,))] if cwd else []
        cancel = CancelToken(deadline=time.monotonic() + SEARCH_DEADLINE_S)
        try:
            page = self.catalog.query.search_sessions(
                text,
                session_filters=filters,
                limit=SEARCH_PAGE,
                cursor=request.get("cursor") or None,
                cancel=cancel,
                match=cast(SearchMatch, mode),
            )
        except SessionQueryError as error:
            if error.code not in (ErrorCode.INDEX_BUILDING, ErrorCode.ABORTED):
                raise
            done, total = error.context.get("sessions_indexed"), error.context.get("sessions_total")
            progress = (
                f" ({done:,} of {total:,} sessions so far)"
                if isinstance(done, int) and isinstance(total, int)
                else ""
            )
            note = (
                f"The search index is still being built{progress}. This page tries again by itself."
            )
            return search_page(
                text, mode, MATCHES, [], {}, next_url=None, note=note, building=True, **common
            )
        titles = self.catalog.titles([hit.record.id for hit in page.items], TITLE_BUDGET_S)
        next_url = None
        if page.next_cursor:
            next_url = url(
                "/search", {"q": text, "mode": mode, "cwd": cwd, "cursor": page.next_cursor}
            )
        return search_page(
            text,
            mode,
            MATCHES,
            page.items,
            titles,
            next_url=next_url,
            corrections=dict(page.corrections),
            **common,
        )

    def session(self, session_id: str, seq: int | None, request: Request) -> Markup:
        """A session page, around ``seq`` when given."""
        mode = request.view()
        text = request.get("q").strip()
        match = request.choice("mode", MATCHES, DEFAULT_MATCH)
        log, view = self.catalog.view(session_id)
        if seq is not None and not 0 <= seq < log.event_count:
            raise SessionQueryError(
                ErrorCode.EVENT_NOT_FOUND, f"session {session_id!r} has no event {seq}"
            )
        if seq is not None and view.position(mode, seq) is None:
            mode = "log"  # a shadowed or log-only event is only in the full log
        hits: list[int] = []
        marked = text
        if text:
            try:
                page = self.catalog.query.search_events(
                    session_id,
                    text,
                    limit=_HITS_IN_SESSION,
                    match=cast(SearchMatch, match),
                    cancel=CancelToken(deadline=time.monotonic() + SEARCH_DEADLINE_S),
                )
                hits = [hit.seq for hit in page.items]
                marked = " ".join([text, *page.corrections.values()])
            except SessionQueryError as error:
                if error.code not in (
                    ErrorCode.INDEX_BUILDING,
                    ErrorCode.ABORTED,
                    ErrorCode.SEARCH_DISABLED,
                ):
                    raise
        row = self.catalog.row(session_id)
        children = [r for r in self.catalog.rows() if r.record.header.parent_session == session_id]
        titles = self.catalog.titles([c.id for c in children[:8]], TITLE_BUDGET_S)
        # The session's own outline was just read: its title events are a window of it.
        titles[session_id] = self.catalog.own_title(session_id, view)
        return session_page(
            log,
            view,
            mode=mode,
            row=row,
            target=seq,
            titles=titles,
            neighbours=self.catalog.neighbours(session_id),
            children=children,
            query=text,
            match=match,
            hit_seqs=hits,
            marked=marked,
        )

    def lineage(self, session_id: str) -> Markup:
        """The lineage page."""
        trace = self.catalog.query.trace_session(session_id)
        ids = [r.id for r in trace.ancestors] + [trace.target.id]
        stack = list(trace.descendants)
        while stack and len(ids) < 400:
            node = stack.pop()
            ids.append(node.record.id)
            stack.extend(node.descendants)
        return lineage_page(trace, self.catalog.titles(ids, TITLE_BUDGET_S))

    def export(self, session_id: str) -> tuple[str, str]:
        """The HTML export of a session and a file name for it."""
        if self._export is None:
            raise _bad("this viewer has no export")
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", session_id)[:80] or "session"
        return self._export(session_id), f"{safe}.html"

    def raw_event(self, session_id: str, seq: int) -> object:
        """One event's wire JSON."""
        (event,) = self.catalog.query.read_window(session_id, [seq]).events
        return event.to_json()

    # -- fragments and polling -------------------------------------------------------------

    def window(self, session_id: str, request: Request) -> Markup:
        """Rendered events at positions ``start..end`` of a view."""
        mode = request.view()
        log, view = self.catalog.view(session_id)
        total = len(view.order(mode))
        start = request.number("start", 0)
        end = min(request.number("end", start + WINDOW), start + WINDOW, total)
        links = server_links(session_id, mode)
        return window_html(
            view, mode, start, max(start, end), links=links, inherited=log.inherited_event_count
        )

    def replaced(self, session_id: str, seq: int) -> Markup:
        """The events one replace event took off the surface (what ``trace_event`` names)."""
        outline, view = self.catalog.view(session_id)
        if not 0 <= seq < outline.event_count:
            raise SessionQueryError(
                ErrorCode.EVENT_NOT_FOUND, f"session {session_id!r} has no event at seq {seq!r}"
            )
        links = server_links(session_id, "log")
        removed = outline.fold.replaced.get(seq, ())
        items = [render_item(item, links, anchor=False) for item in view.items_at(removed[:WINDOW])]
        more = len(removed) - WINDOW
        note = Markup(f'<p class="muted">{more:,} more not shown.</p>') if more > 0 else None
        return join(items, note)

    def state(self, session_id: str, request: Request) -> dict[str, object]:
        """How many events a session and a view have now (the page polls this)."""
        mode = request.view()
        log, view = self.catalog.view(session_id)
        last = log.skeletons[-1].time if log.skeletons else None
        return {
            "events": log.event_count,
            "total": len(view.order(mode)),
            "last": iso_time(last) if last is not None else None,
        }

    def titles(self, request: Request) -> dict[str, object]:
        """Titles of the ids asked for (``null`` for untitled; missing: not read yet)."""
        ids = request.all("id")[:PAGE_SIZE]
        found = self.catalog.titles(ids, TITLE_API_BUDGET_S)
        return {"titles": {k: v for k, v in found.items() if v is not NOT_READ}}
