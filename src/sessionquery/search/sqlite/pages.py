"""One page of a search on the SQLite index, in any match mode (SPEC §7, §13.3, §14.1).

:class:`~sessionquery.search.sqlite.index.SqliteSearch` reconciles the index and holds the
connection and its read snapshot; :class:`Pages` reads the page inside them: the ranked
statement of ``phrase``/``words`` queries (:mod:`.query`), the bounded path of over-long ones
(:mod:`.bounded`), relevance (:mod:`.relevance`), and the hits with their records and
snippets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.match_modes import Words
from sessionquery.model import SessionHeader, SurfaceClass
from sessionquery.query.backend import Corpus
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.types import EventSearchHit, SessionRecord, SessionSearchHit
from sessionquery.search.base import Window
from sessionquery.search.bounded import Phrases, is_long, phrases_of
from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.relevance import TITLE_WEIGHT, RelevancePlan, plan_relevance
from sessionquery.search.request import SearchRequest
from sessionquery.search.snippet import MATCH_MARK, snippet_around, snippet_from_highlight
from sessionquery.search.sqlite import bounded, db, relevance, spans
from sessionquery.search.sqlite.query import (
    SEQ_BITS,
    SEQ_MASK,
    event_search_sql,
    highlight_sql,
    query_tokens,
    quote_phrase,
    session_search_sql,
    text_sql,
    words_expression,
)
from sessionquery.search.sqlite.reconcile import IndexState
from sessionquery.search.sqlite.rows import key_range

__all__ = ["Pages"]


class Pages:
    """Reads pages of hits over one index's state (live overlay), with its header cache.

    Args:
        state: the index's reconciliation state (live sessions and their keys).
        header: the parsed header of a stored ``header_json`` (the backend's cache).
        snippet_chars: the longest snippet, in code points.
    """

    def __init__(
        self,
        state: IndexState,
        header: Callable[[str], SessionHeader],
        snippet_chars: int,
    ) -> None:
        self._state = state
        self._header = header
        self._snippet_chars = snippet_chars

    def session_page(  # noqa: PLR0917
        self,
        conn: db.Connection,
        request: SearchRequest,
        compiled: CompiledFilters,
        persisted: bool,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        text, words, page_size = request.text, request.plan.words, request.page_size
        if request.plan.ranked:
            return self._relevance_sessions(
                conn,
                request,
                compiled,
                persisted=persisted,
                offset=offset,
                generation=generation,
                cancel=cancel,
            )
        tokens = query_tokens(conn, text)
        check_cancel(cancel)  # a long query's tokens took a while
        phrases = phrases_of(tokens, words)
        if is_long(phrases):
            return self._long_sessions(
                conn, tokens, phrases, request, compiled, persisted, offset, generation, cancel
            )
        matcher = self._matcher(text, tokens, phrases, words, cancel)
        sql = session_search_sql(compiled, include_persisted=persisted)
        params = {
            **compiled.params,
            "q": matcher.expression,
            "overlap": db.overlapping(matcher.phrases),
            "lim": page_size + 1,
            "off": offset,
        }
        rows = conn.execute(sql, params).fetchall()
        hits = [self._session_hit(conn, matcher, row) for row in rows[:page_size]]
        return Window(hits, len(rows) > page_size, generation, offset)

    def event_page(  # noqa: PLR0917
        self,
        conn: db.Connection,
        request: SearchRequest,
        compiled: CompiledFilters,
        live: bool,
        key: int,
        session_id: str,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[EventSearchHit]:
        text, words, page_size = request.text, request.plan.words, request.page_size
        if request.plan.ranked:
            return self._relevance_events(
                conn,
                request,
                compiled,
                live=live,
                key=key,
                session_id=session_id,
                offset=offset,
                generation=generation,
                cancel=cancel,
            )
        tokens = query_tokens(conn, text)
        check_cancel(cancel)  # a long query's tokens took a while
        phrases = phrases_of(tokens, words)
        if is_long(phrases):
            found: list[bounded.Candidate] = []
            if bounded.all_present(conn, tokens, include_persisted=not live):
                matching = bounded.candidates(
                    conn, tokens, compiled, branches=[live], bounds=key_range(key)
                )
                found = bounded.rank_events(conn, matching, phrases, cancel)
            page = found[offset : offset + page_size + 1]
            hits = [self._long_hit(c) for c in page[:page_size]]
            return Window(hits, len(page) > page_size, generation, offset)
        matcher = self._matcher(text, tokens, phrases, words, cancel)
        params = {
            **compiled.params,
            "q": matcher.expression,
            "overlap": db.overlapping(matcher.phrases),
            "lo": key << SEQ_BITS,
            "hi": (key << SEQ_BITS) | SEQ_MASK,
            "lim": page_size + 1,
            "off": offset,
        }
        rows = conn.execute(event_search_sql(compiled, live=live), params).fetchall()
        hits = [
            self._event_hit(conn, matcher, live, session_id, row[:5]) for row in rows[:page_size]
        ]
        return Window(hits, len(rows) > page_size, generation, offset)

    # -- over-long phrase and words queries (search.bounded) ----------------------------

    def _long_sessions(  # noqa: PLR0917
        self,
        conn: db.Connection,
        tokens: Sequence[str],
        phrases: Phrases,
        request: SearchRequest,
        compiled: CompiledFilters,
        persisted: bool,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        page_size = request.page_size
        found: list[bounded.Candidate] = []
        if bounded.all_present(conn, tokens, include_persisted=persisted):
            branches = [True, False] if persisted else [True]
            rows = bounded.candidates(conn, tokens, compiled, branches=branches)
            found = bounded.rank_sessions(conn, rows, phrases, cancel)
        window = found[offset : offset + page_size + 1]
        hits = [
            SessionSearchHit(
                record=self._record(conn, c.live, c.session_id, c.rid), best_match=self._long_hit(c)
            )
            for c in window[:page_size]
        ]
        return Window(hits, len(window) > page_size, generation, offset)

    def _long_hit(self, candidate: bounded.Candidate) -> EventSearchHit:
        return EventSearchHit(
            session_id=candidate.session_id,
            seq=candidate.seq,
            type=candidate.type,
            time=candidate.time,
            surface=cast(SurfaceClass, candidate.surface),
            snippet=bounded.snippet(candidate, self._snippet_chars),
        )

    # -- relevance -------------------------------------------------------------------

    @staticmethod
    def _plan(
        conn: db.Connection,
        text: str,
        compiled: CompiledFilters,
        persisted: bool,
        session: tuple[bool, int] | None = None,
    ) -> RelevancePlan | None:
        """The relevance plan; corrections limited to the search's scope (one session, or
        the sessions the filters keep)."""
        scope: Callable[[str], bool] | None = None
        if session is not None:
            live, key = session

            def scope(word: str) -> bool:
                return relevance.in_session(conn, word, live=live, key=key)

        elif compiled.session_predicates:

            def scope(word: str) -> bool:
                return relevance.in_scope(conn, compiled, word, include_persisted=persisted)

        return plan_relevance(
            query_tokens(conn, text),
            relevance.corpus_stats(conn),
            lambda words: relevance.document_counts(conn, words),
            scope,
        )

    def _relevance_sessions(
        self,
        conn: db.Connection,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        persisted: bool,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        page_size = request.page_size
        plan = self._plan(conn, request.text, compiled, persisted)
        if plan is None:
            return Window([], False, generation, offset)
        relevance.collect_sessions(
            conn,
            plan,
            compiled,
            include_persisted=persisted,
            page=page_size + 1 + offset,
            title_weight=TITLE_WEIGHT,
        )
        sql = relevance.session_page_sql(include_persisted=persisted)
        rows = conn.execute(sql, {"lim": page_size + 1, "off": offset}).fetchall()
        hits = []
        for src, title, rid, session_id, *event, _score in rows[:page_size]:
            live = src == 1
            sid = str(session_id)
            best = self._relevance_hit(
                conn, plan, cancel, live=live, title=bool(title), session_id=sid, row=(rid, *event)
            )
            assert isinstance(rid, int)
            record = self._record(conn, live, sid, rid)
            hits.append(SessionSearchHit(record=record, best_match=best))
        return Window(hits, len(rows) > page_size, generation, offset, plan.corrections)

    def _relevance_events(
        self,
        conn: db.Connection,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        live: bool,
        key: int,
        session_id: str,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[EventSearchHit]:
        page_size = request.page_size
        plan = self._plan(conn, request.text, compiled, not live, (live, key))
        if plan is None:
            return Window([], False, generation, offset)
        with relevance.installed_plan(plan) as installed:
            params = {
                **compiled.params,
                "q": relevance.or_expression(plan),
                "plan": installed.plan_id,
                "title_weight": TITLE_WEIGHT,
                "lo": key << SEQ_BITS,
                "hi": (key << SEQ_BITS) | SEQ_MASK,
                "lim": page_size + 1,
                "off": offset,
            }
            rows = conn.execute(relevance.event_relevance_sql(compiled, live=live), params)
            found = rows.fetchall()
        hits = [
            self._relevance_hit(
                conn,
                plan,
                cancel,
                live=live,
                title=bool(title),
                session_id=session_id,
                row=(rid, *event),
            )
            for title, rid, *event in found[:page_size]
        ]
        return Window(hits, len(found) > page_size, generation, offset, plan.corrections)

    def _relevance_hit(
        self,
        conn: db.Connection,
        plan: RelevancePlan,
        cancel: CancelToken | None,
        *,
        live: bool,
        title: bool,
        session_id: str,
        row: Sequence[object],
    ) -> EventSearchHit:
        """The hit for one ranked document, its snippet cut around the most selective
        searched word it holds."""
        rid = row[0]
        assert isinstance(rid, int)
        term = next(
            (
                word
                for word in plan.terms
                if conn.execute(
                    relevance.holds_term_sql(live, title), {"q": _quoted(word), "rid": rid}
                ).fetchone()
            ),
            plan.terms[0],
        )
        matcher = spans.Matcher(_quoted(term), ((term,),), cancel)
        return self._event_hit(conn, matcher, live, session_id, row, title=title)

    # -- helpers ---------------------------------------------------------------------

    def _record(self, conn: db.Connection, live: bool, session_id: str, rid: int) -> SessionRecord:
        if live:
            state = self._state.live[session_id]
            return SessionRecord(state.header, live=True, persisted=state.persisted)
        (header_json,) = db.one(
            conn,
            "SELECT header_json FROM main.persisted_sessions WHERE key = ?",
            (rid >> SEQ_BITS,),
        )
        if not isinstance(header_json, str):
            raise db.Damaged("main.persisted_sessions holds a damaged header")
        return SessionRecord(self._header(header_json), live=False, persisted=True)

    def target(
        self, conn: db.Connection, corpus: Corpus, session_id: str
    ) -> tuple[bool, int, SessionHeader, str]:
        live = self._state.live.get(session_id)
        if live is not None:
            return True, live.key, live.header, f"live:{live.generation}"
        if corpus.persistence is not None:
            row = conn.execute(
                "SELECT key, header_json, generation FROM main.persisted_sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is not None:
                key, header_json, generation = row
                if type(key) is not int or not isinstance(header_json, str):
                    raise db.Damaged("main.persisted_sessions holds a damaged row")
                header = self._header(header_json)
                return False, key, header, f"persisted:{self._state.epoch}:{generation}"
        raise SessionQueryError(ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found")

    @staticmethod
    def _matcher(
        text: str,
        tokens: Sequence[str],
        phrases: Phrases,
        words: Words,
        cancel: CancelToken | None,
    ) -> spans.Matcher:
        """The MATCH expression of the normalised query (of these tokens) for the plan's
        candidates, and the phrases it requires; registers the long-document span counter
        for this search."""
        if words is Words.AS_PHRASE:
            return spans.Matcher(quote_phrase(text), (tuple(tokens),), cancel)
        return spans.Matcher(words_expression(tokens), phrases, cancel)

    def _snippet(
        self,
        conn: db.Connection,
        matcher: spans.Matcher,
        live: bool,
        rid: int,
        title: bool = False,
    ) -> str:
        stored = conn.execute(text_sql(live, title), {"rid": rid}).fetchone()
        if stored is not None and int(stored[1]) > spans.SMALL_DOCUMENT:
            # Long document: locate the first span without highlighting all of it.
            text = str(stored[0])
            first = spans.first_span_offset(conn, text, matcher.expression, matcher.cancel)
            return snippet_around(text, first, self._snippet_chars)
        row = conn.execute(
            highlight_sql(live, title), {"q": matcher.expression, "mark": MATCH_MARK, "rid": rid}
        ).fetchone()
        return snippet_from_highlight(str(row[0]) if row else "", self._snippet_chars)

    def _event_hit(
        self,
        conn: db.Connection,
        matcher: spans.Matcher,
        live: bool,
        session_id: str,
        row: Sequence[object],
        *,
        title: bool = False,
    ) -> EventSearchHit:
        rid, seq, kind, time, surface = row
        assert isinstance(rid, int) and isinstance(seq, int) and isinstance(time, int)
        return EventSearchHit(
            session_id=session_id,
            seq=seq,
            type=str(kind),
            time=time,
            surface=surface,  # type: ignore[arg-type]  # stored from SurfaceClass values
            snippet=self._snippet(conn, matcher, live, rid, title),
        )

    def _session_hit(
        self, conn: db.Connection, matcher: spans.Matcher, row: Sequence[object]
    ) -> SessionSearchHit:
        src, rid, session_id, *event = row
        assert isinstance(rid, int)
        sid = str(session_id)
        live = src == 1
        record = self._record(conn, live, sid, rid)
        best = self._event_hit(conn, matcher, live, sid, (rid, *event))
        return SessionSearchHit(record=record, best_match=best)


def _quoted(word: str) -> str:
    """A single-token FTS5 phrase for ``word`` (a token of the index's own tokenizer)."""
    return '"' + word.replace('"', '""') + '"'
