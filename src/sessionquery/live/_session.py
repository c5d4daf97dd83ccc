"""One live session: an append-only, validated, thread-safe event log (see the package
docstring of :mod:`sessionquery.live` for its invariants)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from sessionquery.errors import PersistenceError
from sessionquery.live._changes import Notifier, StoreChange
from sessionquery.live._view import EventLogView
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceClass,
    SurfaceFolder,
    SurfaceOp,
    freeze_json,
)
from sessionquery.model.header import HeaderedLog
from sessionquery.persistence.base import WriteHandle

__all__ = ["Session", "SessionClosed"]

logger = logging.getLogger(__name__)


class SessionClosed(RuntimeError):
    """An append to a session that was closed; the message names the session."""


class Session(HeaderedLog):
    """One live, append-only session log. Create sessions with :class:`SessionStore`.

    All methods are thread-safe (one lock per session).
    """

    def __init__(
        self,
        header: SessionHeader,
        *,
        folder: SurfaceFolder,
        seed: Sequence[SessionEvent],
        inherited_event_count: int,
        clock: Callable[[], int],
        handle: WriteHandle | None,
        notifier: Notifier,
    ) -> None:
        self._header = header
        self._folder = folder
        self._log: list[SessionEvent] = list(seed)
        self._length = len(self._log)
        self._inherited = inherited_event_count
        self._clock = clock
        self._last_time = max((event.time for event in self._log), default=0)
        self._last_of_type: dict[str, int] = {event.type: event.seq for event in self._log}
        self._handle = handle
        self._handed = 0
        self._notifier = notifier
        self._closed = False
        self._released = False  # close() flushed every event and released the handle
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        # Serialises hand-over and fsync so the handle sees events in seq order.
        self._io_lock = threading.Lock()

    @property
    def id(self) -> str:
        """The session id."""
        return self._header.id

    @property
    def events(self) -> EventLogView:
        """An immutable O(1) snapshot of the log at its current length."""
        return EventLogView(self._log, 0, self._length)

    @property
    def is_closed(self) -> bool:
        """Whether the session was closed (its events stay readable)."""
        return self._closed

    def __len__(self) -> int:
        return self._length

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, events={self._length}, closed={self._closed})"

    def surface_class(self, seq: int) -> SurfaceClass:
        """The surface class of ``seq`` as of the events appended so far.

        Raises:
            IndexError: ``seq`` is not a seq of this session.
        """
        with self._lock:
            if not 0 <= seq < self._length:
                raise IndexError(f"seq {seq} is not in session {self.id!r}")
            return self._folder.surface_class(seq)

    def surface_nodes(self) -> tuple[int, ...]:
        """The current surface seqs, in model-history order."""
        with self._lock:
            return self._folder.nodes()

    def last_seq(self, event_type: str) -> int | None:
        """The seq of the latest event of ``event_type``, or ``None`` (O(1))."""
        return self._last_of_type.get(event_type)

    def append(
        self,
        type: str,
        data: object = None,
        *,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: Iterable[int] | None = None,
        ignorable: bool = False,
    ) -> SessionEvent:
        """Record the next event, assigning its seq and time.

        Appending a ``turn/end`` to a persisted session is a durability barrier: it returns
        once every event so far is on disk.

        Args:
            type: the event type (SPEC §3.3 vocabulary, or any other non-empty string).
            data: the JSON payload; it is validated and stored deep-frozen.
            surface_op: ``"append"`` or a ``Replace`` for surface-eligible types, else ``None``.
            source_event_seqs: earlier seqs this event cites (surface-eligible types only).
            ignorable: mark an informational event of an unknown type as skippable.

        Returns:
            The recorded event.

        Raises:
            ValueError: invalid data or envelope; nothing is recorded.
            SurfaceError: the event would make the log unfoldable; nothing is recorded.
            SessionClosed: the session was closed.
            OSError | PersistenceError: the ``turn/end`` flush failed; the event *is* recorded
                and stays buffered, and a later :meth:`flush` retries.
        """
        frozen = freeze_json(data, "data")
        sources = None if source_event_seqs is None else tuple(source_event_seqs)
        with self._lock:
            if self._closed:
                raise SessionClosed(f"session {self.id!r} is closed; it accepts no more events")
            seq = self._length
            event_time = max(self._clock(), self._last_time)
            event = SessionEvent(
                type=type,
                seq=seq,
                time=event_time,
                data=frozen,
                surface_op=surface_op,
                source_event_seqs=sources,
                ignorable=ignorable,
            )
            self._folder.apply(event)
            self._log.append(event)
            self._length = seq + 1
            self._last_time = event_time
            self._last_of_type[type] = seq
            self._notifier.enqueue(StoreChange("appended", self.id, event))
        try:
            if self._handle is not None:
                if type == "turn/end":
                    self.flush()
                else:
                    self._try_hand_over()
        finally:
            self._notifier.deliver()
        return event

    def flush(self) -> None:
        """Return once every event appended so far is durable (no-op without persistence).

        Raises:
            OSError | PersistenceError: the write failed; events stay buffered for a retry.
        """
        if self._handle is None:
            return
        with self._io_lock:
            if self._released:
                # close() made every event durable and appends are refused: nothing to do.
                # (An append racing close() reaches its turn/end barrier here.)
                return
            self._hand_over(self._handle)
            self._handle.flush()

    def _make_seed_durable(self) -> None:
        # A seed ends at a turn boundary, so it is flushed like a turn/end. create() is not a
        # barrier, though: on failure the seed stays buffered and the next barrier raises.
        try:
            self.flush()
        except (OSError, PersistenceError):
            logger.warning("session %r: seed not yet durable; the next flush retries", self.id)

    def _try_hand_over(self) -> None:
        # Appends never wait for a running fsync: the flusher or the next append hands over.
        if not self._io_lock.acquire(blocking=False):
            return
        try:
            assert self._handle is not None
            self._hand_over(self._handle)
        except (OSError, PersistenceError):
            logger.warning("buffering session %r events failed; retrying at flush", self.id)
        finally:
            self._io_lock.release()

    def _hand_over(self, handle: WriteHandle) -> None:
        """Give the handle every event it has not seen yet (caller holds ``_io_lock``)."""
        stop = self._length
        if self._handed < stop:
            handle.append(self._log[self._handed : stop])
            self._handed = stop

    def _close(self) -> bool:
        """Refuse further appends, flush and release the write handle.

        Returns whether this call closed the session (``False``: it already was). If the flush
        fails the session is reopened, so nothing is lost and close can be retried.
        """
        with self._close_lock:
            with self._lock:
                if self._closed:
                    return False
                self._closed = True
            try:
                self.flush()
            except BaseException:
                with self._lock:
                    self._closed = False
                raise
            if self._handle is not None:
                with self._io_lock:
                    self._handle.close()
                    self._released = True
            return True
