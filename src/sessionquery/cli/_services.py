"""What every command shares: the selected sources, the query service, output and progress.

Invariants: a read command never creates a store (a missing directory is
``SESSION_QUERY_INVALID_CONFIG``); importer problems are summarised on stderr after the
command, whether it succeeded or not; ``--json`` output is exactly one document on stdout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sessionquery.cli import _render as render
from sessionquery.config import Config
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence import JsonlPersistence, SessionPersistence
from sessionquery.persistence.base import ProblemSource
from sessionquery.query.service import SessionQuery

if TYPE_CHECKING:
    from sessionquery.search.sqlite import SqliteSearch

__all__ = [
    "EXIT_OK",
    "ProgressBar",
    "Sources",
    "emit",
    "index_path",
    "open_index",
    "open_persistence",
    "report_problems",
    "selected_sources",
    "service",
    "style_for",
]

EXIT_OK = 0


@dataclass(frozen=True, slots=True)
class Sources:
    roots: list[Path]
    claude: list[Path]
    codex: list[Path]
    index: Path | None

    @property
    def explicit(self) -> bool:
        return bool(self.roots or self.claude or self.codex)


def selected_sources(args: argparse.Namespace) -> Sources:
    def paths(name: str) -> list[Path]:
        values = [*getattr(args, f"pre_{name}", []), *getattr(args, name, [])]
        return [Path(value).expanduser() for value in values]

    index = getattr(args, "index", None) or getattr(args, "pre_index", None)
    return Sources(
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


def open_persistence(sources: Sources, config: Config) -> SessionPersistence:
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


def index_path(sources: Sources, config: Config) -> Path:
    return sources.index if sources.index is not None else config.index_path


@contextmanager
def service(
    args: argparse.Namespace, config: Config, *, search: bool = False
) -> Iterator[SessionQuery]:
    """The query service over the selected sources (with the search index when asked)."""
    sources = selected_sources(args)
    persistence = open_persistence(sources, config)
    try:
        backend = open_index(index_path(sources, config)) if search else None
        with SessionQuery(persistence=persistence, search=backend) as query:
            yield query
    finally:
        report_problems(persistence, sys.stderr)


def open_index(path: Path) -> SqliteSearch:
    from sessionquery.search.sqlite import SqliteSearch

    return SqliteSearch(path)


def report_problems(persistence: object, stream: TextIO, shown: int = 3) -> None:
    """A short stderr summary of what importers could not read."""
    if not isinstance(persistence, ProblemSource):
        return
    problems = list(persistence.problems())
    if not problems:
        return
    stream.write(f"warning: {len(problems)} importer problem(s):\n")
    for problem in problems[:shown]:
        where = problem.path if problem.line is None else f"{problem.path}:{problem.line}"
        stream.write(f"  {where}: {problem.message}\n")
    if len(problems) > shown:
        stream.write(f"  ... and {len(problems) - shown} more\n")


# -- output ---------------------------------------------------------------------------------


def style_for(config: Config) -> render.Style:
    return render.Style(sys.stdout.isatty() and not config.no_color)


def emit(args: argparse.Namespace, config: Config, document: Any, text: Callable[..., Any]) -> int:
    if getattr(args, "json", False):
        sys.stdout.write(render.dumps(document) + "\n")
    else:
        lines = text(style_for(config))
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
