"""The seam between the query service and a full-text search backend.

The service owns the corpus (live store first, then persistence); a backend such as
:class:`sessionquery.search.sqlite.SqliteSearch` is handed a :class:`Corpus` view on every
call and derives its index from it. Backends never write to persistence. The ``match`` modes
are declared in :mod:`sessionquery.match_modes` (``SearchMatch``, ``SEARCH_MATCHES`` and
``validate_match`` are importable from here too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from sessionquery.match_modes import SEARCH_MATCHES, SearchMatch, validate_match
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.base import DocumentLog, PersistedSession, SessionPersistence
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import EventFilter, SessionFilter
from sessionquery.query.types import EventSearchPage, SessionLog, SessionSearchPage

__all__ = [
    "SEARCH_MATCHES",
    "Corpus",
    "DocumentCorpus",
    "IdentifiedStore",
    "JournalCorpus",
    "LiveSnapshot",
    "RootedStore",
    "SearchBackend",
    "SearchMatch",
    "StatCorpus",
    "validate_match",
]


@dataclass(frozen=True, slots=True)
class LiveSnapshot:
    """A live session cut at one length: header, inherited prefix and events ``0..n-1`` (a
    :class:`~sessionquery.query.corpus.LiveSession` itself: a redacting live store hands
    these out)."""

    header: SessionHeader
    inherited_event_count: int
    events: Sequence[SessionEvent]

    @property
    def id(self) -> str:
        """The session id."""
        return self.header.id


@runtime_checkable
class Corpus(Protocol):
    """What a search backend may read of the service's corpus. Errors are already mapped to
    ``SessionQueryError`` (``PERSISTENCE_FAILED``, ``CORRUPT_SESSION``, ``ABORTED``...)."""

    @property
    def persistence(self) -> SessionPersistence | None:
        """The bound persistence, or ``None``."""
        ...

    def live_ids(self) -> frozenset[str]:
        """Ids of the sessions live right now (cheap)."""
        ...

    def live_snapshots(self) -> list[LiveSnapshot]:
        """Every live session, each cut at its current length."""
        ...

    def list_persisted(self, cancel: CancelToken | None = None) -> list[PersistedSession]:
        """The persistence listing (empty without persistence)."""
        ...

    def read_persisted(self, session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        """A cold read of one persisted log, crash-tail closers appended in memory."""
        ...

    def change_token(self) -> str | None:
        """The persistence's O(1) store-wide change token, or ``None`` if it offers none."""
        ...


@runtime_checkable
class DocumentCorpus(Protocol):
    """A corpus that hands a backend one stored log's searchable text without building
    events (``SessionQuery.corpus`` is one)."""

    def read_documents(self, session_id: str, cancel: CancelToken | None = None) -> DocumentLog:
        """The documents and titles of one stored log, crash-tail closers included."""
        ...


@runtime_checkable
class StatCorpus(Protocol):
    """A corpus that looks one stored session up without listing the store."""

    def stat_persisted(
        self, session_id: str, cancel: CancelToken | None = None
    ) -> PersistedSession | None:
        """The stored entry of ``session_id``, or ``None``."""
        ...


@runtime_checkable
class JournalCorpus(Protocol):
    """A corpus whose store keeps a change journal (which sessions changed since a token)."""

    def changed_since(self, token: str) -> frozenset[str] | None:
        """The ids changed since ``token``, or ``None`` when the journal cannot tell."""
        ...


@runtime_checkable
class RootedStore(Protocol):
    """A store kept under one root folder (its identity for an index that mirrors it)."""

    @property
    def root(self) -> str:
        """The store's root, as configured."""
        ...


@runtime_checkable
class IdentifiedStore(Protocol):
    """A store that names itself (a shared database: an index that mirrors it keys on it)."""

    @property
    def store_id(self) -> str:
        """A stable identifier of the store."""
        ...


@runtime_checkable
class SearchBackend(Protocol):
    """A full-text search backend plugged in as ``SessionQuery(search=...)``."""

    def search_sessions(
        self,
        corpus: Corpus,
        query: str,
        *,
        session_filters: Sequence[SessionFilter] = (),
        event_filters: Sequence[EventFilter] = (),
        limit: int | None = None,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
        match: SearchMatch = "phrase",
        allow_partial: bool = False,
    ) -> SessionSearchPage:
        """Sessions matching ``query``, each with its best event (SPEC §7, §13.3).

        ``allow_partial``: when the deadline would pass during an unfinished index build,
        answer from the indexed part (``page.partial`` says how much) instead of raising
        ``INDEX_BUILDING``."""
        ...

    def search_events(
        self,
        corpus: Corpus,
        session_id: str,
        query: str,
        *,
        filters: Sequence[EventFilter] = (),
        limit: int | None = None,
        cursor: str | None = None,
        cancel: CancelToken | None = None,
        match: SearchMatch = "phrase",
        allow_partial: bool = False,
    ) -> EventSearchPage:
        """Events of one session matching ``query`` (SPEC §7, §13.3; ``allow_partial`` as
        in :meth:`search_sessions`)."""
        ...

    def close(self) -> None:
        """Release the backend's resources; idempotent."""
        ...
