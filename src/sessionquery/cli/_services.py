"""What every command shares: the selected sources, the query service, output and progress.

Invariants:

* a read command never creates a store (a missing directory is ``SESSION_QUERY_INVALID_CONFIG``
  with advice that fits the kind of source);
* sources come from the options when any source option is given, else from the config file
  when it names sources, else from every default location that exists;
* the sources are opened once per command, and their problems are summarised on stderr once,
  after the command, whether it succeeded or not; a failure while counting them is never
  shown instead of the command's own result or error;
* ``--json`` output is exactly one document on stdout; progress goes to stderr;
* everything a command reads from its sources is redacted (``Invocation.persistence`` is a
  :class:`~sessionquery.redact.RedactingPersistence` over the sources, with the known values
  of the environment and the known-secrets file), so the index, the tools and every output
  see only masked data; only ``--no-redact`` (``show``, ``read`` and ``export`` to Markdown
  or HTML, for a person at the terminal, never with ``--json``) reads the sources as stored.
"""

from __future__ import annotations

import argparse
import builtins
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, cast

from sessionquery.cli import _render as render
from sessionquery.config import Config
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence import JsonlPersistence, SessionPersistence
from sessionquery.persistence.base import Problem, ProblemSource
from sessionquery.query.service import SessionQuery
from sessionquery.redact import RedactingPersistence, Redactor, default_redactor

if TYPE_CHECKING:
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch

__all__ = [
    "EXIT_OK",
    "Invocation",
    "ListedOnce",
    "Origin",
    "Progress",
    "Selection",
    "SourceEntry",
    "emit",
    "open_index",
    "open_sources",
    "problems_of",
    "select_sources",
    "style_for",
]

EXIT_OK = 0

Origin = Literal["default", "config", "option"]

_KIND_LABEL = {"root": "store", "claude": "claude", "codex": "codex"}
_KIND_NAME = {
    "root": "sessionquery store",
    "claude": "Claude Code projects directory",
    "codex": "Codex sessions directory",
}


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """One session source and why it is used.

    Attributes:
        kind: ``root`` (a sessionquery JSONL store), ``claude`` or ``codex``.
        path: its directory.
        origin: ``default``, ``config`` or ``option``.
        label: its name inside a combined source (``store``, ``claude``, ``codex2``...).
    """

    kind: str
    path: Path
    origin: Origin
    label: str

    @property
    def exists(self) -> bool:
        """Whether the directory is there."""
        return self.path.is_dir()


@dataclass(frozen=True, slots=True)
class Selection:
    """The sources and the index a command uses.

    Attributes:
        sources: the sources to open, in order.
        index: the search index path.
        index_origin: where the index path came from.
        absent_defaults: default locations that were looked at and not found (only when the
            defaults are used).
        config_file: the config file consulted, or ``None`` when options replaced it.
    """

    sources: tuple[SourceEntry, ...]
    index: Path
    index_origin: Origin
    absent_defaults: tuple[SourceEntry, ...] = ()
    config_file: Path | None = None
    postgres: str | None = None
    """A PostgreSQL DSN (``--postgres`` or the config file): a source, and the search index."""


def _option_paths(args: argparse.Namespace, kind: str) -> list[Path]:
    values = [*getattr(args, f"pre_{kind}", []), *getattr(args, kind, [])]
    return [Path(value).expanduser().absolute() for value in values]


def _entries(pairs: Sequence[tuple[str, Path]], origin: Origin) -> tuple[SourceEntry, ...]:
    counts: dict[str, int] = {}
    out = []
    for kind, path in pairs:
        counts[kind] = counts.get(kind, 0) + 1
        number = counts[kind]
        label = _KIND_LABEL[kind] if number == 1 else f"{_KIND_LABEL[kind]}{number}"
        out.append(SourceEntry(kind, path, origin, label))
    return tuple(out)


def select_sources(args: argparse.Namespace, config: Config) -> Selection:
    """Which sources and index the command line, the config file and the defaults choose.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a broken config file (only read when no
            source option is given or no ``--index`` is).
    """
    kinds = ("root", "claude", "codex")
    chosen = [(kind, path) for kind in kinds for path in _option_paths(args, kind)]
    postgres: str | None = getattr(args, "postgres", None) or getattr(args, "pre_postgres", None)
    raw_index = getattr(args, "index", None) or getattr(args, "pre_index", None)
    index = None if raw_index is None else Path(raw_index).expanduser().absolute()
    settings = None
    if not (chosen or postgres) or index is None:
        settings = config.settings()
    index_origin: Origin = "option"
    if index is None:
        assert settings is not None
        index, index_origin = (
            (settings.index, "config")
            if settings.index is not None
            else (config.index_path, "default")
        )
    config_file = None if settings is None else settings.path
    if chosen or postgres:
        entries = _entries(chosen, "option")
        return Selection(entries, index, index_origin, (), config_file, postgres)
    assert settings is not None
    if settings.names_sources:
        pairs = [(kind, path) for kind in kinds for path in settings.sources.get(kind, ())]
        entries = _entries(pairs, "config")
        return Selection(entries, index, index_origin, (), config_file, settings.postgres)
    defaults = _entries(
        [
            ("root", config.store_root),
            ("claude", config.claude_projects),
            ("codex", config.codex_sessions),
        ],
        "default",
    )
    present = tuple(entry for entry in defaults if entry.exists)
    absent = tuple(entry for entry in defaults if not entry.exists)
    return Selection(present, index, index_origin, absent, config_file)


def _advice(entry: SourceEntry) -> str:
    where = {"option": f"--{entry.kind}", "config": "the config file", "default": "default"}
    lead = f"no {_KIND_NAME[entry.kind]} at {entry.path} (from {where[entry.origin]})"
    if entry.kind == "root":
        return (
            f"{lead}; a store is created when sessions are recorded into it, or try "
            "'sessionquery quickstart' for a sample"
        )
    if entry.kind == "claude":
        return (
            f"{lead}; Claude Code keeps its transcripts in ~/.claude/projects (or "
            "$CLAUDE_CONFIG_DIR/projects)"
        )
    return f"{lead}; Codex keeps its transcripts in ~/.codex/sessions (or $CODEX_HOME/sessions)"


def _nothing_found(selection: Selection) -> SessionQueryError:
    looked = ", ".join(
        f"{entry.path} ({_KIND_NAME[entry.kind]})" for entry in selection.absent_defaults
    )
    return SessionQueryError(
        ErrorCode.INVALID_CONFIG,
        f"no session sources found; looked for {looked or 'nothing'}. Choose sources with "
        "--root, --claude or --codex (or a config file), or try 'sessionquery quickstart'",
    )


def open_sources(selection: Selection, config: Config) -> SessionPersistence:
    """The persistence the selection names (several are combined with ``MultiSource``).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when a selected directory does not exist or
            nothing is selected.
    """
    if not selection.sources and not selection.postgres:
        raise _nothing_found(selection)
    pairs: list[tuple[str, SessionPersistence]] = []
    for entry in selection.sources:
        if not entry.exists:
            raise SessionQueryError(ErrorCode.INVALID_CONFIG, _advice(entry))
        pairs.append((entry.label, _open_one(entry, config)))
    if selection.postgres:
        pairs.append(("postgres", _postgres_store(selection.postgres)))
    if len(pairs) == 1:
        return pairs[0][1]
    from sessionquery.sources import MultiSource

    return MultiSource(pairs)


def _open_one(entry: SourceEntry, config: Config) -> SessionPersistence:
    if entry.kind == "root":
        return JsonlPersistence(entry.path)
    from sessionquery.sources import ClaudeCodeSource, CodexSource

    # One derived cache for every importer source: rows are keyed by each file's identity.
    if entry.kind == "claude":
        return ClaudeCodeSource(entry.path, metadata_cache=config.importer_cache)
    return CodexSource(entry.path, metadata_cache=config.importer_cache)


def _postgres_store(dsn: str) -> SessionPersistence:
    from sessionquery.errors import PersistenceError

    try:
        from sessionquery.persistence.postgres import PostgresPersistence
    except ImportError as exc:
        raise SessionQueryError(ErrorCode.INVALID_CONFIG, str(exc)) from exc
    try:
        return PostgresPersistence(dsn)
    except PersistenceError as exc:
        raise SessionQueryError(ErrorCode.PERSISTENCE_FAILED, str(exc)) from exc


def open_index(path: Path, postgres: str | None = None) -> SqliteSearch | PostgresSearch:
    """The search index: in the PostgreSQL database when one is selected, else at ``path``."""
    if postgres:
        try:
            from sessionquery.search.postgres import PostgresSearch
        except ImportError as exc:
            raise SessionQueryError(
                ErrorCode.INVALID_CONFIG,
                "the PostgreSQL backend needs psycopg 3: pip install 'sessionquery[postgres]'",
            ) from exc
        return PostgresSearch(postgres)
    from sessionquery.search.sqlite import SqliteSearch

    return SqliteSearch(path)


def problems_of(persistence: object) -> list[Problem]:
    """What a source reports it could not read (empty for sources that report nothing)."""
    return list(persistence.problems()) if isinstance(persistence, ProblemSource) else []


class ListedOnce:
    """A persistence whose listing is read once: one command works on one snapshot.

    Every service call lists the store again (titles, id prefixes, filters), and listing a
    large imported history is the slow part of a command; a command that finishes in
    seconds loses nothing by reusing its first listing. Everything else is delegated, and a
    capability the wrapped persistence lacks is missing here too, except :meth:`problems`
    (a :class:`~sessionquery.persistence.base.ProblemSource` always; empty when the wrapped
    persistence reports none). Not for long-running servers.
    """

    def __init__(self, inner: SessionPersistence) -> None:
        self._inner = inner
        self._listing: list[Any] | None = None

    def list(self) -> list[Any]:
        """The wrapped persistence's listing, read on first use."""
        if self._listing is None:
            self._listing = list(self._inner.list())
        return list(self._listing)

    def problems(self) -> builtins.list[Problem]:
        """The wrapped persistence's problems (:func:`problems_of`), read each time."""
        return problems_of(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Invocation:
    """One command's arguments, configuration and (once opened) sources."""

    def __init__(self, args: argparse.Namespace, config: Config) -> None:
        self.args = args
        self.config = config
        self._selection: Selection | None = None
        self._sources: SessionPersistence | None = None
        self._persistence: SessionPersistence | None = None
        self._snapshot: SessionPersistence | None = None
        self._redactor: Redactor | None = None
        self.summarise_problems = True

    @property
    def selection(self) -> Selection:
        """The sources and index this command uses."""
        if self._selection is None:
            self._selection = select_sources(self.args, self.config)
        return self._selection

    @property
    def redacting(self) -> bool:
        """Whether this command's reads are redacted (all but ``--no-redact``).

        Raises:
            UsageError: ``--no-redact`` with ``--json`` or ``--format json`` (machine output
                is always redacted).
        """
        if not getattr(self.args, "no_redact", False):
            return True
        if getattr(self.args, "json", False) or getattr(self.args, "format", None) == "json":
            from sessionquery.cli._parser import UsageError

            raise UsageError("--no-redact is for text read by a person; JSON is always redacted")
        return False

    @property
    def redactor(self) -> Redactor:
        """The redactor over the bundled rules and the known secrets (environment and the
        known-secrets file), built once per command.

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` when the known-secrets file cannot be read.
        """
        if self._redactor is None:
            self._redactor = default_redactor(self.config.known_secrets())
        return self._redactor

    def sources(self) -> SessionPersistence:
        """The selected sources as stored (unredacted): only for finding secrets."""
        if self._sources is None:
            self._sources = open_sources(self.selection, self.config)
        return self._sources

    def persistence(self) -> SessionPersistence:
        """The selected sources, opened once per command, read through the redactor (as
        stored only with ``--no-redact``)."""
        if self._persistence is None:
            sources = self.sources()
            self._persistence = (
                RedactingPersistence(sources, self.redactor) if self.redacting else sources
            )
        return self._persistence

    def snapshot(self) -> SessionPersistence:
        """The sources listed once, for reads that only need a consistent listing (titles).

        Never for the search index: it pairs a listing with the store's change token, and an
        older listing under a newer token would hide a change from every later search.
        """
        if self._snapshot is None:
            self._snapshot = cast(SessionPersistence, ListedOnce(self.persistence()))
        return self._snapshot

    @contextmanager
    def query(self, *, search: bool = False) -> Iterator[SessionQuery]:
        """The query service over the selected sources (with the search index when asked).

        With the index on a terminal, the index is brought up to date first under a progress
        bar, so a first search over a large history shows what it is doing.
        """
        persistence = self.persistence()
        selection = self.selection
        redactor = self.redactor if self.redacting else None
        if search and redactor is None:  # the index only ever holds redacted text
            from sessionquery.cli._parser import UsageError

            raise UsageError("--no-redact cannot be used with a search")
        backend = open_index(selection.index, selection.postgres) if search else None
        with SessionQuery(persistence=persistence, search=backend, redactor=redactor) as query:
            if backend is not None and sys.stderr.isatty():
                progress = Progress(sys.stderr, "Indexing", quiet=True)
                try:
                    backend.update(query.corpus, progress=progress)
                finally:
                    progress.finish()
            yield query

    def report_problems(self, stream: TextIO) -> None:
        """One stderr line counting the sources' problems, if any (never raises)."""
        if self._sources is None or not self.summarise_problems:
            return
        try:
            count = len(problems_of(self._sources))
        except Exception:  # the command's own outcome matters more than this summary
            return
        if count:
            noun = "problem" if count == 1 else "problems"
            stream.write(
                f"warning: {count} {noun} reading the session sources "
                "(run 'sessionquery sources' to see them)\n"
            )


# -- output ---------------------------------------------------------------------------------


def style_for(config: Config) -> render.Style:
    """Colour and emphasis only on a terminal, and never with ``NO_COLOR``; on a terminal
    narrower than 100 columns, lines fit its width."""
    tty = sys.stdout.isatty()
    width = render.WIDTH
    if tty:
        width = min(width, shutil.get_terminal_size((render.WIDTH, 24)).columns)
    return render.Style(tty and not config.no_color, width)


def emit(inv: Invocation, document: Any, text: Callable[[render.Style], list[str]]) -> int:
    """Print the command's result: one JSON document, or safe text lines."""
    if getattr(inv.args, "json", False):
        sys.stdout.write(render.dumps(document) + "\n")
    else:
        style = style_for(inv.config)
        sys.stdout.write("".join(render.terminal_line(line, style) + "\n" for line in text(style)))
    return EXIT_OK


class Progress:
    """Indexing progress on stderr: a bar on a terminal, else a plain line every few seconds.

    The first report is drawn at once; later plain lines at most every ``interval`` seconds,
    and the last one (``done == total``) always. ``quiet`` keeps the bar but drops the plain
    lines (for short builds whose output is the point, such as ``quickstart``).
    """

    def __init__(
        self,
        stream: TextIO,
        label: str,
        *,
        interval: float = 3.0,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        quiet: bool = False,
    ) -> None:
        self._stream = stream
        self._label = label
        self._interval = interval
        self._tty = stream.isatty() if tty is None else tty
        self._quiet = quiet and not self._tty
        self._clock = clock
        self._last: float | None = None
        self._drawn = False

    def start(self) -> None:
        """Say at once that work began (before the first count is known)."""
        if self._quiet:
            return
        if self._tty:
            self._stream.write(f"\r{self._label}: reading the sources…")
            self._drawn = True
        else:
            self._stream.write(f"{self._label}: reading the sources…\n")
        self._stream.flush()

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` sessions."""
        if total <= 0 or self._quiet:
            return
        if self._tty:
            self._bar(done, total)
            return
        now = self._clock()
        if self._last is not None and now - self._last < self._interval and done < total:
            return
        self._last = now
        percent = 100 * done // total
        self._stream.write(f"{self._label}: {done} of {total} sessions ({percent}%)\n")
        self._stream.flush()

    def _bar(self, done: int, total: int, width: int = 30) -> None:
        filled = width * min(done, total) // total
        bar = "#" * filled + "." * (width - filled)
        self._stream.write(f"\r{self._label} [{bar}] {done}/{total} sessions")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        """End the bar's line."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False
