"""A live store whose sessions are seen redacted, for ``SessionQuery(..., redactor=...)``.

Live sessions only ever grow, so each session's events are redacted once, as they appear:
a later snapshot redacts only the events appended since the previous one, and hands out the
same redacted event objects every time (a search index's live overlay compares them by
length, exact reads by value). The store itself is never changed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from sessionquery.model import SessionEvent
from sessionquery.query.backend import LiveSnapshot
from sessionquery.query.corpus import LiveSession as _Live
from sessionquery.query.corpus import LiveStore as _Store
from sessionquery.redact._persistence import redacted_event
from sessionquery.redact._redactor import Redactor

__all__ = ["RedactingLiveStore"]


@dataclass(slots=True)
class _Seen:
    session: _Live
    events: list[SessionEvent] = field(default_factory=list[SessionEvent])


class RedactingLiveStore:
    """``store`` (a :class:`~sessionquery.SessionStore`) as seen through ``redactor``.

    Args:
        store: the live store; only read.
        redactor: what masks its sessions' events.
    """

    def __init__(self, store: _Store, redactor: Redactor) -> None:
        self._store = store
        self._redactor = redactor
        self._seen: dict[str, _Seen] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> LiveSnapshot | None:
        """The live session ``session_id`` redacted, or ``None`` when it is not live."""
        session = self._store.get(session_id)
        return None if session is None else self._view(session)

    def sessions(self) -> list[LiveSnapshot]:
        """Every live session, redacted; sessions no longer live are forgotten."""
        sessions = list(self._store.sessions())
        views = [self._view(session) for session in sessions]
        live = {session.id for session in sessions}
        with self._lock:
            for gone in set(self._seen) - live:
                del self._seen[gone]
        return views

    def _view(self, session: _Live) -> LiveSnapshot:
        events = session.events
        with self._lock:
            seen = self._seen.get(session.id)
            if seen is None or seen.session is not session or len(seen.events) > len(events):
                seen = self._seen[session.id] = _Seen(session)
            done = seen.events
            for index in range(len(done), len(events)):
                done.append(redacted_event(events[index], self._redactor))
            snapshot = tuple(done[: len(events)])
        return LiveSnapshot(session.header, session.inherited_event_count, snapshot)
