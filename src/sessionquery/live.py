"""The live store: sessions being recorded in this process.

A :class:`SessionStore` holds the sessions that are *live*: created (or forked) here and not
yet closed. Each :class:`Session` is an append-only event log with these invariants:

* seqs are contiguous from 0 and assigned by :meth:`Session.append`; times come from the
  store's clock and never decrease;
* every event is validated before it is recorded (lossless JSON, and the surface rules via one
  incremental :class:`~sessionquery.model.SurfaceFolder` per session, amortised O(1) per
  append), so ``fold_surface(session.events)`` always succeeds; a refused append changes
  nothing;
* :attr:`Session.events` is an immutable snapshot: an O(1) read-only view of the log cut at
  its length when taken. Later appends never change a snapshot already handed out;
* with a persistence, events are written behind: each append hands the event to the session's
  write handle (buffered), and :meth:`SessionStore.flush`, :meth:`SessionStore.close` and every
  ``turn/end`` append return only once every event up to that point is on disk. A write
  failure is raised from the flush that hits it; the events stay buffered in the handle and in
  memory, and a later flush retries.

Subscribers (:meth:`SessionStore.subscribe`) receive a :class:`StoreChange` for every created,
appended and closed session, in order per session, always after the store's locks are
released; an exception in a subscriber is logged and never breaks the operation that caused it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, overload

from sessionquery.errors import PersistenceError
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceClass,
    SurfaceFolder,
    SurfaceOp,
    freeze_json,
)
from sessionquery.persistence.base import WriteHandle

__all__ = [
    "EventLogView",
    "Session",
    "SessionClosed",
    "SessionStore",
    "StoreChange",
    "StoreChangeKind",
    "WritablePersistence",
]

logger = logging.getLogger(__name__)

StoreChangeKind = Literal["created", "appended", "closed"]


@dataclass(frozen=True, slots=True)
class StoreChange:
    """What happened in a :class:`SessionStore`, as handed to subscribers.

    Attributes:
        kind: ``"created"`` (also for forks), ``"appended"`` or ``"closed"``.
        session_id: the session concerned.
        event: the appended event for ``"appended"``, else ``None``.
    """

    kind: StoreChangeKind
    session_id: str
    event: SessionEvent | None = None


class SessionClosed(RuntimeError):
    """An append to a session that was closed; the message names the session."""


class WritablePersistence(Protocol):
    """What the store needs of a writable persistence: ``create`` returning a write handle."""

    def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> WriteHandle:
        """Store a new session and return its single owning writer."""
        ...


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _new_id() -> str:
    return str(uuid.uuid4())


class EventLogView(Sequence[SessionEvent]):
    """A read-only window ``[start, stop)`` of an append-only event list.

    Taking a view costs O(1): it shares the session's list, which only ever grows, so the
    window never changes. Contiguous slices are views too; stepped slices are tuples. A view
    compares equal to any list, tuple or view holding the same events.
    """

    __slots__ = ("_items", "_start", "_stop")

    def __init__(self, items: list[SessionEvent], start: int, stop: int) -> None:
        self._items = items
        self._start = start
        self._stop = stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SessionEvent]: ...

    def __getitem__(self, index: int | slice) -> SessionEvent | Sequence[SessionEvent]:
        length = self._stop - self._start
        if isinstance(index, slice):
            start, stop, step = index.indices(length)
            if step == 1:
                return EventLogView(
                    self._items, self._start + start, self._start + max(start, stop)
                )
            return tuple(self._items[self._start + i] for i in range(start, stop, step))
        position = index.__index__()
        if position < 0:
            position += length
        if not 0 <= position < length:
            raise IndexError(f"event index {index} is out of range for {length} events")
        return self._items[self._start + position]

    def __iter__(self) -> Iterator[SessionEvent]:
        items = self._items
        for position in range(self._start, self._stop):
            yield items[position]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EventLogView | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EventLogView({len(self)} events)"


class _Notifier:
    """Delivers store changes to subscribers in order, outside every state lock.

    Changes are queued while the producer holds its session lock (so per-session order is the
    seq order) and delivered by whichever thread finds nobody delivering; a subscriber that
    appends from its callback therefore queues instead of recursing or deadlocking.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[StoreChange] = deque()
        self._delivering = False
        self._subscribers: tuple[Callable[[StoreChange], object], ...] = ()

    def subscribe(self, callback: Callable[[StoreChange], object]) -> Callable[[], None]:
        token = _Subscription(callback)
        with self._lock:
            self._subscribers = (*self._subscribers, token)

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = tuple(s for s in self._subscribers if s is not token)

        return unsubscribe

    def enqueue(self, change: StoreChange) -> None:
        if self._subscribers:
            self._queue.append(change)

    def deliver(self) -> None:
        while True:
            with self._lock:
                if self._delivering or not self._queue:
                    return
                self._delivering = True
            try:
                while self._queue:
                    change = self._queue.popleft()
                    for subscriber in self._subscribers:
                        subscriber(change)
            finally:
                with self._lock:
                    self._delivering = False


class _Subscription:
    """One subscriber; a distinct object so the same callback can subscribe twice."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[StoreChange], object]) -> None:
        self.callback = callback

    def __call__(self, change: StoreChange) -> None:
        try:
            self.callback(change)
        except Exception:
            # A broken subscriber must never break the append that notified it.
            logger.exception("store subscriber %r failed on %r", self.callback, change)


class Session:
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
        notifier: _Notifier,
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
    def header(self) -> SessionHeader:
        """The immutable session header."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """How many leading events were inherited from the seed (0 when not seeded)."""
        return self._inherited

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


class SessionStore:
    """The sessions live in this process, optionally written behind to a persistence.

    Args:
        persistence: a writable store (e.g. ``JsonlPersistence``) or ``None`` for memory only.
        clock: zero-argument callable returning the time in epoch milliseconds.
        id_factory: zero-argument callable returning a fresh session id.
    """

    def __init__(
        self,
        persistence: WritablePersistence | None = None,
        *,
        clock: Callable[[], int] | None = None,
        id_factory: Callable[[], str] | None = None,
    ) -> None:
        self._persistence = persistence
        self._clock = clock or _wall_clock_ms
        self._id_factory = id_factory or _new_id
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._reserved: set[str] = set()
        self._notifier = _Notifier()

    @property
    def persistence(self) -> WritablePersistence | None:
        """The persistence events are written behind to, if any."""
        return self._persistence

    def create(
        self,
        session_id: str | None = None,
        *,
        cwd: str | None = None,
        parent_session: str | None = None,
        origin: str | None = None,
        delegation_depth: int = 0,
        agent_preset: str | None = None,
        seed: Sequence[SessionEvent] = (),
        inherited_event_count: int | None = None,
        created_at: int | None = None,
    ) -> Session:
        """Start a new live session.

        ``parent_session`` is recorded as given; it may name a session that is absent or not
        live (lineage is checked only when traced). A non-empty ``seed`` (events with seqs
        ``0..n-1``, validated like appended events) makes the session seeded, with
        ``inherited_event_count = len(seed)`` unless given. With a persistence, a seed is
        flushed before ``create`` returns; if that write fails the seed stays buffered (a
        warning is logged) and the next flush, ``turn/end`` or close raises the failure.

        Raises:
            ValueError: a duplicate live id, an invalid header field, an invalid seed or
                ``inherited_event_count`` outside ``0..len(seed)``.
            SurfaceError: the seed breaks a surface rule.
            OSError | PersistenceError: the persistence refused to create the session.
        """
        seed_events = tuple(seed)
        inherited = _check_inherited(inherited_event_count, len(seed_events))
        folder = _fold_seed(seed_events)
        header = SessionHeader(
            id=self._id_factory() if session_id is None else session_id,
            created_at=self._clock() if created_at is None else created_at,
            cwd=cwd,
            parent_session=parent_session,
            is_seeded=bool(seed_events),
            origin=origin,
            delegation_depth=delegation_depth,
            agent_preset=agent_preset,
        )
        return self._open(header, folder, seed_events, inherited)

    def fork(self, source_id: str, through_seq: int, *, session_id: str | None = None) -> Session:
        """Start a session seeded with a live session's events ``0..through_seq``.

        The cut must be a ``turn/end`` event, so the fork never inherits half a turn. The new
        session has ``parent_session=source_id``, ``origin="fork"`` and the source's ``cwd``,
        ``delegation_depth`` and ``agent_preset``.

        Raises:
            KeyError: ``source_id`` is not live in this store.
            ValueError: ``through_seq`` is out of range or not a ``turn/end``, or the new id is
                invalid or already live.
        """
        source = self.get(source_id)
        if source is None:
            raise KeyError(f"cannot fork session {source_id!r}: it is not live in this store")
        events = source.events
        if type(through_seq) is not int or not 0 <= through_seq < len(events):
            raise ValueError(
                f"through_seq must be a seq of session {source_id!r} (0..{len(events) - 1}), "
                f"not {through_seq!r}"
            )
        if events[through_seq].type != "turn/end":
            raise ValueError(
                f"a fork must end at a turn/end event; seq {through_seq} of {source_id!r} is "
                f"{events[through_seq].type!r}"
            )
        base = source.header
        return self.create(
            session_id,
            cwd=base.cwd,
            parent_session=source_id,
            origin="fork",
            delegation_depth=base.delegation_depth,
            agent_preset=base.agent_preset,
            seed=events[: through_seq + 1],
        )

    def get(self, session_id: str) -> Session | None:
        """The live session ``session_id``, or ``None``."""
        with self._lock:
            return self._sessions.get(session_id)

    def sessions(self) -> list[Session]:
        """Every live session, in creation order."""
        with self._lock:
            return list(self._sessions.values())

    def close(self, session_id: str) -> None:
        """Flush a live session, release its writer and stop it being live.

        Raises:
            KeyError: the session is not live.
            OSError | PersistenceError: the final flush failed; the session stays live and
                open, nothing is lost, and ``close`` can be retried.
        """
        session = self.get(session_id)
        if session is None:
            raise KeyError(f"session {session_id!r} is not live in this store")
        closed_here = False
        try:
            closed_here = session._close()
        finally:
            # Also when releasing the handle failed: the log is durable and appends are refused.
            if session.is_closed and self._forget(session):
                self._notifier.enqueue(StoreChange("closed", session_id))
                self._notifier.deliver()
        if not closed_here:
            raise KeyError(f"session {session_id!r} is not live in this store")

    def _forget(self, session: Session) -> bool:
        with self._lock:
            if self._sessions.get(session.id) is session:
                del self._sessions[session.id]
                return True
            return False

    def close_all(self) -> None:
        """Close every live session (each is attempted; the first failure is raised)."""
        self._each(lambda session: self.close(session.id))

    def flush(self, session_id: str | None = None) -> None:
        """Durability barrier for one live session or, with ``None``, for all of them.

        Raises:
            KeyError: ``session_id`` is given and not live.
            OSError | PersistenceError: a write failed (all sessions are still attempted; the
                first failure is raised); the events stay buffered.
        """
        if session_id is None:
            self._each(Session.flush)
            return
        session = self.get(session_id)
        if session is None:
            raise KeyError(f"session {session_id!r} is not live in this store")
        session.flush()

    def subscribe(self, callback: Callable[[StoreChange], object]) -> Callable[[], None]:
        """Call ``callback(change)`` for every later change; returns an idempotent unsubscribe.

        Callbacks run after the store's locks are released, in order per session, possibly on
        another appending thread; an exception in a callback is logged and ignored.
        """
        return self._notifier.subscribe(callback)

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close_all()

    def _each(self, action: Callable[[Session], None]) -> None:
        failure: BaseException | None = None
        for session in self.sessions():
            try:
                action(session)
            except (OSError, PersistenceError, KeyError) as error:
                logger.warning("session %r: %s", session.id, error)
                failure = failure or error
        if failure is not None:
            raise failure

    def _open(
        self,
        header: SessionHeader,
        folder: SurfaceFolder,
        seed: tuple[SessionEvent, ...],
        inherited: int | None,
    ) -> Session:
        session_id = header.id
        with self._lock:
            if session_id in self._sessions or session_id in self._reserved:
                raise ValueError(f"session {session_id!r} is already live in this store")
            # Reserved, not registered: persistence I/O runs without the store lock.
            self._reserved.add(session_id)
        try:
            count = len(seed) if inherited is None else inherited
            handle = None
            if self._persistence is not None:
                handle = self._persistence.create(header, inherited_event_count=count)
            session = Session(
                header,
                folder=folder,
                seed=seed,
                inherited_event_count=count,
                clock=self._clock,
                handle=handle,
                notifier=self._notifier,
            )
            if handle is not None and seed:
                session._make_seed_durable()
            with self._lock:
                self._sessions[session_id] = session
                self._notifier.enqueue(StoreChange("created", session_id))
        finally:
            with self._lock:
                self._reserved.discard(session_id)
        self._notifier.deliver()
        return session


def _check_inherited(value: int | None, seed_length: int) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= seed_length:
        raise ValueError(
            f"inherited_event_count must be an integer in 0..{seed_length} (the seed length), "
            f"not {value!r}"
        )
    return value


def _fold_seed(seed: tuple[SessionEvent, ...]) -> SurfaceFolder:
    folder = SurfaceFolder()
    for index, event in enumerate(seed):
        if not isinstance(event, SessionEvent):
            raise ValueError(f"seed[{index}] must be a SessionEvent, not {type(event).__name__}")
        folder.apply(event)
    return folder
