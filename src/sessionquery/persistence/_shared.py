"""What the bundled writable stores (JSONL files, PostgreSQL) share: the checks of ``create``
and the body of their write handles (their read handles' is :class:`~.handles.LogHandle`,
which every read handle shares).

Invariants of :class:`BufferedWriteHandle`:

* ``append`` queues whole events in seq order and does no I/O; an invalid batch queues
  nothing.
* ``flush`` writes every queued event and returns when they are durable; a failed flush keeps
  them queued. One flush (or close) at a time (``_flushing``); the buffer and the counters are
  guarded by ``_state``, which is never held during I/O.
* ``close`` flushes first and releases ownership only when that succeeded, so a failed close
  can be retried without losing events; a closed handle refuses appends and flushes.
"""

from __future__ import annotations

import builtins
import threading
from abc import abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

from sessionquery.errors import PersistenceClosed
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.handles import LogHandle

__all__ = ["BufferedWriteHandle", "LogHandle", "check_new_session"]

EntryT = TypeVar("EntryT")


def check_new_session(header: object, inherited_event_count: object) -> int:
    """The arguments of ``create``: a header, and how many of its events a seeded session
    inherits; returns that count.

    Raises:
        ValueError: ``header`` is not a ``SessionHeader``, the count is not a non-negative
            integer, or it is positive for a header that is not seeded.
    """
    if not isinstance(header, SessionHeader):
        raise ValueError(f"header must be a SessionHeader, not {type(header).__name__}")
    count = inherited_event_count
    if type(count) is not int or count < 0:
        raise ValueError(f"inherited_event_count must be a non-negative integer: {count!r}")
    if count and not header.is_seeded:
        raise ValueError("inherited_event_count > 0 requires a seeded header (is_seeded)")
    return count


class BufferedWriteHandle(LogHandle, Generic[EntryT]):
    """The owning writer of one stored log: queued appends, durable flushes.

    A store's handle encodes an event into its buffer entry (:meth:`_encode`), writes the
    queued entries (:meth:`_flush_locked`) and gives up ownership (:meth:`_release`).

    Args:
        header: the session header.
        inherited: the inherited prefix length.
        stored: events already stored (the seq of the first event to append).
        what: names the handle in errors (``"write handle of ..."``).
    """

    def __init__(self, header: SessionHeader, inherited: int, stored: int, what: str) -> None:
        super().__init__(header, inherited)
        self._stored = stored
        self._what = what
        self._buffer: builtins.list[EntryT] = []
        self._closed = False
        self._state = threading.Lock()  # guards the buffer and counters; never held during I/O
        self._flushing = threading.Lock()  # serialises flush/close

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
                raise PersistenceClosed(f"{self._what} is closed")
            expected = self._stored + len(self._buffer)
            entries: builtins.list[EntryT] = []
            for event in events:
                if not isinstance(event, SessionEvent):
                    raise ValueError(f"expected a SessionEvent, not {type(event).__name__}")
                if event.seq != expected:
                    raise ValueError(f"event seq {event.seq} is not the next seq {expected}")
                entries.append(self._encode(event))
                expected += 1
            self._buffer.extend(entries)

    def flush(self) -> None:
        """Write every queued event; returns when they are durable.

        Raises:
            PersistenceWriteFailed: the write failed; the events stay queued.
            PersistenceOwned: the stored log moved on under this writer (a stale seq, in a
                store that can tell, such as PostgreSQL); nothing was written.
            PersistenceClosed: the handle is closed.
        """
        with self._flushing:
            if self._closed:
                raise PersistenceClosed(f"{self._what} is closed")
            self._flush_locked()

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
            self._release()

    def _queued(self) -> builtins.list[EntryT]:
        """A copy of the entries queued so far."""
        with self._state:
            return builtins.list(self._buffer)

    def _stored_now(self, count: int) -> None:
        """Record that the first ``count`` queued entries are durable."""
        with self._state:
            del self._buffer[:count]
            self._stored += count

    @abstractmethod
    def _encode(self, event: SessionEvent) -> EntryT:
        """The buffer entry of one event (called under ``_state``; no I/O)."""

    @abstractmethod
    def _flush_locked(self) -> None:
        """Write the queued entries durably (``_flushing`` is held)."""

    @abstractmethod
    def _release(self) -> None:
        """Give up ownership of the log (after the final flush)."""
