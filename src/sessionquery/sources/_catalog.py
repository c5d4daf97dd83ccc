"""The common body of the importers: scanning units, the metadata cache, ids, reading.

``list()`` asks the :class:`~._units.UnitStore` for its units and reads only units whose stamp
(or the stamp of a side unit their parse read) differs from the one in the metadata cache
(memory, or a SQLite file shared by processes; see :mod:`._cache`), keeping just headers,
counts and problems. A store with a cheap :meth:`~._units.UnitStore.fingerprint` (a database)
is not even scanned when its fingerprint is the cached one. ``open_read`` re-reads the one
unit it needs (a small LRU keeps the last few parsed units for parent/child reads) and
freezes its events; ``read_documents`` takes the searchable text straight from the unfrozen
drafts.

Ids are unique within a source by construction (:mod:`._ids`). Any failure while reading one
unit (including ``RecursionError`` and ``MemoryError``) is a problem of that unit only.

Under :func:`~sessionquery.persistence.documents.checking` (a search's or a listing's deadline)
parsing checks the deadline every few thousand lines or megabyte, also inside one big unit;
its ``ABORTED`` stops the listing or read (it is never a problem of the unit, and nothing of
the interrupted unit is cached), and a listing keeps the units it finished in the metadata
cache, so the next one continues.

A source may add a *title overlay* (:class:`TitleOverlay`): titles kept outside the
transcripts (Codex's thread database) appended as a last ``session/title`` event; the title
is part of the session's revision, so a renamed thread is re-read.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self, cast

from sessionquery.errors import PersistenceCorrupt, PersistenceNotFound, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader, extract_event_text, fold_title
from sessionquery.model.repair import interrupted_turn_closers
from sessionquery.model.surface import SurfaceClass
from sessionquery.model.title import TITLE_TYPE, title_text
from sessionquery.persistence.base import DocumentLog, PersistedSession, TextDocument
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import Draft
from sessionquery.sources._cache import MetadataCache
from sessionquery.sources._common import ORIGIN_KEY, Problem
from sessionquery.sources._files import DEFAULT_MAX_FILE_BYTES
from sessionquery.sources._handle import ReadHandleImpl
from sessionquery.sources._ids import Summary, resolve_ids
from sessionquery.sources._parsed import (
    MISSING_PREFIX,
    PRESENT,
    ParsedFile,
    ParsedSession,
    Parser,
    Sides,
    UnitInput,
)
from sessionquery.sources.units import ArchiveBacked, Role, SkippedFile, Unit, UnitStore

__all__ = ["Catalog", "ParsedFile", "ParsedSession", "ReadHandleImpl", "TitleOverlay", "UnitsAt"]

UnitsAt = Callable[..., UnitStore]
"""``units(root, *, follow_outside_links=False)``: the raw units of one location of a kind."""

_FLUSH_SECONDS = 2.0
"""A first listing stores what it read in the cache file at least this often."""

_STORE_ROW = ""
"""The cache row (an empty key, never a unit's) holding a store's fingerprint and units."""


class TitleOverlay(Protocol):
    """Titles a source keeps beside its transcripts, by the sessions' own ids."""

    @property
    def label(self) -> str:
        """What the title event's origin names (a database file name)."""
        ...

    def titles(self) -> Mapping[str, str]:
        """The current titles (read again when their store changed)."""
        ...


class _Entry:
    __slots__ = ("depends", "problems", "summaries", "unit")

    def __init__(
        self,
        unit: Unit,
        summaries: tuple[Summary, ...],
        problems: tuple[Problem, ...],
        depends: Mapping[str, str | None],
    ) -> None:
        self.unit = unit
        self.summaries = summaries
        self.problems = problems
        self.depends = depends

    def payload(self) -> dict[str, Any]:
        return {
            "sessions": [s.to_json() for s in self.summaries],
            "problems": [[p.path, p.line, p.message] for p in self.problems],
            "size": self.unit.size,
            "role": self.unit.role,
            "depends": dict(self.depends),
        }

    @classmethod
    def from_row(cls, key: str, stamp: str, payload: Any) -> _Entry | None:
        try:
            summaries = tuple(Summary.from_json(s) for s in payload["sessions"])
            problems = tuple(Problem(str(p), q, str(m)) for p, q, m in payload["problems"])
            depends = {
                str(k): (None if v is None else str(v)) for k, v in payload["depends"].items()
            }
            size = payload["size"]
            role: Role = "side" if payload["role"] == "side" else "transcript"
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return cls(
            Unit(key, stamp, size if type(size) is int else None, role),
            summaries,
            problems,
            depends,
        )


class Catalog:
    """Scanning, caching, id resolution and reading shared by the importers.

    Args:
        units: the raw units to read.
        parser: turns one unit into sessions and problems.
        metadata_cache: a SQLite file for the metadata cache, or ``None`` for memory only.
        max_file_bytes: larger units are reported and skipped.
        titles: titles kept beside the transcripts, if the source has any.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a ``metadata_cache`` file that is not ours.
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    _PARSED_CACHE = 4

    kind: ClassVar[str | None] = None
    """The registry kind of this importer (``claude``, ``codex``...), naming its label."""

    _recipe: ClassVar[tuple[UnitsAt, Parser] | None] = None

    def __init_subclass__(
        cls,
        *,
        kind: str | None = None,
        units: UnitsAt | None = None,
        parser: Parser | None = None,
        **rest: Any,
    ) -> None:
        """An importer declares its kind, units and parser as class keywords:
        ``class ClaudeCodeSource(Catalog, kind="claude", units=claude_units,
        parser=parse_claude_file)``."""
        super().__init_subclass__(**rest)
        if kind is not None:
            cls.kind = kind
        if units is not None and parser is not None:
            cls._recipe = (units, parser)

    @classmethod
    def _declared(cls) -> tuple[UnitsAt, Parser]:
        if cls._recipe is None:
            raise TypeError(f"{cls.__name__} declares no units and parser")
        return cls._recipe

    @classmethod
    def unit_parser(cls) -> Parser:
        """The kind's parser (each importer class names its own), used by :meth:`from_units`.

        Raises:
            TypeError: the class declares none.
        """
        return cls._declared()[1]

    @classmethod
    def units_at(cls, root: Path) -> UnitStore:
        """The raw units of one location of this kind (each importer class names its own).

        Raises:
            TypeError: the class declares none.
        """
        return cls._declared()[0](Path(root))

    @classmethod
    def from_units(
        cls,
        units: UnitStore,
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> Self:
        """This importer over another store of its kind's units (the archive's, say), parsed
        exactly as the importer parses its own location.

        Raises:
            TypeError: the class declares no parser.
        """
        parser = cls.unit_parser()
        source = cls.__new__(cls)
        Catalog.__init__(
            source, units, parser, metadata_cache=metadata_cache, max_file_bytes=max_file_bytes
        )
        return source

    def __init__(
        self,
        units: UnitStore,
        parser: Parser,
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        titles: TitleOverlay | None = None,
    ) -> None:
        if type(max_file_bytes) is not int or max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be a positive integer, not {max_file_bytes!r}")
        self._store = units
        self._root = units.location
        self._parser = parser
        self._max_bytes = max_file_bytes
        self._overlay = titles
        self._titles: Mapping[str, str] = {}
        self._cache = MetadataCache(metadata_cache)
        self._cache_key = str(self._root)
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._units: dict[str, Unit] = {}
        self._stored: dict[str, _Entry] | None = None
        self._parsed: OrderedDict[tuple[str, str], ParsedFile] = OrderedDict()
        self._memo: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        self._ids: dict[str, tuple[str, int]] = {}  # public id -> (unit key, index in unit)
        self._headers: dict[str, SessionHeader] = {}  # public id -> public header
        self._scan_problems: tuple[Problem, ...] = ()
        self._fingerprint: str | None = None
        self._archived: frozenset[str] = frozenset()  # archived_ids() of the last listing

    @property
    def root(self) -> Path:
        """The folder (or database) this source reads."""
        return self._root

    @property
    def unit_store(self) -> UnitStore:
        """The raw units this source parses (for the archive)."""
        return self._store

    def use_units(self, units: UnitStore) -> None:
        """Read ``units`` from now on instead (the same location's units with an archive
        behind them: :meth:`sessionquery.archive.Archive.units_of`)."""
        with self._lock:
            self._store = units
            self._parsed.clear()
            self._fingerprint = None

    def archived_ids(self) -> frozenset[str]:
        """Ids of the sessions the last listing read from an archive (no I/O, and no wait).

        A search marks its hits with these after the index answered: while a listing holds
        the source (a first listing parses every unit, for minutes on a large history), the
        set of the listing before it is the answer, so a search never waits for a scan.
        """
        if not isinstance(self._store, ArchiveBacked):
            return frozenset()
        if not self._lock.acquire(blocking=False):
            return self._archived
        try:
            served = self._store.served() if isinstance(self._store, ArchiveBacked) else ()
            self._archived = frozenset(
                pid for pid, (key, _index) in self._ids.items() if key in served
            )
            return self._archived
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the metadata cache file (the source stays usable with an in-memory cache)."""
        self._cache.close()

    # -- scanning

    def _current_units(self) -> tuple[list[Unit], list[Problem]]:
        fingerprint = self._store.fingerprint()
        if fingerprint is not None:
            if fingerprint == self._fingerprint and self._units:
                return list(self._units.values()), list(self._scan_problems)
            row = self._cache.get(self._cache_key, _STORE_ROW)
            if row is not None and row[0] == fingerprint:
                known = _store_row(row[1])
                if known is not None:
                    self._fingerprint = fingerprint
                    return known
        units, problems = self._store.scan()
        if fingerprint is not None and fingerprint == self._store.fingerprint():
            payload = {
                "units": [[u.key, u.stamp, u.size, u.role] for u in units],
                "problems": [[p.path, p.line, p.message] for p in problems],
            }
            self._cache.store(self._cache_key, {_STORE_ROW: (fingerprint, payload)}, ())
            self._fingerprint = fingerprint
        return units, problems

    def _scan(self) -> None:
        units, problems = self._current_units()
        if not units and not problems:
            problems.append(
                Problem(str(self._root), None, "no transcript files found under this directory")
            )
        self._scan_problems = tuple(problems)
        self._units = {unit.key: unit for unit in units}
        stored = self._load_stored()
        seen: dict[str, _Entry] = {}
        changed: dict[str, _Entry] = {}
        flushed = time.monotonic()
        try:
            for unit in units:
                entry = self._entry(unit, stored)
                seen[unit.key] = entry
                if self._entries.get(unit.key) is not entry and stored.get(unit.key) is not entry:
                    changed[unit.key] = entry
                if changed and time.monotonic() - flushed > _FLUSH_SECONDS:
                    # A long first listing keeps its work even if the process is stopped.
                    self._store_rows(changed, ())
                    changed, flushed = {}, time.monotonic()
        except SessionQueryError:  # the caller's deadline (checking): keep what was read
            self._store_rows(changed, ())
            raise
        gone = (set(self._entries) | set(stored)) - set(seen) - {_STORE_ROW}
        self._store_rows(changed, gone)
        self._stored = {}
        unchanged = len(seen) == len(self._entries) and all(
            self._entries.get(key) is entry for key, entry in seen.items()
        )
        self._entries = seen
        if not unchanged or not self._ids:
            transcripts = {k: e.summaries for k, e in seen.items() if e.unit.role == "transcript"}
            self._ids, self._headers = resolve_ids(transcripts)
        if self._overlay is not None:
            self._titles = self._overlay.titles()

    def _store_rows(self, changed: dict[str, _Entry], gone: Iterable[str]) -> None:
        rows = {key: (e.unit.stamp, e.payload()) for key, e in changed.items()}
        self._cache.store(self._cache_key, rows, gone)

    def _load_stored(self) -> dict[str, _Entry]:
        if self._stored is not None:
            return self._stored
        out: dict[str, _Entry] = {}
        for key, (stamp, payload) in self._cache.load(self._cache_key).items():
            if key == _STORE_ROW:
                continue
            entry = _Entry.from_row(key, stamp, payload)
            if entry is not None:
                out[key] = entry
        self._stored = out
        return out

    def _fresh_entry(self, entry: _Entry | None, unit: Unit) -> bool:
        if entry is None or entry.unit.stamp != unit.stamp:
            return False
        for key, stamp in entry.depends.items():
            if key.startswith(MISSING_PREFIX):
                suffix = key[len(MISSING_PREFIX) :]
                if any(k.endswith(suffix) for k in self._units):
                    return False
            else:
                current = self._units.get(key)
                if stamp == PRESENT:
                    if current is None:
                        return False
                elif (None if current is None else current.stamp) != stamp:
                    return False
        return True

    def _entry(self, unit: Unit, stored: dict[str, _Entry]) -> _Entry:
        for known in (self._entries.get(unit.key), stored.get(unit.key)):
            if known is not None and self._fresh_entry(known, unit):
                return known
        if unit.role == "side":
            return _Entry(unit, (), (), {})
        row = self._cache.get(self._cache_key, unit.key)  # another process may have read it
        if row is not None and row[0] == unit.stamp:
            entry = _Entry.from_row(unit.key, row[0], row[1])
            if entry is not None and self._fresh_entry(entry, unit):
                return entry
        parsed, read_unit = self._parse(unit.key)
        summaries = tuple(
            Summary(s.header, len(s.events), s.preferred, s.suffix) for s in parsed.sessions
        )
        return _Entry(read_unit or unit, summaries, parsed.problems, parsed.depends)

    def _parse(self, key: str) -> tuple[ParsedFile, Unit | None]:
        """Read and parse one unit; any failure becomes that unit's problem."""
        where = self._store.where(key)
        try:
            data, unit = self._store.read(key, self._max_bytes)
        except SkippedFile as exc:
            return ParsedFile((), (Problem(where, None, str(exc)),)), None
        except Exception as exc:  # e.g. MemoryError reading a huge file under a memory limit
            message = f"cannot read file ({type(exc).__name__}: {exc}); skipped"
            return ParsedFile((), (Problem(where, None, message[:2000]),)), None
        cache_key = (key, unit.stamp)
        cached = self._parsed.get(cache_key)
        if cached is not None and self._deps_hold(cached):
            self._parsed.move_to_end(cache_key)
            return cached, unit
        sides = Sides(self._store, self._units, self._max_bytes, self._memo)
        try:
            parsed = self._parser(UnitInput(key, where, data, sides))
        except SessionQueryError:  # the caller's deadline (checking): not this unit's problem
            raise
        except Exception as exc:  # one unit's failure (even MemoryError) must not hide the rest
            message = f"cannot import this file ({type(exc).__name__}: {exc}); skipped"
            parsed = ParsedFile((), (Problem(where, None, message[:2000]),))
        if sides.used:
            parsed = ParsedFile(parsed.sessions, parsed.problems, dict(sides.used))
        self._parsed[cache_key] = parsed
        while len(self._parsed) > self._PARSED_CACHE:
            self._parsed.popitem(last=False)
        return parsed, unit

    def _deps_hold(self, parsed: ParsedFile) -> bool:
        probe = _Entry(Unit("", ""), (), (), parsed.depends)
        return self._fresh_entry(probe, Unit("", ""))

    # -- the persistence protocol

    def list(self) -> builtins.list[PersistedSession]:
        """Every imported session (reading only units that changed since they were cached)."""
        with self._lock:
            self._scan()
            served = self._served()
            return [self._listing(public, served) for public in self._ids]

    def _title(self, public: str) -> str | None:
        if not self._titles:
            return None
        key, index = self._ids[public]
        return self._titles.get(self._entries[key].summaries[index].header.id)

    def _listing(self, public: str, served: frozenset[str] | None = None) -> PersistedSession:
        """One session's listing entry; ``served`` is the archive-backed store's served keys
        when the caller already asked for them (``None``: ask here)."""
        key, index = self._ids[public]
        entry = self._entries[key]
        count = entry.summaries[index].count
        revision = entry.unit.stamp
        title = self._title(public)
        if title is not None:
            count += 1
            revision += (
                "+title:" + hashlib.sha256(title.encode("utf-8", "replace")).hexdigest()[:16]
            )
        return PersistedSession(
            header=self._headers[public],
            revision=revision,
            event_count=count,
            size_bytes=entry.unit.size,
            archived=key in (self._served() if served is None else served),
        )

    def _served(self) -> frozenset[str]:
        """The unit keys the last scan served from an archive (none without one)."""
        return self._store.served() if isinstance(self._store, ArchiveBacked) else frozenset()

    def session_units(self) -> dict[str, str]:
        """The unit key each listed session comes from, by public id (after :meth:`list`)."""
        with self._lock:
            return {public: key for public, (key, _index) in self._ids.items()}

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry, or ``None``.

        A session listed before costs one ``stat`` of its unit when that unit is unchanged;
        otherwise (or for an unknown id) the source is scanned again.
        """
        with self._lock:
            if not self._fresh(session_id):
                self._scan()
            if session_id not in self._ids:
                return None
            return self._listing(session_id)

    def _fresh(self, session_id: str) -> bool:
        """Whether ``session_id`` was listed and its unit's stamp is still the listed one."""
        target = self._ids.get(session_id)
        if target is None:
            return False
        current = self._store.stat(target[0])
        return current is not None and current.stamp == self._entries[target[0]].unit.stamp

    def _locate(self, session_id: str) -> tuple[ParsedSession, SessionHeader, str, str, str]:
        with self._lock:
            if not self._fresh(session_id):
                self._scan()
            target = self._ids.get(session_id)
            if target is None:
                raise PersistenceNotFound(f"session {session_id!r} is not in {self._root}")
            key, index = target
            summary = self._entries[key].summaries[index]
            header = self._headers[session_id]
            where = self._store.where(key)
            parsed, unit = self._parse(key)
            listing = self._listing(session_id)
        if unit is None:
            raise PersistenceCorrupt(
                f"{where}: cannot read transcript: {parsed.problems[0].message}"
            )
        for session in parsed.sessions:
            if session.header.id == summary.header.id and session.suffix == summary.suffix:
                return session, header, listing.revision, where, key
        raise PersistenceNotFound(f"session {session_id!r} is no longer in {where}")

    def _drafts(self, session_id: str, session: ParsedSession, key: str) -> tuple[Draft, ...]:
        title = self._title(session_id)
        if title is None or self._overlay is None:
            return session.events
        last = session.events[-1].time if session.events else session.header.created_at
        data = {
            "title": title,
            "messageSeqs": [],
            "source": {"kind": "thread-name"},
            ORIGIN_KEY: {"file": self._overlay.label, "line": None, "unit": key},
        }
        return (*session.events, Draft("session/title", len(session.events), last, data))

    def open_read(self, session_id: str) -> ReadHandleImpl:
        """Open an imported session for reading.

        Raises:
            PersistenceNotFound: no session of that id.
            PersistenceCorrupt: the unit became unreadable, or holds a value the event model
                cannot store.
        """
        session, header, _revision, where, key = self._locate(session_id)
        try:
            events = tuple(draft.freeze() for draft in self._drafts(session_id, session, key))
        except (ValueError, RecursionError) as exc:
            raise PersistenceCorrupt(f"{where}: cannot import {session_id!r}: {exc}") from None
        return ReadHandleImpl(header, events)

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable text of one imported session, without building frozen events.

        Equal to what ``open_read`` + crash-tail closers + ``fold_surface`` +
        ``extract_event_text`` give.

        Raises:
            PersistenceNotFound: no session of that id.
            PersistenceCorrupt: the unit became unreadable.
        """
        session, header, revision, where, key = self._locate(session_id)
        drafts = self._drafts(session_id, session, key)
        extra: list[SurfaceClass] = ["log-only"] * (len(drafts) - len(session.surface))
        surfaces = (*session.surface, *extra)
        documents: list[TextDocument] = []
        titles: list[TextDocument] = []
        tick = read_check()
        for draft, surface in zip(drafts, surfaces, strict=True):
            text = extract_event_text(cast(SessionEvent, draft))
            tick(len(text))
            if text:
                documents.append(TextDocument(draft.seq, draft.type, draft.time, surface, text))
            elif draft.type == TITLE_TYPE and (title := title_text(draft.type, draft.data)):
                titles.append(TextDocument(draft.seq, draft.type, draft.time, "log-only", title))
        try:
            closers = _closers(drafts)
        except (ValueError, RecursionError) as exc:
            raise PersistenceCorrupt(f"{where}: cannot import {session_id!r}: {exc}") from None
        for event in closers:
            text = extract_event_text(event)
            if text:
                closer: SurfaceClass = "current" if event.surface_op is not None else "log-only"
                documents.append(TextDocument(event.seq, event.type, event.time, closer, text))
        snapshot = fold_title(cast(Sequence[SessionEvent], drafts))  # closers add no title
        count = len(drafts) + len(closers)
        return DocumentLog(header, revision, count, documents, titles, snapshot, title_read=True)

    def problems(self) -> builtins.list[Problem]:
        """Problems of the source and of the current revision of every unit, in key order."""
        with self._lock:
            self._scan()
            out = list(self._scan_problems)
            for key in sorted(self._entries):
                out.extend(self._entries[key].problems)
            return out


def _store_row(payload: Any) -> tuple[list[Unit], list[Problem]] | None:
    try:
        units = [
            Unit(
                str(k),
                str(s),
                z if type(z) is int else None,
                "side" if r == "side" else "transcript",
            )
            for k, s, z, r in payload["units"]
        ]
        problems = [Problem(str(p), q, str(m)) for p, q, m in payload["problems"]]
    except (KeyError, TypeError, ValueError):
        return None
    return units, problems


def _closers(drafts: Sequence[Draft]) -> builtins.list[SessionEvent]:
    # Only the last turn matters to the crash-tail repair (a turn/start resets its state).
    start = next(
        (i for i in range(len(drafts) - 1, -1, -1) if drafts[i].type == "turn/start"), None
    )
    if start is None or any(d.type == "turn/end" for d in drafts[start:]):
        return []  # no turn left open: nothing to close (and nothing to freeze)
    return interrupted_turn_closers([draft.freeze() for draft in drafts[start:]])
