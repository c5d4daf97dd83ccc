"""The relevance and over-long-query searches of the PostgreSQL backend (a mixin of
:class:`~sessionquery.search.postgres.index.PostgresSearch`).

Both read one page the way the index's phrase and words searches do — reconcile (partially
when asked), then the stored rows and the live overlay merged in one order — through the
kernel's rules: :mod:`sessionquery.search.relevance` for relevance (scored in SQL by
:mod:`.relevance`), :mod:`sessionquery.search.bounded` for queries too long to be one
expression (:mod:`.bounded`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import psycopg

from sessionquery.model import SessionHeader, SurfaceClass
from sessionquery.query.backend import Corpus
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import event_matches
from sessionquery.query.types import (
    EventSearchHit,
    PartialIndex,
    SessionRecord,
    SessionSearchHit,
)
from sessionquery.search.base import Window
from sessionquery.search.bounded import Phrases
from sessionquery.search.cursor import CursorPosition, page_offset
from sessionquery.search.postgres import bounded, impact, relevance
from sessionquery.search.postgres.overlay import LiveOverlay, RelevantHit
from sessionquery.search.postgres.tokens import MatchPlan, tokens
from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.relevance import RelevancePlan, plan_relevance
from sessionquery.search.request import SearchRequest

__all__ = ["ModeSearches"]


class ModeSearches:
    """Relevance and over-long queries for :class:`~.index.PostgresSearch`, which provides
    the members declared below."""

    if TYPE_CHECKING:
        _overlay: LiveOverlay
        _generation: int
        _snippet_chars: int

        def _connection(
            self, cancel: CancelToken | None
        ) -> AbstractContextManager[psycopg.Connection[Any]]: ...

        def _search_sync(
            self,
            conn: psycopg.Connection[Any],
            corpus: Corpus,
            cancel: CancelToken | None,
            allow_partial: bool,
        ) -> PartialIndex | None: ...

        def _persisted_target(
            self,
            conn: psycopg.Connection[Any],
            corpus: Corpus,
            session_id: str,
            partial: PartialIndex | None = None,
        ) -> tuple[SessionHeader, str]: ...

        def _header(self, header_json: str) -> SessionHeader: ...

        def _snippet(self, plan: MatchPlan | None, text: str) -> str: ...

    # -- over-long phrase and words queries (search.bounded) ----------------------------

    def _long_found(  # noqa: PLR0917
        self,
        conn: psycopg.Connection[Any],
        words: Sequence[str],
        phrases: Phrases,
        compiled: CompiledFilters,
        request: SearchRequest,
        persisted: bool,
        session_id: str | None,
        cancel: CancelToken | None,
    ) -> list[bounded.Found]:
        overlay = self._overlay
        if not bounded.all_present(
            conn, overlay, words, include_persisted=persisted, cancel=cancel
        ):
            return []
        events = request.event_filters

        def keep(doc: Any, surface: SurfaceClass) -> bool:
            return not events or event_matches(
                events, seq=doc.seq, time=doc.time, type=doc.type, surface=surface, text=""
            )

        found: list[bounded.Found] = []
        for live in overlay.sessions.values():
            if session_id is not None and live.header.id != session_id:
                continue
            if (
                session_id is None
                and request.session_filters
                and not live.passes(request.session_filters)
            ):
                continue
            found += bounded.live_found(live, phrases, keep, cancel)
        if persisted and (session_id is None or session_id not in overlay.sessions):
            plan = bounded.selective_plan(words)
            sql = bounded.candidates_sql(plan, compiled, one_session=session_id is not None)
            params = bounded.params(plan, compiled)
            if session_id is None:
                params["live"] = sorted(overlay.sessions)
            else:
                params["sid"] = session_id
            rows = conn.execute(sql, params).fetchall()
            found += bounded.stored_found(rows, phrases, cancel)
        return found

    def _long_sessions(  # noqa: PLR0917
        self,
        corpus: Corpus,
        words: Sequence[str],
        phrases: Phrases,
        request: SearchRequest,
        compiled: CompiledFilters,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        page_size = request.page_size
        with self._connection(cancel) as conn:
            partial = self._search_sync(conn, corpus, cancel, request.allow_partial)
            generation = f"{self._generation}:{self._overlay.generation}"
            offset = page_offset(position, generation)
            found = self._long_found(
                conn,
                words,
                phrases,
                compiled,
                request,
                corpus.persistence is not None,
                None,
                cancel,
            )
        ranked = bounded.rank(found, sessions=True)
        window = ranked[offset : offset + page_size + 1]
        hits = []
        for hit in window[:page_size]:
            if hit.live is not None:
                session = hit.live
                record = SessionRecord(session.header, live=True, persisted=session.persisted)
            else:
                assert hit.header_json is not None
                record = SessionRecord(self._header(hit.header_json), live=False, persisted=True)
            hits.append(SessionSearchHit(record=record, best_match=self._long_hit(hit)))
        return Window(hits, len(window) > page_size, generation, offset, partial=partial)

    def _long_events(  # noqa: PLR0917
        self,
        corpus: Corpus,
        session_id: str,
        words: Sequence[str],
        phrases: Phrases,
        request: SearchRequest,
        compiled: CompiledFilters,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> tuple[SessionHeader, Window[EventSearchHit]]:
        page_size = request.page_size
        with self._connection(cancel) as conn:
            partial = self._search_sync(conn, corpus, cancel, request.allow_partial)
            live = self._overlay.sessions.get(session_id)
            if live is not None:
                header, generation = live.header, f"live:{live.generation}"
            else:
                header, generation = self._persisted_target(conn, corpus, session_id, partial)
            offset = page_offset(position, generation)
            found = self._long_found(
                conn,
                words,
                phrases,
                compiled,
                request,
                corpus.persistence is not None,
                session_id,
                cancel,
            )
        window = bounded.rank(found, sessions=False)[offset : offset + page_size + 1]
        hits = [self._long_hit(hit) for hit in window[:page_size]]
        return header, Window(hits, len(window) > page_size, generation, offset, partial=partial)

    def _long_hit(self, hit: bounded.Found) -> EventSearchHit:
        return EventSearchHit(
            session_id=hit.session_id,
            seq=hit.seq,
            type=hit.type,
            time=hit.time,
            surface=hit.surface,  # type: ignore[arg-type]  # stored SurfaceClass values
            snippet=hit.snippet(self._snippet_chars),
        )

    # -- relevance -------------------------------------------------------------------

    def _plan(
        self,
        conn: psycopg.Connection[Any],
        request: SearchRequest,
        compiled: CompiledFilters,
        include_persisted: bool,
        session_id: str | None = None,
        *,
        stored: relevance.Stored | None = None,
    ) -> RelevancePlan | None:
        """The relevance plan; corrections limited to the search's scope (one session, or
        the sessions the filters keep); ``stored`` keeps the stored statistics read
        (:class:`~.relevance.Stored`)."""
        overlay = self._overlay
        scope: Callable[[str], bool] | None = None
        if session_id is not None or compiled.session_predicates:
            if session_id is not None:
                live = [s for s in overlay.sessions.values() if s.header.id == session_id]
            else:
                live = [s for s in overlay.sessions.values() if s.passes(request.session_filters)]

            def scope(word: str) -> bool:
                return relevance.in_scope(
                    conn,
                    overlay,
                    compiled,
                    word,
                    live=live,
                    session_id=session_id,
                    include_persisted=include_persisted,
                )

        question = tokens(request.text)
        return plan_relevance(
            question,
            relevance.corpus_stats(
                conn, overlay, include_persisted=include_persisted, stored=stored, words=question
            ),
            lambda words: relevance.document_counts(
                conn, overlay, words, include_persisted=include_persisted, stored=stored
            ),
            scope,
        )

    def _relevance_sessions(
        self,
        corpus: Corpus,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        page_size = request.page_size
        persisted = corpus.persistence is not None
        with self._connection(cancel) as conn:
            partial = self._search_sync(conn, corpus, cancel, request.allow_partial)
            generation = f"{self._generation}:{self._overlay.generation}"
            offset = page_offset(position, generation)
            stored = relevance.Stored()
            plan = self._plan(conn, request, compiled, persisted, stored=stored)
            if plan is None:
                return Window([], False, generation, offset, partial=partial)
            live = self._overlay.best_relevant(plan, request.session_filters, request.event_filters)
            ranked: list[tuple[tuple[Any, ...], object]] = [(h.session_key(), h) for h in live]
            start = offset if not live else 0
            if persisted:
                params = {
                    **compiled.params,
                    **relevance.relevance_params(plan),
                    "live": sorted(self._overlay.sessions),
                    "lim": offset + page_size + 1 - start,
                    "off": start,
                }
                rows = impact.ranked_sessions(conn, plan, compiled, params, stored)
                ranked += [((-r[6], r[5], -r[3], r[0], -r[1]), r) for r in rows]
            ranked.sort(key=lambda item: item[0])
            window = ranked[offset - start :]
            hits = [self._relevant_session_hit(plan, item) for _key, item in window[:page_size]]
        return Window(
            hits, len(window) > page_size, generation, offset, plan.corrections, partial=partial
        )

    def _relevance_events(
        self,
        corpus: Corpus,
        session_id: str,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> tuple[SessionHeader, Window[EventSearchHit]]:
        page_size = request.page_size
        persisted = corpus.persistence is not None
        with self._connection(cancel) as conn:
            partial = self._search_sync(conn, corpus, cancel, request.allow_partial)
            live = self._overlay.sessions.get(session_id)
            if live is not None:
                header, generation = live.header, f"live:{live.generation}"
            else:
                header, generation = self._persisted_target(conn, corpus, session_id, partial)
            offset = page_offset(position, generation)
            stored = relevance.Stored()
            plan = self._plan(conn, request, compiled, persisted, session_id, stored=stored)
            if plan is None:
                return header, Window([], False, generation, offset, partial=partial)
            if live is not None:
                found = self._overlay.relevant(plan, live, request.event_filters)
                window = found[offset : offset + page_size + 1]
                hits = [
                    _live_relevant_hit(
                        hit, self._relevant_snippet(plan, hit.frequencies, hit.doc.text)
                    )
                    for hit in window[:page_size]
                ]
                return header, Window(
                    hits,
                    len(window) > page_size,
                    generation,
                    offset,
                    plan.corrections,
                    partial=partial,
                )
            params = {
                **compiled.params,
                **relevance.relevance_params(plan),
                "sid": session_id,
                "lim": page_size + 1,
                "off": offset,
            }
            rows = conn.execute(relevance.event_relevance_sql(plan, compiled), params).fetchall()
            hits = [
                EventSearchHit(
                    session_id=session_id,
                    seq=int(row[0]),
                    type=str(row[1]),
                    time=int(row[2]),
                    surface=row[3],
                    snippet=self._relevant_snippet(plan, row[8:], str(row[6])),
                )
                for row in rows[:page_size]
            ]
        return header, Window(
            hits, len(rows) > page_size, generation, offset, plan.corrections, partial=partial
        )

    def _relevant_snippet(self, plan: RelevancePlan, frequencies: Sequence[Any], text: str) -> str:
        """The snippet around the first occurrence of the most selective searched word the
        document holds (as the SQLite backend cuts it)."""
        term = next((t for t, tf in zip(plan.terms, frequencies, strict=True) if tf), plan.terms[0])
        return self._snippet(MatchPlan(phrases=((term,),), simple=True), text)

    def _relevant_session_hit(self, plan: RelevancePlan, item: object) -> SessionSearchHit:
        if isinstance(item, RelevantHit):
            session = item.session
            record = SessionRecord(session.header, live=True, persisted=session.persisted)
            snippet = self._relevant_snippet(plan, item.frequencies, item.doc.text)
            return SessionSearchHit(record=record, best_match=_live_relevant_hit(item, snippet))
        row: tuple[Any, ...] = item  # type: ignore[assignment]
        sid, seq, kind, time, surface, _length, _score, header_json, text = row[:9]
        record = SessionRecord(self._header(str(header_json)), live=False, persisted=True)
        best = EventSearchHit(
            session_id=str(sid),
            seq=int(seq),
            type=str(kind),
            time=int(time),
            surface=surface,
            snippet=self._relevant_snippet(plan, row[10:], str(text)),
        )
        return SessionSearchHit(record=record, best_match=best)


def _live_relevant_hit(hit: RelevantHit, snippet: str) -> EventSearchHit:
    doc = hit.doc
    return EventSearchHit(
        session_id=hit.session.header.id,
        seq=doc.seq,
        type=doc.type,
        time=doc.time,
        surface=hit.surface,
        snippet=snippet,
    )
