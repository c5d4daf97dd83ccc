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

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceClass,
    SurfaceFolder,
    extract_event_text,
)
from sessionquery.model.title import title_text
from sessionquery.query.backend import LiveSnapshot
from sessionquery.query.filters import EventFilter, SessionFilter, event_matches, header_matches
from sessionquery.search.live import extends, fold_live, unchanged
from sessionquery.search.postgres.tokens import MatchPlan, normal_form, span_count, tokens
from sessionquery.search.relevance import TITLE_WEIGHT, RelevancePlan, event_score
from sessionquery.search.snippet import sanitize_text

__all__ = ["LiveDoc", "LiveHit", "LiveOverlay", "LiveSession", "RelevantHit"]


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
    titles: list[LiveDoc] = field(default_factory=list)
    vocabulary: Counter[str] = field(default_factory=Counter)
    """For each word, how many of the session's documents and titles hold it."""
    tokens: int = 0
    """Tokens of all its documents and titles."""

    def add(self, docs: Sequence[LiveDoc], titles: Sequence[LiveDoc]) -> None:
        """Index more documents and titles (appended events)."""
        self.docs.extend(docs)
        self.titles.extend(titles)
        for doc in (*docs, *titles):
            self.vocabulary.update(set(doc.words))
            self.tokens += len(doc.words)

    def passes(self, session_filters: Sequence[SessionFilter]) -> bool:
        """Whether the session passes ``session_filters`` (every one passes none)."""
        return not session_filters or header_matches(
            session_filters, self.header, live=True, persisted=self.persisted
        )


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


@dataclass(frozen=True, slots=True)
class RelevantHit:
    """A live document scored for a relevance search.

    Attributes:
        session: its session.
        doc: the document (an event with text, or a title).
        surface: its surface class now.
        title: whether it is one of the session's titles.
        score: its score (titles weighted); for a session's best hit, the session's score.
        frequencies: how often each searched word occurs in it.
    """

    session: LiveSession
    doc: LiveDoc
    surface: SurfaceClass
    title: bool
    score: float
    frequencies: tuple[int, ...]

    def event_key(self) -> tuple[float, int, int, int]:
        return (-self.score, len(self.doc.text), -self.doc.time, -self.doc.seq)

    def session_key(self) -> tuple[float, int, int, str, int]:
        doc = self.doc
        return (-self.score, len(doc.text), -doc.time, self.session.header.id, -doc.seq)


def _docs(events: Sequence[SessionEvent]) -> list[LiveDoc]:
    out = []
    for event in events:
        text = extract_event_text(event)
        if text:
            clean = sanitize_text(text)
            out.append(LiveDoc(event.seq, event.type, event.time, clean, tuple(tokens(clean))))
    return out


def _titles(events: Sequence[SessionEvent]) -> list[LiveDoc]:
    out = []
    for event in events:
        text = title_text(event.type, event.data)
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
        session = LiveSession(
            header=snapshot.header,
            length=len(events),
            last_event=events[-1] if events else None,
            folder=folder,
            docs=[],
            persisted=persisted,
            generation=self.generation + 1,
        )
        session.add(_docs(events), _titles(events))
        return session

    def _grow(self, old: LiveSession, snapshot: LiveSnapshot, persisted: bool) -> LiveSession:
        events = snapshot.events
        new = events[old.length :]
        fold_live(old.header.id, new, old.folder)
        session = LiveSession(
            header=old.header,
            length=len(events),
            last_event=events[-1] if events else None,
            folder=old.folder,
            docs=list(old.docs),
            persisted=persisted,
            generation=self.generation + 1,
            titles=list(old.titles),
            vocabulary=Counter(old.vocabulary),
            tokens=old.tokens,
        )
        session.add(_docs(new), _titles(new))
        return session

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
            if not session.passes(session_filters):
                continue
            hits = self.search(plan, session, event_filters)
            if hits:
                best.append(hits[0])
        best.sort(key=LiveHit.session_key)
        return best

    # -- relevance -------------------------------------------------------------------

    def totals(self) -> tuple[int, int]:
        """``(documents, tokens)`` of every live document and title."""
        documents = sum(len(s.docs) + len(s.titles) for s in self.sessions.values())
        return documents, sum(s.tokens for s in self.sessions.values())

    def document_count(self, word: str) -> int:
        """Live documents and titles holding ``word``."""
        return sum(s.vocabulary.get(word, 0) for s in self.sessions.values())

    def relevant(
        self, plan: RelevancePlan, session: LiveSession, event_filters: Sequence[EventFilter]
    ) -> list[RelevantHit]:
        """The documents and titles of one live session that hold a searched word, scored,
        best first."""
        hits = []
        for title, docs in ((False, session.docs), (True, session.titles)):
            for doc in docs:
                surface: SurfaceClass = (
                    "log-only" if title else session.folder.surface_class(doc.seq)
                )
                if event_filters and not event_matches(
                    event_filters,
                    seq=doc.seq,
                    time=doc.time,
                    type=doc.type,
                    surface=surface,
                    text="",
                ):
                    continue
                counts = Counter(doc.words)
                frequencies = tuple(counts.get(term, 0) for term in plan.terms)
                if not any(frequencies):
                    continue
                phrase = bool(plan.phrase) and normal_form(plan.phrase) in normal_form(doc.words)
                score = event_score(plan, frequencies, len(doc.words), phrase)
                if title:
                    score = TITLE_WEIGHT * score
                hits.append(RelevantHit(session, doc, surface, title, score, frequencies))
        hits.sort(key=RelevantHit.event_key)
        return hits

    def best_relevant(
        self,
        plan: RelevancePlan,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventFilter],
    ) -> list[RelevantHit]:
        """Each live session holding a searched word: its best document (its best event, or
        its best title when no event holds one) carrying the session's score."""
        best = []
        for session in self.sessions.values():
            if not session.passes(session_filters):
                continue
            hits = self.relevant(plan, session, event_filters)
            events = [hit for hit in hits if not hit.title]
            titles = [hit for hit in hits if hit.title]
            if not hits:
                continue
            top_event = events[0].score if events else None
            top_title = titles[0].score if titles else None
            score = (0.0 if top_event is None else top_event) + (
                0.0 if top_title is None else top_title
            )
            chosen = events[0] if events else titles[0]
            best.append(
                RelevantHit(
                    session, chosen.doc, chosen.surface, chosen.title, score, chosen.frequencies
                )
            )
        best.sort(key=RelevantHit.session_key)
        return best
