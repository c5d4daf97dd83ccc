"""Relevance search on SQLite: the index's statistics, the BM25 function, the ranked SQL.

The ranking itself is the kernel's (:mod:`sessionquery.search.relevance`); this module only
reads what it needs from the four FTS5 indexes (stored and live events, stored and live
titles) and evaluates :func:`~sessionquery.search.relevance.event_score` inside SQLite.

Invariants:

* **Statistics** come from the indexes themselves, never from a copy that could drift: the
  number of documents and tokens of each FTS5 index from its averages record (O(1)), the
  number of documents holding a word from the ``fts5vocab`` views (cost proportional to that
  number). They are summed over the four indexes (:func:`corpus_stats`,
  :func:`document_counts`).
* **Scores** are computed by the FTS5 auxiliary function :data:`RANK` from FTS5's own
  position lists (the frequency of each searched word) and token counts (``D``), with the
  plan's constants and weights, in the kernel's order of operations: the same float as
  :func:`~sessionquery.search.relevance.event_score` on the same counts.
* The MATCH expression is built only from the plan's words (tokens of the index's own
  tokenizer, at most :data:`~sessionquery.search.relevance.MAX_TERMS`), each one quoted
  single-token phrase joined by ``OR``: no query text is ever FTS5 syntax.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

import apsw

from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.relevance import CorpusStats, RelevancePlan
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.query import (
    LIVE_COLUMNS,
    PERSISTED_COLUMNS,
    SEQ_BITS,
    SEQ_MASK,
)

__all__ = [
    "RANK",
    "corpus_stats",
    "document_counts",
    "event_relevance_sql",
    "holds_term_sql",
    "install",
    "installed_plan",
    "or_expression",
    "rank",
    "session_relevance_sql",
]

RANK: Final = "sq_rank"
"""FTS5 auxiliary function ``sq_rank(fts_table, plan_id)``: the current row's BM25 score
under the plan registered as ``plan_id`` (:func:`installed_plan`)."""

_FTS_TABLES: Final = (
    ("main", "doc_fts"),
    ("main", "title_fts"),
    ("temp", "live_fts"),
    ("temp", "live_title_fts"),
)
_VOCABULARIES: Final = ("doc_vocab", "title_vocab", "live_vocab", "live_title_vocab")


@dataclass(frozen=True, slots=True)
class _Compiled:
    c1: float
    c2: float
    c3: float
    weights: tuple[float, ...]


_PLANS: dict[int, _Compiled] = {}
_PLAN_IDS = itertools.count(1)
_PLANS_LOCK = threading.Lock()


@contextmanager
def installed_plan(plan: RelevancePlan) -> Iterator[int]:
    """Make ``plan`` available to :data:`RANK` under the id this yields, for one statement
    group; phrase ``i`` of the MATCH expression (:func:`or_expression`) is term ``i``."""
    c1, c2, c3 = plan.constants
    with _PLANS_LOCK:
        plan_id = next(_PLAN_IDS)
        _PLANS[plan_id] = _Compiled(c1, c2, c3, plan.weights)
    try:
        yield plan_id
    finally:
        with _PLANS_LOCK:
            del _PLANS[plan_id]


def install(conn: db.Connection) -> None:
    """Register :data:`RANK` on ``conn`` (for every FTS5 table of the connection)."""
    conn.register_fts5_function(RANK, rank)


def rank(api: apsw.FTS5ExtensionApi, *args: apsw.SQLiteValue) -> float:
    """The FTS5 auxiliary function :data:`RANK` (see there)."""
    plan = _PLANS[args[0]]  # type: ignore[index]
    c1 = plan.c1
    norm = plan.c2 + plan.c3 * api.column_size(0)
    score = 0.0
    for index, weight in enumerate(plan.weights):
        found = api.phrase_locations(index)[0]
        if found:
            tf = len(found)
            score += weight * (tf * c1) / (tf + norm)
    return score


def or_expression(plan: RelevancePlan) -> str:
    """The MATCH expression of a plan: each term a quoted phrase, in plan order, ``OR``-ed."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in plan.terms)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """An SQLite varint at ``data[at:]``: its value and the offset after it."""
    value = 0
    for _ in range(8):
        byte = data[at]
        at += 1
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at
    return (value << 8) | data[at], at + 1


def _totals(conn: db.Connection, schema: str, fts: str) -> tuple[int, int]:
    """``(documents, tokens)`` of one FTS5 index, from its averages record (row 1 of its
    ``_data`` table: the row count, then each column's token total, as varints)."""
    row = conn.execute(f"SELECT block FROM {schema}.{fts}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    data = bytes(row[0])
    documents, at = _varint(data, 0)
    tokens, _ = _varint(data, at)
    return documents, tokens


def corpus_stats(conn: db.Connection) -> CorpusStats:
    """Documents and tokens of the four indexes together."""
    documents = tokens = 0
    for schema, fts in _FTS_TABLES:
        n, t = _totals(conn, schema, fts)
        documents += n
        tokens += t
    return CorpusStats(documents, tokens)


def document_counts(conn: db.Connection, words: Sequence[str]) -> Mapping[str, int]:
    """How many documents of the four indexes hold each of ``words`` (absent ones: 0)."""
    counts = dict.fromkeys(words, 0)
    if not words:
        return counts
    wanted = json.dumps(list(words))
    for vocabulary in _VOCABULARIES:
        rows = conn.execute(
            f"SELECT term, doc FROM temp.{vocabulary} "
            "WHERE term IN (SELECT value FROM json_each(?))",
            (wanted,),
        ).fetchall()
        for term, documents in rows:
            assert isinstance(documents, int)
            counts[str(term)] = counts.get(str(term), 0) + documents
    return counts


# -- the ranked statements --------------------------------------------------------------------

_TITLE_COLUMNS = {"type": "'session/title'", "surface": "'log-only'"}


@dataclass(frozen=True, slots=True)
class _Branch:
    live: bool
    title: bool

    @property
    def schema(self) -> str:
        return "temp" if self.live else "main"

    @property
    def fts(self) -> str:
        if self.live:
            return "live_title_fts" if self.title else "live_fts"
        return "title_fts" if self.title else "doc_fts"

    @property
    def rows(self) -> str:
        if self.live:
            return "live_title_rows" if self.title else "live_rows"
        return "title_rows" if self.title else "doc_rows"

    @property
    def sessions(self) -> str:
        return "live_sessions" if self.live else "persisted_sessions"

    def columns(self) -> dict[str, str]:
        columns = dict(LIVE_COLUMNS if self.live else PERSISTED_COLUMNS)
        if self.title:
            columns.update(_TITLE_COLUMNS)
        return columns


def _branches(include_persisted: bool) -> list[_Branch]:
    lives = [True, False] if include_persisted else [True]
    return [_Branch(live, title) for live in lives for title in (False, True)]


def _score(branch: _Branch) -> str:
    score = f"{RANK}({branch.fts}, :plan)"
    return f":title_weight * {score}" if branch.title else score


def _keep(branch: _Branch, filters: CompiledFilters) -> str:
    columns = branch.columns()
    where = " AND ".join(p.format_map(columns) for p in filters.session_predicates)
    return f"SELECT s.key FROM {branch.schema}.{branch.sessions} AS s WHERE {where}"


def _candidates(branch: _Branch, filters: CompiledFilters) -> str:
    """Matching documents of one branch that pass the filters, with their scores."""
    fts = branch.fts
    join = where = ""
    if filters.event_predicates:
        join = f" JOIN {branch.schema}.{branch.rows} AS r ON r.id = {fts}.rowid"
        columns = branch.columns()
        where = "".join(f" AND {p.format_map(columns)}" for p in filters.event_predicates)
    key = f"{fts}.rowid >> {SEQ_BITS}"
    if filters.session_predicates:
        where = f" AND {key} IN keep{int(branch.live)}{where}"
    if not branch.live:
        where = f" AND {key} NOT IN shadowed{where}"
    return (
        f"SELECT {int(branch.live)} AS src, {int(branch.title)} AS title, {fts}.rowid AS rid, "
        f"{key} AS key, {_score(branch)} AS sc FROM {branch.schema}.{fts}{join} "
        f"WHERE {fts} MATCH :q{where}"
    )


def _best(branch: _Branch) -> str:
    """The candidates of one branch that are their session's best document (its best event,
    or its best title when no event matched) for sessions that can reach the page."""
    pick = "t.best_title IS NOT NULL AND t.best_event IS NULL AND c.sc = t.best_title"
    if not branch.title:
        pick = "c.sc = t.best_event"
    kind = "'session/title'" if branch.title else "r.type"
    surface = "'log-only'" if branch.title else "r.surface"
    return (
        f"SELECT t.score AS score, c.src AS src, c.title AS title, c.rid AS rid, "
        f"r.length AS length, r.time AS time, {kind} AS type, {surface} AS surface, "
        f"s.id AS session_id FROM cand AS c JOIN top AS t ON t.src = c.src AND t.key = c.key "
        f"JOIN {branch.schema}.{branch.rows} AS r ON r.id = c.rid "
        f"JOIN {branch.schema}.{branch.sessions} AS s ON s.key = c.key "
        f"WHERE c.src = {int(branch.live)} AND c.title = {int(branch.title)} "
        f"AND t.score >= (SELECT score FROM floor) AND {pick}"
    )


_SHADOWED = (
    "SELECT key FROM main.persisted_sessions WHERE id IN (SELECT id FROM temp.live_sessions)"
)

SESSION_ORDER: Final = "score DESC, length ASC, time DESC, session_id ASC, seq DESC"
"""Sessions by score, then the §7 tie-breaks (length, time, id in binary order, seq)."""
EVENT_ORDER: Final = "score DESC, length ASC, time DESC, seq DESC"


def session_relevance_sql(filters: CompiledFilters, *, include_persisted: bool) -> str:
    """Sessions ranked by relevance with their best document; binds ``:q :plan
    :title_weight :lim :off`` and the filters' parameters.

    1. ``cand``: every matching document (events and titles, stored and live) of the kept
       sessions that passes the event filters, with its score (titles already weighted);
    2. ``top``: per session its best event score, its best title score and their sum (the
       session's score); ``floor``: the score of the last session the page can hold;
    3. for the sessions at or above it, the documents that are their session's best (the
       best event, or the best title when no event matched), the tie-breaks applied per
       session, then the page in :data:`SESSION_ORDER`.
    """
    branches = _branches(include_persisted)
    keeps = "".join(
        f"keep{int(live)}(key) AS ({_keep(_Branch(live, False), filters)}), "
        for live in sorted({branch.live for branch in branches}, reverse=True)
        if filters.session_predicates
    )
    if include_persisted:
        keeps += f"shadowed(key) AS ({_SHADOWED}), "
    candidates = " UNION ALL ".join(_candidates(branch, filters) for branch in branches)
    bests = " UNION ALL ".join(_best(branch) for branch in branches)
    return (
        f"WITH {keeps}cand AS MATERIALIZED ({candidates}), "
        "top AS MATERIALIZED (SELECT src, key, max(CASE WHEN title = 0 THEN sc END) AS "
        "best_event, max(CASE WHEN title = 1 THEN sc END) AS best_title, "
        "coalesce(max(CASE WHEN title = 0 THEN sc END), 0.0) + "
        "coalesce(max(CASE WHEN title = 1 THEN sc END), 0.0) AS score "
        "FROM cand GROUP BY src, key), "
        "floor(score) AS (SELECT coalesce((SELECT score FROM top ORDER BY score DESC "
        "LIMIT 1 OFFSET :lim + :off - 1), 0.0)), "
        f"best AS MATERIALIZED ({bests}), "
        "ranked AS (SELECT *, row_number() OVER (PARTITION BY src, session_id "
        "ORDER BY length ASC, time DESC, rid DESC) AS rn FROM best) "
        f"SELECT src, title, rid, session_id, rid & {SEQ_MASK} AS seq, type, time, surface, "
        f"score FROM ranked WHERE rn = 1 ORDER BY {SESSION_ORDER} LIMIT :lim OFFSET :off"
    )


def event_relevance_sql(filters: CompiledFilters, *, live: bool) -> str:
    """Documents of one session (rowids ``:lo..:hi``: its events and titles) ranked by
    relevance; binds ``:q :plan :title_weight :lo :hi :lim :off`` and the filters'."""
    parts = []
    for branch in (_Branch(live, False), _Branch(live, True)):
        fts = branch.fts
        where = filters.where(branch.columns())
        kind = "'session/title'" if branch.title else "r.type"
        surface = "'log-only'" if branch.title else "r.surface"
        parts.append(
            f"SELECT {int(branch.title)} AS title, r.id AS rid, r.id & {SEQ_MASK} AS seq, "
            f"{kind} AS type, r.time AS time, {surface} AS surface, r.length AS length, "
            f"{_score(branch)} AS score FROM {branch.schema}.{fts} "
            f"JOIN {branch.schema}.{branch.rows} AS r ON r.id = {fts}.rowid "
            f"WHERE {fts} MATCH :q AND {fts}.rowid BETWEEN :lo AND :hi{where}"
        )
    return (
        f"SELECT title, rid, seq, type, time, surface FROM ({' UNION ALL '.join(parts)}) "
        f"ORDER BY {EVENT_ORDER} LIMIT :lim OFFSET :off"
    )


def holds_term_sql(live: bool, title: bool) -> str:
    """Whether document ``:rid`` holds the phrase ``:q`` (one row if it does)."""
    branch = _Branch(live, title)
    fts = branch.fts
    return f"SELECT 1 FROM {branch.schema}.{fts} WHERE {fts} MATCH :q AND {fts}.rowid = :rid"
