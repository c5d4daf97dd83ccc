"""The embedded durable store: one append-only JSONL file per session under one root.

File format (``docs/storage.md`` has examples): line 1 is the header record
``{"type":"session","version":3,"id",...}``, then one event per line in its wire form (SPEC
§3.2), each line terminated by ``\\n``. The event on physical line *k* has seq *k - 2*.

Invariants:

* **Reads never modify storage.** A torn final line (bytes after the last ``\\n``, left by a
  crash mid-write) is ignored by readers and truncated away only when a writer opens the file.
* **Damage is loud.** Any complete line that is not a valid event with the expected seq is
  :class:`~sessionquery.errors.PersistenceCorrupt`, whose message names the file and the
  1-based physical line (the header is line 1). Nothing is skipped silently.
* **One writer per file**, in this process and across processes (see ``_lock``); readers take
  no lock and always see a contiguous valid prefix, also while a writer appends.
* **Flushed means durable.** ``flush()`` returns after the lines are written and fsynced; a
  failed flush keeps the events buffered and leaves the file ending at its last good line.
* **Private by default.** New directories are ``0700`` and new files ``0600`` whatever the
  umask; existing modes are kept.
* ``revision`` changes whenever a file's bytes change; ``change_token()`` changes whenever any
  session is created, flushed with new events, repaired or deleted through this class, in any
  process. Edits by other programs change revisions but not the token.
"""

from __future__ import annotations

import builtins
import fcntl
import json
import logging
import os
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from sessionquery.errors import (
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceExists,
    PersistenceNotFound,
    PersistenceWriteFailed,
)
from sessionquery.model import FORMAT_VERSION, SessionEvent, SessionHeader, validate_session_id
from sessionquery.persistence import _lock
from sessionquery.persistence._names import is_session_file_name, session_file_name
from sessionquery.persistence.base import DocumentLog, PersistedSession
from sessionquery.persistence.documents import jsonl_body_documents

__all__ = ["JsonlPersistence", "LogProblem"]

logger = logging.getLogger(__name__)

HEADER_TYPE = "session"
"""The ``type`` of every header record."""

_MARKER_NAME = ".change-token"
_CHANGING_NAME = ".change-token.changing"
_CREATING_PREFIX = ".creating-"
_DIR_MODE = 0o700
_FILE_MODE = 0o600
_CHUNK = 1 << 16
_OPEN_FLAGS = getattr(os, "O_CLOEXEC", 0)

_REQUIRED_HEADER_KEYS = ("type", "version", "id", "createdAt", "isSeeded", "delegationDepth")
_OPTIONAL_HEADER_KEYS = ("cwd", "parentSession", "origin", "agentPreset", "inheritedEventCount")
_HEADER_KEYS = frozenset(_REQUIRED_HEADER_KEYS + _OPTIONAL_HEADER_KEYS)


@dataclass(frozen=True, slots=True)
class LogProblem:
    """One finding of :meth:`JsonlPersistence.verify`.

    Attributes:
        path: the file concerned.
        line: the 1-based physical line (header = 1), or ``None`` for the whole file.
        message: what is wrong, as a sentence.
        fatal: ``True`` when reads of this file fail; ``False`` for a torn tail, which reads
            ignore and the next write open removes.
    """

    path: str
    line: int | None
    message: str
    fatal: bool = True


# --------------------------------------------------------------------------- encoding


def _dumps(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


def _encode_header(header: SessionHeader, inherited_event_count: int) -> bytes:
    record: dict[str, Any] = {"type": HEADER_TYPE, **header.to_json()}
    if header.is_seeded:
        record["inheritedEventCount"] = inherited_event_count
    return _dumps(record)


def _corrupt(path: str, line: int, message: str) -> PersistenceCorrupt:
    return PersistenceCorrupt(f"{path} line {line}: {message}")


def _parse_header(line: bytes, path: str) -> tuple[SessionHeader, int]:
    """Parse header line bytes (without the newline) into the header and inherited count."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        raise _corrupt(path, 1, "invalid JSON in the header line") from None
    if not isinstance(obj, dict):
        raise _corrupt(path, 1, "the header line is not a JSON object")
    record: dict[str, Any] = obj
    # The version decides how the rest is read, so it is checked before the shape.
    version = record.get("version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise _corrupt(
            path,
            1,
            f"unsupported format version {version!r}; this library reads version {FORMAT_VERSION}",
        )
    if record.get("type") != HEADER_TYPE:
        raise _corrupt(path, 1, f"header type must be {HEADER_TYPE!r}, not {record.get('type')!r}")
    unknown = set(record) - _HEADER_KEYS
    if unknown:
        raise _corrupt(path, 1, f"unknown header keys: {', '.join(sorted(unknown))}")
    missing = [key for key in _REQUIRED_HEADER_KEYS if key not in record]
    if missing:
        raise _corrupt(path, 1, f"header is missing {', '.join(missing)}")
    inherited = record.get("inheritedEventCount", 0)
    fields = {k: v for k, v in record.items() if k not in ("type", "inheritedEventCount")}
    try:
        header = SessionHeader.from_json(fields)
    except ValueError as exc:
        raise _corrupt(path, 1, f"invalid header: {exc}") from None
    if type(inherited) is not int or inherited < 0:
        raise _corrupt(path, 1, f"inheritedEventCount must be a non-negative integer: {inherited}")
    if inherited and not header.is_seeded:
        raise _corrupt(path, 1, "inheritedEventCount is set but the session is not seeded")
    return header, inherited


def _parse_events(data: bytes, first_seq: int, path: str) -> list[SessionEvent]:
    """Parse complete event lines (``data`` ends with ``\\n``) whose first seq is ``first_seq``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None:
        # Rare: find the offending line so the error can name it.
        for index, raw in enumerate(data.split(b"\n")[:-1]):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _corrupt(path, first_seq + index + 2, "invalid UTF-8") from None
        raise _corrupt(path, first_seq + 2, "invalid UTF-8")  # pragma: no cover - unreachable
    lines = text.split("\n")
    lines.pop()  # the empty string after the final newline
    events: list[SessionEvent] = []
    from_line = SessionEvent.from_json_line
    seq = first_seq
    for line in lines:
        try:
            event = from_line(line)
        except json.JSONDecodeError:
            raise _corrupt(path, seq + 2, "invalid JSON") from None
        except RecursionError:
            raise _corrupt(path, seq + 2, "JSON nested too deeply") from None
        except ValueError as exc:
            raise _corrupt(path, seq + 2, f"invalid event: {exc}") from None
        if event.seq != seq:
            raise _corrupt(path, seq + 2, f"event has seq {event.seq}, expected {seq}")
        events.append(event)
        seq += 1
    return events


# --------------------------------------------------------------------------- file helpers


def _read_from(fd: int, offset: int) -> bytes:
    """Everything from ``offset`` to the current end of the file, in as few reads as possible."""
    size = os.fstat(fd).st_size
    want = max(size - offset, 0) + 4096
    chunks: list[bytes] = []
    while True:
        chunk = os.pread(fd, want, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        if len(chunk) < want:
            break
        want = _CHUNK
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_header_line(fd: int, path: str) -> tuple[bytes, int]:
    """The header line (without newline) and the offset just after it."""
    buffer = b""
    while True:
        chunk = os.pread(fd, _CHUNK, len(buffer))
        newline = chunk.find(b"\n")
        if newline != -1:
            end = len(buffer) + newline
            return (buffer + chunk[:newline]), end + 1
        if not chunk:
            break
        buffer += chunk
    what = "the file is empty" if not buffer else "the header line is incomplete (no newline)"
    raise _corrupt(path, 1, what)


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _OPEN_FLAGS)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _ensure_dir(path: Path) -> None:
    """Create ``path`` and missing parents as ``0700`` (umask-independent); keep existing modes."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, _DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, _DIR_MODE)


def _revision(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def _write_failed(exc: OSError, path: str, doing: str) -> PersistenceWriteFailed:
    error = PersistenceWriteFailed(exc.errno or 0, f"{doing} failed: {exc.strerror or exc}", path)
    error.__cause__ = exc
    return error


# --------------------------------------------------------------------------- handles


class _JsonlReadHandle:
    """A non-owning view of one session file; later reads see events flushed since."""

    def __init__(
        self,
        *,
        path: str,
        fd: int,
        header: SessionHeader,
        inherited: int,
        offset: int,
        data: bytes,
    ) -> None:
        self._path = path
        self._fd: int | None = fd
        self._header = header
        self._inherited = inherited
        self._consumed = offset
        self._pending: bytes | None = data
        self._events: builtins.list[SessionEvent] = []
        self._lock = threading.Lock()

    @property
    def header(self) -> SessionHeader:
        """The session header (fixed at open)."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """How many leading events were inherited from a seed (0 when not seeded)."""
        return self._inherited

    def read(self, offset: int = 0, length: int | None = None) -> builtins.list[SessionEvent]:
        """Events ``offset .. offset+length`` of the valid prefix (all remaining when ``None``).

        Raises:
            ValueError: ``offset`` or ``length`` is negative or not an integer.
            PersistenceCorrupt: a complete line is damaged (message names file and line).
            PersistenceClosed: the handle is closed.
        """
        if type(offset) is not int or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, not {offset!r}")
        if length is not None and (type(length) is not int or length < 0):
            raise ValueError(f"length must be a non-negative integer or None, not {length!r}")
        with self._lock:
            if self._fd is None:
                raise PersistenceClosed(f"read handle of {self._path} is closed")
            if length is None or offset + length > len(self._events):
                self._refresh(self._fd)
            end = None if length is None else offset + length
            return self._events[offset:end]

    def _refresh(self, fd: int) -> None:
        data = self._pending
        self._pending = None
        if data is None:
            data = _read_from(fd, self._consumed)
        complete = data.rfind(b"\n") + 1
        if complete:
            parsed = _parse_events(data[:complete], len(self._events), self._path)
            self._events.extend(parsed)
            self._consumed += complete

    def close(self) -> None:
        """Release the file; idempotent."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
                self._events = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _JsonlWriteHandle:
    """The owning writer of one session file: buffered appends, durable flushes."""

    def __init__(
        self,
        *,
        store: JsonlPersistence,
        path: str,
        fd: int,
        header: SessionHeader,
        inherited: int,
        stored: int,
        offset: int,
    ) -> None:
        self._store = store
        self._path = path
        self._fd = fd
        self._header = header
        self._inherited = inherited
        self._stored = stored
        self._good = offset
        self._buffer: builtins.list[bytes] = []
        self._needs_truncate = False
        self._closed = False
        self._state = threading.Lock()  # guards the buffer and counters; never held during I/O
        self._flushing = threading.Lock()  # serialises flush/close

    @property
    def header(self) -> SessionHeader:
        """The session header (fixed at create)."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """How many leading events were inherited from a seed (0 when not seeded)."""
        return self._inherited

    @property
    def event_count(self) -> int:
        """Events stored plus events appended but not yet flushed; the next seq to append."""
        with self._state:
            return self._stored + len(self._buffer)

    def append(self, events: Sequence[SessionEvent]) -> None:
        """Queue whole events (no I/O); they are durable once :meth:`flush` returns.

        Raises:
            ValueError: an item is not a ``SessionEvent`` or its seq is not the next one; then
                none of ``events`` is queued.
            PersistenceClosed: the handle is closed.
        """
        with self._state:
            if self._closed:
                raise PersistenceClosed(f"write handle of {self._path} is closed")
            expected = self._stored + len(self._buffer)
            lines: builtins.list[bytes] = []
            for event in events:
                if not isinstance(event, SessionEvent):
                    raise ValueError(f"expected a SessionEvent, not {type(event).__name__}")
                if event.seq != expected:
                    raise ValueError(f"event seq {event.seq} is not the next seq {expected}")
                lines.append(_dumps(event.to_json()))
                expected += 1
            self._buffer.extend(lines)

    def flush(self) -> None:
        """Write every queued event with one write, then fsync; returns when they are durable.

        Raises:
            PersistenceWriteFailed: writing or syncing failed; the events stay queued and the
                file is cut back to its last good line (now, or at the next flush).
            PersistenceClosed: the handle is closed.
        """
        with self._flushing:
            if self._closed:
                raise PersistenceClosed(f"write handle of {self._path} is closed")
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._state:
            lines = builtins.list(self._buffer)
        if not lines and not self._needs_truncate:
            return
        data = b"".join(lines)
        try:
            # Announced before and after the write, under the "changing" lock (see
            # JsonlPersistence._changing): no crash point and no concurrent reconciliation
            # can leave an index trusting a token that predates these lines.
            with self._store._changing(strict=True) if data else nullcontext():
                if self._needs_truncate:
                    os.ftruncate(self._fd, self._good)
                    self._needs_truncate = False
                self._needs_truncate = True
                _write_all(self._fd, data, self._good)
                os.fsync(self._fd)
        except OSError as exc:
            self._cut_back()
            raise _write_failed(exc, self._path, "appending events") from exc
        self._needs_truncate = False
        with self._state:
            del self._buffer[: len(lines)]
            self._stored += len(lines)
            self._good += len(data)

    def _cut_back(self) -> None:
        try:
            os.ftruncate(self._fd, self._good)
        except OSError:
            return  # stays marked; the next flush truncates first
        self._needs_truncate = False

    def close(self) -> None:
        """Flush, then release ownership; idempotent.

        Raises:
            PersistenceWriteFailed: the final flush failed; the handle stays open and owning
                so that ``close()`` can be retried without losing the queued events.
        """
        with self._flushing:
            if self._closed:
                return
            self._flush_locked()
            with self._state:
                self._closed = True
            os.close(self._fd)
            _lock.release(self._path)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# --------------------------------------------------------------------------- the store


@dataclass(frozen=True, slots=True)
class _CachedHeader:
    revision: str
    header: SessionHeader


class JsonlPersistence:
    """A durable store of session logs: one JSONL file per session directly under ``root``.

    Thread-safe; any number of instances, in any number of processes, may share one root.

    Args:
        root: the store directory; created (``0700``) with missing parents if absent.

    Example:
        >>> store = JsonlPersistence(tmp)  # doctest: +SKIP
        >>> with store.create(SessionHeader(id="s1", created_at=0)) as log:  # doctest: +SKIP
        ...     log.append([SessionEvent("turn/start", 0, 0, {"turn": 0})])
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(os.path.abspath(os.fspath(root)))
        _ensure_dir(path)
        # Resolved once so the in-process writer registry sees one key per file.
        self._root = os.path.realpath(path)
        self._cache: dict[str, _CachedHeader] = {}
        self._cache_lock = threading.Lock()

    @property
    def root(self) -> str:
        """The resolved store directory."""
        return self._root

    def path_of(self, session_id: str) -> str:
        """The file that holds (or would hold) ``session_id``; always directly under the root.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
        """
        validate_session_id(session_id, "session id")
        return os.path.join(self._root, session_file_name(session_id))

    # ----------------------------------------------------------------- listing

    def list(self) -> builtins.list[PersistedSession]:
        """Every stored session, in no promised order; reads at most each file's header line.

        Headers are cached per file revision, so listing an unchanged store again opens no
        session file. Non-session entries (names starting with ``.``, other extensions,
        directories) are ignored.

        Raises:
            PersistenceCorrupt: a session file's header is unreadable, of an unsupported version,
                or names a session that does not belong under that file name. One bad file fails
                the listing loudly; :meth:`verify` lists every problem without raising.
        """
        sessions: builtins.list[PersistedSession] = []
        try:
            entries = builtins.list(os.scandir(self._root))
        except FileNotFoundError:
            return sessions
        for entry in entries:
            if not is_session_file_name(entry.name):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
                sessions.append(self._describe(entry.name, entry.path, st))
            except FileNotFoundError:
                continue  # deleted while listing
        return sessions

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry without reading its log, or ``None`` if not stored.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceCorrupt: the header is unreadable or belongs to another id.
        """
        path = self.path_of(session_id)
        try:
            st = os.stat(path, follow_symlinks=False)
            entry = self._describe(os.path.basename(path), path, st)
        except FileNotFoundError:
            return None
        if entry.header.id != session_id:
            raise PersistenceCorrupt(
                f"{path} holds session {entry.header.id!r}, not {session_id!r}"
            )
        return entry

    def _describe(self, name: str, path: str, st: os.stat_result) -> PersistedSession:
        revision = _revision(st)
        with self._cache_lock:
            cached = self._cache.get(name)
        if cached is not None and cached.revision == revision:
            header = cached.header
        else:
            fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
            try:
                line, _ = _read_header_line(fd, path)
            finally:
                os.close(fd)
            header, _ = _parse_header(line, path)
            if session_file_name(header.id) != name:
                raise _corrupt(
                    path, 1, f"the header names session {header.id!r}, which is not stored here"
                )
            with self._cache_lock:
                self._cache[name] = _CachedHeader(revision, header)
        return PersistedSession(header=header, revision=revision, size_bytes=st.st_size)

    # ----------------------------------------------------------------- reading

    def open_read(self, session_id: str) -> _JsonlReadHandle:
        """Open a stored log for reading; takes no lock and never modifies the file.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the header is unreadable, of an unsupported version, or of
                another id.
        """
        path = self.path_of(session_id)
        fd = self._open_existing(path, session_id, os.O_RDONLY)
        try:
            data = _read_from(fd, 0)
            header, inherited, end = self._header_of(data, path, session_id)
            return _JsonlReadHandle(
                path=path, fd=fd, header=header, inherited=inherited, offset=end, data=data[end:]
            )
        except BaseException:
            os.close(fd)
            raise

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable documents of one stored log (the search index's fast path).

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the log is damaged (see :mod:`.documents`).
        """
        path = self.path_of(session_id)
        fd = self._open_existing(path, session_id, os.O_RDONLY)
        try:
            revision, data = _revision(os.fstat(fd)), _read_from(fd, 0)
        finally:
            os.close(fd)
        header, _inherited, end = self._header_of(data, path, session_id)
        return jsonl_body_documents(header, revision, data[end:], path)

    def verify(self) -> builtins.list[LogProblem]:
        """Read every session file completely and report what is wrong, without raising.

        Torn tails are reported with ``fatal=False``. Storage is not modified.
        """
        problems: builtins.list[LogProblem] = []
        for name in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, name)
            if not is_session_file_name(name) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as file:
                    data = file.read()
                header_line, end = _read_header_line_from(data, path)
                header, _ = _parse_header(header_line, path)
                if session_file_name(header.id) != name:
                    raise _corrupt(path, 1, f"the header names session {header.id!r}")
                complete = data.rfind(b"\n") + 1
                count = len(_parse_events(data[end:complete], 0, path))
            except PersistenceCorrupt as exc:
                problems.append(LogProblem(path, _line_of(str(exc)), str(exc)))
                continue
            if complete < len(data):
                problems.append(
                    LogProblem(
                        path,
                        count + 2,
                        f"{path} line {count + 2}: torn final line ({len(data) - complete} "
                        "bytes without a newline); reads ignore it, the next write open "
                        "removes it",
                        fatal=False,
                    )
                )
        return problems

    # ----------------------------------------------------------------- writing

    def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> _JsonlWriteHandle:
        """Store a new session: its header line is durable and listed when this returns.

        Args:
            header: the new session's header.
            inherited_event_count: how many leading events come from a seed; only seeded
                sessions may inherit events.

        Returns:
            The owning write handle (append events, flush, close).

        Raises:
            ValueError: bad arguments.
            PersistenceExists: the id is already stored (nothing is changed).
            PersistenceOwned: another writer is creating the same id right now.
            PersistenceWriteFailed: the header could not be written.
        """
        if not isinstance(header, SessionHeader):
            raise ValueError(f"header must be a SessionHeader, not {type(header).__name__}")
        count = inherited_event_count
        if type(count) is not int or count < 0:
            raise ValueError(f"inherited_event_count must be a non-negative integer: {count!r}")
        if count and not header.is_seeded:
            raise ValueError("inherited_event_count > 0 requires a seeded header (is_seeded)")
        path = self.path_of(header.id)
        line = _encode_header(header, count)
        if os.path.lexists(path):
            raise PersistenceExists(f"session {header.id!r} is already stored at {path}")
        _lock.claim(path, f"session {header.id!r}")
        try:
            if os.path.lexists(path):
                raise PersistenceExists(f"session {header.id!r} is already stored at {path}")
            with self._changing(strict=False):
                fd = self._create_file(path, header.id, line)
        except BaseException:
            _lock.release(path)
            raise
        return _JsonlWriteHandle(
            store=self, path=path, fd=fd, header=header, inherited=count, stored=0, offset=len(line)
        )

    def _create_file(self, path: str, session_id: str, line: bytes) -> int:
        """Write the header to a hidden temporary file and link it into place atomically.

        Linking never replaces an existing file, and the session file never exists without
        its complete header, even after a crash. Filesystems without hard links fall back to
        creating the file in place.
        """
        temp = os.path.join(self._root, f"{_CREATING_PREFIX}{secrets.token_hex(8)}")
        fd = self._new_locked_file(temp, session_id, line)
        try:
            os.link(temp, path)
        except FileExistsError:
            os.close(fd)
            raise PersistenceExists(f"session {session_id!r} is already stored at {path}") from None
        except OSError:
            os.close(fd)
            fd = self._new_locked_file(path, session_id, line)
        finally:
            try:
                os.unlink(temp)
            except OSError:
                logger.warning("could not remove temporary file %s", temp)
        try:
            _fsync_dir(self._root)
        except OSError as exc:
            os.close(fd)
            raise _write_failed(exc, self._root, "syncing the store directory") from exc
        return fd

    def _new_locked_file(self, path: str, session_id: str, line: bytes) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS
        try:
            fd = os.open(path, flags, _FILE_MODE)
        except FileExistsError:
            raise PersistenceExists(f"session {session_id!r} is already stored at {path}") from None
        except OSError as exc:
            raise _write_failed(exc, path, "creating the session file") from exc
        try:
            os.fchmod(fd, _FILE_MODE)  # the umask must not widen or narrow the mode
            _lock.lock_file(fd, f"session {session_id!r}")
            _write_all(fd, line, 0)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            raise _write_failed(exc, path, "writing the session header") from exc
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_write(self, session_id: str) -> _JsonlWriteHandle:
        """Reopen a stored session for appending after its last stored event.

        A torn final line is truncated away first (the only repair this store makes).

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceOwned: another writer (this process or another) owns the session.
            PersistenceCorrupt: the log is damaged before its last complete line; it is
                left untouched.
            PersistenceWriteFailed: the torn tail could not be removed.
        """
        path = self.path_of(session_id)
        what = f"session {session_id!r}"
        _lock.claim(path, what)
        try:
            fd = self._open_existing(path, session_id, os.O_RDWR)
        except BaseException:
            _lock.release(path)
            raise
        try:
            _lock.lock_file(fd, what)
            if not _same_file(fd, path):
                raise PersistenceNotFound(f"session {session_id!r} was deleted")
            data = _read_from(fd, 0)
            header, inherited, end = self._header_of(data, path, session_id)
            complete = max(data.rfind(b"\n") + 1, end)
            count = len(_parse_events(data[end:complete], 0, path))
            if complete < len(data):
                self._repair(fd, path, complete)
        except BaseException:
            os.close(fd)
            _lock.release(path)
            raise
        return _JsonlWriteHandle(
            store=self,
            path=path,
            fd=fd,
            header=header,
            inherited=inherited,
            stored=count,
            offset=complete,
        )

    def _repair(self, fd: int, path: str, good: int) -> None:
        with self._changing(strict=True):
            try:
                os.ftruncate(fd, good)
                os.fsync(fd)
            except OSError as exc:
                raise _write_failed(exc, path, "removing the torn final line") from exc
        logger.info("removed a torn final line from %s", path)

    def delete(self, session_id: str) -> None:
        """Remove a stored session.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceOwned: a writer (this process or another) owns the session.
            PersistenceWriteFailed: the file could not be removed.
        """
        path = self.path_of(session_id)
        what = f"session {session_id!r}"
        _lock.claim(path, what)
        try:
            fd = self._open_existing(path, session_id, os.O_RDONLY)
            try:
                _lock.lock_file(fd, what)
                if not _same_file(fd, path):
                    raise PersistenceNotFound(f"session {session_id!r} is not stored")
                try:
                    with self._changing(strict=True):
                        os.unlink(path)
                        _fsync_dir(self._root)
                except OSError as exc:
                    raise _write_failed(exc, path, "deleting the session file") from exc
            finally:
                os.close(fd)
        finally:
            _lock.release(path)
        with self._cache_lock:
            self._cache.pop(os.path.basename(path), None)

    # ----------------------------------------------------------------- change token

    def change_token(self) -> str:
        """An opaque token that changes whenever a session is created, flushed, repaired or
        deleted through any ``JsonlPersistence`` on this root, in any process. O(1).

        Changes made by other programs (editors, ``rm``) are not seen by the token; they do
        change the files' revisions.
        """
        try:
            fd = os.open(os.path.join(self._root, _MARKER_NAME), os.O_RDONLY | _OPEN_FLAGS)
        except FileNotFoundError:
            token = "0"
        else:
            try:
                token = os.pread(fd, 128, 0).decode("ascii", "replace").strip() or "0"
            finally:
                os.close(fd)
        # Read the token first, then look for a change in progress: a change that starts
        # after this check moves the token past the value just read.
        if self._change_in_progress():
            # A one-off value: whoever keeps it must list again next time.
            return f"{token}+{secrets.token_hex(8)}"
        return token

    def _change_in_progress(self) -> bool:
        try:
            fd = os.open(os.path.join(self._root, _CHANGING_NAME), os.O_RDONLY | _OPEN_FLAGS)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # also drops the probe's own lock
        return False

    @contextmanager
    def _changing(self, *, strict: bool) -> Iterator[None]:
        """Make a change to the store's files visible to :meth:`change_token` users.

        The token moves before the change and again after it, and a shared lock on
        ``.change-token.changing`` is held throughout (the kernel drops it if the process
        dies). A token read while the lock is held is never trusted (see
        :meth:`change_token`), so an index that reconciles in the middle of a change, or
        while a killed writer's bytes are landing, lists the store again next time.

        Args:
            strict: raise when the first move of the token fails (flush, repair, delete);
                otherwise only log it (create, whose file is listed anyway).
        """
        try:
            fd: int | None = os.open(
                os.path.join(self._root, _CHANGING_NAME),
                os.O_RDWR | os.O_CREAT | _OPEN_FLAGS,
                _FILE_MODE,
            )
        except OSError:
            if strict:
                raise
            fd = None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                self._bump_token()
            except OSError:
                if strict:
                    raise
                logger.warning("could not update the change token of %s", self._root)
            yield
        finally:
            try:
                self._bump_token()
            except OSError:
                logger.warning("could not update the change token of %s", self._root)
            if fd is not None:
                os.close(fd)

    def _bump_token(self) -> None:
        path = os.path.join(self._root, _MARKER_NAME)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, _FILE_MODE)
            os.fchmod(fd, _FILE_MODE)
        except FileExistsError:
            fd = os.open(path, os.O_RDWR | _OPEN_FLAGS)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            nonce, _, counter = os.pread(fd, 128, 0).decode("ascii", "replace").partition(":")
            count = counter.strip()
            if not (nonce and count.isdigit()):
                # A fresh (or damaged) marker gets a new nonce so old tokens never recur.
                nonce, count = secrets.token_hex(8), "0"
            # Fixed width: a concurrent reader never sees a shorter, stale-looking value.
            _write_all(fd, f"{nonce}:{int(count) + 1:020d}\n".encode("ascii"), 0)
        finally:
            os.close(fd)

    # ----------------------------------------------------------------- helpers

    def _open_existing(self, path: str, session_id: str, flags: int) -> int:
        try:
            return os.open(path, flags | os.O_NOFOLLOW | _OPEN_FLAGS)
        except FileNotFoundError:
            raise PersistenceNotFound(f"session {session_id!r} is not stored") from None
        except OSError as exc:
            raise PersistenceCorrupt(f"{path}: cannot open the session file: {exc}") from None

    def _header_of(self, data: bytes, path: str, session_id: str) -> tuple[SessionHeader, int, int]:
        line, end = _read_header_line_from(data, path)
        header, inherited = _parse_header(line, path)
        if header.id != session_id:
            raise _corrupt(path, 1, f"the header names session {header.id!r}, not {session_id!r}")
        return header, inherited, end


def _read_header_line_from(data: bytes, path: str) -> tuple[bytes, int]:
    newline = data.find(b"\n")
    if newline == -1:
        what = "the file is empty" if not data else "the header line is incomplete (no newline)"
        raise _corrupt(path, 1, what)
    return data[:newline], newline + 1


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the open file (it may have been deleted meanwhile)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _line_of(message: str) -> int | None:
    marker = message.rfind(" line ")
    if marker == -1:
        return None
    digits = message[marker + 6 :].split(":", 1)[0]
    return int(digits) if digits.isdigit() else None
