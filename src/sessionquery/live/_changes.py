"""Store change notifications: what subscribers receive, and their in-order delivery.

Changes are delivered in order per session, always after the store's locks are released; an
exception in a subscriber is logged and never breaks the operation that caused it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sessionquery.model import (
    SessionEvent,
)

__all__ = ["Notifier", "StoreChange", "StoreChangeKind"]

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


class Notifier:
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
