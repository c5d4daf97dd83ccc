"""Read and write handles on one JSONL session file.

Invariants:

* **Readers take no lock** and always see a contiguous valid prefix, also while a writer
  appends; a torn final line is never returned and never modified by a reader.
* A reader asked for :meth:`JsonlReadHandle.skeletons` first validates every line as strictly
  as a whole read (:mod:`._skeletons`) but keeps only envelopes and line offsets; its later
  :meth:`~JsonlReadHandle.read` calls then parse only the lines asked for.
* **One writer per file**, in this process and across processes (see ``_lock``).
* **Flushed means durable.** ``flush()`` returns after the lines are written and fsynced; a
  failed flush keeps the events buffered and leaves the file ending at its last good line.
* Every flush that stores new events is announced to the store's change token and journal
  (see ``_changes``) before and after the write.
"""

from __future__ import annotations

import builtins
import os
import threading
from contextlib import nullcontext

from sessionquery.errors import PersistenceClosed
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.persistence import _files, _lock
from sessionquery.persistence._changes import ChangeLog
from sessionquery.persistence._format import corrupt, dumps_line, parse_events
from sessionquery.persistence._shared import BufferedWriteHandle
from sessionquery.persistence._skeletons import skeleton_lines
from sessionquery.persistence.handles import LogHandle

__all__ = ["JsonlReadHandle", "JsonlWriteHandle"]


class JsonlReadHandle(LogHandle):
    """A non-owning view of one session file; later reads see events flushed since.

    Two ways of reading, chosen by the first call: :meth:`read` first parses events as it
    goes (and keeps them); :meth:`skeletons` first keeps every line's skeleton and offsets,
    and :meth:`read` then parses only the lines asked for.
    """

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
        super().__init__(header, inherited)
        self._path = path
        self._fd: int | None = fd
        self._consumed = offset
        self._pending: bytes | None = data
        self._events: builtins.list[SessionEvent] = []
        self._skeletons: builtins.list[EventSkeleton] | None = None
        self._starts: builtins.list[int] = []  # skeleton mode: each line's offset, then the end
        self._lock = threading.Lock()

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
            fd = self._open_fd()
            if self._skeletons is not None:
                return self._read_lines(fd, offset, length)
            if length is None or offset + length > len(self._events):
                self._refresh(fd)
            end = None if length is None else offset + length
            return self._events[offset:end]

    def skeletons(self) -> builtins.list[EventSkeleton]:
        """The skeleton of every event of the valid prefix, each line validated as strictly
        as :meth:`read` validates it; later :meth:`read` calls parse only their lines.

        Raises:
            PersistenceCorrupt: a complete line is damaged (as :meth:`read` reports it).
            PersistenceClosed: the handle is closed.
        """
        with self._lock:
            fd = self._open_fd()
            if self._skeletons is None:
                if self._pending is None:  # read() came first: its events are kept anyway
                    self._refresh(fd)
                    return [EventSkeleton.of(event) for event in self._events]
                self._skeletons = []
                self._starts = [self._consumed]
            self._extend(fd)
            return list(self._skeletons)

    def _open_fd(self) -> int:
        if self._fd is None:
            raise PersistenceClosed(f"read handle of {self._path} is closed")
        return self._fd

    def _refresh(self, fd: int) -> None:
        data = self._pending
        self._pending = None
        if data is None:
            data = _files.read_from(fd, self._consumed)
        complete = data.rfind(b"\n") + 1
        if complete:
            parsed = parse_events(data[:complete], len(self._events), self._path)
            self._events.extend(parsed)
            self._consumed += complete

    def _extend(self, fd: int) -> None:
        """Skeletons of the complete lines flushed since the last look."""
        assert self._skeletons is not None
        data = self._pending
        self._pending = None
        if data is None:
            data = _files.read_from(fd, self._consumed)
        complete = data.rfind(b"\n") + 1
        if not complete:
            return
        found, ends = skeleton_lines(data[:complete], len(self._skeletons), self._path)
        self._skeletons.extend(found)
        self._starts.extend(map(self._consumed.__add__, ends))
        self._consumed += complete

    def _read_lines(self, fd: int, offset: int, length: int | None) -> builtins.list[SessionEvent]:
        """Skeleton mode: parse only lines ``offset .. offset+length`` (strictly)."""
        known = len(self._starts) - 1
        if length is None or offset + length > known:
            self._extend(fd)
            known = len(self._starts) - 1
        end = known if length is None else min(offset + length, known)
        if offset >= end:
            return []
        begin, stop = self._starts[offset], self._starts[end]
        data = _files.read_range(fd, begin, stop - begin)
        if len(data) != stop - begin or not data.endswith(b"\n"):
            raise corrupt(self._path, offset + 2, "the file was cut short while it was read")
        return parse_events(data, offset, self._path)

    def close(self) -> None:
        """Release the file; idempotent."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
                self._events = []
                self._skeletons = None
                self._starts = []


class JsonlWriteHandle(BufferedWriteHandle[bytes]):
    """The owning writer of one session file: buffered appends, durable flushes.

    A flush writes every queued line with one write, then fsyncs; a failed flush cuts the
    file back to its last good line (now, or at the next flush).
    """

    def __init__(
        self,
        *,
        changes: ChangeLog,
        path: str,
        fd: int,
        header: SessionHeader,
        inherited: int,
        stored: int,
        offset: int,
    ) -> None:
        super().__init__(header, inherited, stored, f"write handle of {path}")
        self._changes = changes
        self._path = path
        self._fd = fd
        self._good = offset
        self._needs_truncate = False

    def _encode(self, event: SessionEvent) -> bytes:
        return dumps_line(event.to_json())

    def _flush_locked(self) -> None:
        lines = self._queued()
        if not lines and not self._needs_truncate:
            return
        data = b"".join(lines)
        try:
            # Announced before and after the write, under the "changing" lock (see
            # ChangeLog.changing): no crash point and no concurrent reconciliation can leave
            # an index trusting a token that predates these lines.
            announce = self._changes.changing(self._header.id, strict=True)
            with announce if data else nullcontext():
                if self._needs_truncate:
                    os.ftruncate(self._fd, self._good)
                    self._needs_truncate = False
                self._needs_truncate = True
                _files.write_all(self._fd, data, self._good)
                os.fsync(self._fd)
        except OSError as exc:
            self._cut_back()
            raise _files.write_failed(exc, self._path, "appending events") from exc
        self._needs_truncate = False
        self._good += len(data)  # read and written only under _flushing
        self._stored_now(len(lines))

    def _cut_back(self) -> None:
        try:
            os.ftruncate(self._fd, self._good)
        except OSError:
            return  # stays marked; the next flush truncates first
        self._needs_truncate = False

    def _release(self) -> None:
        os.close(self._fd)
        _lock.release(self._path)
