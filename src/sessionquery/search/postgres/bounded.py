"""Over-long ``phrase``/``words`` queries on PostgreSQL (the kernel's
:mod:`sessionquery.search.bounded`): existence checks, candidates from a bounded predicate,
and each candidate's own tokens, with the same answers as the SQLite backend.

The existence check is one indexed lookup per distinct lexeme (``sqi_terms``) and in the live
overlay; the candidate predicate needs at most
:data:`~sessionquery.search.bounded.EXPRESSION_TERMS` lexemes; the candidates' normal forms
are their tokens, so each is checked in Python with the deadline checked between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from sessionquery.match_modes import Words
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.search.bounded import Phrases, count_spans, first_span, selective_tokens
from sessionquery.search.postgres.overlay import LiveDoc, LiveOverlay, LiveSession
from sessionquery.search.postgres.sql import COLUMNS, holds, match_params
from sessionquery.search.postgres.tokens import MatchPlan, lexeme, match_plan, token_spans
from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.snippet import MATCH_MARK, snippet_from_highlight

__all__ = [
    "Found",
    "all_present",
    "candidates_sql",
    "live_found",
    "params",
    "rank",
    "selective_plan",
    "stored_found",
]


LOOKUP_CHUNK = 1024
"""Lexemes looked up per statement by :func:`all_present`: a query of 100,000 distinct words
is checked in short statements with the deadline checked between them (one statement of
every lexeme cost 0.35 s of binding and lookup that no deadline could cut short), and the
first chunk with a missing lexeme ends the check."""


def all_present(
    conn: psycopg.Connection[Any],
    overlay: LiveOverlay,
    tokens: Sequence[str],
    *,
    include_persisted: bool,
    cancel: CancelToken | None = None,
) -> bool:
    """Whether every distinct token is held by some live or (when searched) stored document.

    A stored token counts by its lexeme, so a token longer than the lexeme cut may pass this
    check and still match nothing: it only decides whether to look further."""
    # session by session over what is still missing, in C: a query of 100,000 words costs
    # a set operation per live session (a generator per word cost 0.3 s of the deadline)
    remaining = set(tokens)
    distinct = len(remaining)
    for session in overlay.sessions.values():
        vocabulary = session.vocabulary
        if len(vocabulary) < len(remaining):
            remaining.difference_update(vocabulary)
        else:
            remaining = {token for token in remaining if token not in vocabulary}
        if not remaining:
            return True
    if not include_persisted:
        return False
    # in query order, so what is looked up first does not depend on set order; the lexemes
    # of one chunk at a time, as the first chunk with a missing lexeme ends the check
    ordered = dict.fromkeys(tokens)
    missing = (
        list(ordered) if len(remaining) == distinct else [t for t in ordered if t in remaining]
    )
    for start in range(0, len(missing), LOOKUP_CHUNK):
        check_cancel(cancel)
        chunk = list(
            dict.fromkeys(lexeme(token) for token in missing[start : start + LOOKUP_CHUNK])
        )
        row = conn.execute(
            "SELECT count(*) FROM sqi_terms WHERE term = ANY(%s::text[])", (chunk,)
        ).fetchone()
        if row is None or int(row[0]) != len(chunk):
            return False
    return True


def selective_plan(tokens: Sequence[str]) -> MatchPlan:
    """The bounded plan every candidate must satisfy: each selective token, anywhere."""
    plan = match_plan(" ".join(selective_tokens(tokens)), Words.EVERY)
    assert plan is not None
    return plan


def candidates_sql(plan: MatchPlan, filters: CompiledFilters, *, one_session: bool) -> str:
    """Stored documents (not titles, not live) holding every token of ``plan`` and passing
    the filters; binds :func:`~.sql.match_params`, ``live`` (or ``sid``) and the filters'."""
    contains = "".join(f" AND {holds('d.norm', f'%(m{i})s')}" for i in range(len(plan.phrases)))
    scope = (
        " AND d.session_id = %(sid)s"
        if one_session
        else " AND NOT (d.session_id = ANY(%(live)s::text[]))"
    )
    return (
        "SELECT d.session_id, d.seq, d.type, d.time, d.surface, d.length, d.text, d.norm, "
        "s.header_json FROM sqi_docs AS d JOIN sqi_sessions AS s ON s.id = d.session_id "
        f"WHERE (d.tsv @@ %(tsq)s::tsquery OR d.tsv IS NULL){contains} AND NOT d.title"
        f"{scope}{filters.where(COLUMNS)}"
    )


def params(plan: MatchPlan, filters: CompiledFilters) -> dict[str, object]:
    """The bound values of :func:`candidates_sql` but the scope."""
    return {**filters.params, **match_params(plan)}


@dataclass(frozen=True, slots=True)
class Found:
    """A matching document: its rank key fields, text and tokens, and where it comes from."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: str
    text: str
    spans: int
    first: int
    live: LiveSession | None = None
    header_json: str | None = None

    def event_key(self) -> tuple[int, int, int, int]:
        return (-self.spans, len(self.text), -self.time, -self.seq)

    def session_key(self) -> tuple[int, int, int, str, int]:
        return (-self.spans, len(self.text), -self.time, self.session_id, -self.seq)

    def snippet(self, snippet_chars: int) -> str:
        """The snippet cut around the first match (as the SQLite backend cuts it)."""
        offset = token_spans(self.text)[self.first][1]
        marked = self.text[:offset] + MATCH_MARK + self.text[offset:]
        return snippet_from_highlight(marked, snippet_chars)


def _found(  # noqa: PLR0917
    session_id: str,
    seq: int,
    kind: str,
    time: int,
    surface: str,
    text: str,
    words: Sequence[str],
    phrases: Phrases,
    live: LiveSession | None = None,
    header_json: str | None = None,
) -> Found | None:
    spans = count_spans(words, phrases)
    if not spans:
        return None
    first = first_span(words, phrases)
    assert first is not None
    return Found(session_id, seq, kind, time, surface, text, spans, first, live, header_json)


def stored_found(
    rows: Sequence[tuple[Any, ...]], phrases: Phrases, cancel: CancelToken | None
) -> list[Found]:
    """The candidate rows of :func:`candidates_sql` that match, with their span counts."""
    out = []
    for sid, seq, kind, time, surface, _length, text, norm, header_json in rows:
        check_cancel(cancel)
        words = str(norm).split()
        hit = _found(
            str(sid),
            int(seq),
            str(kind),
            int(time),
            str(surface),
            str(text),
            words,
            phrases,
            header_json=str(header_json),
        )
        if hit is not None:
            out.append(hit)
    return out


def live_found(
    session: LiveSession,
    phrases: Phrases,
    keep: Any,
    cancel: CancelToken | None,
) -> list[Found]:
    """The matching documents of one live session that ``keep(doc, surface)`` accepts."""
    out = []
    doc: LiveDoc
    for doc in session.docs:
        check_cancel(cancel)
        surface = session.folder.surface_class(doc.seq)
        if not keep(doc, surface):
            continue
        hit = _found(
            session.header.id,
            doc.seq,
            doc.type,
            doc.time,
            surface,
            doc.text,
            doc.words,
            phrases,
            live=session,
        )
        if hit is not None:
            out.append(hit)
    return out


def rank(found: Sequence[Found], *, sessions: bool) -> list[Found]:
    """Best first: events by the §7 order, or each session's best event by the session
    order."""
    if not sessions:
        return sorted(found, key=Found.event_key)
    best: dict[tuple[bool, str], Found] = {}
    for hit in found:
        key = (hit.live is not None, hit.session_id)
        held = best.get(key)
        if held is None or hit.event_key() < held.event_key():
            best[key] = hit
    return sorted(best.values(), key=Found.session_key)
