"""The read handle of an imported session: a view of its already parsed, frozen events."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from sessionquery.errors import PersistenceClosed
from sessionquery.model import SessionEvent, SessionHeader

__all__ = ["ReadHandleImpl"]


class ReadHandleImpl:
    """A :class:`~sessionquery.persistence.base.ReadHandle` over an already parsed log."""

    def __init__(self, header: SessionHeader, events: tuple[SessionEvent, ...]) -> None:
        self._header = header
        self._events = events
        self._closed = False

    @property
    def header(self) -> SessionHeader:
        """The session header."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """Always 0: imported sessions are never seeded."""
        return 0

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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
