"""The live overlay: this process's live sessions, indexed in memory and searched in Python.

Live sessions belong to one process, so they never go into the shared database: each
:class:`PostgresSearch` keeps their documents here, tokenized once, and merges their hits with
the database's (a live session's persisted rows are left out of the database query).

Invariants:

* A session that grew by appends indexes only its new events; its earlier documents are kept
  and their surface class is read from the session's incremental fold at search time, so a
  replace re-classifies them without re-tokenizing.
* Matching and counting use :mod:`.tokens`, the same definitions as the database's normal
  forms, so a live hit ranks exactly as the same document would in the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceClass,
    SurfaceFolder,
    extract_event_text,
)
from sessionquery.query.backend import LiveSnapshot
from sessionquery.query.filters import EventFilter, SessionFilter, event_matches, session_matches
from sessionquery.search.live import extends, fold_live, unchanged
from sessionquery.search.postgres.tokens import MatchPlan, span_count, tokens
from sessionquery.search.snippet import sanitize_text

__all__ = ["LiveDoc", "LiveHit", "LiveOverlay", "LiveSession"]


@dataclass(frozen=True, slots=True)
class LiveDoc:
    """One live event with text."""

    seq: int
    type: str
    time: int
    text: str
    words: tuple[str, ...]


@dataclass(slots=True)
class LiveSession:
    """What the overlay holds for one live session."""

    header: SessionHeader
    length: int
    last_event: SessionEvent | None
    folder: SurfaceFolder
    docs: list[LiveDoc]
    persisted: bool
    generation: int


@dataclass(frozen=True, slots=True)
class LiveHit:
    """A matching live document and its rank key fields."""

    session: LiveSession
    doc: LiveDoc
    surface: SurfaceClass
    mc: int

    def event_key(self) -> tuple[int, int, int, int]:
        return (-self.mc, len(self.doc.text), -self.doc.time, -self.doc.seq)

    def session_key(self) -> tuple[int, int, int, str, int]:
        doc = self.doc
        return (-self.mc, len(doc.text), -doc.time, self.session.header.id, -doc.seq)


def _docs(events: Sequence[SessionEvent]) -> list[LiveDoc]:
    out = []
    for event in events:
        text = extract_event_text(event)
        if text:
            clean = sanitize_text(text)
            out.append(LiveDoc(event.seq, event.type, event.time, clean, tuple(tokens(clean))))
    return out


@dataclass(slots=True)
class LiveOverlay:
    """Every live session of the corpus as of the last :meth:`update`."""

    sessions: dict[str, LiveSession] = field(default_factory=dict)
    generation: int = 0
    """Bumped whenever any live session changes (part of session cursors)."""

    def unchanged(self, snapshots: Sequence[LiveSnapshot]) -> bool:
        """Whether every live session is exactly as indexed (ids, headers, lengths)."""
        return unchanged(self.sessions, snapshots)

    def update(
        self, snapshots: Sequence[LiveSnapshot], persisted: frozenset[str]
    ) -> tuple[int, int]:
        """Index the live sessions; return ``(sessions indexed, sessions dropped)``.

        Raises:
            SessionQueryError: ``INVALID_SURFACE`` for a live log that does not fold.
        """
        fresh: dict[str, LiveSession] = {}
        indexed = 0
        for snapshot in snapshots:
            sid = snapshot.header.id
            old = self.sessions.get(sid)
            is_persisted = sid in persisted
            if old is not None and extends(old, snapshot):
                if len(snapshot.events) == old.length and old.persisted == is_persisted:
                    fresh[sid] = old
                    continue
                fresh[sid] = self._grow(old, snapshot, is_persisted)
            else:
                fresh[sid] = self._build(snapshot, is_persisted)
            indexed += 1
        dropped = len(set(self.sessions) - set(fresh))
        if indexed or dropped:
            self.generation += 1
        self.sessions = fresh
        return indexed, dropped

    def _build(self, snapshot: LiveSnapshot, persisted: bool) -> LiveSession:
        folder = SurfaceFolder()
        events = snapshot.events
        fold_live(snapshot.header.id, events, folder)
        return LiveSession(
            header=snapshot.header,
            length=len(events),
            last_event=events[-1] if events else None,
            folder=folder,
            docs=_docs(events),
            persisted=persisted,
            generation=self.generation + 1,
        )

    def _grow(self, old: LiveSession, snapshot: LiveSnapshot, persisted: bool) -> LiveSession:
        events = snapshot.events
        new = events[old.length :]
        fold_live(old.header.id, new, old.folder)
        return LiveSession(
            header=old.header,
            length=len(events),
            last_event=events[-1] if events else None,
            folder=old.folder,
            docs=old.docs + _docs(new),
            persisted=persisted,
            generation=self.generation + 1,
        )

    def search(
        self,
        plan: MatchPlan,
        session: LiveSession,
        event_filters: Sequence[EventFilter],
    ) -> list[LiveHit]:
        """The matching documents of one live session, best first."""
        hits = []
        for doc in session.docs:
            surface = session.folder.surface_class(doc.seq)
            if event_filters and not event_matches(
                event_filters, seq=doc.seq, time=doc.time, type=doc.type, surface=surface, text=""
            ):
                continue
            mc = span_count(doc.words, plan)
            if mc:
                hits.append(LiveHit(session, doc, surface, mc))
        hits.sort(key=LiveHit.event_key)
        return hits

    def best_per_session(
        self,
        plan: MatchPlan,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventFilter],
    ) -> list[LiveHit]:
        """Each matching live session's best hit, ranked as sessions."""
        best = []
        for session in self.sessions.values():
            header = session.header
            if session_filters and not session_matches(
                session_filters,
                id=header.id,
                cwd=header.cwd,
                created_at=header.created_at,
                parent=header.parent_session,
                live=True,
                persisted=session.persisted,
            ):
                continue
            hits = self.search(plan, session, event_filters)
            if hits:
                best.append(hits[0])
        best.sort(key=LiveHit.session_key)
        return best
