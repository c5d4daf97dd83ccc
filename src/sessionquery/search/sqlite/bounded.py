"""Over-long ``phrase``/``words`` queries on the SQLite index (the kernel's
:mod:`sessionquery.search.bounded`): existence checks, candidates from a bounded
expression, and each candidate's own tokens.

Every statement here is short or interruptible: the existence checks run one small FTS5
lookup per distinct token inside one statement (the progress handler polls the deadline
between them), the candidate expression has at most
:data:`~sessionquery.search.bounded.EXPRESSION_TERMS` terms, and candidates are tokenised
one at a time with the deadline checked between them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import apsw

from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.search.bounded import Phrases, count_spans, first_span, selective_tokens
from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.snippet import snippet_around
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.query import (
    LIVE_COLUMNS,
    PERSISTED_COLUMNS,
    SEQ_BITS,
    SEQ_MASK,
    words_expression,
)

__all__ = [
    "Candidate",
    "all_present",
    "candidates",
    "rank_events",
    "rank_sessions",
    "snippet",
]


def all_present(conn: db.Connection, tokens: Sequence[str], *, include_persisted: bool) -> bool:
    """Whether every distinct token is held by some stored or live document (the lookups
    stop at the first token that none holds)."""
    wanted = json.dumps(list(dict.fromkeys(tokens)))
    missing = conn.execute(
        "WITH t(value) AS (SELECT value FROM json_each(:tokens)) SELECT EXISTS (SELECT 1 FROM t "
        "WHERE NOT EXISTS (SELECT 1 FROM temp.live_fts WHERE live_fts MATCH "
        "'\"' || replace(t.value, '\"', '\"\"') || '\"' LIMIT 1)"
        + (
            " AND NOT EXISTS (SELECT 1 FROM main.doc_fts WHERE doc_fts MATCH "
            "'\"' || replace(t.value, '\"', '\"\"') || '\"' LIMIT 1)"
            if include_persisted
            else ""
        )
        + ")",
        {"tokens": wanted},
    ).fetchone()
    return missing is not None and int(missing[0]) == 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A document holding the selective tokens, with what ranking needs."""

    live: bool
    rid: int
    session_id: str
    text: str
    length: int
    time: int
    type: str
    surface: str
    spans: int = 0
    first: int = -1

    @property
    def seq(self) -> int:
        return self.rid & SEQ_MASK


def _branch_sql(live: bool, filters: CompiledFilters, *, one_session: bool) -> str:
    schema, fts, rows, sessions = (
        ("temp", "live_fts", "live_rows", "live_sessions")
        if live
        else ("main", "doc_fts", "doc_rows", "persisted_sessions")
    )
    columns = LIVE_COLUMNS if live else PERSISTED_COLUMNS
    where = filters.where(columns)
    if one_session:
        where += f" AND {fts}.rowid BETWEEN :lo AND :hi"
    elif not live:
        where += " AND s.id NOT IN (SELECT id FROM temp.live_sessions)"
    return (
        f"SELECT {int(live)}, {fts}.rowid, s.id, r.text, r.length, r.time, r.type, r.surface "
        f"FROM {schema}.{fts} JOIN {schema}.{rows} AS r ON r.id = {fts}.rowid "
        f"JOIN {schema}.{sessions} AS s ON s.key = {fts}.rowid >> {SEQ_BITS} "
        f"WHERE {fts} MATCH :q{where}"
    )


def candidates(
    conn: db.Connection,
    tokens: Sequence[str],
    filters: CompiledFilters,
    *,
    branches: Sequence[bool],
    bounds: tuple[int, int] | None = None,
) -> list[Candidate]:
    """The documents of the given branches (``True`` live, ``False`` stored) holding the
    query's selective tokens and passing the filters (one session's rowids ``bounds``)."""
    params: dict[str, object] = {**filters.params, "q": words_expression(selective_tokens(tokens))}
    if bounds is not None:
        params["lo"], params["hi"] = bounds
    out = []
    for live in branches:
        sql = _branch_sql(live, filters, one_session=bounds is not None)
        for src, rid, sid, text, length, time, kind, surface in conn.execute(sql, params):
            out.append(
                Candidate(
                    bool(src),
                    int(rid),
                    str(sid),
                    str(text),
                    int(length),
                    int(time),
                    str(kind),
                    str(surface),
                )
            )
    return out


def _scored(
    conn: db.Connection,
    found: Sequence[Candidate],
    phrases: Phrases,
    cancel: CancelToken | None,
) -> list[Candidate]:
    """The candidates that match, with their span counts and first match offsets."""
    tokenizer = conn.fts5_tokenizer("unicode61", [])
    out = []
    for candidate in found:
        check_cancel(cancel)
        encoded = candidate.text.encode("utf-8")
        tokens = cast(
            list[tuple[int, int, str]],
            tokenizer(
                encoded,
                apsw.FTS5_TOKENIZE_DOCUMENT,
                None,
                include_offsets=True,
                include_colocated=False,
            ),
        )
        words = [token[2] for token in tokens]
        spans = count_spans(words, phrases)
        if not spans:
            continue
        index = first_span(words, phrases)
        assert index is not None
        first = len(encoded[: tokens[index][0]].decode("utf-8"))
        out.append(
            Candidate(
                candidate.live,
                candidate.rid,
                candidate.session_id,
                candidate.text,
                candidate.length,
                candidate.time,
                candidate.type,
                candidate.surface,
                spans,
                first,
            )
        )
    return out


def _event_key(c: Candidate) -> tuple[int, int, int, int]:
    return (-c.spans, c.length, -c.time, -c.seq)


def rank_events(
    conn: db.Connection, found: Sequence[Candidate], phrases: Phrases, cancel: CancelToken | None
) -> list[Candidate]:
    """The matching candidates of one session, best first (SPEC §7 order)."""
    return sorted(_scored(conn, found, phrases, cancel), key=_event_key)


def rank_sessions(
    conn: db.Connection, found: Sequence[Candidate], phrases: Phrases, cancel: CancelToken | None
) -> list[Candidate]:
    """Each matching session's best candidate, sessions best first (SPEC §7 order)."""
    best: dict[tuple[bool, str], Candidate] = {}
    for candidate in _scored(conn, found, phrases, cancel):
        key = (candidate.live, candidate.session_id)
        held = best.get(key)
        if held is None or _event_key(candidate) < _event_key(held):
            best[key] = candidate
    return sorted(best.values(), key=lambda c: (-c.spans, c.length, -c.time, c.session_id, -c.seq))


def snippet(candidate: Candidate, snippet_chars: int) -> str:
    """The hit's snippet, cut around its first match."""
    return snippet_around(candidate.text, candidate.first, snippet_chars)
