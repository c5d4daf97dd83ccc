"""The composition root: from a :class:`~sessionquery.config.Config` and the sources an
operator chose to opened sources, a search index and the query service.

Every entry point (the command line, ``sessionquery mcp``, the web viewer, ``push``) builds one
:class:`App` and asks it for what it needs; nothing else opens sources or indexes. The one id
resolver (:class:`SessionIds`) and the one problems helper (:func:`problems_of`) live here too.

Invariants:

* sources come from the options when any source option is given, else from the config file
  when it names sources, else from every default location that exists (the store, the sample
  ``quickstart`` built, Claude Code, Codex, in that order); a source that was
  named (option or config file) and does not exist is ``INVALID_CONFIG`` with advice for its
  kind, so a typo never looks like an empty history;
* nothing is created on disk while selecting or opening sources; the index file appears when
  the index is first written;
* every source passes through :func:`open_source` (the importer seam) and then
  :func:`prepare_source` (the one place per-source wrappers such as the archive apply), so no
  entry point can open a source another way;
* with an archive under the data home (``sessionquery archive``), every importer source reads
  through it (:func:`prepare_source`): files gone from the folder are served from the archive,
  and a default folder that is gone altogether is still opened when the archive holds files
  of it. Without one, nothing touches the archive's folder;
* everything read through an :class:`App` is redacted (contract 4): :meth:`App.persistence`
  is one :class:`~sessionquery.redact.RedactingPersistence` over the whole opened corpus
  (above the archive), and :meth:`App.service` gives the service the same redactor (live
  sessions, snippets). Only an app built with ``redact=False`` (the command line's
  ``--no-redact`` for a person at the terminal) reads as stored, and it refuses a search
  index (an index only ever holds masked text). :meth:`App.sources` is the corpus as stored,
  for finding secrets only;
* :class:`App` opens the sources once and lists them at most once for ids and titles
  (:meth:`App.snapshot`); the search index pairs its own listing with the store's change
  token and never uses that snapshot;
* importing this module imports no backend: SQLite, PostgreSQL and the importers are
  imported when first opened, so a command pays only for what it uses.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from sessionquery.config import Config
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.shortids import SHORT_ID_MIN, AmbiguousId, SessionIds
from sessionquery.sources.registry import KINDS, SourceKind, source_kind

if TYPE_CHECKING:
    from sessionquery.archive import Archive, ArchiveReport, SourceUnits
    from sessionquery.persistence.base import Problem, SessionPersistence
    from sessionquery.query.service import SessionQuery
    from sessionquery.redact import Redactor
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch
    from sessionquery.tools.access import WorkspaceRule

    SearchIndex = SqliteSearch | PostgresSearch

__all__ = [
    "SAMPLE_LABEL",
    "SHORT_ID_MIN",
    "SOURCE_ORDER",
    "AmbiguousId",
    "App",
    "ListedOnce",
    "Origin",
    "Selection",
    "SessionIds",
    "SessionOrigin",
    "SourceEntry",
    "SourceOptions",
    "kind_of",
    "open_index",
    "open_source",
    "open_sources",
    "prepare_source",
    "problems_of",
    "select_sources",
    "shown_dsn",
]

Origin = Literal["default", "config", "option"]
"""Where a source or the index path came from."""

SOURCE_ORDER = tuple("root" if kind.kind == "store" else kind.kind for kind in KINDS)
"""The kinds of source, in the order they are combined (and labelled): ``root`` (the
sessionquery store) and every other kind of :mod:`sessionquery.sources.registry`."""

SAMPLE_LABEL = "sample"
"""The label of the sample store ``quickstart`` builds, a default source while it exists."""

_STORE_ADVICE = (
    "a store is created when sessions are recorded into it, or try "
    "'sessionquery quickstart' for a sample"
)
_LEGACY_OPTIONS = ("root", "claude", "codex")  # kinds that have an option of their own


def kind_of(name: str) -> SourceKind:
    """The registry kind of a source kind name (``root`` is the store).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a name that is no kind.
    """
    found = source_kind(name)
    if found is None:
        kinds = ", ".join(SOURCE_ORDER)
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG, f"unknown source kind {name!r}; expected one of {kinds}"
        )
    return found


# -- what the operator chose ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The sources and index an operator named on the command line (typed, parsed once).

    Attributes:
        sources: ``(kind, path)`` pairs in the order given; ``kind`` is one of
            :data:`SOURCE_ORDER` (``root`` for a store, also as ``--source store=...``); paths
            are absolute.
        postgres: a PostgreSQL DSN (session store and search index), or ``None``.
        index: the SQLite index path, or ``None`` for the config file's or the default one.
    """

    sources: tuple[tuple[str, Path], ...] = ()
    postgres: str | None = None
    index: Path | None = None

    @property
    def names_sources(self) -> bool:
        """Whether the options choose the sources (then they replace config and defaults)."""
        return bool(self.sources) or bool(self.postgres)


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """One session source and why it is used.

    Attributes:
        kind: ``root`` (a sessionquery JSONL store) or another kind of :data:`SOURCE_ORDER`
            (``claude``, ``codex``, ``gemini``...).
        path: its directory (or database file).
        origin: ``default``, ``config`` or ``option``.
        label: its name inside a combined source (``store``, ``claude``, ``codex2``...).
        companions: further locations read with ``path`` as this one source (a default
            location's, see ``SourceKind.companions``: Cursor's user folder).
    """

    kind: str
    path: Path
    origin: Origin
    label: str
    companions: tuple[Path, ...] = ()

    @property
    def exists(self) -> bool:
        """Whether the directory (or database file), or one of its companions, is there."""
        return self.path.exists() or any(path.exists() for path in self.companions)

    @property
    def name(self) -> str:
        """The display name of its kind (``Claude Code``; ``store`` for a store)."""
        return "store" if self.kind == "root" else kind_of(self.kind).name

    @property
    def title(self) -> str:
        """How a person calls it (``store``, ``sample``, ``Claude Code``, ``Codex``)."""
        return SAMPLE_LABEL if self.label == SAMPLE_LABEL else self.name


@dataclass(frozen=True, slots=True)
class Selection:
    """The sources and the index an entry point uses.

    Attributes:
        sources: the sources to open, in order.
        index: the search index path.
        index_origin: where the index path came from.
        absent_defaults: default locations that were looked at and not found (only when the
            defaults are used).
        config_file: the config file consulted, or ``None`` when options replaced it.
        postgres: a PostgreSQL DSN (``--postgres`` or the config file): a source, and the
            search index.
    """

    sources: tuple[SourceEntry, ...]
    index: Path
    index_origin: Origin
    absent_defaults: tuple[SourceEntry, ...] = ()
    config_file: Path | None = None
    postgres: str | None = None

    def only(self, entry: SourceEntry) -> Selection:
        """This selection reduced to one of its sources (same index)."""
        return Selection((entry,), self.index, self.index_origin)


def _entries(pairs: Iterable[tuple[str, Path]], origin: Origin) -> tuple[SourceEntry, ...]:
    ordered = sorted(pairs, key=lambda pair: SOURCE_ORDER.index(pair[0]))
    counts: dict[str, int] = {}
    out = []
    for kind, path in ordered:
        counts[kind] = counts.get(kind, 0) + 1
        number = counts[kind]
        base = kind_of(kind).label
        label = base if number == 1 else f"{base}{number}"
        out.append(SourceEntry(kind, path, origin, label))
    return tuple(out)


def select_sources(config: Config, options: SourceOptions = SourceOptions()) -> Selection:
    """Which sources and index the options, the config file and the defaults choose.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a broken config file (read only when the
            options leave the sources or the index to it).
    """
    settings = None
    if not options.names_sources or options.index is None:
        settings = config.settings()
    index = options.index
    index_origin: Origin = "option"
    if index is None:
        assert settings is not None
        index, index_origin = (
            (settings.index, "config")
            if settings.index is not None
            else (config.index_path, "default")
        )
    config_file = None if settings is None else settings.path
    if options.names_sources:
        entries = _entries(options.sources, "option")
        return Selection(entries, index, index_origin, (), config_file, options.postgres)
    assert settings is not None
    if settings.names_sources:
        pairs = [(kind, path) for kind in SOURCE_ORDER for path in settings.sources.get(kind, ())]
        entries = _entries(pairs, "config")
        return Selection(entries, index, index_origin, (), config_file, settings.postgres)
    located = config.default_sources or (
        ("store", config.store_root),
        ("claude", config.claude_projects),
        ("codex", config.codex_sessions),
    )
    defaults = tuple(
        replace(entry, companions=kind_of(entry.kind).companions(config.environment, entry.path))
        for entry in _entries(
            [("root" if kind == "store" else kind, path) for kind, path in located], "default"
        )
    )
    sample = SourceEntry("root", config.sample_store, "default", SAMPLE_LABEL)
    present = tuple(entry for entry in defaults if entry.exists)
    if sample.exists:  # after the store, before the agents' histories; never "absent"
        stores = sum(1 for entry in present if entry.kind == "root")
        present = (*present[:stores], sample, *present[stores:])
    found = {entry.kind for entry in present if entry is not sample}
    absent: list[SourceEntry] = []
    for entry in defaults:  # a kind's alternative locations: the first one that is absent
        if not entry.exists and entry.kind not in found:
            found.add(entry.kind)
            absent.append(entry)
    return Selection(present, index, index_origin, tuple(absent), config_file)


# -- opening ----------------------------------------------------------------------------------


def _advice(entry: SourceEntry) -> str:
    option = f"--{entry.kind}" if entry.kind in _LEGACY_OPTIONS else "--source"
    where = {"option": option, "config": "the config file", "default": "default"}
    kind = kind_of(entry.kind)
    lead = f"no {kind.noun} at {entry.path} (from {where[entry.origin]})"
    if entry.kind == "root":
        return f"{lead}; {_STORE_ADVICE}"
    return f"{lead}; {kind.name} keeps its transcripts in {kind.where}"


def _nothing_found(selection: Selection) -> SessionQueryError:
    looked = ", ".join(
        " + ".join(map(str, (entry.path, *entry.companions))) + f" ({kind_of(entry.kind).noun})"
        for entry in selection.absent_defaults
    )
    return SessionQueryError(
        ErrorCode.INVALID_CONFIG,
        f"no session sources found; looked for {looked or 'nothing'}. Choose sources with "
        "--root, --claude, --codex or --source KIND=PATH (or a config file), or try "
        "'sessionquery quickstart'",
    )


def open_source(
    entry: SourceEntry, config: Config, *, missing_ok: bool = False
) -> SessionPersistence:
    """One source, opened as its kind's persistence (the importer seam).

    Args:
        entry: the source.
        config: where data lives.
        missing_ok: open an importer whose folder is gone (the archive holds its files).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when its directory does not exist.
    """
    if not entry.exists and not (missing_ok and _archivable(entry.kind)):
        raise SessionQueryError(ErrorCode.INVALID_CONFIG, _advice(entry))
    # One derived cache for every importer source: rows are keyed by each unit's location.
    kind = kind_of(entry.kind)
    return kind.open(entry.path, metadata_cache=config.importer_cache, also=entry.companions)


def prepare_source(
    entry: SourceEntry | None,
    persistence: SessionPersistence,
    config: Config,
    *,
    archive: Archive | None = None,
) -> SessionPersistence:
    """Every wrapper an opened source gets before anything reads it.

    The one place where the archive (contract 5) wraps a source; ``entry`` is ``None`` for the
    PostgreSQL store. With an ``archive``, an importer source reads the files gone from its
    folder from the archive. Redaction is not per source: :meth:`App.persistence` wraps the
    combined corpus once, above this (contract 4).
    """
    del config
    if archive is not None and entry is not None and _archivable(entry.kind):
        from sessionquery.sources._catalog import Catalog

        if isinstance(persistence, Catalog):
            persistence.use_units(archive.units_of(entry.kind, persistence.unit_store))
    return persistence


_URL_PASSWORD = re.compile(r"(?P<lead>postgres(?:ql)?://[^:/@?#\s]*):[^@/?#\s]*@")
_PARAM_PASSWORD = re.compile(r"(?P<lead>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&]+)")


def shown_dsn(dsn: str) -> str:
    """A PostgreSQL connection string as it may be shown to the operator: without a password
    (in the URL's user part or as a ``password=`` parameter)."""
    masked = _URL_PASSWORD.sub(lambda m: f"{m.group('lead')}:***@", dsn)
    return _PARAM_PASSWORD.sub(lambda m: f"{m.group('lead')}***", masked)


def _archivable(kind: str) -> bool:
    """Whether the archive keeps a kind: every importer (the agents' own transcripts, which
    they may purge), not sessionquery's own store."""
    return kind != "root" and kind_of(kind).unit_store is not None


def _kept(entry: SourceEntry, archive: Archive | None) -> bool:
    """Whether the archive holds units of an importer source whose location is gone."""
    return (
        archive is not None
        and _archivable(entry.kind)
        and not entry.exists
        and archive.holds(entry.kind, entry.path)
    )


def _postgres_store(dsn: str) -> SessionPersistence:
    from sessionquery.errors import PersistenceError

    try:
        from sessionquery.persistence.postgres import PostgresPersistence
    except ImportError as exc:
        raise _needs_psycopg() from exc
    try:
        return PostgresPersistence(dsn)
    except PersistenceError as exc:
        raise SessionQueryError(ErrorCode.PERSISTENCE_FAILED, str(exc)) from exc


def _needs_psycopg() -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INVALID_CONFIG,
        "the PostgreSQL backend needs psycopg 3: pip install 'sessionquery[postgres]'",
    )


def open_sources(
    selection: Selection, config: Config, *, archive: Archive | None = None
) -> SessionPersistence:
    """The persistence the selection names (several are combined with ``MultiSource``).

    With an ``archive``, importer sources read through it, and a selected or default importer
    folder that is gone is opened when the archive holds files of it.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when a selected directory does not exist or
            nothing is selected; ``PERSISTENCE_FAILED`` when the PostgreSQL store cannot be
            reached.
    """
    kept = tuple(entry for entry in selection.absent_defaults if _kept(entry, archive))
    if not selection.sources and not selection.postgres and not kept:
        raise _nothing_found(selection)
    pairs: list[tuple[str, SessionPersistence]] = []
    for entry in (*selection.sources, *kept):
        opened = open_source(entry, config, missing_ok=_kept(entry, archive))
        pairs.append((entry.label, prepare_source(entry, opened, config, archive=archive)))
    if selection.postgres:
        store = _postgres_store(selection.postgres)
        pairs.append(("postgres", prepare_source(None, store, config)))
    if len(pairs) == 1:
        return pairs[0][1]
    from sessionquery.sources.multi import MultiSource

    return MultiSource(pairs)


def open_index(selection: Selection) -> SearchIndex:
    """The search index: in the PostgreSQL database when one is selected, else the SQLite file.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when PostgreSQL is selected and psycopg is not
            installed; ``INDEX_FAILED`` when the index cannot be opened.
    """
    if selection.postgres:
        try:
            from sessionquery.search.postgres import PostgresSearch
        except ImportError as exc:
            raise _needs_psycopg() from exc
        return PostgresSearch(selection.postgres)
    from sessionquery.search.sqlite import SqliteSearch

    return SqliteSearch(selection.index)


def problems_of(persistence: object) -> list[Problem]:
    """What a source reports it could not read (empty for sources that report nothing)."""
    from sessionquery.persistence.base import ProblemSource

    return list(persistence.problems()) if isinstance(persistence, ProblemSource) else []


def _natively(persistence: object, capability: type) -> bool:
    """Whether ``persistence`` has ``capability`` of its own: through redaction (which
    changes neither ids nor the listing's order) down to the store that has it, never by a
    wrapper that would list the whole store to provide it."""
    from sessionquery.redact import RedactingPersistence

    while isinstance(persistence, RedactingPersistence):
        persistence = persistence.inner
    return isinstance(persistence, capability)


class ListedOnce:
    """A persistence whose listing is read once: one command works on one snapshot.

    Every service call lists the store again (titles, id prefixes, filters), and listing a
    large imported history is the slow part of a command; a command that finishes in
    seconds loses nothing by reusing its first listing. Everything else is delegated, and a
    capability the wrapped persistence lacks is missing here too, except :meth:`problems`
    (a :class:`~sessionquery.persistence.base.ProblemSource` always; empty when the wrapped
    persistence reports none), :meth:`list_newest` and :meth:`list_outline`.

    A store that pages and outlines its listing itself (PostgreSQL, redacted or not) is not
    listed whole for those two: a page is its own query and the outline (short ids, counts)
    another, read once, so a command over a team database of 100,000 sessions parses the
    headers of the sessions it shows only. A session pushed between those reads may be shown
    by its full id. Any other store's pages and outline come from its one listing.
    Not for long-running servers, and never for the search index.
    """

    def __init__(self, inner: SessionPersistence) -> None:
        self._inner = inner
        self._listing: list[Any] | None = None
        self._outline: list[Any] | None = None
        self._paged: dict[str, Any] = {}  # entries of pages read from the store itself

    def list(self) -> list[Any]:
        """The wrapped persistence's listing, read on first use."""
        if self._listing is None:
            self._listing = list(self._inner.list())
        return list(self._listing)

    def problems(self) -> builtins.list[Problem]:
        """The wrapped persistence's problems (:func:`problems_of`), read each time."""
        return problems_of(self._inner)

    def pages_itself(self) -> bool:
        """Whether pages and the outline are the store's own queries (nothing was listed
        whole yet and the store, redacted or not, pages and outlines itself)."""
        from sessionquery.persistence.base import NewestListing, OutlineListing

        inner = self._inner
        return (
            self._listing is None
            and _natively(inner, NewestListing)
            and _natively(inner, OutlineListing)
        )

    def list_newest(self, filters: Any, *, after: Any, limit: int) -> builtins.list[Any]:
        """A page in the listing order (``NewestListing``): the store's own query when it
        pages itself and nothing was listed whole yet, else cut from the one listing."""
        from sessionquery.persistence.base import NewestListing
        from sessionquery.query.listing import newest_entries

        inner = self._inner
        if self._listing is None and _natively(inner, NewestListing):
            assert isinstance(inner, NewestListing)
            entries = inner.list_newest(filters, after=after, limit=limit)
            self._paged.update((entry.header.id, entry) for entry in entries)
            return entries
        return newest_entries(self.list(), filters, after=after, limit=limit)

    def list_outline(self) -> builtins.list[Any]:
        """Every listed session's outline (``OutlineListing``), read once: the store's own
        when it outlines itself and nothing was listed whole yet, else the listing's."""
        from sessionquery.persistence.base import OutlineListing, outline_of

        if self._outline is None:
            inner = self._inner
            if self._listing is None and _natively(inner, OutlineListing):
                assert isinstance(inner, OutlineListing)
                self._outline = inner.list_outline()
            else:
                self._outline = [outline_of(entry.header) for entry in self.list()]
        return list(self._outline)

    def entries(self, ids: Iterable[str]) -> builtins.list[Any]:
        """The listing entries of ``ids`` that are listed: from the one listing when it was
        read, else from the pages read (a session in neither is asked for on its own)."""
        wanted = list(dict.fromkeys(ids))
        if self._listing is not None:
            chosen = set(wanted)
            return [entry for entry in self._listing if entry.header.id in chosen]
        found = []
        for session_id in wanted:
            entry = self._paged.get(session_id) or self._inner.stat(session_id)
            if entry is not None:
                found.append(entry)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# -- where a session comes from ------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionOrigin:
    """Which source a session comes from.

    Attributes:
        entry: the source (``None`` for the PostgreSQL store).
        own_id: the session's id inside that source (the agent's own id; it differs from the
            combined id when that carries a ``<label>:`` prefix).
    """

    entry: SourceEntry | None
    own_id: str


# -- the application --------------------------------------------------------------------------


class App:
    """One entry point's sources, index and service, opened from a config and options.

    Opening is lazy: the selection is made, and the sources opened, on first use; a
    configuration error is raised then (``INVALID_CONFIG``), so a server can still start and
    report it.

    Args:
        config: where data lives (:meth:`Config.from_env` at an entry point).
        options: the sources and index the operator named.
        redact: mask secrets in everything read (the default); ``False`` only for a person
            reading one session at a terminal (``--no-redact``).
    """

    def __init__(
        self, config: Config, options: SourceOptions | None = None, *, redact: bool = True
    ) -> None:
        self.config = config
        self.options = options if options is not None else SourceOptions()
        self.redacting = redact
        self._selection: Selection | None = None
        self._sources: SessionPersistence | None = None
        self._persistence: SessionPersistence | None = None
        self._snapshot: ListedOnce | None = None
        self._ids: SessionIds | None = None
        self._redactor: Redactor | None = None
        self._archive: Archive | None = None
        self._archive_looked = False

    @property
    def selection(self) -> Selection:
        """The sources and index in use.

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` for a broken config file.
        """
        if self._selection is None:
            self._selection = select_sources(self.config, self.options)
        return self._selection

    @property
    def opened(self) -> bool:
        """Whether the sources have been opened (their problems can be counted)."""
        return self._sources is not None

    @property
    def redactor(self) -> Redactor:
        """The redactor: the bundled rules and the known secrets of the environment and the
        known-secrets file (:meth:`Config.known_secrets`), built once.

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` when the known-secrets file cannot be read.
        """
        if self._redactor is None:
            from sessionquery.redact import default_redactor

            self._redactor = default_redactor(self.config.known_secrets())
        return self._redactor

    def sources(self) -> SessionPersistence:
        """The selected sources as stored (through the archive when there is one), opened
        once: only for finding secrets (``sessionquery secrets``) and where a session comes
        from (:meth:`origin`); everything that returns text reads :meth:`persistence`."""
        if self._sources is None:
            self._sources = open_sources(self.selection, self.config, archive=self.archive())
        return self._sources

    def persistence(self) -> SessionPersistence:
        """The selected sources, opened once and read through the redactor (as stored only
        with ``redact=False``); see :func:`open_sources` for the errors."""
        if self._persistence is None:
            sources = self.sources()
            if self.redacting:
                from sessionquery.redact import RedactingPersistence

                sources = RedactingPersistence(sources, self.redactor)
            self._persistence = sources
        return self._persistence

    # -- the archive

    def archive(self, *, create: bool = False) -> Archive | None:
        """The archive under the data home (opened once), or ``None`` when there is none and
        ``create`` is false."""
        if self._archive is None and not create and not self.config.archive_dir.exists():
            self._archive_looked = True  # no archive folder: nothing to import or open
        if self._archive is None and (create or not self._archive_looked):
            from sessionquery.archive.setup import open_archive

            # The archive stores what redaction would show (docs/archive.md, "Secrets"), unless
            # the config asks for raw bytes (``archive_raw``).
            redactor = self.redactor if self.redacting else None
            self._archive = open_archive(self.config, create=create, redactor=redactor)
            self._archive_looked = True
        return self._archive

    def archive_units(self) -> list[SourceUnits]:
        """What the archive copies: the selected importer sources' units (also those of a
        default location that is gone but archived)."""
        from sessionquery.archive import SourceUnits

        selection, archive = self.selection, self.archive()
        kept = [entry for entry in selection.absent_defaults if _kept(entry, archive)]
        out = []
        for entry in (*selection.sources, *kept):
            kind = kind_of(entry.kind)
            store = (
                kind.units(entry.path, also=entry.companions) if _archivable(entry.kind) else None
            )
            if store is not None:
                out.append(SourceUnits(entry.kind, store))
        return out

    def archive_now(self, *, wait: bool = True, progress: Any = None) -> ArchiveReport:
        """Archive the selected importer sources now; sources opened before read through the
        archive afterwards.

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED`` when the archive cannot be written.
        """
        archive = self.archive(create=True)
        assert archive is not None
        report = archive.run(self.archive_units(), wait=wait, progress=progress)
        if self._persistence is not None and not report.skipped:
            self._sources, self._persistence = None, None
            self._snapshot, self._ids = None, None
        return report

    def archive_on_update(self) -> ArchiveReport | None:
        """With ``archive = true`` in the config file, archive before the index is brought up
        to date (skipped, not waited for, while another process is archiving); else
        ``None``."""
        try:
            enabled = self.config.settings().archive
        except SessionQueryError:
            return None  # a broken config file is reported where the sources are chosen
        if not enabled or not self.archive_units():
            return None
        return self.archive_now(wait=False)

    def snapshot(self) -> SessionPersistence:
        """The sources listed once, for reads that only need one consistent listing (ids,
        titles). Never for the search index, which pairs a listing with the change token."""
        return cast("SessionPersistence", self.listed_once())

    def listed_once(self) -> ListedOnce:
        """:meth:`snapshot` as what it is, for its listing's pages, outline and entries."""
        if self._snapshot is None:
            self._snapshot = ListedOnce(self.persistence())
        return self._snapshot

    def open_index(self) -> SearchIndex:
        """A new handle on the selected search index (the caller closes it)."""
        return open_index(self.selection)

    def service(
        self,
        search: SearchIndex | None = None,
        *,
        snapshot: bool = False,
        through: Callable[[SessionPersistence], SessionPersistence] | None = None,
    ) -> SessionQuery:
        """A query service over the sources, searching with ``search`` (closed with it).

        Args:
            search: the index to search with, or ``None`` for a service without search.
            snapshot: read the one listing of :meth:`snapshot` (for a short command without
                search; never with ``search``, never in a long-running server).
            through: a wrapper the service reads the sources through (an observer such as
                the command line's title recorder; it must delegate everything it does not
                observe).
        """
        from sessionquery.query.service import SessionQuery

        if snapshot and search is not None:
            raise ValueError("the search index never reads the snapshot")
        if search is not None and not self.redacting:
            raise SessionQueryError(
                ErrorCode.INVALID_CONFIG, "a search index only ever reads redacted sessions"
            )
        persistence = self.snapshot() if snapshot else self.persistence()
        if through is not None:
            persistence = through(persistence)
        redactor = self.redactor if self.redacting else None
        return SessionQuery(persistence=persistence, search=search, redactor=redactor)

    @contextmanager
    def query(self, *, search: bool = False) -> Iterator[SessionQuery]:
        """The query service over the sources, with a new index handle when ``search``."""
        backend = self.open_index() if search else None
        with self.service(backend) as query:
            yield query

    def session_ids(self) -> SessionIds:
        """The short ids and resolver of the sources' listing (its outline, read once)."""
        if self._ids is None:
            self._ids = SessionIds(self.listed_once().list_outline())
        return self._ids

    def resolve(self, text: str) -> str:
        """The full id ``text`` names (see :meth:`SessionIds.resolve`)."""
        return self.session_ids().resolve(text)

    def workspaces(self) -> WorkspaceRule | None:
        """The tools' workspace rule: over a team database (``sessionquery team init``) the
        repository identity of :class:`sessionquery.team.TeamWorkspaces`; else ``None``, the
        exact-cwd rule."""
        dsn = self.selection.postgres
        if dsn is None:
            return None
        from sessionquery.team.access import team_rule

        return team_rule(dsn, self.config)

    def origin(self, session_id: str) -> SessionOrigin | None:
        """Which selected source holds ``session_id`` (``None`` when none does)."""
        from sessionquery.sources.multi import MultiSource

        persistence = self.sources()  # ids and origins are the same redacted or not
        by_label = {entry.label: entry for entry in self.selection.sources}
        if isinstance(persistence, MultiSource):
            found = persistence.origin_of(session_id)
            return None if found is None else SessionOrigin(by_label.get(found[0]), found[1])
        if persistence.stat(session_id) is None:
            return None
        only = self.selection.sources[0] if self.selection.sources else None
        return SessionOrigin(only, session_id)

    def resume(self, session_id: str, cwd: str | None, parent: str | None) -> str | None:
        """:func:`sessionquery.resume.resume_command` for a session of these sources (``None``
        when it has none).

        ``parent`` is the session's parent id (a Claude Code session with a parent is a
        subagent's transcript, which is not resumable on its own).
        """
        origin = self.origin(session_id)
        if origin is None or origin.entry is None:
            return None
        from sessionquery.resume import resume_command

        return resume_command(origin.entry.kind, origin.own_id, cwd, child=parent is not None)

    def problems(self) -> list[Problem]:
        """What the opened sources could not read (empty before they are opened)."""
        return [] if self._sources is None else problems_of(self._sources)
