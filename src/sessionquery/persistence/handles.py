"""The bodies every read handle shares: a header and an inherited prefix fixed when the handle
is opened, and a handle over another one.

Invariants: a handle's ``header`` and ``inherited_event_count`` never change while it is open
(they are read once, when it is opened); a :class:`WrappingHandle` closes the handle it wraps
when it is closed, and offers :meth:`~WrappingHandle.skeletons` whether or not the wrapped
handle does (built from its own :meth:`read` when the wrapped one has none), so wrapping never
hides the cheap outline of a log.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from sessionquery.closing import Closing
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.model.header import HeaderedLog
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.persistence.base import ReadHandle, SkeletonHandle

__all__ = ["LogHandle", "WrappingHandle"]


class LogHandle(HeaderedLog, Closing, ABC):
    """An open handle on one stored log: its header, its inherited prefix, a context manager
    that closes it."""

    def __init__(self, header: SessionHeader, inherited: int) -> None:
        self._header = header
        self._inherited = inherited

    @abstractmethod
    def close(self) -> None:
        """Release the handle; idempotent."""


class WrappingHandle(LogHandle):
    """A read handle over ``inner``: its prefix, events and ``close`` are the inner handle's;
    its header is ``inner``'s unless the wrapper names another (a renamed session).

    A subclass changes what it changes (:meth:`read`, :meth:`skeletons`) and keeps the rest.
    """

    def __init__(self, inner: ReadHandle, header: SessionHeader | None = None) -> None:
        super().__init__(inner.header if header is None else header, inner.inherited_event_count)
        self._inner = inner

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        """The inner handle's events ``offset .. offset+length``."""
        return self._inner.read(offset, length)

    def skeletons(self) -> list[EventSkeleton]:
        """The inner handle's skeletons, or those of :meth:`read`'s events when it has none."""
        inner = self._inner
        if isinstance(inner, SkeletonHandle):
            return inner.skeletons()
        return [EventSkeleton.of(event) for event in self.read()]

    def close(self) -> None:
        """Close the inner handle."""
        self._inner.close()
