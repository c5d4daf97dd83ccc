"""The common body of the importers: scanning, the metadata cache, id resolution, reading.

``list()`` stats every candidate file and reads only files whose stamp differs from the one in
the metadata cache (memory, or a SQLite file shared by processes; see :mod:`._cache`), keeping
just headers, counts and problems. ``open_read`` re-reads the one file it needs (a small LRU
keeps the last few parsed files for parent/child reads) and freezes its events;
``read_documents`` takes the searchable text straight from the unfrozen drafts.

Ids are unique within a source by construction: every *literal* id (a transcript's own session
id, or one derived from its file name) is claimed first; one claimed by several files stays with
the file named after it, else with the first by path. Every *derived* id (a duplicate's
``<id>@<relative path>``, an in-file child's ``<public parent id>/<suffix>``, a cleaned or
shortened id) is checked against all claimed and assigned ids and, if taken, gets ``#2``,
``#3``... so it can never displace or shadow another session. Any failure while reading one
file (including ``RecursionError`` and ``MemoryError``) is a problem of that file only.

Under :func:`~sessionquery.persistence.documents.checking` (a search's or a listing's deadline)
parsing checks the deadline every few thousand lines or megabyte, also inside one big file;
its ``ABORTED`` stops the listing or read (it is never a problem of the file, and nothing of
the interrupted file is cached), and a listing keeps the files it finished in the metadata
cache, so the next one continues.
"""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

from sessionquery.errors import (
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceNotFound,
    SessionQueryError,
)
from sessionquery.model import SessionEvent, SessionHeader, extract_event_text, fold_title
from sessionquery.model.repair import interrupted_turn_closers
from sessionquery.model.surface import SurfaceClass
from sessionquery.model.title import TITLE_TYPE, title_text
from sessionquery.persistence.base import DocumentLog, PersistedSession, TextDocument
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import Draft
from sessionquery.sources._cache import MetadataCache
from sessionquery.sources._common import Problem, derived_id
from sessionquery.sources._files import (
    DEFAULT_MAX_FILE_BYTES,
    FileStamp,
    SkippedFile,
    find_files,
    read_regular,
)

__all__ = ["FileCatalog", "ParsedFile", "ParsedSession", "ReadHandleImpl"]


@dataclass(frozen=True, slots=True)
class ParsedSession:
    """One imported session: its header (own, unresolved ids) and its unfrozen log.

    ``suffix`` marks a child stored inside its parent's file (an inline sidechain): its public
    id is ``<public id of the file's first session>/<suffix>``, whatever its header says.
    """

    header: SessionHeader
    events: tuple[Draft, ...]
    surface: tuple[SurfaceClass, ...]
    preferred: bool = False  # keeps its id when another file claims the same one
    suffix: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """Everything one transcript file yields."""

    sessions: tuple[ParsedSession, ...]
    problems: tuple[Problem, ...]


_FLUSH_SECONDS = 2.0
"""A first listing stores what it read in the cache file at least this often."""

Parser = Callable[[Path, str, bytes, int], ParsedFile]
"""``(path, path relative to the root, file bytes, mtime in ms) -> ParsedFile``."""


@dataclass(frozen=True, slots=True)
class _Summary:
    header: SessionHeader
    count: int
    preferred: bool
    suffix: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "header": self.header.to_json(),
            "count": self.count,
            "preferred": self.preferred,
            "suffix": self.suffix,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> _Summary:
        suffix = obj["suffix"]
        if suffix is not None and not isinstance(suffix, str):
            raise ValueError("bad suffix")
        count = obj["count"]
        if type(count) is not int:
            raise ValueError("bad count")
        return cls(SessionHeader.from_json(obj["header"]), count, obj["preferred"] is True, suffix)


@dataclass(frozen=True, slots=True)
class _Entry:
    stamp: FileStamp
    summaries: tuple[_Summary, ...]
    problems: tuple[Problem, ...]

    def payload(self) -> dict[str, Any]:
        return {
            "sessions": [s.to_json() for s in self.summaries],
            "problems": [[p.path, p.line, p.message] for p in self.problems],
        }

    @classmethod
    def from_row(cls, stamp: FileStamp, payload: Any) -> _Entry | None:
        try:
            summaries = tuple(_Summary.from_json(s) for s in payload["sessions"])
            problems = tuple(Problem(str(p), q, str(m)) for p, q, m in payload["problems"])
        except (KeyError, TypeError, ValueError):
            return None
        return cls(stamp, summaries, problems)


def _stamp_tuple(stamp: FileStamp) -> tuple[int, int, int, int, int]:
    return (stamp.dev, stamp.ino, stamp.size, stamp.mtime_ns, stamp.ctime_ns)


class ReadHandleImpl:
    """A :class:`~sessionquery.persistence.base.ReadHandle` over an already parsed log."""

    def __init__(self, header: SessionHeader, events: tuple[SessionEvent, ...]) -> None:
        self._header = header
        self._events = events
        self._closed = False

    @property
    def header(self) -> SessionHeader:
        """The session header."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """Always 0: imported sessions are never seeded."""
        return 0

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        """Events ``offset .. offset+length`` of the imported log.

        Raises:
            PersistenceClosed: after :meth:`close`.
        """
        if self._closed:
            raise PersistenceClosed(f"read handle of {self._header.id!r} is closed")
        end = None if length is None else offset + length
        return list(self._events[offset:end])

    def close(self) -> None:
        """Release the handle; idempotent."""
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class FileCatalog:
    """Scanning, caching, id resolution and reading shared by the importers.

    Args:
        root: the folder to read.
        parser: turns one file's bytes into sessions and problems.
        accept: whether a ``*.jsonl`` file name is a transcript of this format.
        metadata_cache: a SQLite file for the metadata cache, or ``None`` for memory only.
        max_file_bytes: larger transcripts are reported and skipped.
        follow_outside_links: follow symbolic links that leave ``root`` (off by default).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a ``metadata_cache`` file that is not ours.
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    _PARSED_CACHE = 4

    def __init__(
        self,
        root: str | os.PathLike[str],
        parser: Parser,
        accept: Callable[[str], bool],
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        follow_outside_links: bool = False,
    ) -> None:
        if type(max_file_bytes) is not int or max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be a positive integer, not {max_file_bytes!r}")
        self._root = Path(root).absolute()
        self._parser = parser
        self._accept = accept
        self._max_bytes = max_file_bytes
        self._follow = follow_outside_links
        self._cache = MetadataCache(metadata_cache)
        self._cache_key = str(self._root)
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._stored: dict[str, _Entry] | None = None
        self._parsed: OrderedDict[tuple[str, str], ParsedFile] = OrderedDict()
        self._ids: dict[str, tuple[str, int]] = {}  # public id -> (file, index in file)
        self._headers: dict[str, SessionHeader] = {}  # public id -> public header
        self._scan_problems: tuple[Problem, ...] = ()

    @property
    def root(self) -> Path:
        """The directory this source reads."""
        return self._root

    def close(self) -> None:
        """Close the metadata cache file (the source stays usable with an in-memory cache)."""
        self._cache.close()

    # -- scanning

    def _scan(self) -> None:
        root = self._root
        if not root.is_dir():
            self._scan_problems = (
                Problem(str(root), None, "not a directory; no sessions imported"),
            )
            self._entries, self._ids, self._headers = {}, {}, {}
            return
        files, problems = find_files(root, self._accept, follow_outside=self._follow)
        if not files and not problems:
            problems.append(
                Problem(str(root), None, "no transcript files found under this directory")
            )
        self._scan_problems = tuple(problems)
        stored = self._load_stored()
        seen: dict[str, _Entry] = {}
        changed: dict[str, _Entry] = {}
        flushed = time.monotonic()
        try:
            for rel, stamp in files:
                entry = self._entry(root / rel, rel, stamp, stored)
                seen[rel] = entry
                if self._entries.get(rel) is not entry and stored.get(rel) is not entry:
                    changed[rel] = entry
                if changed and time.monotonic() - flushed > _FLUSH_SECONDS:
                    # A long first listing keeps its work even if the process is stopped.
                    self._store(changed, ())
                    changed, flushed = {}, time.monotonic()
        except SessionQueryError:  # the caller's deadline (checking): keep what was read
            self._store(changed, ())
            raise
        self._store(changed, (set(self._entries) | set(stored)) - set(seen))
        self._stored = {}
        unchanged = len(seen) == len(self._entries) and all(
            self._entries.get(rel) is entry for rel, entry in seen.items()
        )
        self._entries = seen
        if not unchanged or not self._ids:
            self._ids, self._headers = _resolve_ids(seen)

    def _store(self, changed: dict[str, _Entry], gone: Iterable[str]) -> None:
        rows = {rel: (_stamp_tuple(e.stamp), e.payload()) for rel, e in changed.items()}
        self._cache.store(self._cache_key, rows, gone)

    def _load_stored(self) -> dict[str, _Entry]:
        if self._stored is not None:
            return self._stored
        out: dict[str, _Entry] = {}
        for rel, (stamp, payload) in self._cache.load(self._cache_key).items():
            entry = _Entry.from_row(FileStamp(*stamp), payload)
            if entry is not None:
                out[rel] = entry
        self._stored = out
        return out

    def _entry(self, path: Path, rel: str, stamp: FileStamp, stored: dict[str, _Entry]) -> _Entry:
        for known in (self._entries.get(rel), stored.get(rel)):
            if known is not None and known.stamp == stamp:
                return known
        row = self._cache.get(self._cache_key, rel)  # another process may have read it already
        if row is not None and row[0] == _stamp_tuple(stamp):
            entry = _Entry.from_row(stamp, row[1])
            if entry is not None:
                return entry
        parsed, read_stamp = self._parse(path, rel)
        summaries = tuple(
            _Summary(s.header, len(s.events), s.preferred, s.suffix) for s in parsed.sessions
        )
        return _Entry(read_stamp or stamp, summaries, parsed.problems)

    def _parse(self, path: Path, rel: str) -> tuple[ParsedFile, FileStamp | None]:
        """Read and parse one file; any failure becomes that file's problem."""
        try:
            data, stamp = read_regular(path, self._max_bytes)
        except SkippedFile as exc:
            return ParsedFile((), (Problem(str(path), None, str(exc)),)), None
        except Exception as exc:  # e.g. MemoryError reading a huge file under a memory limit
            message = f"cannot read file ({type(exc).__name__}: {exc}); skipped"
            return ParsedFile((), (Problem(str(path), None, message[:2000]),)), None
        key = (rel, stamp.revision)
        cached = self._parsed.get(key)
        if cached is not None:
            self._parsed.move_to_end(key)
            return cached, stamp
        try:
            parsed = self._parser(path, rel, data, stamp.mtime_ns // 1_000_000)
        except SessionQueryError:  # the caller's deadline (checking): not this file's problem
            raise
        except Exception as exc:  # one file's failure (even MemoryError) must not hide the rest
            message = f"cannot import this file ({type(exc).__name__}: {exc}); skipped"
            parsed = ParsedFile((), (Problem(str(path), None, message[:2000]),))
        self._parsed[key] = parsed
        while len(self._parsed) > self._PARSED_CACHE:
            self._parsed.popitem(last=False)
        return parsed, stamp

    # -- the persistence protocol

    def list(self) -> builtins.list[PersistedSession]:
        """Every imported session (reading only files that changed since they were cached)."""
        with self._lock:
            self._scan()
            return [self._listing(public) for public in self._ids]

    def _listing(self, public: str) -> PersistedSession:
        rel, index = self._ids[public]
        entry = self._entries[rel]
        return PersistedSession(
            header=self._headers[public],
            revision=entry.stamp.revision,
            event_count=entry.summaries[index].count,
            size_bytes=entry.stamp.size,
        )

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry, or ``None``.

        A session listed before costs one ``stat`` of its file when that file is unchanged;
        otherwise (or for an unknown id) the folder is scanned again.
        """
        with self._lock:
            if not self._fresh(session_id):
                self._scan()
            if session_id not in self._ids:
                return None
            return self._listing(session_id)

    def _fresh(self, session_id: str) -> bool:
        """Whether ``session_id`` was listed and its file's stamp is still the listed one."""
        target = self._ids.get(session_id)
        if target is None:
            return False
        rel = target[0]
        try:
            info = os.stat(self._root / rel)
        except OSError:
            return False
        return FileStamp.of(info) == self._entries[rel].stamp

    def _locate(self, session_id: str) -> tuple[ParsedSession, SessionHeader, str, Path]:
        with self._lock:
            if not self._fresh(session_id):
                self._scan()
            target = self._ids.get(session_id)
            if target is None:
                raise PersistenceNotFound(f"session {session_id!r} is not in {self._root}")
            rel, index = target
            summary = self._entries[rel].summaries[index]
            header = self._headers[session_id]
            path = self._root / rel
            parsed, stamp = self._parse(path, rel)
        if stamp is None:
            raise PersistenceCorrupt(
                f"{path}: cannot read transcript: {parsed.problems[0].message}"
            )
        for session in parsed.sessions:
            if session.header.id == summary.header.id and session.suffix == summary.suffix:
                return session, header, stamp.revision, path
        raise PersistenceNotFound(f"session {session_id!r} is no longer in {path}")

    def open_read(self, session_id: str) -> ReadHandleImpl:
        """Open an imported session for reading.

        Raises:
            PersistenceNotFound: no session of that id.
            PersistenceCorrupt: the file became unreadable, or holds a value the event model
                cannot store.
        """
        session, header, _revision, path = self._locate(session_id)
        try:
            events = tuple(draft.freeze() for draft in session.events)
        except (ValueError, RecursionError) as exc:
            raise PersistenceCorrupt(f"{path}: cannot import {session_id!r}: {exc}") from None
        return ReadHandleImpl(header, events)

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable text of one imported session, without building frozen events.

        Equal to what ``open_read`` + crash-tail closers + ``fold_surface`` +
        ``extract_event_text`` give.

        Raises:
            PersistenceNotFound: no session of that id.
            PersistenceCorrupt: the file became unreadable.
        """
        session, header, revision, path = self._locate(session_id)
        drafts = session.events
        documents: list[TextDocument] = []
        titles: list[TextDocument] = []
        tick = read_check()
        for draft, surface in zip(drafts, session.surface, strict=True):
            text = extract_event_text(cast(SessionEvent, draft))
            tick(len(text))
            if text:
                documents.append(TextDocument(draft.seq, draft.type, draft.time, surface, text))
            elif draft.type == TITLE_TYPE and (title := title_text(draft.type, draft.data)):
                titles.append(TextDocument(draft.seq, draft.type, draft.time, "log-only", title))
        try:
            closers = _closers(drafts)
        except (ValueError, RecursionError) as exc:
            raise PersistenceCorrupt(f"{path}: cannot import {session_id!r}: {exc}") from None
        for event in closers:
            text = extract_event_text(event)
            if text:
                surface = "current" if event.surface_op is not None else "log-only"
                documents.append(TextDocument(event.seq, event.type, event.time, surface, text))
        snapshot = fold_title(cast(Sequence[SessionEvent], drafts))  # closers add no title
        count = len(drafts) + len(closers)
        return DocumentLog(header, revision, count, documents, titles, snapshot, title_read=True)

    def problems(self) -> builtins.list[Problem]:
        """Problems of the folder and of the current revision of every file, in path order."""
        with self._lock:
            self._scan()
            out = list(self._scan_problems)
            for rel in sorted(self._entries):
                out.extend(self._entries[rel].problems)
            return out


def _closers(drafts: Sequence[Draft]) -> builtins.list[SessionEvent]:
    # Only the last turn matters to the crash-tail repair (a turn/start resets its state).
    start = next(
        (i for i in range(len(drafts) - 1, -1, -1) if drafts[i].type == "turn/start"), None
    )
    if start is None or any(d.type == "turn/end" for d in drafts[start:]):
        return []  # no turn left open: nothing to close (and nothing to freeze)
    return interrupted_turn_closers([draft.freeze() for draft in drafts[start:]])


def _resolve_ids(
    entries: dict[str, _Entry],
) -> tuple[dict[str, tuple[str, int]], dict[str, SessionHeader]]:
    claims: dict[str, builtins.list[tuple[bool, str, int]]] = {}
    children: builtins.list[tuple[str, int]] = []
    for rel in sorted(entries):
        for index, summary in enumerate(entries[rel].summaries):
            if summary.suffix is None:
                claims.setdefault(summary.header.id, []).append((not summary.preferred, rel, index))
            else:
                children.append((rel, index))
    ids: dict[str, tuple[str, int]] = {}
    headers: dict[str, SessionHeader] = {}
    main_of: dict[str, str] = {}  # file -> public id of its first session
    duplicates: builtins.list[tuple[str, str, int]] = []
    for own, files in claims.items():
        files.sort()
        _, rel, index = files[0]
        ids[own] = (rel, index)
        duplicates.extend((own, r, i) for _, r, i in files[1:])

    def assign(candidate: str, rel: str, index: int, parent: str | None, *, literal: bool) -> None:
        public, attempt = candidate, 1
        while not literal and (public in ids or public in claims):
            attempt += 1
            public = derived_id(f"{candidate}#{attempt}")
        ids[public] = (rel, index)
        header = entries[rel].summaries[index].header
        if entries[rel].summaries[index].suffix is not None:
            header = replace(header, id=public, parent_session=parent)
        elif header.id != public:
            header = replace(header, id=public)
        headers[public] = header
        if index == 0:
            main_of[rel] = public

    for own in claims:
        rel, index = ids.pop(own)
        assign(own, rel, index, None, literal=True)
    for own, rel, index in duplicates:
        assign(derived_id(f"{own}@{rel}"), rel, index, None, literal=False)
    for rel, index in children:
        parent = main_of.get(rel)
        suffix = entries[rel].summaries[index].suffix
        if parent is None or suffix is None:
            continue
        assign(derived_id(f"{parent}/{suffix}"), rel, index, parent, literal=False)
    return ids, headers
