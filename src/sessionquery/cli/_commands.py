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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sessionquery.app import App, SourceOptions
from sessionquery.cli import _conversation as conversation
from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term
from sessionquery.cli import _titlecache as titlecache
from sessionquery.cli._archive import cmd_archive, turn_on_hint
from sessionquery.cli._parser import Command, UsageError
from sessionquery.cli._secrets import cmd_secrets
from sessionquery.cli._serve import cmd_serve
from sessionquery.cli._services import EXIT_OK, Invocation, Progress, emit, style_for
from sessionquery.cli._sources import cmd_sources
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.backend import SearchMatch
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
from sessionquery.query.types import (
    EventSearchHit,
    EventSearchPage,
    SessionRecord,
    SessionSearchPage,
)

if TYPE_CHECKING:
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch

__all__ = ["COMMANDS"]

_SEARCH_PAGE_MAX = 100
"""The largest page the search index serves; the CLI pages internally beyond it."""


def _titles(query: SessionQuery, ids: list[str]) -> dict[str, str | None]:
    return {
        r.session_id: (r.title.title if r.title else None) for r in query.read_title_snapshots(ids)
    }


_NOT_READ_TEXT = "…"


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
    snapshot = inv.snapshot()
    with SessionQuery(persistence=snapshot) as titles_query:
        found = titlecache.read_titles(
            titles_query, snapshot.list(), ids, inv.config.title_cache, budget_s=budget
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
            f"{missing} title(s) not read yet ({_NOT_READ_TEXT}): titles are remembered as "
            "they are read, so the next run shows more; --no-titles skips them"
        )
    return TitleView(shown, note)


def _cmd_list(inv: Invocation) -> int:
    args = inv.args
    with inv.query() as query:
        everything = query.list_sessions()
        records = everything
        if args.cwd:
            records = query.filter_sessions([CwdIn(tuple(args.cwd))])
        total = len(records)
        if args.limit is not None and not args.all:
            records = records[: args.limit]
        view = None if args.no_titles else _listing_titles(inv, [r.id for r in records])
    titles = None if view is None else view.titles
    prefixes = term.unique_prefixes([record.id for record in everything])
    document = render.records_json(records, titles)
    document["total"] = total

    def text(style: render.Style) -> list[str]:
        lines = render.records_text(records, titles, style, prefixes=prefixes, total=total)
        return lines if view is None or view.note is None else [*lines, style.dim(view.note)]

    return emit(inv, document, text)


def _cmd_show(inv: Invocation) -> int:
    args = inv.args
    with inv.query() as query:
        session_id = inv.resolve(args.session_id)
        if args.conversation:
            return _show_conversation(inv, query, session_id)
        (result,) = query.read_title_snapshots([session_id])
        archived = any(r.archived for r in query.filter_sessions([IdIn((session_id,))]))
    if result.error is not None:
        raise result.error
    header = result.header
    assert header is not None  # a result without error carries its header
    title = result.title
    document = render.show_json(header, title, archived=archived)
    return emit(inv, document, lambda s: render.show_text(header, title, s, archived=archived))


def _conversation_parts(
    query: SessionQuery, session_id: str
) -> tuple[Any, Any, list[SessionRecord], list[conversation.Entry]]:
    log = query.read_session(session_id)
    (result,) = query.read_title_snapshots([session_id])
    children = query.filter_sessions([ParentIn((session_id,))])
    child_titles = {k: v for k, v in _titles(query, [c.id for c in children]).items() if v}
    return log, result.title, children, conversation.entries(log, children, child_titles)


def _show_conversation(inv: Invocation, query: SessionQuery, session_id: str) -> int:
    log, title, children, items = _conversation_parts(query, session_id)
    document = conversation.export_json(log, title, children)
    return emit(
        inv, document, lambda s: conversation.conversation_text(log.session, title, items, s)
    )


def _cmd_export(inv: Invocation) -> int:
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


def _cmd_events(inv: Invocation) -> int:
    with inv.query() as query:
        session_id = inv.resolve(inv.args.session_id)
        events = query.list_events(session_id)
    document = render.events_json(session_id, events)
    return emit(inv, document, lambda s: render.events_text(events, s))


def _cmd_read(inv: Invocation) -> int:
    args = inv.args
    with inv.query() as query:
        session_id = inv.resolve(args.session_id)
        window = query.read_event(session_id, args.seq, before=args.before, after=args.after)
    document = render.event_window_json(window)
    return emit(inv, document, lambda s: render.event_window_text(window, s))


def _cmd_trace(inv: Invocation) -> int:
    with inv.query() as query:
        trace = query.trace_session(inv.resolve(inv.args.session_id))
    document = render.lineage_json(trace)
    return emit(inv, document, lambda s: render.lineage_text(trace, s))


def _cmd_trace_event(inv: Invocation) -> int:
    with inv.query() as query:
        trace = query.trace_event(inv.resolve(inv.args.session_id), inv.args.seq)
    document = render.event_trace_json(trace)
    return emit(inv, document, lambda s: render.event_trace_text(trace, s))


def _event_filters(args: argparse.Namespace) -> list[EventFilter]:
    filters: list[EventFilter] = []
    if args.types:
        filters.append(TypeIn(tuple(args.types)))
    if args.surfaces:
        filters.append(SurfaceIn(tuple(args.surfaces)))
    return filters


def _session_filters(inv: Invocation) -> list[SessionFilter]:
    args = inv.args
    filters: list[SessionFilter] = []
    if args.cwd:
        filters.append(CwdIn(tuple(args.cwd)))
    if args.session:
        filters.append(IdIn(tuple(inv.resolve(i) for i in args.session)))
    if args.parent or args.roots:
        named = tuple(inv.resolve(i) for i in args.parent or ())
        parents: tuple[str | None, ...] = (*named, *((None,) if args.roots else ()))
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
    *,
    mode: SearchMatch = "words",
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
            match=mode,
        )
        items.extend(page.items)
        cursor = page.next_cursor
        if cursor is None or len(items) >= limit:
            return SessionSearchPage(items=items, next_cursor=None if cursor is None else "more")


def _search_events(
    query: SessionQuery,
    session_id: str,
    text: str,
    limit: int,
    filters: Sequence[EventFilter],
    *,
    mode: SearchMatch,
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
            match=mode,
        )
        items.extend(page.items)
        cursor = page.next_cursor
        if cursor is None or len(items) >= limit:
            more = None if cursor is None else "more"
            return EventSearchPage(session=page.session, items=items, next_cursor=more)


def _mode(args: argparse.Namespace) -> SearchMatch:
    return "phrase" if args.phrase else "words"


def _cmd_search(inv: Invocation) -> int:
    args, mode = inv.args, _mode(inv.args)
    args.query = " ".join(args.query)  # `search flaky test` is the query "flaky test"
    with inv.query(search=True) as query:
        page = _search_sessions(
            query,
            args.query,
            args.limit,
            _session_filters(inv),
            _event_filters(args),
            mode=mode,
        )
        titles = _listing_titles(inv, [hit.record.id for hit in page.items]).titles
    document = render.session_hits_json(args.query, page, titles)
    document["match"] = mode
    return emit(
        inv,
        document,
        lambda s: render.session_hits_text(args.query, page, titles, s, match=mode),
    )


def _cmd_search_events(inv: Invocation) -> int:
    args, mode = inv.args, _mode(inv.args)
    args.query = " ".join(args.query)
    filters = _event_filters(args)
    if args.seq_from is not None or args.seq_to is not None:
        filters.append(SeqBetween(args.seq_from, args.seq_to))
    with inv.query(search=True) as query:
        session_id = inv.resolve(args.session_id)
        page = _search_events(query, session_id, args.query, args.limit, filters, mode=mode)
    document = render.event_hits_json(args.query, page)
    document["match"] = mode
    return emit(inv, document, lambda s: render.event_hits_text(args.query, page, s, match=mode))


def _update_index(
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


def _cmd_index(inv: Invocation) -> int:
    index, postgres = inv.selection.index, inv.selection.postgres
    inv.app.archive_on_update()
    inv.persistence()  # a missing source is reported before the index is created
    with inv.app.open_index() as search, inv.app.service(search) as query:
        place = "the PostgreSQL database" if postgres else str(index)
        summary = {"index": place, **_update_index(search, query, sys.stderr)}

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


EXIT_USAGE_SERVED = 2
"""The exit status of ``mcp`` served with a bad command line (the usage-error status)."""


def serve_bad_command_line(message: str) -> int:
    """``sessionquery mcp`` with options it cannot run with: an MCP client that started it
    sees only a closed connection when the process exits, so serve instead, answering every
    tool call with the reason (and logging it on stderr)."""
    from sessionquery.mcp import run_stdio

    problem = SessionQueryError(
        ErrorCode.INVALID_CONFIG, f"the server's command line is wrong: {message}"
    )
    run_stdio(None, cwd=None, session_id=None, problem=problem)
    return EXIT_USAGE_SERVED


def _cmd_mcp(inv: Invocation) -> int:
    from sessionquery.mcp import run_stdio

    args = inv.args
    inv.summarise_problems = False  # the server logs its own state on stderr
    cwd = args.cwd if args.cwd is not None else (None if args.session else os.getcwd())
    run_stdio(inv.app, cwd=cwd, session_id=args.session)
    return EXIT_OK


_QUICKSTART_QUERY = "float round"


def _cmd_quickstart(inv: Invocation) -> int:
    from sessionquery.examples import ensure_example_store

    config, options = inv.config, inv.app.options
    roots = [path for kind, path in options.sources if kind == "root"]
    if len(roots) != len(options.sources) or len(roots) > 1 or options.postgres:
        raise UsageError("quickstart takes at most one --root and no other source option")
    root = roots[0] if roots else config.quickstart_dir / "sessions"
    index = options.index or config.quickstart_dir / "index.sqlite3"
    ids = ensure_example_store(root)
    sample = App(config, SourceOptions(sources=(("root", root),), index=index))
    out, style = sys.stdout, style_for(config)

    def say(explanation: str, lines: Sequence[str]) -> None:
        shown = [render.terminal_line(line, style) for line in ["", explanation, "", *lines]]
        out.write("\n".join(shown) + "\n")

    out.write(f"Created a sample store with {len(ids)} example sessions at {root}\n")
    with sample.open_index() as search, sample.service(search) as query:
        _update_index(search, query, sys.stderr, plain=False)
        out.write(f"Indexed them into {index}\n")
        page = _search_sessions(query, _QUICKSTART_QUERY, 5, mode="phrase")
        titles = _titles(query, [hit.record.id for hit in page.items])
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
        f"  sessionquery list {flags}\n"
        f"  sessionquery search websocket {flags}\n"
        f"  sessionquery trace-event {top.record.id} {hit.seq} {flags}\n"
        f"\n{turn_on_hint(inv)}.\n"
    )
    return EXIT_OK


def _quote(path: Path) -> str:

    return shlex.quote(str(path))


COMMANDS: tuple[Command, ...] = (
    Command("list", "List sessions, newest first, with titles and short ids.", _cmd_list),
    Command(
        "show",
        "Show one session's header and title, or (--conversation) the whole conversation.",
        _cmd_show,
    ),
    Command("export", "Write a whole session as Markdown, HTML or JSON.", _cmd_export),
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
    Command("sources", "Show which sources are used, why, and what they hold.", cmd_sources),
    Command(
        "secrets",
        "List where secrets occur (session, seq, rule, a masked preview); exit 3 if any.",
        cmd_secrets,
    ),
    Command(
        "archive",
        "Keep the agents' transcripts when they purge them (--status, --prune-older-than).",
        cmd_archive,
    ),
    Command("mcp", "Serve the five session tools over stdio (MCP).", _cmd_mcp),
    Command("serve", "Browse every session in a local, read-only web viewer.", cmd_serve),
    Command(
        "quickstart",
        "Create a sample store from bundled example sessions and try it.",
        _cmd_quickstart,
    ),
)
"""Every subcommand, in the order ``--help`` lists them."""
