"""The storage seam: what the query service needs from a store of session logs.

``SessionPersistence`` is implemented by :class:`~sessionquery.persistence.JsonlPersistence`
(read-write) and by the importers in :mod:`sessionquery.sources` (read-only). Errors are the
``Persistence*`` classes of :mod:`sessionquery.errors`; the query layer translates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple, Protocol, Self, runtime_checkable

from sessionquery.model import SessionEvent, SessionHeader, SurfaceClass, TitleSnapshot
from sessionquery.model.skeleton import EventSkeleton

if TYPE_CHECKING:
    from sessionquery.query.filters import SessionFilter

__all__ = [
    "ArchiveAware",
    "ChangeJournal",
    "ChangeTokenSource",
    "DocumentLog",
    "DocumentSource",
    "ListingKey",
    "NewestListing",
    "OutlineListing",
    "PersistedSession",
    "Problem",
    "ProblemSource",
    "ReadHandle",
    "SessionOutline",
    "SessionPersistence",
    "SkeletonHandle",
    "TextDocument",
    "TitleSource",
    "WriteHandle",
    "outline_of",
]


@dataclass(frozen=True, slots=True)
class PersistedSession:
    """What a store knows about one session without reading its log.

    Attributes:
        header: the session header.
        revision: opaque token; equal revisions of one id mean the log did not change.
        event_count: number of stored events, when known without reading the log.
        size_bytes: stored size, when known.
        archived: the store's own copy is gone and the session is read from an archive.
    """

    header: SessionHeader
    revision: str
    event_count: int | None = None
    size_bytes: int | None = None
    archived: bool = False


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
class SkeletonHandle(ReadHandle, Protocol):
    """A read handle that can outline its log without parsing every event's data.

    After :meth:`skeletons`, :meth:`read` costs only the events it returns (the JSONL store
    reads just their lines), so a window of a huge log is read without the rest. A wrapping
    persistence (redaction, a combined corpus) offers it by passing it through.
    """

    def skeletons(self) -> list[EventSkeleton]:
        """The skeleton of every event of the valid prefix (a torn tail is never included),
        each line validated as strictly as :meth:`read` would validate it.

        Raises:
            PersistenceCorrupt: exactly when, and as, ``read()`` of the whole prefix would.
        """
        ...


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


# --- Optional capabilities -------------------------------------------------------------------
# A persistence may offer any of these on top of ``SessionPersistence``; consumers test for them
# with ``isinstance`` (the protocols are runtime-checkable) instead of probing attribute names.


@runtime_checkable
class ChangeTokenSource(Protocol):
    """A store-wide token that is O(1) to read and changes whenever any session changes."""

    def change_token(self) -> str:
        """An opaque token; equal tokens mean no session was created, changed or removed."""
        ...


@runtime_checkable
class ChangeJournal(Protocol):
    """Which sessions changed since a change token was read (incremental reconciliation)."""

    def changed_since(self, token: str) -> frozenset[str] | None:
        """Ids of the sessions created, appended to, replaced or removed since ``token`` (a value
        :meth:`ChangeTokenSource.change_token` returned earlier), or ``None`` when the journal
        cannot tell (unknown or too old a token, a change made by hand, a damaged journal): the
        caller then falls back to a full listing. Never an under-approximation."""
        ...


ListingKey = tuple[int, str]
"""A session's place in the listing order: ``(created_at, id)``; newest ``created_at`` first,
then ids in code-point order."""


@runtime_checkable
class NewestListing(Protocol):
    """A persistence that lists its sessions a page at a time in the listing order, without
    listing them all (the PostgreSQL store: one indexed query)."""

    def list_newest(
        self, filters: Sequence[SessionFilter], *, after: ListingKey | None, limit: int
    ) -> list[PersistedSession]:
        """Up to ``limit`` stored sessions that come after ``after`` in the listing order
        (from the newest without it) and match every id, cwd, created-at and parent clause
        of ``filters``, in that order, one entry per id. Availability clauses are left to
        the caller (they depend on the live store)."""
        ...


class SessionOutline(NamedTuple):
    """The header fields that place a session among the others (for short ids and counts):
    its id, parent, creation time and cwd."""

    id: str
    parent_session: str | None
    created_at: int
    cwd: str | None


def outline_of(header: SessionHeader) -> SessionOutline:
    """The outline of a session with this header."""
    return SessionOutline(header.id, header.parent_session, header.created_at, header.cwd)


@runtime_checkable
class OutlineListing(Protocol):
    """A persistence that outlines every listed session without building its header (the
    PostgreSQL store: one query of four columns, where :meth:`~SessionPersistence.list`
    parses every header)."""

    def list_outline(self) -> list[SessionOutline]:
        """One outline per listed session (no promised order), with the header's values."""
        ...


@runtime_checkable
class ArchiveAware(Protocol):
    """A persistence that may read some sessions from an archive (``sessionquery.archive``)."""

    def archived_ids(self) -> frozenset[str]:
        """Ids of the sessions its last listing read from an archive (their source is gone);
        cheap: no listing, no I/O."""
        ...


class Problem(Protocol):
    """One file (or line) a store could not read as expected; reading the rest went on.

    The importers' ``sessionquery.sources.Problem`` and
    :class:`~sessionquery.persistence.LogProblem` have this shape.
    """

    @property
    def path(self) -> str:
        """The file (or directory) concerned."""
        ...

    @property
    def line(self) -> int | None:
        """The 1-based physical line, or ``None`` for the whole file."""
        ...

    @property
    def message(self) -> str:
        """What is wrong (and what was done about it), without the path."""
        ...


@runtime_checkable
class ProblemSource(Protocol):
    """A persistence that reports the files it left out instead of failing on them."""

    def problems(self) -> Sequence[Problem]:
        """Every current problem, in path (then line) order."""
        ...


@dataclass(frozen=True, slots=True)
class TextDocument:
    """The searchable text of one event, as the search index stores it.

    Exactly the event's :func:`~sessionquery.model.extract_event_text` (non-empty) and its
    surface class in the folded log.
    """

    seq: int
    type: str
    time: int
    surface: SurfaceClass
    text: str


@dataclass(frozen=True, slots=True)
class DocumentLog:
    """What search indexing needs of one stored log, without building frozen events.

    Attributes:
        header: the session header (as ``stat``/``list`` report it).
        revision: the revision the documents were read at.
        event_count: number of events of the log as a cold read returns it (crash-tail
            closers included).
        documents: one entry per event with non-empty text, in seq order; equal to what
            ``open_read`` + crash-tail closers + ``fold_surface`` + ``extract_event_text``
            would give.
        titles: one entry per ``session/title`` event with a non-blank title
            (:func:`~sessionquery.model.title.title_text`), in seq order, surface
            ``log-only``: what relevance search ranks a session's titles by. A source that
            does not report them leaves it empty (its sessions' titles then add nothing).
        title: the session's title as :func:`~sessionquery.model.fold_title` gives it at this
            revision, when ``title_read``; readers that see every event anyway fold it in the
            same pass, so whoever indexes a session can remember its title for free.
        title_read: whether ``title`` was computed (``False``: unknown, not untitled).
    """

    header: SessionHeader
    revision: str
    event_count: int
    documents: Sequence[TextDocument]
    titles: Sequence[TextDocument] = ()
    title: TitleSnapshot | None = None
    title_read: bool = False


@runtime_checkable
class TitleSource(Protocol):
    """A persistence that can read one log's title without reading the log into events."""

    def read_title(self, session_id: str) -> tuple[SessionHeader, TitleSnapshot | None]:
        """The stored header and the title (``fold_title`` of the log's title events).

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the header or a line is damaged.
        """
        ...


@runtime_checkable
class DocumentSource(Protocol):
    """A persistence that can hand the search index plain text documents cheaply."""

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable documents of one stored log.

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the log is damaged or does not fold.
        """
        ...
