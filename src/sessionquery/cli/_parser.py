"""Argument parsing for ``sessionquery``: subcommands, shared options and value types.

Every parse error becomes a :class:`UsageError` (one ``SESSION_QUERY_USAGE: ...`` line and
exit status 2 at the top level) instead of argparse's multi-line message. The source options
are added twice, to the main parser (``pre_*`` destinations) and to each subcommand, with
suppressed defaults so that values given before and after the subcommand name are merged
rather than overwritten; :func:`source_options` reads them, once, into the typed
:class:`~sessionquery.app.SourceOptions`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from sessionquery.app import SOURCE_ORDER, SourceOptions
from sessionquery.model import SURFACE_CLASSES
from sessionquery.model.timestamp import Instant, TimestampError, parse_iso_timestamp
from sessionquery.sources.registry import KINDS, source_kind

if TYPE_CHECKING:
    from sessionquery.cli._services import Invocation

__all__ = [
    "SETUP",
    "Command",
    "Parser",
    "UsageError",
    "build_parser",
    "command_of",
    "source_options",
    "version_text",
]

SURFACES = SURFACE_CLASSES


class UsageError(Exception):
    """A command line that cannot be run as given (exit status 2).

    Attributes:
        command: the subcommand whose own options were wrong, when the error is its.
    """

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``CODE: message`` line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        # A subcommand's parser is called "sessionquery <command>".
        _, _, command = self.prog.partition(" ")
        raise UsageError(f"{message} (see '{self.prog} --help')", command or None)


def command_of(
    parser: argparse.ArgumentParser, argv: Sequence[str], error: UsageError
) -> str | None:
    """The subcommand a command line that failed to parse names, if it names one: the one
    whose options were wrong, or (for arguments no parser knows, such as ``mcp --frobnicate``)
    the one the rest of the line selects."""
    if error.command is not None:
        return error.command
    try:
        known, _ = parser.parse_known_args(argv)
    except UsageError:
        return None
    command = getattr(known, "command", None)
    return command if isinstance(command, str) else None


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


def _instant(text: str) -> Instant:
    """An ISO 8601 date or date-time (UTC when it has no offset), exactly."""
    try:
        return parse_iso_timestamp(text, naive_utc=True, allow_date=True)
    except TimestampError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 date or time such as 2025-03-07 or 2025-03-07T09:30Z, "
            f"not {text!r}"
        ) from None


def _since(text: str) -> int:
    """The first epoch millisecond at or after the instant (inclusive lower bound)."""
    return _instant(text).ceil_ms


def _until(text: str) -> int:
    """The last epoch millisecond at or before the instant (inclusive upper bound)."""
    return _instant(text).floor_ms


# -- the parser -----------------------------------------------------------------------------


_SOURCE_KINDS = tuple(kind.kind for kind in KINDS)


def _source_option(value: str) -> tuple[str, str]:
    kind, sep, path = value.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected KIND=PATH, not {value!r}")
    if source_kind(kind) is None:
        kinds = ", ".join(_SOURCE_KINDS)
        raise argparse.ArgumentTypeError(f"unknown source kind {kind!r}; expected one of {kinds}")
    return kind, path


def _add_sources(parser: argparse.ArgumentParser, prefix: str) -> None:
    group = parser.add_argument_group(
        "sources (default: the config file, else every default source that exists; "
        "see 'sessionquery sources')"
    )
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
        "--source",
        dest=f"{prefix}source",
        action="append",
        metavar="KIND=PATH",
        type=_source_option,
        default=suppress,
        help=f"a source of any kind ({', '.join(_SOURCE_KINDS)}) at PATH (repeatable)",
    )
    group.add_argument(
        "--postgres",
        dest=f"{prefix}postgres",
        metavar="DSN",
        default=suppress,
        help="a PostgreSQL database used as session store and search index, e.g. "
        "postgresql://user@host/db (needs the 'postgres' extra)",
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
        choices=SURFACES,
        help="only events of this surface class (repeatable)",
    )


def _add_no_redact(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-redact",
        action="store_true",
        help="show secrets as stored instead of [REDACTED:<rule>] (text output only)",
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
class Command:
    name: str
    help: str
    run: Callable[[Invocation], int]


def build_parser(commands: Sequence[Command]) -> Parser:
    parser = Parser(
        prog="sessionquery",
        description="Search, trace and read past AI agent sessions.",
        epilog="Run 'sessionquery quickstart' to try it on bundled example sessions.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version_text()}")
    _add_sources(parser, "pre_")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        SETUP[command.name](child)
        _add_sources(child, "")
        child.set_defaults(run=command.run, json=False, no_redact=False)
    return parser


def source_options(args: argparse.Namespace) -> SourceOptions:
    """The source options of a parsed command line, before and after the subcommand merged.

    The one place that reads them from the namespace (suppressed defaults leave an option
    that was not given absent).
    """
    given = vars(args)

    def values(kind: str) -> list[Any]:
        return [*given.get(f"pre_{kind}", ()), *given.get(kind, ())]

    def absolute(text: str) -> Path:
        return Path(text).expanduser().absolute()

    legacy = [(kind, value) for kind in ("root", "claude", "codex") for value in values(kind)]
    generic = [("root" if k == "store" else k, v) for k, v in values("source")]
    sources = tuple(
        (kind, absolute(value))
        for kind in SOURCE_ORDER
        for named, value in (*legacy, *generic)
        if named == kind
    )
    raw_index = given.get("index") or given.get("pre_index")
    postgres = given.get("postgres") or given.get("pre_postgres")
    index = None if raw_index is None else absolute(raw_index)
    return SourceOptions(sources=sources, postgres=postgres, index=index)


_ID_HELP = "the session id, or any unique start of it"


def _setup_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", action="append", metavar="DIR", help="only sessions of workspace DIR")
    p.add_argument("--no-titles", action="store_true", help="skip reading titles (faster)")
    p.add_argument("--titles", action="store_true", help=argparse.SUPPRESS)  # now the default
    p.add_argument("--all", action="store_true", help="show every session (no --limit)")
    _add_limit(p, 50)
    _add_json(p)


def _setup_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help=_ID_HELP)
    _add_json(p)


def _setup_show(p: argparse.ArgumentParser) -> None:
    _setup_id(p)
    p.add_argument(
        "--conversation",
        action="store_true",
        help="print the conversation: turns, one line per tool call, cut tool results",
    )
    _add_no_redact(p)


def _setup_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help=_ID_HELP)
    p.add_argument(
        "--format",
        choices=("markdown", "html", "json"),
        default="markdown",
        help="markdown (default), a self-contained html page, or json",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")
    _add_no_redact(p)


def _setup_sources(p: argparse.ArgumentParser) -> None:
    _add_json(p)


def _setup_seq(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help=_ID_HELP)
    p.add_argument("seq", metavar="SEQ", type=_non_negative, help="the event's seq number")


def _setup_read(p: argparse.ArgumentParser) -> None:
    _setup_seq(p)
    p.add_argument("--before", type=_non_negative, default=0, metavar="N", help="N events before")
    p.add_argument("--after", type=_non_negative, default=0, metavar="N", help="N events after")
    _add_no_redact(p)
    _add_json(p)


def _setup_trace_event(p: argparse.ArgumentParser) -> None:
    _setup_seq(p)
    _add_json(p)


_QUERY_HELP = "words to find: all of them, in any order (with --phrase: the exact phrase)"


def _add_phrase(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--phrase",
        action="store_true",
        help="match QUERY as one literal phrase instead of all its words in any order",
    )


def _setup_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", nargs="+", help=_QUERY_HELP)
    _add_phrase(p)
    p.add_argument("--cwd", action="append", metavar="DIR", help="only sessions of workspace DIR")
    p.add_argument("--session", action="append", metavar="ID", help="only this session")
    p.add_argument("--parent", action="append", metavar="ID", help="only children of session ID")
    p.add_argument("--roots", action="store_true", help="only sessions without a parent")
    p.add_argument("--since", type=_since, metavar="TIME", help="sessions created at/after TIME")
    p.add_argument("--until", type=_until, metavar="TIME", help="sessions created at/before TIME")
    _add_event_filters(p)
    _add_limit(p, 20)
    _add_json(p)


def _setup_search_events(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help="the session to search (or a unique start)")
    p.add_argument("query", metavar="QUERY", nargs="+", help=_QUERY_HELP)
    _add_phrase(p)
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


def _setup_archive(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--status",
        action="store_true",
        help="show what the archive holds and what it rescued, without changing it",
    )
    what.add_argument(
        "--prune-older-than",
        type=_positive,
        metavar="DAYS",
        help="remove the copies of sessions whose source last changed over DAYS days ago",
    )
    _add_json(p)


def _port(text: str) -> int:
    value = _non_negative(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number up to 65535, not {text!r}")
    return value


def _setup_serve(p: argparse.ArgumentParser) -> None:
    from sessionquery.cli._serve import DEFAULT_PORT

    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address to listen on (default: 127.0.0.1, this machine only; any other "
        "address needs the token printed at start)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        metavar="PORT",
        help=f"the port (default: {DEFAULT_PORT}; 0 picks a free one)",
    )
    p.add_argument("--open", action="store_true", help="open the viewer in a web browser")


def _setup_quickstart(p: argparse.ArgumentParser) -> None:
    del p  # only the shared source options (--root, --index)


SETUP: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "list": _setup_list,
    "show": _setup_show,
    "export": _setup_export,
    "events": _setup_id,
    "read": _setup_read,
    "trace": _setup_id,
    "trace-event": _setup_trace_event,
    "search": _setup_search,
    "search-events": _setup_search_events,
    "index": _setup_index,
    "sources": _setup_sources,
    "secrets": _setup_sources,
    "archive": _setup_archive,
    "mcp": _setup_mcp,
    "serve": _setup_serve,
    "quickstart": _setup_quickstart,
}


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionquery")
    except PackageNotFoundError:
        return "unknown"
