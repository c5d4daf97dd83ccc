"""The subcommands of ``sessionquery``: each parses nothing, calls the library, renders.

:data:`sessionquery.cli._parser.COMMANDS` names them (this module is imported only when one
runs). Search commands page through the index within the process (continuation cursors are
bound to one index instance, so ``--limit`` is a total and ``more`` says whether hits were
left out).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, TypeVar

from sessionquery.cli import _hits as hits
from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term
from sessionquery.cli import _titlecache as titlecache
from sessionquery.cli._parser import UsageError
from sessionquery.cli._services import EXIT_OK, Invocation, Progress, emit
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import KNOWN_EVENT_TYPES, SessionEvent
from sessionquery.query import filters as clauses
from sessionquery.query.backend import SearchMatch
from sessionquery.query.service import SessionQuery
from sessionquery.query.types import (
    EventSearchPage,
    SessionRecord,
    SessionSearchPage,
)

if TYPE_CHECKING:
    from sessionquery.cli import _conversation as conversation
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch

__all__ = [
    "cmd_events",
    "cmd_export",
    "cmd_index",
    "cmd_list",
    "cmd_read",
    "cmd_search",
    "cmd_search_events",
    "cmd_show",
    "cmd_trace",
    "cmd_trace_event",
    "collect_session_hits",
    "titles_of",
    "update_index",
]

_SEARCH_PAGE_MAX = 100
"""The largest page the search index serves; the CLI pages internally beyond it."""


def titles_of(query: SessionQuery, ids: list[str]) -> dict[str, str | None]:
    return {
        r.session_id: (r.title.title if r.title else None) for r in query.read_title_snapshots(ids)
    }


_NOT_READ_TEXT = "[title not read yet]"


@dataclass(frozen=True, slots=True)
class TitleView:
    """Titles to show and, when some were not read in time, a note saying so."""

    titles: dict[str, str | None]
    note: str | None


def _listing_titles(inv: Invocation, ids: list[str]) -> TitleView:
    """Titles for a listing: remembered ones, then as many as the time budget reads.

    ``--json`` reads every title (a script gets complete data); text output reads within
    the budget and marks the rest.
    """
    # Titles are read over the command's one listing (each title read would list again).
    budget = float("inf") if inv.json else titlecache.BUDGET_S
    inv.save_titles()  # what the index read for this command is remembered already
    snapshot = inv.snapshot()
    entries = inv.app.listed_once().entries(ids)
    with SessionQuery(persistence=snapshot) as titles_query:
        found = titlecache.read_titles(
            titles_query, entries, ids, inv.config.title_cache, budget_s=budget
        )
    shown: dict[str, str | None] = {}
    missing = 0
    for session_id, title in found.items():
        if title is titlecache.NOT_READ:
            missing += 1
            shown[session_id] = _NOT_READ_TEXT
        else:
            shown[session_id] = inv.redactor.redact(title) if isinstance(title, str) else None
    note = None
    if missing:
        note = (
            f"{missing} title(s) not read yet within the command's second: titles are "
            "remembered as they are read, so the next run shows more ('sessionquery index' "
            "reads them all); --no-titles skips them"
        )
    return TitleView(shown, note)


def cmd_list(inv: Invocation) -> int:
    args = inv.args
    limit = None if args.all else args.limit
    listed = inv.app.listed_once()
    with inv.query() as query:
        if limit is not None and listed.pages_itself():
            # A store that pages itself (a team database): the page is one query and the
            # count and short ids come from the listing's outline; no other header is read.
            records, total = _first_records(query, args.cwd, limit), _outline_count(inv, args.cwd)
        else:
            records = query.list_sessions()
            if args.cwd:
                records = query.filter_sessions([clauses.CwdIn(tuple(args.cwd))])
            total = len(records)
            if limit is not None:
                records = records[:limit]
        view = None if args.no_titles else _listing_titles(inv, [r.id for r in records])
    titles = None if view is None else view.titles
    ids = inv.app.session_ids()
    short = {record.id: ids.short(record.id) for record in records}
    document = render.records_json(records, titles, short)
    document["total"] = total

    def text(style: render.Style) -> list[str]:
        lines = render.records_text(records, titles, style, short_ids=short, total=total)
        return lines if view is None or view.note is None else [*lines, style.dim(view.note)]

    return emit(inv, document, text)


def _first_records(
    query: SessionQuery, cwds: Sequence[str] | None, limit: int
) -> list[SessionRecord]:
    """The first ``limit`` sessions of the listing (of ``cwds`` when given), page by page."""
    return _matching(query, [clauses.CwdIn(tuple(cwds))] if cwds else [], limit)


def _matching(
    query: SessionQuery, filters: Sequence[clauses.SessionFilter], limit: int | None = None
) -> list[SessionRecord]:
    """``query.filter_sessions(filters)`` (its first ``limit``), read page by page: over a
    store that pages itself, only the headers of the sessions that match are read."""
    records: list[SessionRecord] = []
    cursor = None
    while limit is None or len(records) < limit:
        size = _PAGE if limit is None else min(limit - len(records), _PAGE)
        page = query.list_page(filters, limit=size, cursor=cursor)
        records.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    return records


_PAGE = 1000
"""The largest page :meth:`SessionQuery.list_page` gives."""


def _outline_count(inv: Invocation, cwds: Sequence[str] | None) -> int:
    """How many listed sessions there are (with one of ``cwds`` when given)."""
    outline = inv.app.listed_once().list_outline()
    if not cwds:
        return len(outline)
    wanted = set(cwds)
    return sum(1 for entry in outline if entry.cwd in wanted)


def cmd_show(inv: Invocation) -> int:
    args = inv.args
    with inv.query() as query:
        session_id = inv.resolve(args.session_id)
        if args.conversation:
            return _show_conversation(inv, query, session_id)
        log = query.read_session(session_id)
        (result,) = query.read_title_snapshots([session_id])
        archived = any(r.archived for r in _matching(query, [clauses.IdIn((session_id,))]))
    if result.error is not None:
        raise result.error
    header = log.session
    details = render.ShowDetails(
        header=header,
        title=result.title,
        short_id=inv.app.session_ids().short(session_id),
        events=log.events,
        source=_source_of(inv, session_id, log.events),
        resume=inv.app.resume(session_id, header.cwd, header.parent_session),
        archived=archived,
    )
    return emit(inv, render.show_json(details), lambda s: render.show_text(details, s))


def _source_of(
    inv: Invocation, session_id: str, events: Sequence[SessionEvent]
) -> render.SourceView | None:
    """Where the session is stored: its source and, for an imported one, its file."""
    origin = inv.app.origin(session_id)
    if origin is None or origin.entry is None:
        return None
    entry = origin.entry
    file = None
    for event in events:
        pointer = event.data.get("origin") if isinstance(event.data, Mapping) else None
        if isinstance(pointer, Mapping) and isinstance(pointer.get("file"), str):
            file = str(entry.path / pointer["file"])
            break
    return render.SourceView(entry.kind, entry.label, entry.title, str(entry.path), file)


def _conversation_parts(
    query: SessionQuery, session_id: str
) -> tuple[Any, Any, list[SessionRecord], list[conversation.Entry]]:
    from sessionquery.cli import _conversation as conversation  # for these commands only

    log = query.read_session(session_id)
    (result,) = query.read_title_snapshots([session_id])
    children = _matching(query, [clauses.ParentIn((session_id,))])
    child_titles = {k: v for k, v in titles_of(query, [c.id for c in children]).items() if v}
    return log, result.title, children, conversation.entries(log, children, child_titles)


def _show_conversation(inv: Invocation, query: SessionQuery, session_id: str) -> int:
    from sessionquery.cli import _conversation as conversation  # for these commands only

    log, title, children, items = _conversation_parts(query, session_id)
    document = conversation.export_json(log, title, children)
    return emit(
        inv, document, lambda s: conversation.conversation_text(log.session, title, items, s)
    )


def cmd_export(inv: Invocation) -> int:
    from sessionquery.cli import _conversation as conversation  # for these commands only

    args = inv.args
    with inv.query() as query:
        session_id = inv.resolve(args.session_id)
        log, title, children, items = _conversation_parts(query, session_id)
    if args.format == "json":
        text = render.dumps(conversation.export_json(log, title, children)) + "\n"
    elif args.format == "html":
        from sessionquery.web.export import export_page, view_of

        text = export_page(log, view_of(log), title, children)
    else:
        text = conversation.export_markdown(log.session, title, items)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    path = Path(args.output)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG, f"cannot write {path}: {error.strerror or error}"
        ) from None
    sys.stderr.write(f"wrote {path}\n")
    return EXIT_OK


def cmd_events(inv: Invocation) -> int:
    with inv.query() as query:
        session_id = inv.resolve(inv.args.session_id)
        events = query.list_events(session_id)
        log = query.read_session(session_id)
    previews = {event.seq: render.preview(event) for event in log.events}
    document = render.events_json(session_id, events, previews)
    return emit(inv, document, lambda s: render.events_text(events, s, previews))


def cmd_read(inv: Invocation) -> int:
    args = inv.args
    with inv.query() as query:
        session_id = inv.resolve(args.session_id)
        window = query.read_event(session_id, args.seq, before=args.before, after=args.after)
    document = render.event_window_json(window)
    return emit(inv, document, lambda s: render.event_window_text(window, s))


def cmd_trace(inv: Invocation) -> int:
    with inv.query() as query:
        trace = query.trace_session(inv.resolve(inv.args.session_id))
    document = render.lineage_json(trace)
    return emit(inv, document, lambda s: render.lineage_text(trace, s))


def cmd_trace_event(inv: Invocation) -> int:
    with inv.query() as query:
        trace = query.trace_event(inv.resolve(inv.args.session_id), inv.args.seq)
    document = render.event_trace_json(trace)
    return emit(inv, document, lambda s: render.event_trace_text(trace, s))


def _event_filters(inv: Invocation) -> list[clauses.EventFilter]:
    args = inv.args
    filters: list[clauses.EventFilter] = []
    if args.types:
        for unknown in sorted(set(args.types) - KNOWN_EVENT_TYPES):
            inv.warn(_unknown_type(unknown))
        filters.append(clauses.TypeIn(tuple(args.types)))
    if args.surfaces:
        filters.append(clauses.SurfaceIn(tuple(args.surfaces)))
    return filters


def _unknown_type(name: str) -> str:
    """A warning for a ``--type`` no importer or recorder writes (the vocabulary is open, so it
    still filters: it matches only events recorded with exactly that type)."""
    close = difflib.get_close_matches(name, sorted(KNOWN_EVENT_TYPES), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    known = ", ".join(sorted(KNOWN_EVENT_TYPES))
    return (
        f"--type {name!r} is not an event type with a meaning ({hint}known: {known}); it "
        "matches only events recorded with exactly that type"
    )


def _session_filters(inv: Invocation) -> list[clauses.SessionFilter]:
    args = inv.args
    filters: list[clauses.SessionFilter] = []
    if args.cwd:
        filters.append(clauses.CwdIn(tuple(args.cwd)))
    if args.session:
        filters.append(clauses.IdIn(tuple(inv.resolve(i) for i in args.session)))
    if args.parent or args.roots:
        named = tuple(inv.resolve(i) for i in args.parent or ())
        parents: tuple[str | None, ...] = (*named, *((None,) if args.roots else ()))
        filters.append(clauses.ParentIn(parents))
    if args.since is not None or args.until is not None:
        filters.append(clauses.CreatedBetween(args.since, args.until))
    return filters


class _Page(Protocol):
    @property
    def items(self) -> Sequence[Any]: ...

    @property
    def next_cursor(self) -> str | None: ...

    @property
    def corrections(self) -> Mapping[str, str]: ...


_PageT = TypeVar("_PageT", bound=_Page)


def _collect(
    fetch: Callable[[int, str | None], _PageT], limit: int
) -> tuple[_PageT, list[Any], dict[str, str], str | None]:
    """``fetch(size, cursor)`` page after page until ``limit`` items or the last page: the
    last page, the items, every page's corrections, and ``"more"`` when some were left."""
    items: list[Any] = []
    corrections: dict[str, str] = {}
    cursor: str | None = None
    while True:
        page = fetch(min(_SEARCH_PAGE_MAX, limit - len(items)), cursor)
        items.extend(page.items)
        corrections.update(page.corrections)
        cursor = page.next_cursor
        if cursor is None or len(items) >= limit:
            return page, items, corrections, None if cursor is None else "more"


def collect_session_hits(
    query: SessionQuery,
    text: str,
    limit: int,
    session_filters: Sequence[clauses.SessionFilter] = (),
    event_filters: Sequence[clauses.EventFilter] = (),
    *,
    mode: SearchMatch = "relevance",
) -> SessionSearchPage:
    """Up to ``limit`` session hits, following continuation cursors within this process.

    The returned page's ``next_cursor`` is ``None``; a non-``None`` value would be useless
    outside this process, so truncation is reported as ``next_cursor="more"``.
    """

    def fetch(size: int, cursor: str | None) -> SessionSearchPage:
        return query.search_sessions(
            text,
            session_filters=session_filters,
            event_filters=event_filters,
            limit=size,
            cursor=cursor,
            match=mode,
        )

    _last, items, corrections, more = _collect(fetch, limit)
    return SessionSearchPage(items=items, next_cursor=more, corrections=corrections)


def _search_events(
    query: SessionQuery,
    session_id: str,
    text: str,
    limit: int,
    filters: Sequence[clauses.EventFilter],
    *,
    mode: SearchMatch,
) -> EventSearchPage:
    def fetch(size: int, cursor: str | None) -> EventSearchPage:
        return query.search_events(
            session_id, text, filters=filters, limit=size, cursor=cursor, match=mode
        )

    last, items, corrections, more = _collect(fetch, limit)
    return EventSearchPage(
        session=last.session, items=items, next_cursor=more, corrections=corrections
    )


def _query_text(words: Sequence[str]) -> str:
    """The query the words make (``search flaky test`` is "flaky test"), checked as the
    index checks it, so a query it would refuse is a usage error (exit 2).

    Raises:
        UsageError: for an empty (whitespace-only) query, NUL, or more than 1 MiB.
    """
    from sessionquery.search.request import normalize_query

    text = " ".join(words)
    try:
        normalize_query(text)
    except SessionQueryError as error:
        raise UsageError(f"QUERY: {error.message}") from None
    return text


def _mode(args: argparse.Namespace) -> SearchMatch:
    """``relevance`` unless ``--phrase`` or ``--all-words`` chose another mode."""
    mode: SearchMatch = args.match
    return mode


def cmd_search(inv: Invocation) -> int:
    args, mode = inv.args, _mode(inv.args)
    args.query = _query_text(args.query)
    with inv.query(search=True) as query:
        page = collect_session_hits(
            query,
            args.query,
            args.limit,
            _session_filters(inv),
            _event_filters(inv),
            mode=mode,
        )
        titles = _listing_titles(inv, [hit.record.id for hit in page.items]).titles
    ids = inv.app.session_ids()
    short = {hit.record.id: ids.short(hit.record.id) for hit in page.items}
    document = hits.session_hits_json(args.query, page, titles, short)
    document["match"] = mode
    document["corrections"] = dict(page.corrections)
    return emit(
        inv,
        document,
        lambda s: hits.session_hits_text(args.query, page, titles, s, match=mode, short_ids=short),
    )


def cmd_search_events(inv: Invocation) -> int:
    args, mode = inv.args, _mode(inv.args)
    args.query = _query_text(args.query)
    filters = _event_filters(inv)
    if args.seq_from is not None or args.seq_to is not None:
        filters.append(clauses.SeqBetween(args.seq_from, args.seq_to))
    with inv.query(search=True) as query:
        session_id = inv.resolve(args.session_id)
        page = _search_events(query, session_id, args.query, args.limit, filters, mode=mode)
    document = hits.event_hits_json(args.query, page)
    document["match"] = mode
    document["corrections"] = dict(page.corrections)
    return emit(inv, document, lambda s: hits.event_hits_text(args.query, page, s, match=mode))


def update_index(
    search: SqliteSearch | PostgresSearch,
    query: SessionQuery,
    stream: TextIO,
    *,
    plain: bool = True,
) -> dict[str, Any]:
    """Bring the search index up to date, showing progress on ``stream``; returns a summary.

    With ``plain=False`` progress is drawn only on a terminal (no plain lines).
    """
    progress = Progress(stream, "Indexing", quiet=not plain)
    progress.start()
    try:
        update = search.update(query.corpus, progress=progress)
    finally:
        progress.finish()
    return {
        "skipped": update.skipped,
        "persisted_indexed": update.persisted_indexed,
        "persisted_removed": update.persisted_removed,
    }


def cmd_index(inv: Invocation) -> int:
    index, postgres = inv.selection.index, inv.selection.postgres
    inv.app.archive_on_update()
    inv.persistence()  # a missing source is reported before the index is created
    with (
        inv.app.open_index() as search,
        inv.app.service(search, through=inv.recording_titles) as query,
    ):
        place = "the PostgreSQL database" if postgres else str(index)
        try:
            summary = {"index": place, **update_index(search, query, sys.stderr)}
        finally:
            inv.save_titles()  # kept also when the build is interrupted

    def text(style: render.Style) -> list[str]:
        where = style.bold(term.safe(place))
        if summary["skipped"] or not (summary["persisted_indexed"] or summary["persisted_removed"]):
            return [f"Index {where} is up to date (nothing changed)."]
        return [
            f"Index {where} is up to date: "
            f"{summary['persisted_indexed']} session(s) indexed, "
            f"{summary['persisted_removed']} removed."
        ]

    return emit(inv, summary, text)
