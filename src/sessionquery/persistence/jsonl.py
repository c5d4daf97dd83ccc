"""The embedded durable store: one append-only JSONL file per session under one root.

The pieces live in their own modules: the file format in ``_format``, file-system helpers in
``_files``, the handles in ``_handles``, the change token and journal in ``_changes``, write
ownership in ``_lock`` and file names in ``_names``. This module is the store itself.

Invariants:

* **Reads never modify storage.** A torn final line (bytes after the last ``\\n``, left by a
  crash mid-write) is ignored by readers and truncated away only when a writer opens the file.
* **Damage is loud, and local.** A damaged line is
  :class:`~sessionquery.errors.PersistenceCorrupt` with ``path`` and ``line``; reading that
  session fails, but a listing reports the file as a problem (:meth:`JsonlPersistence.problems`)
  and lists every other session.
* **Only regular files are opened**, never blocking: a FIFO, device, directory or symlink named
  like a session file is a problem, never a hang.
* **Many processes, one root.** Any number of readers and writers in any number of processes
  share a root; one writer per session file (``_lock``). A listing of a store being written
  to is the state of each file at the moment it was looked at; it never fails because of a
  concurrent create, append or delete.
* ``revision`` changes whenever a file's bytes change; ``change_token()`` changes whenever a
  session is created, flushed with new events, repaired or deleted through this class in any
  process, and whenever a file is added, removed or renamed in the root by hand;
  ``changed_since()`` names the sessions changed since a token, or ``None`` when it cannot.
"""

from __future__ import annotations

import builtins
import logging
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from sessionquery.errors import (
    PersistenceCorrupt,
    PersistenceExists,
    PersistenceNotFound,
)
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    TitleSnapshot,
    fold_title,
    validate_session_id,
)
from sessionquery.persistence import _files, _lock
from sessionquery.persistence._changes import ChangeLog
from sessionquery.persistence._files import FILE_MODE, NotRegularFile
from sessionquery.persistence._format import (
    HEADER_TYPE,
    corrupt,
    encode_header,
    parse_events,
    parse_header,
    read_header_line,
    split_header_line,
)
from sessionquery.persistence._handles import JsonlReadHandle, JsonlWriteHandle
from sessionquery.persistence._lines import event_records
from sessionquery.persistence._names import is_session_file_name, session_file_name
from sessionquery.persistence._shared import check_new_session
from sessionquery.persistence.base import DocumentLog, PersistedSession
from sessionquery.persistence.documents import DocumentBuilder, read_check

__all__ = ["HEADER_TYPE", "JsonlPersistence", "LogProblem"]

logger = logging.getLogger(__name__)

_CREATING_PREFIX = ".creating-"
_TITLE_TYPE = "session/title"


@dataclass(frozen=True, slots=True)
class LogProblem:
    """One finding of :meth:`JsonlPersistence.verify` or :meth:`JsonlPersistence.problems`.

    The first three fields have the shape of the importers' ``Problem``.

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
        _files.ensure_dir(path)
        # Resolved once so the in-process writer registry sees one key per file.
        self._root = os.path.realpath(path)
        self._changes = ChangeLog(self._root)
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
        """Every readable stored session, in no promised order; reads at most header lines.

        Headers are cached per file revision, so listing an unchanged store again opens no
        session file. Entries that are not session files (names starting with ``.``, other
        extensions, directories) are ignored. A session file that cannot be listed (a garbage
        header, a header naming another id, a FIFO or symlink under a session name) is left
        out and reported by :meth:`problems`; it never hides the other sessions.
        """
        return self._scan()[0]

    def problems(self) -> builtins.list[LogProblem]:
        """Why each session file that :meth:`list` leaves out is left out, in name order.

        Like the importers' problems, ``message`` is the reason alone; ``path`` and ``line``
        say where.

        Reads header lines only (cached per revision); :meth:`verify` reads every line.
        """
        return self._scan()[1]

    def _scan(self) -> tuple[builtins.list[PersistedSession], builtins.list[LogProblem]]:
        sessions: builtins.list[PersistedSession] = []
        problems: builtins.list[LogProblem] = []
        try:
            entries = builtins.list(os.scandir(self._root))
        except FileNotFoundError:
            return sessions, problems
        for entry in entries:
            if not is_session_file_name(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    if stat.S_ISDIR(st.st_mode):
                        continue  # a directory is never a session file
                    _files.check_regular(st, entry.path)
                sessions.append(self._describe(entry.name, entry.path, st))
            except FileNotFoundError:
                continue  # deleted while listing
            except PersistenceCorrupt as exc:
                problems.append(LogProblem(entry.path, exc.line, _reason(exc)))
            except NotRegularFile as exc:
                problems.append(LogProblem(entry.path, None, f"{exc.what}, not a regular file"))
            except OSError as exc:
                problems.append(LogProblem(entry.path, None, _unreadable(entry.path, exc)))
        problems.sort(key=lambda problem: problem.path)
        return sessions, problems

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry without reading its log, or ``None`` if not stored.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceCorrupt: the header is unreadable or belongs to another id, or the
                file is not a regular file.
        """
        path = self.path_of(session_id)
        try:
            st = os.stat(path, follow_symlinks=False)
            _files.check_regular(st, path)
            entry = self._describe(os.path.basename(path), path, st)
        except FileNotFoundError:
            return None
        except NotRegularFile as exc:
            raise corrupt(path, None, f"it is {exc.what}, not a regular session file") from None
        if entry.header.id != session_id:
            raise corrupt(
                path, 1, f"the file holds session {entry.header.id!r}, not {session_id!r}"
            )
        return entry

    def _describe(self, name: str, path: str, st: os.stat_result) -> PersistedSession:
        """The listing entry of one regular file (``st`` from the caller's ``lstat``)."""
        revision = _files.revision(st)
        with self._cache_lock:
            cached = self._cache.get(name)
        if cached is not None and cached.revision == revision:
            header = cached.header
        else:
            fd = _files.open_regular(path, os.O_RDONLY)
            try:
                held = os.fstat(fd)
                line, _ = read_header_line(fd, path)
            finally:
                os.close(fd)
            header, _ = parse_header(line, path)
            if session_file_name(header.id) != name:
                raise corrupt(
                    path, 1, f"the header names session {header.id!r}, which is not stored here"
                )
            # Describe what was read: the file may have been replaced since the caller's stat.
            st, revision = held, _files.revision(held)
            with self._cache_lock:
                self._cache[name] = _CachedHeader(revision, header)
        return PersistedSession(header=header, revision=revision, size_bytes=st.st_size)

    # ----------------------------------------------------------------- change token

    def change_token(self) -> str:
        """An opaque token that changes whenever a session is created, flushed, repaired or
        deleted through any ``JsonlPersistence`` on this root, in any process, and whenever a
        file is added to, removed from or renamed into the root by another program.

        O(1) when nothing changed recently. An edit inside an existing session file by another
        program does not change the token (it changes the file's revision).
        """
        return self._changes.token()

    def changed_since(self, token: str) -> frozenset[str] | None:
        """Ids of the sessions created, appended to, repaired or deleted since ``token``.

        ``None`` when the journal cannot tell (a token from another store or too old, a
        one-off token read while a change was in progress, a file added, removed or renamed
        by hand, a damaged journal): then list in full. Never an under-approximation. Read the
        new token with :meth:`change_token` *before* calling this, and keep that one: every
        change missing from the answer has moved the token past it.
        """
        return self._changes.changed_since(token)

    # ----------------------------------------------------------------- reading

    def open_read(self, session_id: str) -> JsonlReadHandle:
        """Open a stored log for reading; takes no lock and never modifies the file.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the header is unreadable, of an unsupported version, or of
                another id, or the file is not a regular file.
        """
        path = self.path_of(session_id)
        fd = self._open_existing(path, session_id, os.O_RDONLY)
        try:
            # The header line, then the events read from where it ends: a huge log's bytes
            # are read once and never copied to cut the header off.
            line, end = read_header_line(fd, path)
            header, inherited = self._parsed_header(line, path, session_id)
            data = _files.read_from(fd, end)
            return JsonlReadHandle(
                path=path, fd=fd, header=header, inherited=inherited, offset=end, data=data
            )
        except BaseException:
            os.close(fd)
            raise

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable documents of one stored log (the search index's fast path).

        Read in bounded memory, a block at a time; an event line longer than
        :data:`~sessionquery.persistence._lines.LARGE_EVENT_BYTES` has its text indexed up to
        :data:`~sessionquery.persistence._lines.INDEXED_EVENT_TEXT` bytes (see
        :mod:`._lines`); the caller's deadline (:func:`.documents.checking`) is checked every
        block, inside such a line too, and a large line's reading continues where an
        interrupted one stopped.

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the log is damaged (see :mod:`.documents`).
        """
        path = self.path_of(session_id)
        fd = self._open_existing(path, session_id, os.O_RDONLY)
        try:
            revision = _files.revision(os.fstat(fd))
            line, end = read_header_line(fd, path)
            header, _inherited = parse_header(line, path)
            if header.id != session_id:
                raise corrupt(
                    path, 1, f"the header names session {header.id!r}, not {session_id!r}"
                )
            builder = DocumentBuilder(header, revision, path)
            for _number, record in event_records(fd, end, path, read_check()):
                builder.add(record)
            return builder.finish()
        finally:
            os.close(fd)

    def read_title(self, session_id: str) -> tuple[SessionHeader, TitleSnapshot | None]:
        """The stored header and title of one log, read as :meth:`read_documents` reads it:
        a block at a time, a line over ``LARGE_EVENT_BYTES`` reduced (a title event that long
        keeps the first ``INDEXED_EVENT_TEXT`` bytes of its title), the caller's deadline
        checked every block; only ``session/title`` events are built, so a session holding a
        huge event costs bounded memory. Lines are checked to be JSON, title events to be
        valid events; other events are not validated (the exact reads do that).

        Raises:
            ValueError: ``session_id`` is not a valid session id.
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the header, a line or a title event is damaged.
        """
        path = self.path_of(session_id)
        fd = self._open_existing(path, session_id, os.O_RDONLY)
        try:
            line, end = read_header_line(fd, path)
            header, _inherited = parse_header(line, path)
            if header.id != session_id:
                raise corrupt(
                    path, 1, f"the header names session {header.id!r}, not {session_id!r}"
                )
            titles: builtins.list[SessionEvent] = []
            for number, record in event_records(fd, end, path, read_check()):
                if type(record) is dict and record.get("type") == _TITLE_TYPE:
                    try:
                        event = SessionEvent.from_json(record)
                    except (ValueError, RecursionError) as exc:
                        raise corrupt(path, number, f"invalid event: {exc}") from None
                    if event.seq != number - 2:
                        raise corrupt(
                            path, number, f"event has seq {event.seq}, expected {number - 2}"
                        )
                    titles.append(event)
            return header, fold_title(titles)
        finally:
            os.close(fd)

    def verify(self) -> builtins.list[LogProblem]:
        """Read every session file completely and report what is wrong, without raising.

        Torn tails are reported with ``fatal=False``. Storage is not modified.
        """
        problems: builtins.list[LogProblem] = []
        for name in sorted(os.listdir(self._root)):
            if not is_session_file_name(name):
                continue
            path = os.path.join(self._root, name)
            try:
                if stat.S_ISDIR(os.stat(path, follow_symlinks=False).st_mode):
                    continue
                problems.extend(self._verify_file(name, path))
            except FileNotFoundError:
                continue  # deleted meanwhile
            except PersistenceCorrupt as exc:
                problems.append(LogProblem(path, exc.line, str(exc)))
            except OSError as exc:
                problems.append(LogProblem(path, None, _unreadable(path, exc)))
        return problems

    def _verify_file(self, name: str, path: str) -> builtins.list[LogProblem]:
        fd = _files.open_regular(path, os.O_RDONLY)
        try:
            data = _files.read_from(fd, 0)
        finally:
            os.close(fd)
        header_line, end = split_header_line(data, path)
        header, _ = parse_header(header_line, path)
        if session_file_name(header.id) != name:
            raise corrupt(path, 1, f"the header names session {header.id!r}")
        complete = data.rfind(b"\n") + 1
        count = len(parse_events(data[end:complete], 0, path))
        if complete == len(data):
            return []
        message = (
            f"{path} line {count + 2}: torn final line ({len(data) - complete} bytes without a "
            "newline); reads ignore it, the next write open removes it"
        )
        return [LogProblem(path, count + 2, message, fatal=False)]

    # ----------------------------------------------------------------- writing

    def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> JsonlWriteHandle:
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
        count = check_new_session(header, inherited_event_count)
        path = self.path_of(header.id)
        line = encode_header(header, count)
        if os.path.lexists(path):
            raise PersistenceExists(f"session {header.id!r} is already stored at {path}")
        _lock.claim(path, f"session {header.id!r}")
        try:
            if os.path.lexists(path):
                raise PersistenceExists(f"session {header.id!r} is already stored at {path}")
            with self._changes.changing(header.id, strict=False):
                fd = self._create_file(path, header.id, line)
        except BaseException:
            _lock.release(path)
            raise
        return self._writer(path, fd, header, count, stored=0, offset=len(line))

    def _create_file(self, path: str, session_id: str, line: bytes) -> int:
        """Write the header to a hidden temporary file and link it into place atomically.

        Linking never replaces an existing file, and the session file never exists without
        its complete header, even after a crash. Filesystems without hard links fall back to
        creating the file in place.
        """
        import secrets  # only for a new session's file (it imports hmac and random)

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
            _files.fsync_dir(self._root)
        except OSError as exc:
            os.close(fd)
            raise _files.write_failed(exc, self._root, "syncing the store directory") from exc
        return fd

    def _new_locked_file(self, path: str, session_id: str, line: bytes) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | _files.OPEN_FLAGS
        try:
            fd = os.open(path, flags, FILE_MODE)
        except FileExistsError:
            raise PersistenceExists(f"session {session_id!r} is already stored at {path}") from None
        except OSError as exc:
            raise _files.write_failed(exc, path, "creating the session file") from exc
        try:
            os.fchmod(fd, FILE_MODE)  # the umask must not widen or narrow the mode
            _lock.lock_file(fd, f"session {session_id!r}")
            _files.write_all(fd, line, 0)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            raise _files.write_failed(exc, path, "writing the session header") from exc
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_write(self, session_id: str) -> JsonlWriteHandle:
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
            if not _files.same_file(fd, path):
                raise PersistenceNotFound(f"session {session_id!r} was deleted")
            data = _files.read_from(fd, 0)
            header, inherited, end = self._header_of(data, path, session_id)
            complete = max(data.rfind(b"\n") + 1, end)
            count = len(parse_events(data[end:complete], 0, path))
            if complete < len(data):
                self._repair(fd, path, complete, session_id)
        except BaseException:
            os.close(fd)
            _lock.release(path)
            raise
        return self._writer(path, fd, header, inherited, stored=count, offset=complete)

    def _writer(
        self, path: str, fd: int, header: SessionHeader, inherited: int, *, stored: int, offset: int
    ) -> JsonlWriteHandle:
        """The owning write handle on an open, claimed and locked session file: ``stored``
        events end at byte ``offset``; its flushes are announced to this store's changes."""
        return JsonlWriteHandle(
            changes=self._changes,
            path=path,
            fd=fd,
            header=header,
            inherited=inherited,
            stored=stored,
            offset=offset,
        )

    def _repair(self, fd: int, path: str, good: int, session_id: str) -> None:
        with self._changes.changing(session_id, strict=True):
            try:
                os.ftruncate(fd, good)
                os.fsync(fd)
            except OSError as exc:
                raise _files.write_failed(exc, path, "removing the torn final line") from exc
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
                if not _files.same_file(fd, path):
                    raise PersistenceNotFound(f"session {session_id!r} is not stored")
                try:
                    with self._changes.changing(session_id, strict=True):
                        os.unlink(path)
                        _files.fsync_dir(self._root)
                except OSError as exc:
                    raise _files.write_failed(exc, path, "deleting the session file") from exc
            finally:
                os.close(fd)
        finally:
            _lock.release(path)
        with self._cache_lock:
            self._cache.pop(os.path.basename(path), None)

    # ----------------------------------------------------------------- helpers

    def _open_existing(self, path: str, session_id: str, flags: int) -> int:
        try:
            return _files.open_regular(path, flags)
        except FileNotFoundError:
            raise PersistenceNotFound(f"session {session_id!r} is not stored") from None
        except NotRegularFile as exc:
            raise corrupt(path, None, f"it is {exc.what}, not a regular session file") from None
        except OSError as exc:
            raise corrupt(path, None, f"cannot open the session file: {exc}") from None

    def _header_of(self, data: bytes, path: str, session_id: str) -> tuple[SessionHeader, int, int]:
        line, end = split_header_line(data, path)
        header, inherited = self._parsed_header(line, path, session_id)
        return header, inherited, end

    @staticmethod
    def _parsed_header(line: bytes, path: str, session_id: str) -> tuple[SessionHeader, int]:
        header, inherited = parse_header(line, path)
        if header.id != session_id:
            raise corrupt(path, 1, f"the header names session {header.id!r}, not {session_id!r}")
        return header, inherited


def _unreadable(path: str, exc: OSError) -> str:
    if isinstance(exc, NotRegularFile):
        return str(exc)
    return f"{path}: cannot read the session file: {exc.strerror or exc}"


def _reason(exc: PersistenceCorrupt) -> str:
    """The message of ``exc`` without its ``<path> line <n>:`` prefix."""
    text = str(exc)
    if exc.path is not None:
        where = exc.path if exc.line is None else f"{exc.path} line {exc.line}"
        text = text.removeprefix(f"{where}: ")
    return text
