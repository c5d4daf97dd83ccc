"""The subcommands of ``sessionquery``: each parses nothing, calls the library, renders.

:data:`COMMANDS` lists them in ``--help`` order. Search commands page through the index
within the process (continuation cursors are bound to one index instance, so ``--limit`` is
a total and ``more`` says whether hits were left out).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sessionquery.cli import _render as render
from sessionquery.cli._parser import Command, UsageError
from sessionquery.cli._services import (
    EXIT_OK,
    ProgressBar,
    emit,
    index_path,
    open_index,
    open_persistence,
    report_problems,
    selected_sources,
    service,
    style_for,
)
from sessionquery.config import Config
from sessionquery.persistence import JsonlPersistence
from sessionquery.query.filters import (
    CreatedBetween,
    CwdIn,
    EventFilter,
    IdIn,
    ParentIn,
    SeqBetween,
    SessionFilter,
    SurfaceIn,
    TypeIn,
)
from sessionquery.query.service import SessionQuery
from sessionquery.query.types import EventSearchHit, EventSearchPage, SessionSearchPage

if TYPE_CHECKING:
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch

__all__ = ["COMMANDS"]

_SEARCH_PAGE_MAX = 100
"""The largest page the search index serves; the CLI pages internally beyond it."""


def _cmd_list(args: argparse.Namespace, config: Config) -> int:
    with service(args, config) as query:
        if args.cwd:
            records = query.filter_sessions([CwdIn(tuple(args.cwd))])
        else:
            records = query.list_sessions()
        if args.limit is not None:
            records = records[: args.limit]
        titles = None
        if args.titles:
            titles = {
                r.session_id: (r.title.title if r.title else None)
                for r in query.read_title_snapshots([record.id for record in records])
            }
    document = render.records_json(records, titles)
    return emit(args, config, document, lambda s: render.records_text(records, titles, s))


def _cmd_show(args: argparse.Namespace, config: Config) -> int:
    with service(args, config) as query:
        (result,) = query.read_title_snapshots([args.session_id])
    if result.error is not None:
        raise result.error
    header = result.header
    assert header is not None  # a result without error carries its header
    title = result.title
    document = render.show_json(header, title)
    return emit(args, config, document, lambda s: render.show_text(header, title, s))


def _cmd_events(args: argparse.Namespace, config: Config) -> int:
    with service(args, config) as query:
        events = query.list_events(args.session_id)
    document = render.events_json(args.session_id, events)
    return emit(args, config, document, lambda s: render.events_text(events, s))


def _cmd_read(args: argparse.Namespace, config: Config) -> int:
    with service(args, config) as query:
        window = query.read_event(args.session_id, args.seq, before=args.before, after=args.after)
    document = render.event_window_json(window)
    return emit(args, config, document, lambda s: render.event_window_text(window, s))


def _cmd_trace(args: argparse.Namespace, config: Config) -> int:
    with service(args, config) as query:
        trace = query.trace_session(args.session_id)
    document = render.lineage_json(trace)
    return emit(args, config, document, lambda s: render.lineage_text(trace, s))


def _cmd_trace_event(args: argparse.Namespace, config: Config) -> int:
    with service(args, config) as query:
        trace = query.trace_event(args.session_id, args.seq)
    document = render.event_trace_json(trace)
    return emit(args, config, document, lambda s: render.event_trace_text(trace, s))


def _event_filters(args: argparse.Namespace) -> list[EventFilter]:
    filters: list[EventFilter] = []
    if args.types:
        filters.append(TypeIn(tuple(args.types)))
    if args.surfaces:
        filters.append(SurfaceIn(tuple(args.surfaces)))
    return filters


def _session_filters(args: argparse.Namespace) -> list[SessionFilter]:
    filters: list[SessionFilter] = []
    if args.cwd:
        filters.append(CwdIn(tuple(args.cwd)))
    if args.session:
        filters.append(IdIn(tuple(args.session)))
    if args.parent or args.roots:
        parents: tuple[str | None, ...] = (*(args.parent or ()), *((None,) if args.roots else ()))
        filters.append(ParentIn(parents))
    if args.since is not None or args.until is not None:
        filters.append(CreatedBetween(args.since, args.until))
    return filters


def _search_sessions(
    query: SessionQuery,
    text: str,
    limit: int,
    session_filters: Sequence[SessionFilter] = (),
    event_filters: Sequence[EventFilter] = (),
) -> SessionSearchPage:
    """Up to ``limit`` session hits, following continuation cursors within this process.

    The returned page's ``next_cursor`` is ``None``; a non-``None`` value would be useless
    outside this process, so truncation is reported as ``next_cursor="more"``.
    """
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = query.search_sessions(
            text,
            session_filters=session_filters,
            event_filters=event_filters,
            limit=min(_SEARCH_PAGE_MAX, limit - len(items)),
            cursor=cursor,
        )
        items.extend(page.items)
        cursor = page.next_cursor
        if cursor is None or len(items) >= limit:
            return SessionSearchPage(items=items, next_cursor=None if cursor is None else "more")


def _search_events(
    query: SessionQuery, session_id: str, text: str, limit: int, filters: Sequence[EventFilter]
) -> EventSearchPage:
    items: list[EventSearchHit] = []
    cursor: str | None = None
    while True:
        page = query.search_events(
            session_id,
            text,
            filters=filters,
            limit=min(_SEARCH_PAGE_MAX, limit - len(items)),
            cursor=cursor,
        )
        items.extend(page.items)
        cursor = page.next_cursor
        if cursor is None or len(items) >= limit:
            more = None if cursor is None else "more"
            return EventSearchPage(session=page.session, items=items, next_cursor=more)


def _cmd_search(args: argparse.Namespace, config: Config) -> int:
    with service(args, config, search=True) as query:
        page = _search_sessions(
            query, args.query, args.limit, _session_filters(args), _event_filters(args)
        )
        results = query.read_title_snapshots([hit.record.id for hit in page.items])
    titles = {r.session_id: (r.title.title if r.title else None) for r in results}
    document = render.session_hits_json(args.query, page, titles)
    return emit(
        args, config, document, lambda s: render.session_hits_text(args.query, page, titles, s)
    )


def _cmd_search_events(args: argparse.Namespace, config: Config) -> int:
    filters = _event_filters(args)
    if args.seq_from is not None or args.seq_to is not None:
        filters.append(SeqBetween(args.seq_from, args.seq_to))
    with service(args, config, search=True) as query:
        page = _search_events(query, args.session_id, args.query, args.limit, filters)
    document = render.event_hits_json(args.query, page)
    return emit(args, config, document, lambda s: render.event_hits_text(args.query, page, s))


def _update_index(
    search: SqliteSearch | PostgresSearch, query: SessionQuery, stream: TextIO
) -> dict[str, Any]:
    """Bring the search index up to date, drawing progress on ``stream``; returns a summary."""
    bar = ProgressBar(stream, "Indexing")
    try:
        update = search.update(query.corpus, progress=bar)
    finally:
        bar.finish()
    return {
        "skipped": update.skipped,
        "persisted_indexed": update.persisted_indexed,
        "persisted_removed": update.persisted_removed,
    }


def _cmd_index(args: argparse.Namespace, config: Config) -> int:
    sources = selected_sources(args)
    index = index_path(sources, config)
    persistence = open_persistence(sources, config)
    try:
        with (
            open_index(index, sources.postgres) as search,
            SessionQuery(persistence=persistence, search=search) as query,
        ):
            where = "the PostgreSQL database" if sources.postgres else str(index)
            summary = {"index": where, **_update_index(search, query, sys.stderr)}
    finally:
        report_problems(persistence, sys.stderr)

    def text(style: render.Style) -> list[str]:
        if summary["skipped"] or not (summary["persisted_indexed"] or summary["persisted_removed"]):
            return [f"Index {style.bold(summary['index'])} is up to date (nothing changed)."]
        return [
            f"Index {style.bold(summary['index'])} is up to date: "
            f"{summary['persisted_indexed']} session(s) indexed, "
            f"{summary['persisted_removed']} removed."
        ]

    return emit(args, config, summary, text)


def _cmd_mcp(args: argparse.Namespace, config: Config) -> int:
    from sessionquery.mcp import run_stdio

    sources = selected_sources(args)
    persistence = open_persistence(sources, config)
    cwd = args.cwd if args.cwd is not None else (None if args.session else os.getcwd())
    run_stdio(
        persistence=persistence,
        index_path=index_path(sources, config),
        postgres=sources.postgres,
        cwd=cwd,
        session_id=args.session,
    )
    return EXIT_OK


_QUICKSTART_QUERY = "float round"


def _cmd_quickstart(args: argparse.Namespace, config: Config) -> int:
    from sessionquery.examples import ensure_example_store

    sources = selected_sources(args)
    if sources.claude or sources.codex or len(sources.roots) > 1:
        raise UsageError("quickstart takes at most one --root and no --claude or --codex")
    root = (sources.roots[0] if sources.roots else config.quickstart_dir / "sessions").absolute()
    index = (sources.index or config.quickstart_dir / "index.sqlite3").absolute()
    ids = ensure_example_store(root)
    out, style = sys.stdout, style_for(config)

    def say(explanation: str, lines: Sequence[str]) -> None:
        out.write("\n" + style.bold(explanation) + "\n\n" + "\n".join(lines) + "\n")

    out.write(f"Created a sample store with {len(ids)} example sessions at {root}\n")
    with (
        open_index(index) as search,
        SessionQuery(persistence=JsonlPersistence(root), search=search) as query,
    ):
        _update_index(search, query, sys.stderr)
        out.write(f"Indexed them into {index}\n")
        page = _search_sessions(query, _QUICKSTART_QUERY, 5)
        titles = {
            r.session_id: (r.title.title if r.title else None)
            for r in query.read_title_snapshots([hit.record.id for hit in page.items])
        }
        say(
            f"1. Search: which sessions mention {_QUICKSTART_QUERY!r}? "
            "(sessionquery search, best-matching event per session)",
            render.session_hits_text(_QUICKSTART_QUERY, page, titles, style),
        )
        top = page.items[0]
        trace = query.trace_session(top.record.id)
        say(
            f"2. Lineage: {top.record.id} with the sessions forked from it and its "
            "subagents (sessionquery trace)",
            render.lineage_text(trace, style),
        )
        hit = top.best_match
        window = query.read_event(top.record.id, hit.seq, before=1, after=1)
        say(
            f"3. Exact read: the best-matching event (seq {hit.seq}) of {top.record.id}, in "
            "full, with one neighbour on each side (sessionquery read)",
            render.event_window_text(window, style),
        )
    flags = f"--root {_quote(root)} --index {_quote(index)}"
    out.write(
        "\nTry it yourself:\n"
        f"  sessionquery list {flags} --titles\n"
        f"  sessionquery search websocket {flags}\n"
        f"  sessionquery trace-event {top.record.id} {hit.seq} {flags}\n"
    )
    return EXIT_OK


def _quote(path: Path) -> str:

    return shlex.quote(str(path))


COMMANDS: tuple[Command, ...] = (
    Command("list", "List sessions, newest first.", _cmd_list),
    Command("show", "Show one session's header and title.", _cmd_show),
    Command("events", "List every event of a session (seq, time, surface, type).", _cmd_events),
    Command("read", "Read one event in full, with optional neighbours.", _cmd_read),
    Command("trace", "Show a session's lineage: ancestors, forks and subagents.", _cmd_trace),
    Command(
        "trace-event",
        "Show an event's replacements, cited sources and derived events.",
        _cmd_trace_event,
    ),
    Command("search", "Search all sessions; best-matching event per session.", _cmd_search),
    Command("search-events", "Search the events of one session.", _cmd_search_events),
    Command("index", "Bring the search index up to date (with progress).", _cmd_index),
    Command("mcp", "Serve the five session tools over stdio (MCP).", _cmd_mcp),
    Command(
        "quickstart",
        "Create a sample store from bundled example sessions and try it.",
        _cmd_quickstart,
    ),
)
"""Every subcommand, in the order ``--help`` lists them."""
