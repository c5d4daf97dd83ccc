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
import difflib
import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from sessionquery.app import SOURCE_ORDER, SourceOptions
from sessionquery.cli._values import (
    non_negative,
    port,
    positive,
    since,
    until,
    window,
    workspace,
)
from sessionquery.match_modes import PEOPLE_MATCH, SEARCH_MODES
from sessionquery.sources.registry import KINDS, source_kind

if TYPE_CHECKING:
    from sessionquery.cli._services import Invocation

__all__ = [
    "COMMANDS",
    "Command",
    "Parser",
    "UsageError",
    "build_parser",
    "command_of",
    "is_quiet",
    "source_options",
    "version_text",
]

SURFACES = ("current", "shadowed", "log-only")
"""The surface classes (``sessionquery.model.SURFACE_CLASSES``, spelled here so that building
the parser imports no model; a test keeps them equal)."""


class UsageError(Exception):
    """A command line that cannot be run as given (exit status 2).

    Attributes:
        command: the subcommand whose own options were wrong, when the error is its.
    """

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)$")
_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (?P<first>\S+)")


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``CODE: message`` line and exit status 2,
    with a "did you mean" for a mistyped command, choice or option."""

    _selected: argparse.ArgumentParser | None = None
    """The subcommand's parser, while arguments no parser took are reported."""

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """Parse ``args``; arguments no parser took are the chosen subcommand's usage error,
        with a "did you mean" among the options that command (or the top level) accepts."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._selected = self._subcommand(getattr(parsed, "command", None))
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _subcommand(self, name: object) -> argparse.ArgumentParser | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and isinstance(name, str):
                child: argparse.ArgumentParser | None = action.choices.get(name)
                return child
        return None

    def error(self, message: str) -> NoReturn:
        hint = self._suggestion(message)
        # A subcommand's parser is called "sessionquery <command>".
        prog = self._selected.prog if self._selected is not None else self.prog
        _, _, command = prog.partition(" ")
        raise UsageError(f"{message}{hint} (see '{prog} --help')", command or None)

    def _suggestion(self, message: str) -> str:
        choice = _INVALID_CHOICE.search(message)
        if choice is not None:
            known = re.findall(r"'([^']*)'", choice.group("choices"))
            return _did_you_mean(choice.group("value"), known)
        unrecognized = _UNRECOGNIZED.search(message)
        if unrecognized is not None:
            first = unrecognized.group("first").split("=", 1)[0]
            if first.startswith("-"):
                return _did_you_mean(first, sorted(self._every_option()))
        return ""

    def _every_option(self) -> set[str]:
        """The options a mistyped one may have meant: the top level's and the chosen
        subcommand's (every subcommand's when none was chosen)."""
        found = set(self._option_string_actions)
        if self._selected is not None:
            return found | set(self._selected._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    found |= set(child._option_string_actions)
        return found


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


def _did_you_mean(value: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


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


def _add_quiet(parser: argparse.ArgumentParser, prefix: str) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        dest=f"{prefix}quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no warnings on stderr (errors are still printed)",
    )


def is_quiet(args: argparse.Namespace) -> bool:
    """Whether ``--quiet`` was given, before or after the subcommand."""
    given = vars(args)
    return bool(given.get("quiet") or given.get("pre_quiet"))


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
        type=positive,
        default=default,
        metavar="N",
        help=f"show at most N results (default: {shown})",
    )


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: its name, help line, options and the function that runs it.

    Attributes:
        name: the subcommand's name.
        help: its one-line help.
        setup: adds its own options to its parser.
        target: ``"module:function"`` of the function that runs it with the
            :class:`~sessionquery.cli._services.Invocation` (imported only when it runs, so
            ``--help`` and every other command pay nothing for it).
    """

    name: str
    help: str
    setup: Callable[[argparse.ArgumentParser], None]
    target: str

    def load(self) -> Callable[[Invocation], int]:
        """The function that runs the command."""
        module, _, function = self.target.partition(":")
        run: Callable[[Invocation], int] = getattr(importlib.import_module(module), function)
        return run


def build_parser(commands: Sequence[Command]) -> Parser:
    parser = Parser(
        prog="sessionquery",
        description="Search, trace and read past AI agent sessions.",
        epilog="Run 'sessionquery quickstart' to try it on bundled example sessions.",
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    _add_sources(parser, "pre_")
    _add_quiet(parser, "pre_")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        command.setup(child)
        _add_sources(child, "")
        _add_quiet(child, "")
        child.set_defaults(handler=command, json=False, no_redact=False)
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


_ID_HELP = "the session: its id, the short id 'list' shows, or any unique start of the id"


def _add_cwd(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cwd",
        action="append",
        type=workspace,
        metavar="DIR",
        help="only sessions of workspace DIR (made absolute: '.' is this directory; repeatable)",
    )


def _setup_list(p: argparse.ArgumentParser) -> None:
    _add_cwd(p)
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
        choices=("markdown", "md", "html", "json"),
        default="markdown",
        help="markdown (default; also md), a self-contained html page, or json",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")
    _add_no_redact(p)


def _setup_sources(p: argparse.ArgumentParser) -> None:
    _add_json(p)


def _setup_seq(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help=_ID_HELP)
    p.add_argument("seq", metavar="SEQ", type=non_negative, help="the event's seq number")


def _setup_read(p: argparse.ArgumentParser) -> None:
    _setup_seq(p)
    p.add_argument("--before", type=window, default=0, metavar="N", help="N events before (≤ 50)")
    p.add_argument("--after", type=window, default=0, metavar="N", help="N events after (≤ 50)")
    _add_no_redact(p)
    _add_json(p)


def _setup_trace_event(p: argparse.ArgumentParser) -> None:
    _setup_seq(p)
    _add_json(p)


_QUERY_HELP = (
    "what to find, in plain words (no quotes needed): the events with the most of them, "
    "rarest words counting most"
)


def _add_match(p: argparse.ArgumentParser) -> None:
    """One flag per search mode that has one (:data:`~sessionquery.match_modes.SEARCH_MODES`),
    the people's default without."""
    group = p.add_mutually_exclusive_group()
    for mode in SEARCH_MODES:
        if mode.flag is not None:
            group.add_argument(
                mode.flag.name,
                dest="match",
                action="store_const",
                const=mode.name,
                help=mode.flag.help,
            )
    p.set_defaults(match=PEOPLE_MATCH)


def _setup_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY", nargs="+", help=_QUERY_HELP)
    _add_match(p)
    _add_cwd(p)
    p.add_argument("--session", action="append", metavar="ID", help="only this session")
    p.add_argument("--parent", action="append", metavar="ID", help="only children of session ID")
    p.add_argument("--roots", action="store_true", help="only sessions without a parent")
    p.add_argument("--since", type=since, metavar="TIME", help="sessions created at/after TIME")
    p.add_argument("--until", type=until, metavar="TIME", help="sessions created at/before TIME")
    _add_event_filters(p)
    _add_limit(p, 20)
    _add_json(p)


def _setup_search_events(p: argparse.ArgumentParser) -> None:
    p.add_argument("session_id", metavar="ID", help=_ID_HELP)
    p.add_argument("query", metavar="QUERY", nargs="+", help=_QUERY_HELP)
    _add_match(p)
    p.add_argument("--seq-from", type=non_negative, metavar="SEQ", help="events at/after SEQ")
    p.add_argument("--seq-to", type=non_negative, metavar="SEQ", help="events at/before SEQ")
    _add_event_filters(p)
    _add_limit(p, 20)
    _add_json(p)


def _setup_index(p: argparse.ArgumentParser) -> None:
    _add_json(p)


def _setup_mcp(p: argparse.ArgumentParser) -> None:
    from sessionquery.cli._launcher import CLIENTS

    p.add_argument(
        "--print-config",
        choices=CLIENTS,
        metavar="CLIENT",
        help="print how to register this server with CLIENT (claude, codex or cursor), with "
        "the absolute command that starts it, and exit",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--cwd",
        metavar="DIR",
        help="the caller's workspace, compared verbatim with the sessions' recorded cwd (a "
        "relative DIR such as '.' is taken from the working directory; default: the working "
        "directory)",
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
        type=positive,
        metavar="DAYS",
        help="remove the copies of sessions whose source last changed over DAYS days ago",
    )
    _add_json(p)


SERVE_PORT = 8765
"""The viewer's port unless ``--port`` says otherwise (a fixed port keeps links stable)."""


def _setup_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address to listen on (default: 127.0.0.1, this machine only; any other "
        "address needs the token printed at start)",
    )
    p.add_argument(
        "--port",
        type=port,
        default=SERVE_PORT,
        metavar="PORT",
        help=f"the port (default: {SERVE_PORT}; 0 picks a free one)",
    )
    p.add_argument("--open", action="store_true", help="open the viewer in a web browser")


def _setup_quickstart(p: argparse.ArgumentParser) -> None:
    del p  # only the shared source options (--root, --index)


def _setup_push(p: argparse.ArgumentParser) -> None:
    """Options of ``push`` (besides the shared source options)."""
    p.add_argument(
        "--machine",
        metavar="NAME",
        help="this machine's name in the team database (default: the config file's "
        "push.machine, else the host name)",
    )
    p.add_argument("--watch", action="store_true", help="keep pushing until interrupted")
    p.add_argument(
        "--interval",
        type=float,
        metavar="SECONDS",
        help="seconds between pushes with --watch (default: push.interval, else 60)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="reader processes: sessions are read, redacted and tokenised on N cores while "
        "one process writes (1-16; default: push.jobs, else the cores, at most 4)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")


def _setup_team(p: argparse.ArgumentParser) -> None:
    """Arguments of ``team``."""
    p.add_argument("action", choices=("init", "grant", "revoke", "members"))
    p.add_argument("role", nargs="?", metavar="ROLE", help="a database role (grant, revoke)")
    p.add_argument(
        "workspace",
        nargs="?",
        metavar="WORKSPACE",
        help="a team workspace, e.g. github.com/org/app ('*': every workspace)",
    )
    p.add_argument("--push", action="store_true", help="grant: also let ROLE push")
    p.add_argument("--json", action="store_true", help="print one JSON document")


_COMMANDS = "sessionquery.cli._commands"
_SOURCES = "sessionquery.cli._sources"

COMMANDS: tuple[Command, ...] = (
    Command(
        "list",
        "List sessions, newest first, with titles and short ids.",
        _setup_list,
        f"{_COMMANDS}:cmd_list",
    ),
    Command(
        "show",
        "Show one session's header and title, or (--conversation) the whole conversation.",
        _setup_show,
        f"{_COMMANDS}:cmd_show",
    ),
    Command(
        "export",
        "Write a whole session as Markdown, HTML or JSON.",
        _setup_export,
        f"{_COMMANDS}:cmd_export",
    ),
    Command(
        "events",
        "List every event of a session (seq, time, surface, type, text).",
        _setup_id,
        f"{_COMMANDS}:cmd_events",
    ),
    Command(
        "read",
        "Read one event in full, with optional neighbours.",
        _setup_read,
        f"{_COMMANDS}:cmd_read",
    ),
    Command(
        "trace",
        "Show a session's lineage: ancestors, forks and subagents.",
        _setup_id,
        f"{_COMMANDS}:cmd_trace",
    ),
    Command(
        "trace-event",
        "Show an event's replacements, cited sources and derived events.",
        _setup_trace_event,
        f"{_COMMANDS}:cmd_trace_event",
    ),
    Command(
        "search",
        "Search all sessions; best-matching event per session.",
        _setup_search,
        f"{_COMMANDS}:cmd_search",
    ),
    Command(
        "search-events",
        "Search the events of one session.",
        _setup_search_events,
        f"{_COMMANDS}:cmd_search_events",
    ),
    Command(
        "index",
        "Bring the search index up to date (with progress).",
        _setup_index,
        f"{_COMMANDS}:cmd_index",
    ),
    Command(
        "sources",
        "Show which sources are used, why, and what they hold.",
        _setup_sources,
        f"{_SOURCES}:cmd_sources",
    ),
    Command(
        "secrets",
        "List where secrets occur (session, seq, rule, a masked preview); exit 3 if any.",
        _setup_sources,
        "sessionquery.cli._secrets:cmd_secrets",
    ),
    Command(
        "archive",
        "Keep the agents' transcripts when they purge them (--status, --prune-older-than).",
        _setup_archive,
        "sessionquery.cli._archive:cmd_archive",
    ),
    Command(
        "mcp",
        "Serve the five session tools over stdio (MCP).",
        _setup_mcp,
        "sessionquery.cli._mcp:cmd_mcp",
    ),
    Command(
        "serve",
        "Browse every session in a local, read-only web viewer.",
        _setup_serve,
        "sessionquery.cli._serve:cmd_serve",
    ),
    Command(
        "push",
        "Copy this machine's sessions, redacted, into the team database.",
        _setup_push,
        "sessionquery.cli._team:cmd_push",
    ),
    Command(
        "team",
        "Set up the team database; grant, revoke and list access.",
        _setup_team,
        "sessionquery.cli._team:cmd_team",
    ),
    Command(
        "quickstart",
        "Create a sample store from bundled example sessions and try it.",
        _setup_quickstart,
        "sessionquery.cli._quickstart:cmd_quickstart",
    ),
)
"""Every subcommand, in the order ``--help`` lists them."""


class _Version(argparse.Action):
    """``--version``, which reads the installed version only when asked (package metadata
    costs a noticeable part of a ``--help``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        del kwargs
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.exit(message=f"{parser.prog} {version_text()}\n")


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionquery")
    except PackageNotFoundError:
        return "unknown"
