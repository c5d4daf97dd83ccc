"""What the live overlays of both search backends share: how a live session is compared with
what was indexed of it, and how its events are folded.

A live session is indexed incrementally: while its header stays the same and the event
indexed last is still in place, it only grew by appends, and only the new events need
indexing; anything else is indexed afresh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import Replace, SessionEvent, SessionHeader, SurfaceError, SurfaceFolder
from sessionquery.query.backend import LiveSnapshot

__all__ = ["IndexedLive", "extends", "fold_live", "unchanged"]


class IndexedLive(Protocol):
    """What an overlay remembers of one live session it indexed."""

    @property
    def header(self) -> SessionHeader:
        """The header it was indexed with."""
        ...

    @property
    def length(self) -> int:
        """How many events were indexed."""
        ...

    @property
    def last_event(self) -> SessionEvent | None:
        """The last indexed event (``None`` for an empty session)."""
        ...


def extends(old: IndexedLive, snapshot: LiveSnapshot) -> bool:
    """Whether ``snapshot`` is ``old``'s session grown by appends (same header, same prefix)."""
    events = snapshot.events
    if snapshot.header != old.header or len(events) < old.length:
        return False
    if old.last_event is None:
        return True
    last = events[old.length - 1]
    return last is old.last_event or last == old.last_event


def unchanged(indexed: Mapping[str, IndexedLive], snapshots: Sequence[LiveSnapshot]) -> bool:
    """Whether every live session is exactly as indexed (ids, headers, lengths)."""
    if len(snapshots) != len(indexed):
        return False
    for snapshot in snapshots:
        old = indexed.get(snapshot.header.id)
        if old is None or old.length != len(snapshot.events) or old.header != snapshot.header:
            return False
    return True


def fold_live(session_id: str, events: Sequence[SessionEvent], folder: SurfaceFolder) -> bool:
    """Apply a live session's ``events`` to its ``folder``; return whether any of them was a
    replace.

    Raises:
        SessionQueryError: ``INVALID_SURFACE`` when the log does not fold.
    """
    replaced = False
    try:
        for event in events:
            folder.apply(event)
            replaced = replaced or isinstance(event.surface_op, Replace)
    except SurfaceError as exc:
        raise SessionQueryError(
            ErrorCode.INVALID_SURFACE,
            f"live session {session_id!r} has an invalid surface: {exc}",
        ) from None
    return replaced
