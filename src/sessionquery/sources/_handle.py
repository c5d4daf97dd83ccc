"""The read handle of an imported session: a view of its already parsed, frozen events."""

from __future__ import annotations

from sessionquery.errors import PersistenceClosed
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.handles import LogHandle

__all__ = ["ReadHandleImpl"]


class ReadHandleImpl(LogHandle):
    """A :class:`~sessionquery.persistence.base.ReadHandle` over an already parsed log (an
    imported session is never seeded: its inherited prefix is 0)."""

    def __init__(self, header: SessionHeader, events: tuple[SessionEvent, ...]) -> None:
        super().__init__(header, 0)
        self._events = events
        self._closed = False

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        """Events ``offset .. offset+length`` of the imported log.

        Raises:
            PersistenceClosed: after :meth:`close`.
        """
        if self._closed:
            raise PersistenceClosed(f"read handle of {self._header.id!r} is closed")
        end = None if length is None else offset + length
        return list(self._events[offset:end])

    def close(self) -> None:
        """Release the handle; idempotent."""
        self._closed = True
