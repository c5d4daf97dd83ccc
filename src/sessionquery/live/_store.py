"""The live store: creates, forks, flushes and closes the sessions live in this process."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from sessionquery.errors import PersistenceError
from sessionquery.live._changes import Notifier, StoreChange
from sessionquery.live._session import Session
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceFolder,
)
from sessionquery.persistence.base import WriteHandle

__all__ = ["SessionStore", "WritablePersistence"]

logger = logging.getLogger(__name__)


class WritablePersistence(Protocol):
    """What the store needs of a writable persistence: ``create`` returning a write handle."""

    def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> WriteHandle:
        """Store a new session and return its single owning writer."""
        ...


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _new_id() -> str:
    return str(uuid.uuid4())


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
        self._notifier = Notifier()

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
