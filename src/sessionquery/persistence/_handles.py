"""Read and write handles on one JSONL session file.

Invariants:

* **Readers take no lock** and always see a contiguous valid prefix, also while a writer
  appends; a torn final line is never returned and never modified by a reader.
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
from collections.abc import Sequence
from contextlib import nullcontext
from types import TracebackType
from typing import Self

from sessionquery.errors import PersistenceClosed
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence import _files, _lock
from sessionquery.persistence._changes import ChangeLog
from sessionquery.persistence._format import dumps_line, parse_events

__all__ = ["JsonlReadHandle", "JsonlWriteHandle"]


class JsonlReadHandle:
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
            data = _files.read_from(fd, self._consumed)
        complete = data.rfind(b"\n") + 1
        if complete:
            parsed = parse_events(data[:complete], len(self._events), self._path)
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


class JsonlWriteHandle:
    """The owning writer of one session file: buffered appends, durable flushes."""

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
        self._changes = changes
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
                lines.append(dumps_line(event.to_json()))
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
