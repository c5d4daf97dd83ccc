"""The storage seam: what the query service needs from a store of session logs.

``SessionPersistence`` is implemented by :class:`~sessionquery.persistence.JsonlPersistence`
(read-write) and by the importers in :mod:`sessionquery.sources` (read-only). Errors are the
``Persistence*`` classes of :mod:`sessionquery.errors`; the query layer translates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from sessionquery.model import SessionEvent, SessionHeader

__all__ = ["PersistedSession", "ReadHandle", "SessionPersistence", "WriteHandle"]


@dataclass(frozen=True, slots=True)
class PersistedSession:
    """What a store knows about one session without reading its log.

    Attributes:
        header: the session header.
        revision: opaque token; equal revisions of one id mean the log did not change.
        event_count: number of stored events, when known without reading the log.
        size_bytes: stored size, when known.
    """

    header: SessionHeader
    revision: str
    event_count: int | None = None
    size_bytes: int | None = None


@runtime_checkable
class ReadHandle(Protocol):
    """An open, non-owning view of one stored log."""

    @property
    def header(self) -> SessionHeader: ...

    @property
    def inherited_event_count(self) -> int: ...

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        """Events ``offset .. offset+length`` of the valid prefix (a torn tail is never returned).

        Raises:
            PersistenceCorrupt: when a line before the last complete one is damaged.
        """
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class WriteHandle(Protocol):
    """The single owning writer of one stored log."""

    @property
    def header(self) -> SessionHeader: ...

    def append(self, events: Sequence[SessionEvent]) -> None:
        """Queue whole events for writing (durable after :meth:`flush`)."""
        ...

    def flush(self) -> None:
        """Write and fsync everything appended so far."""
        ...

    def close(self) -> None:
        """Flush, release ownership; idempotent."""
        ...


@runtime_checkable
class SessionPersistence(Protocol):
    """A store of session logs (read side; writable stores also offer ``create``)."""

    def list(self) -> list[PersistedSession]:
        """Every stored session, in no promised order."""
        ...

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry, or ``None`` when it is not stored."""
        ...

    def open_read(self, session_id: str) -> ReadHandle:
        """Open a stored log for reading.

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the header is unreadable or of an unsupported version.
        """
        ...
