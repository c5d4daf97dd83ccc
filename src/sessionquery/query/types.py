"""Result types of the query service (SPEC §6). All frozen and detached from storage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sessionquery.errors import SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader, SurfaceClass, TitleSnapshot

__all__ = [
    "Availability",
    "EventDocument",
    "EventRecord",
    "EventSearchHit",
    "EventSearchPage",
    "EventTrace",
    "EventWindow",
    "LineageNode",
    "LineageTrace",
    "PartialIndex",
    "SessionListPage",
    "SessionLog",
    "SessionRecord",
    "SessionSearchHit",
    "SessionSearchPage",
    "SurfaceSnapshot",
    "TitleResult",
]

Availability = Literal["live", "persisted"]


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session as listed: its header and where it is available.

    ``archived`` is true when the session's source is gone and its archived copy is read
    (``sessionquery archive``); such a session is also ``persisted``.
    """

    header: SessionHeader
    live: bool
    persisted: bool
    archived: bool = False

    @property
    def id(self) -> str:
        """The session id (``header.id``)."""
        return self.header.id


@dataclass(frozen=True, slots=True)
class SessionListPage:
    """One page of the listing (:meth:`~sessionquery.SessionQuery.list_page`).

    Attributes:
        items: the sessions, newest ``created_at`` first, ties by id (the order of
            :meth:`~sessionquery.SessionQuery.list_sessions`).
        next_cursor: where the next page starts, or ``None`` when this page is the last.
    """

    items: Sequence[SessionRecord]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class SessionLog:
    """A whole, replay-validated session log."""

    session: SessionHeader
    inherited_event_count: int
    events: tuple[SessionEvent, ...]


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One raw event's metadata and surface class."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: SurfaceClass


@dataclass(frozen=True, slots=True)
class EventDocument:
    """One event's searchable text with its metadata."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: SurfaceClass
    text: str


@dataclass(frozen=True, slots=True)
class TitleResult:
    """One id's title read: ``header`` and ``title`` on success, ``error`` on failure."""

    session_id: str
    header: SessionHeader | None
    title: TitleSnapshot | None
    error: SessionQueryError | None


@dataclass(frozen=True, slots=True)
class SurfaceSnapshot:
    """The current surface events in surface order."""

    session: SessionHeader
    inherited_event_count: int
    captured_through_seq: int | None
    events: tuple[SessionEvent, ...]


@dataclass(frozen=True, slots=True)
class EventWindow:
    """One event with raw neighbours ``start_seq .. end_seq`` (inclusive)."""

    session: SessionHeader
    inherited_event_count: int
    target: SessionEvent
    events: tuple[SessionEvent, ...]
    start_seq: int
    end_seq: int


@dataclass(frozen=True, slots=True)
class LineageNode:
    """A descendant session and its own descendants."""

    record: SessionRecord
    descendants: tuple[LineageNode, ...]


@dataclass(frozen=True, slots=True)
class LineageTrace:
    """The lineage around one session.

    ``ancestors`` are nearest first. ``complete`` is false when a parent id is missing from
    the corpus (then ``root`` is ``None`` and ``unresolved_parent_id`` names it).
    """

    target: SessionRecord
    ancestors: tuple[SessionRecord, ...]
    descendants: tuple[LineageNode, ...]
    complete: bool
    root: SessionRecord | None
    unresolved_parent_id: str | None


@dataclass(frozen=True, slots=True)
class EventTrace:
    """Every direct replacement and citation relationship of one event."""

    session: SessionHeader
    target: EventRecord
    replaced_by: int | None
    replacement_chain: tuple[int, ...]
    replaced_event_seqs: tuple[int, ...]
    source_event_seqs: tuple[int, ...]
    derived_event_seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EventSearchHit:
    """A matching event with a snippet around the first match."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: SurfaceClass
    snippet: str


@dataclass(frozen=True, slots=True)
class SessionSearchHit:
    """A matching session with its best-matching event."""

    record: SessionRecord
    best_match: EventSearchHit


@dataclass(frozen=True, slots=True)
class PartialIndex:
    """How far an unfinished index build had come when a search answered from it.

    Attributes:
        sessions_indexed: stored sessions searched (the build's committed part).
        sessions_total: stored sessions the build will index, or ``None`` while the store is
            still being listed.
    """

    sessions_indexed: int
    sessions_total: int | None


@dataclass(frozen=True, slots=True)
class SessionSearchPage:
    """One page of session hits; ``next_cursor`` is set iff more exist.

    Attributes:
        items: the hits, best first.
        next_cursor: where the next page starts, or ``None``.
        corrections: for ``match="relevance"``, each query word no document holds that was
            searched as another, indexed word (typed → searched); empty otherwise.
        partial: set when the search was asked to answer during an unfinished build
            (``allow_partial``) and did: the page covers only the indexed part.
    """

    items: Sequence[SessionSearchHit]
    next_cursor: str | None = None
    corrections: Mapping[str, str] = field(default_factory=dict)
    partial: PartialIndex | None = None


@dataclass(frozen=True, slots=True)
class EventSearchPage:
    """One page of event hits in one session (the header is present even with no hits).

    Attributes:
        session: the session's header.
        items: the hits, best first.
        next_cursor: where the next page starts, or ``None``.
        corrections: as :attr:`SessionSearchPage.corrections`.
        partial: as :attr:`SessionSearchPage.partial`.
    """

    session: SessionHeader
    items: Sequence[EventSearchHit]
    next_cursor: str | None = None
    corrections: Mapping[str, str] = field(default_factory=dict)
    partial: PartialIndex | None = None
