"""The ``sessionquery`` command: search, trace and read agent sessions from a terminal.

A thin layer (STYLE rule 7): parse the arguments, resolve defaults with
:meth:`~sessionquery.config.Config.from_env`, make one library call, render the result with
:mod:`sessionquery._cli_render`. No SQL and no private imports from other packages.

Contract (documented in ``docs/cli.md``):

* source options ``--root``, ``--claude``, ``--codex`` (repeatable, combinable) and ``--index``
  are accepted before and after the subcommand name;
* read commands are not workspace-scoped; ``--cwd`` filters;
* ``--json`` prints exactly one JSON document on stdout; progress and diagnostics go to stderr;
* errors print one line ``CODE: message`` on stderr and exit 2 for usage errors (the code is
  ``SESSION_QUERY_USAGE``), 1 for everything else; an expected error never shows a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from sessionquery import _cli_render as render
from sessionquery.config import Config
from sessionquery.errors import ErrorCode, PersistenceError, SessionQueryError
from sessionquery.persistence import JsonlPersistence, SessionPersistence
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
    from sessionquery.search.sqlite import SqliteSearch

__all__ = ["COMMANDS", "USAGE_ERROR_CODE", "main"]

USAGE_ERROR_CODE = "SESSION_QUERY_USAGE"
"""The code printed for command-line usage errors (exit status 2)."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_SEARCH_PAGE_MAX = 100
"""The largest page the search index serves; the CLI pages internally beyond it."""

_SURFACES = ("current", "shadowed", "log-only")


class UsageError(Exception):
    """A command line that cannot be run as given (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``CODE: message`` line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# -- argument types -------------------------------------------------------------------------


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, not {text!r}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a positive integer, not 0")
    return value


def _time(text: str) -> int:
    """An ISO 8601 date or date-time (UTC when it has no offset) as epoch milliseconds."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 date or time such as 2025-03-07 or 2025-03-07T09:30Z, "
            f"not {text!r}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


# -- the parser -----------------------------------------------------------------------------


def _add_sources(parser: argparse.ArgumentParser, prefix: str) -> None:
    group = parser.add_argument_group("sources (default: the store under SESSIONQUERY_HOME)")
    suppress = argparse.SUPPRESS
    group.add_argument(
        "--root",
        dest=f"{prefix}root",
        action="append",
        metavar="DIR",
        default=suppress,
        help="a sessionquery JSONL store directory (repeatable)",
    )
    group.add_argument(
        "--claude",
        dest=f"{prefix}claude",
        action="append",
        metavar="DIR",
        default=suppress,
        help="a Claude Code projects directory, e.g. ~/.claude/projects (repeatable)",
    )
    group.add_argument(
        "--codex",
        dest=f"{prefix}codex",
        action="append",
        metavar="DIR",
        default=suppress,
        help="a Codex sessions directory, e.g. ~/.codex/sessions (repeatable)",
    )
    group.add_argument(
        "--index",
        dest=f"{prefix}index",
        metavar="PATH",
        default=suppress,
        help="the SQLite search index file (default: <home>/index.sqlite3)",
    )


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document instead of text"
    )


def _add_event_filters(parser: argparse.ArgumentParser, *, prefix: str = "") -> None:
    parser.add_argument(
        f"--{prefix}type",
        dest="types",
        action="append",
        metavar="TYPE",
        help="only events of this type, e.g. user/message (repeatable)",
    )
    parser.add_argument(
        f"--{prefix}surface",
        dest="surfaces",
        action="append",
        choices=_SURFACES,
        help="only events of this surface class (repeatable)",
    )


def _add_limit(parser: argparse.ArgumentParser, default: int | None) -> None:
    shown = "all" if default is None else str(default)
    parser.add_argument(
        "--limit",
        type=_positive,
        default=default,
        metavar="N",
        help=f"show at most N results (default: {shown})",
    )


@dataclass(frozen=True, slots=True)
class _Command:
    name: str
    help: str
    run: Callable[[argparse.Namespace, Config], int]


def _build_parser(commands: Sequence[_Command]) -> _Parser:
    parser = _Parser(
        prog="sessionquery",
        description="Search, trace and read past AI agent sessions.",
        epilog="Run 'sessionquery quickstart' to try it on bundled example sessions.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    _add_sources(parser, "pre_")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        _SETUP[command.name](child)
        _add_sources(child, "")
        child.set_defaults(run=command.run)
    return parser


def _setup_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", action="append", metavar="DIR", help="only sessions of workspace DIR")
    p.add_argument("--titles", action="store_true", help="also read each session's title")
    _add_limit(p, None)
    _add_json(p)


def _setup_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help="the session id")
    _add_json(p)


def _setup_seq(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help="the session id")
    p.add_argument("seq", metavar="SEQ", type=_non_negative, help="the event's seq number")


def _setup_read(p: argparse.ArgumentParser) -> None:
    _setup_seq(p)
    p.add_argument("--before", type=_non_negative, default=0, metavar="N", help="N events before")
    p.add_argument("--after", type=_non_negative, default=0, metavar="N", help="N events after")
    _add_json(p)


def _setup_trace_event(p: argparse.ArgumentParser) -> None:
    _setup_seq(p)
    _add_json(p)


def _setup_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", help="words to find, matched as one phrase")
    p.add_argument("--cwd", action="append", metavar="DIR", help="only sessions of workspace DIR")
    p.add_argument("--session", action="append", metavar="ID", help="only this session")
    p.add_argument("--parent", action="append", metavar="ID", help="only children of session ID")
    p.add_argument("--roots", action="store_true", help="only sessions without a parent")
    p.add_argument("--since", type=_time, metavar="TIME", help="sessions created at/after TIME")
    p.add_argument("--until", type=_time, metavar="TIME", help="sessions created at/before TIME")
    _add_event_filters(p)
    _add_limit(p, 20)
    _add_json(p)


def _setup_search_events(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help="the session to search")
    p.add_argument("query", metavar="QUERY", help="words to find, matched as one phrase")
    p.add_argument("--seq-from", type=_non_negative, metavar="SEQ", help="events at/after SEQ")
    p.add_argument("--seq-to", type=_non_negative, metavar="SEQ", help="events at/before SEQ")
    _add_event_filters(p)
    _add_limit(p, 20)
    _add_json(p)


def _setup_index(p: argparse.ArgumentParser) -> None:
    _add_json(p)


def _setup_mcp(p: argparse.ArgumentParser) -> None:
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--cwd",
        metavar="DIR",
        help="the caller's workspace, compared verbatim (default: the working directory)",
    )
    who.add_argument(
        "--session",
        metavar="ID",
        help="act as this recorded session; its recorded cwd becomes the workspace",
    )


def _setup_quickstart(p: argparse.ArgumentParser) -> None:
    del p  # only the shared source options (--root, --index)


_SETUP: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "list": _setup_list,
    "show": _setup_id,
    "events": _setup_id,
    "read": _setup_read,
    "trace": _setup_id,
    "trace-event": _setup_trace_event,
    "search": _setup_search,
    "search-events": _setup_search_events,
    "index": _setup_index,
    "mcp": _setup_mcp,
    "quickstart": _setup_quickstart,
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionquery")
    except PackageNotFoundError:
        return "unknown"


# -- sources and services -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Sources:
    roots: list[Path]
    claude: list[Path]
    codex: list[Path]
    index: Path | None

    @property
    def explicit(self) -> bool:
        return bool(self.roots or self.claude or self.codex)


def _sources(args: argparse.Namespace) -> _Sources:
    def paths(name: str) -> list[Path]:
        values = [*getattr(args, f"pre_{name}", []), *getattr(args, name, [])]
        return [Path(value).expanduser() for value in values]

    index = getattr(args, "index", None) or getattr(args, "pre_index", None)
    return _Sources(
        roots=paths("root"),
        claude=paths("claude"),
        codex=paths("codex"),
        index=None if index is None else Path(index).expanduser(),
    )


def _require_dir(path: Path, what: str) -> None:
    if not path.is_dir():
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            f"no {what} at {path}; create one with 'sessionquery quickstart' or choose "
            "sources with --root, --claude or --codex",
        )


def _open_persistence(sources: _Sources, config: Config) -> SessionPersistence:
    """The persistence the options select (several are combined with ``MultiSource``).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when a selected directory does not exist.
    """
    roots = sources.roots if sources.explicit else [config.store_root]
    pairs: list[tuple[str, SessionPersistence]] = []
    for number, root in enumerate(roots, start=1):
        _require_dir(root, "session store")
        pairs.append((_label("store", number), JsonlPersistence(root)))
    if sources.claude or sources.codex:
        from sessionquery.sources import ClaudeCodeSource, CodexSource

        for number, directory in enumerate(sources.claude, start=1):
            _require_dir(directory, "Claude Code projects directory")
            pairs.append((_label("claude", number), ClaudeCodeSource(directory)))
        for number, directory in enumerate(sources.codex, start=1):
            _require_dir(directory, "Codex sessions directory")
            pairs.append((_label("codex", number), CodexSource(directory)))
    if len(pairs) == 1:
        return pairs[0][1]
    from sessionquery.sources import MultiSource

    return MultiSource(pairs)


def _label(kind: str, number: int) -> str:
    return kind if number == 1 else f"{kind}{number}"


def _index_path(sources: _Sources, config: Config) -> Path:
    return sources.index if sources.index is not None else config.index_path


@contextmanager
def _service(
    args: argparse.Namespace, config: Config, *, search: bool = False
) -> Iterator[SessionQuery]:
    """The query service over the selected sources (with the search index when asked)."""
    sources = _sources(args)
    persistence = _open_persistence(sources, config)
    try:
        backend = _open_index(_index_path(sources, config)) if search else None
        with SessionQuery(persistence=persistence, search=backend) as query:
            yield query
    finally:
        _report_problems(persistence, sys.stderr)


def _open_index(path: Path) -> SqliteSearch:
    from sessionquery.search.sqlite import SqliteSearch

    return SqliteSearch(path)


def _report_problems(persistence: object, stream: TextIO, shown: int = 3) -> None:
    """A short stderr summary of what importers could not read."""
    problems_of = getattr(persistence, "problems", None)
    if not callable(problems_of):
        return
    problems = list(problems_of())
    if not problems:
        return
    stream.write(f"warning: {len(problems)} importer problem(s):\n")
    for problem in problems[:shown]:
        where = problem.path if problem.line is None else f"{problem.path}:{problem.line}"
        stream.write(f"  {where}: {problem.message}\n")
    if len(problems) > shown:
        stream.write(f"  ... and {len(problems) - shown} more\n")


# -- output ---------------------------------------------------------------------------------


def _style(config: Config) -> render.Style:
    return render.Style(sys.stdout.isatty() and not config.no_color)


def _emit(args: argparse.Namespace, config: Config, document: Any, text: Callable[..., Any]) -> int:
    if getattr(args, "json", False):
        sys.stdout.write(render.dumps(document) + "\n")
    else:
        lines = text(_style(config))
        sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


class ProgressBar:
    """A one-line progress bar on a terminal stream; silent when the stream is not a TTY."""

    def __init__(self, stream: TextIO, label: str, width: int = 30) -> None:
        self._stream = stream
        self._label = label
        self._width = width
        self._drawn = False
        self._enabled = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        """Draw ``done`` of ``total``."""
        if not self._enabled or total <= 0:
            return
        filled = self._width * done // total
        bar = "#" * filled + "." * (self._width - filled)
        self._stream.write(f"\r{self._label} [{bar}] {done}/{total} sessions")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        """End the bar's line."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False


# -- commands -------------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace, config: Config) -> int:
    with _service(args, config) as query:
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
    return _emit(args, config, document, lambda s: render.records_text(records, titles, s))


def _cmd_show(args: argparse.Namespace, config: Config) -> int:
    with _service(args, config) as query:
        (result,) = query.read_title_snapshots([args.session_id])
    if result.error is not None:
        raise result.error
    header = result.header
    assert header is not None  # a result without error carries its header
    title = result.title
    document = render.show_json(header, title)
    return _emit(args, config, document, lambda s: render.show_text(header, title, s))


def _cmd_events(args: argparse.Namespace, config: Config) -> int:
    with _service(args, config) as query:
        events = query.list_events(args.session_id)
    document = render.events_json(args.session_id, events)
    return _emit(args, config, document, lambda s: render.events_text(events, s))


def _cmd_read(args: argparse.Namespace, config: Config) -> int:
    with _service(args, config) as query:
        window = query.read_event(args.session_id, args.seq, before=args.before, after=args.after)
    document = render.event_window_json(window)
    return _emit(args, config, document, lambda s: render.event_window_text(window, s))


def _cmd_trace(args: argparse.Namespace, config: Config) -> int:
    with _service(args, config) as query:
        trace = query.trace_session(args.session_id)
    document = render.lineage_json(trace)
    return _emit(args, config, document, lambda s: render.lineage_text(trace, s))


def _cmd_trace_event(args: argparse.Namespace, config: Config) -> int:
    with _service(args, config) as query:
        trace = query.trace_event(args.session_id, args.seq)
    document = render.event_trace_json(trace)
    return _emit(args, config, document, lambda s: render.event_trace_text(trace, s))


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
    with _service(args, config, search=True) as query:
        page = _search_sessions(
            query, args.query, args.limit, _session_filters(args), _event_filters(args)
        )
        results = query.read_title_snapshots([hit.record.id for hit in page.items])
    titles = {r.session_id: (r.title.title if r.title else None) for r in results}
    document = render.session_hits_json(args.query, page, titles)
    return _emit(
        args, config, document, lambda s: render.session_hits_text(args.query, page, titles, s)
    )


def _cmd_search_events(args: argparse.Namespace, config: Config) -> int:
    filters = _event_filters(args)
    if args.seq_from is not None or args.seq_to is not None:
        filters.append(SeqBetween(args.seq_from, args.seq_to))
    with _service(args, config, search=True) as query:
        page = _search_events(query, args.session_id, args.query, args.limit, filters)
    document = render.event_hits_json(args.query, page)
    return _emit(args, config, document, lambda s: render.event_hits_text(args.query, page, s))


def _update_index(search: SqliteSearch, query: SessionQuery, stream: TextIO) -> dict[str, Any]:
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
    sources = _sources(args)
    index = _index_path(sources, config)
    persistence = _open_persistence(sources, config)
    try:
        with (
            _open_index(index) as search,
            SessionQuery(persistence=persistence, search=search) as query,
        ):
            summary = {"index": str(index), **_update_index(search, query, sys.stderr)}
    finally:
        _report_problems(persistence, sys.stderr)

    def text(style: render.Style) -> list[str]:
        if summary["skipped"] or not (summary["persisted_indexed"] or summary["persisted_removed"]):
            return [f"Index {style.bold(str(index))} is up to date (nothing changed)."]
        return [
            f"Index {style.bold(str(index))} is up to date: "
            f"{summary['persisted_indexed']} session(s) indexed, "
            f"{summary['persisted_removed']} removed."
        ]

    return _emit(args, config, summary, text)


def _cmd_mcp(args: argparse.Namespace, config: Config) -> int:
    from sessionquery.mcp import run_stdio

    sources = _sources(args)
    persistence = _open_persistence(sources, config)
    cwd = args.cwd if args.cwd is not None else (None if args.session else os.getcwd())
    run_stdio(
        persistence=persistence,
        index_path=_index_path(sources, config),
        cwd=cwd,
        session_id=args.session,
    )
    return EXIT_OK


_QUICKSTART_QUERY = "float round"


def _cmd_quickstart(args: argparse.Namespace, config: Config) -> int:
    from sessionquery.examples import ensure_example_store

    sources = _sources(args)
    if sources.claude or sources.codex or len(sources.roots) > 1:
        raise UsageError("quickstart takes at most one --root and no --claude or --codex")
    root = (sources.roots[0] if sources.roots else config.quickstart_dir / "sessions").absolute()
    index = (sources.index or config.quickstart_dir / "index.sqlite3").absolute()
    ids = ensure_example_store(root)
    out, style = sys.stdout, _style(config)

    def say(explanation: str, lines: Sequence[str]) -> None:
        out.write("\n" + style.bold(explanation) + "\n\n" + "\n".join(lines) + "\n")

    out.write(f"Created a sample store with {len(ids)} example sessions at {root}\n")
    with (
        _open_index(index) as search,
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
    import shlex

    return shlex.quote(str(path))


COMMANDS: tuple[_Command, ...] = (
    _Command("list", "List sessions, newest first.", _cmd_list),
    _Command("show", "Show one session's header and title.", _cmd_show),
    _Command("events", "List every event of a session (seq, time, surface, type).", _cmd_events),
    _Command("read", "Read one event in full, with optional neighbours.", _cmd_read),
    _Command("trace", "Show a session's lineage: ancestors, forks and subagents.", _cmd_trace),
    _Command(
        "trace-event",
        "Show an event's replacements, cited sources and derived events.",
        _cmd_trace_event,
    ),
    _Command("search", "Search all sessions; best-matching event per session.", _cmd_search),
    _Command("search-events", "Search the events of one session.", _cmd_search_events),
    _Command("index", "Bring the search index up to date (with progress).", _cmd_index),
    _Command("mcp", "Serve the five session tools over stdio (MCP).", _cmd_mcp),
    _Command(
        "quickstart",
        "Create a sample store from bundled example sessions and try it.",
        _cmd_quickstart,
    ),
)
"""Every subcommand, in the order ``--help`` lists them."""


# -- entry point ----------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(code: str, message: str, status: int) -> int:
    sys.stderr.write(f"{code}: {_one_line(message)}\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sessionquery`` command line; returns the process exit status.

    Args:
        argv: the arguments after the program name; ``sys.argv[1:]`` when omitted.
    """
    try:
        args = _build_parser(COMMANDS).parse_args(argv)
        run: Callable[[argparse.Namespace, Config], int] = args.run
        return run(args, Config.from_env())
    except UsageError as error:
        return _fail(USAGE_ERROR_CODE, str(error), EXIT_USAGE)
    except SessionQueryError as error:
        return _fail(error.code.value, error.message, EXIT_ERROR)
    except PersistenceError as error:
        return _fail(ErrorCode.PERSISTENCE_FAILED.value, str(error), EXIT_ERROR)
    except OSError as error:
        if isinstance(error, BrokenPipeError):
            return _quiet_broken_pipe()
        return _fail(ErrorCode.PERSISTENCE_FAILED.value, str(error), EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(ErrorCode.ABORTED.value, "interrupted", EXIT_INTERRUPTED)


def _quiet_broken_pipe() -> int:
    # The reader went away (e.g. `| head`): stop quietly, and keep the interpreter's final
    # flush of stdout from raising again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
