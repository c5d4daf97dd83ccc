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

import heapq
import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final

import apsw

from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.relevance import PHRASE_FACTOR, CorpusStats, RelevancePlan
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.query import (
    LIVE_COLUMNS,
    PERSISTED_COLUMNS,
    SEQ_BITS,
    SEQ_MASK,
)

__all__ = [
    "RANK",
    "collect_sessions",
    "corpus_stats",
    "document_counts",
    "event_relevance_sql",
    "holds_term_sql",
    "in_scope",
    "in_session",
    "install",
    "installed_plan",
    "or_expression",
    "rank",
    "session_page_sql",
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


@dataclass(slots=True)
class _Compiled:
    """A plan as :func:`rank` reads it, with the pruning state of one session search.

    ``phrases`` maps each scored phrase of the MATCH expression to its term's weight.
    ``floor`` is a score no session on the page can be below (0 until known); ``bonus`` the
    best title score of each session (``(src, key)``); ``best`` each kept session's best
    score so far; ``page`` how many sessions the page needs (0: no pruning)."""

    c1: float
    c2: float
    c3: float
    phrases: tuple[tuple[int, float], ...]
    coverage: tuple[float, ...]
    phrase: int = -1
    """The phrase index of the whole question (-1: no phrase boost)."""
    page: int = 0
    floor: float = 0.0
    bonus: dict[tuple[int, int], float] = field(default_factory=dict)
    best: dict[tuple[int, int], float] = field(default_factory=dict)
    since: int = 0
    plan_id: int = 0


_PLANS: dict[int, _Compiled] = {}
_PLAN_IDS = itertools.count(1)
_PLANS_LOCK = threading.Lock()
_REFRESH_EVERY: Final = 256
"""Kept candidates between two recomputations of the running floor."""


@contextmanager
def installed_plan(plan: RelevancePlan, *, page: int = 0) -> Iterator[_Compiled]:
    """Make ``plan`` available to :data:`RANK` under ``compiled.plan_id`` for one statement
    group; phrase ``i`` of the MATCH expression is term ``i`` until :func:`scoring` says
    otherwise. ``page`` > 0 turns on pruning for a session search of that many sessions."""
    c1, c2, c3 = plan.constants
    compiled = _Compiled(
        c1,
        c2,
        c3,
        tuple(enumerate(plan.weights)),
        plan.coverage,
        len(plan.terms) if plan.phrase else -1,
        page=page,
    )
    with _PLANS_LOCK:
        plan_id = next(_PLAN_IDS)
        _PLANS[plan_id] = compiled
    compiled.plan_id = plan_id
    try:
        yield compiled
    finally:
        with _PLANS_LOCK:
            del _PLANS[plan_id]


def install(conn: db.Connection) -> None:
    """Register :data:`RANK` on ``conn`` (for every FTS5 table of the connection)."""
    conn.register_fts5_function(RANK, rank)


def rank(api: apsw.FTS5ExtensionApi, *args: apsw.SQLiteValue) -> float | None:
    """The FTS5 auxiliary function :data:`RANK`: ``sq_rank(fts, plan_id[, src, weight])``.

    With ``src`` (a session search with pruning) the row's score times ``weight`` is
    returned only when its session could still reach the page (its score plus the session's
    best title is not below the running floor); ``NULL`` otherwise. (Called once per
    candidate row: written for speed.)"""
    plan = _PLANS[args[0]]  # type: ignore[index]
    c1 = plan.c1
    norm = plan.c2 + plan.c3 * api.column_size(0)
    locations = api.phrase_locations
    score = 0.0
    held = 0
    for index, weight in plan.phrases:
        found = locations(index)[0]
        if found:
            held += 1
            tf = len(found)
            score += weight * (tf * c1) / (tf + norm)
    if plan.phrase >= 0 and locations(plan.phrase)[0]:
        score = score * PHRASE_FACTOR
    if held:
        score = score * plan.coverage[held - 1]
    if len(args) < 3:
        return score
    factor: float = args[2]  # type: ignore[assignment]
    if factor != 1.0:
        score = factor * score
    if not plan.page:
        return score
    session = (args[1], api.rowid >> SEQ_BITS)
    total = score + plan.bonus.get(session, 0.0)  # type: ignore[arg-type]
    if total < plan.floor:
        return None
    best = plan.best
    if total > best.get(session, -1.0):  # type: ignore[arg-type]
        best[session] = total  # type: ignore[index]
    plan.since += 1
    if plan.since >= _REFRESH_EVERY and len(best) >= plan.page:
        plan.since = 0
        plan.floor = max(plan.floor, heapq.nlargest(plan.page, best.values())[-1])
    return score


def _quote(tokens: Sequence[str]) -> str:
    return '"' + " ".join(tokens).replace('"', '""') + '"'


def or_expression(plan: RelevancePlan) -> str:
    """The MATCH expression of a plan: each term a quoted phrase, in plan order, ``OR``-ed,
    then the whole question as one phrase when it is boosted (phrase index ``len(terms)``)."""
    return " OR ".join(_scored_phrases(plan))


def _scored_phrases(plan: RelevancePlan) -> list[str]:
    phrases = [_quote([term]) for term in plan.terms]
    if plan.phrase:
        phrases.append(_quote(plan.phrase))
    return phrases


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
    for (schema, fts), vocabulary in zip(_FTS_TABLES, _VOCABULARIES, strict=True):
        if not _totals(conn, schema, fts)[0]:
            continue  # an empty index (no live sessions, no titles) holds no word
        rows = conn.execute(
            f"SELECT term, doc FROM temp.{vocabulary} "
            "WHERE term IN (SELECT value FROM json_each(?))",
            (wanted,),
        ).fetchall()
        for term, documents in rows:
            assert isinstance(documents, int)
            counts[str(term)] = counts.get(str(term), 0) + documents
    return counts


def in_scope(
    conn: db.Connection,
    filters: CompiledFilters,
    word: str,
    *,
    include_persisted: bool,
) -> bool:
    """Whether a document (event or title, stored or live) of a session the session filters
    keep holds ``word``."""
    for live in [True, False] if include_persisted else [True]:
        for title in (False, True):
            branch = _Branch(live, title)
            fts = branch.fts
            key = f"{fts}.rowid >> {SEQ_BITS}"
            where = f" AND {key} IN keep" if filters.session_predicates else ""
            keeps = (
                f"WITH keep(key) AS ({_keep(live, filters)}) " if filters.session_predicates else ""
            )
            if not live:
                where += f" AND {key} NOT IN ({_SHADOWED})"
            found = conn.execute(
                f"{keeps}SELECT 1 FROM {branch.schema}.{fts} WHERE {fts} MATCH :q{where} LIMIT 1",
                {**filters.params, "q": _quote([word])},
            ).fetchone()
            if found is not None:
                return True
    return False


def in_session(conn: db.Connection, word: str, *, live: bool, key: int) -> bool:
    """Whether a document (event or title) of the session with this key holds ``word``."""
    low, high = key << SEQ_BITS, (key << SEQ_BITS) | SEQ_MASK
    for title in (False, True):
        branch = _Branch(live, title)
        fts = branch.fts
        found = conn.execute(
            f"SELECT 1 FROM {branch.schema}.{fts} WHERE {fts} MATCH :q "
            f"AND {fts}.rowid BETWEEN :lo AND :hi LIMIT 1",
            {"q": _quote([word]), "lo": low, "hi": high},
        ).fetchone()
        if found is not None:
            return True
    return False


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


def _keep(live: bool, filters: CompiledFilters) -> str:
    columns = _Branch(live, False).columns()
    where = " AND ".join(p.format_map(columns) for p in filters.session_predicates)
    schema, sessions = ("temp", "live_sessions") if live else ("main", "persisted_sessions")
    return f"SELECT s.key FROM {schema}.{sessions} AS s WHERE {where}"


_SHADOWED = (
    "SELECT key FROM main.persisted_sessions WHERE id IN (SELECT id FROM temp.live_sessions)"
)


def _insert_sql(
    branch: _Branch, filters: CompiledFilters, *, pruned: bool, keys: bool = False
) -> str:
    """Insert the matching documents of one branch (that pass the filters) with their scores
    into ``temp.rel_cand``; binds ``:q :plan :weight`` and the filters' (``keys``: also
    ``:keys``, a JSON list of the only session keys to search). With ``pruned``, a document
    whose session cannot reach the page gets no row."""
    fts = branch.fts
    columns = branch.columns()
    join = where = ""
    if filters.event_predicates:
        join = f" JOIN {branch.schema}.{branch.rows} AS r ON r.id = {fts}.rowid"
        where = "".join(f" AND {p.format_map(columns)}" for p in filters.event_predicates)
    key = f"{fts}.rowid >> {SEQ_BITS}"
    keeps = ""
    if filters.session_predicates:
        keeps = f"keep(key) AS ({_keep(branch.live, filters)}), "
        where = f" AND {key} IN keep{where}"
    if not branch.live:
        keeps += f"shadowed(key) AS ({_SHADOWED}), "
        where = f" AND {key} NOT IN shadowed{where}"
    if keys:
        where = f" AND {key} IN (SELECT value FROM json_each(:keys)){where}"
    src = int(branch.live)
    score = f"{RANK}({fts}, :plan, {src}, :weight)" if pruned else f":weight * {RANK}({fts}, :plan)"
    return (
        f"WITH {keeps}c AS MATERIALIZED (SELECT {fts}.rowid AS rid, {key} AS key, "
        f"{score} AS sc FROM {branch.schema}.{fts}{join} WHERE {fts} MATCH :q{where}) "
        f"INSERT INTO temp.rel_cand (src, title, rid, key, sc) "
        f"SELECT {src}, {int(branch.title)}, rid, key, sc FROM c WHERE sc IS NOT NULL"
    )


def _step_expression(
    plan: RelevancePlan, first: int, last: int | None = None
) -> tuple[str, tuple[int, ...]]:
    """The MATCH expression of the documents holding one of terms ``first..last - 1`` (just
    ``first`` by default) and none of the terms before ``first``, and the phrase index of
    each term in it (for scoring)."""
    quoted = [_quote([term]) for term in plan.terms]
    chosen = quoted[first : first + 1 if last is None else last]
    left = " OR ".join(chosen)
    if len(chosen) > 1:
        left = f"({left})"
    if first:
        left = f"({left} NOT ({' OR '.join(quoted[:first])}))"
    before = len(chosen) + first  # phrases of the left side come first
    right = " OR ".join(_scored_phrases(plan))
    return f"{left} AND ({right})", tuple(range(before, before + len(quoted)))


_LIFTED_SESSIONS: Final = 2000
"""Sessions whose titles alone could lift them to the page, searched for the remaining terms
one by one rather than with every document of those terms (beyond this, all documents)."""


_FLOOR_SQL: Final = (
    "SELECT score FROM (SELECT coalesce(max(CASE WHEN title = 0 THEN sc END), 0.0) + "
    "coalesce(max(CASE WHEN title = 1 THEN sc END), 0.0) AS score FROM temp.rel_cand "
    "GROUP BY src, key) ORDER BY score DESC LIMIT 1 OFFSET ?"
)


def _run_step(  # noqa: PLR0917
    conn: db.Connection,
    compiled: _Compiled,
    plan: RelevancePlan,
    insert: str,
    params: dict[str, object],
    first: int,
    last: int | None = None,
) -> None:
    expression, indexes = _step_expression(plan, first, last)
    compiled.phrases = tuple(zip(indexes, plan.weights, strict=True))
    if plan.phrase:
        compiled.phrase = indexes[-1] + 1
    conn.execute(insert, {**params, "q": expression})


def _floor(conn: db.Connection, page: int) -> float:
    row = conn.execute(_FLOOR_SQL, (page - 1,)).fetchone()
    return 0.0 if row is None else float(row[0])


def collect_sessions(
    conn: db.Connection,
    plan: RelevancePlan,
    filters: CompiledFilters,
    *,
    include_persisted: bool,
    page: int,
    title_weight: float,
) -> None:
    """Fill ``temp.rel_cand`` with every document that can decide a page of ``page``
    sessions: all matching titles, all matching live documents, and the stored documents
    step by step (MaxScore): step ``i`` adds the documents holding the ``i``-th most
    selective term and none before it, and the steps stop once the terms left could not lift
    any session to the page (their upper bounds plus the best title are below the page's
    floor). Within a step, :func:`rank` drops documents whose session is already below it.
    Exact: every session of the page and its best document are found."""
    conn.execute("DELETE FROM temp.rel_cand")
    with installed_plan(plan, page=page) as compiled:
        plan_id = compiled.plan_id
        lives = [True, False] if include_persisted else [True]
        base = {**filters.params, "plan": plan_id, "q": or_expression(plan)}
        for live in lives:
            sql = _insert_sql(_Branch(live, True), filters, pruned=False)
            conn.execute(sql, {**base, "weight": title_weight})
        for src, key, bonus in conn.execute(
            "SELECT src, key, max(sc) FROM temp.rel_cand GROUP BY src, key"
        ):
            compiled.bonus[(int(src), int(key))] = float(bonus)
        compiled.best.update(compiled.bonus)
        if len(compiled.best) >= page:
            compiled.floor = heapq.nlargest(page, compiled.best.values())[-1]
        top_bonus = max(compiled.bonus.values(), default=0.0)
        conn.execute(
            _insert_sql(_Branch(True, False), filters, pruned=True), {**base, "weight": 1.0}
        )
        if not include_persisted:
            return
        insert = _insert_sql(_Branch(False, False), filters, pruned=True)
        count = len(plan.terms)
        for step in range(count):
            _run_step(conn, compiled, plan, insert, {**base, "weight": 1.0}, step)
            compiled.floor = max(compiled.floor, _floor(conn, page))
            rest = plan.bound_after(step)
            if rest + top_bonus < compiled.floor:
                break
            if step + 1 < count and rest < compiled.floor:
                # Only sessions with a strong title can still be lifted onto the page by the
                # terms left: search those terms in those sessions only.
                lifted = [
                    key
                    for (src, key), bonus in compiled.bonus.items()
                    if src == 0 and rest + bonus >= compiled.floor
                ]
                if len(lifted) <= _LIFTED_SESSIONS:
                    restricted = _insert_sql(_Branch(False, False), filters, pruned=True, keys=True)
                    params = {**base, "weight": 1.0, "keys": json.dumps(lifted)}
                    _run_step(conn, compiled, plan, restricted, params, step + 1, count)
                    break


def _page_best(live: bool, title: bool) -> str:
    branch = _Branch(live, title)
    pick = "t.best_title IS NOT NULL AND t.best_event IS NULL AND c.sc = t.best_title"
    if not title:
        pick = "c.sc = t.best_event"
    kind = "'session/title'" if title else "r.type"
    surface = "'log-only'" if title else "r.surface"
    return (
        f"SELECT t.score AS score, c.src AS src, c.title AS title, c.rid AS rid, "
        f"r.length AS length, r.time AS time, {kind} AS type, {surface} AS surface, "
        f"s.id AS session_id FROM temp.rel_cand AS c "
        f"JOIN top AS t ON t.src = c.src AND t.key = c.key "
        f"JOIN {branch.schema}.{branch.rows} AS r ON r.id = c.rid "
        f"JOIN {branch.schema}.{branch.sessions} AS s ON s.key = c.key "
        f"WHERE c.src = {int(live)} AND c.title = {int(title)} "
        f"AND t.score >= (SELECT score FROM floor) AND {pick}"
    )


SESSION_ORDER: Final = "score DESC, length ASC, time DESC, session_id ASC, seq DESC"
"""Sessions by score, then the §7 tie-breaks (length, time, id in binary order, seq)."""
EVENT_ORDER: Final = "score DESC, length ASC, time DESC, seq DESC"


def session_page_sql(*, include_persisted: bool) -> str:
    """The page of sessions over ``temp.rel_cand`` (:func:`collect_sessions`); binds
    ``:lim :off``.

    ``top``: per session its best event score, its best title score and their sum (the
    session's score); ``floor``: the score of the last session the page can hold; then, for
    the sessions at or above it, the documents that are their session's best (the best event,
    or the best title when no event matched), the tie-breaks applied per session, and the
    page in :data:`SESSION_ORDER`.
    """
    lives = [True, False] if include_persisted else [True]
    bests = " UNION ALL ".join(_page_best(live, title) for live in lives for title in (False, True))
    return (
        "WITH top AS MATERIALIZED (SELECT src, key, max(CASE WHEN title = 0 THEN sc END) AS "
        "best_event, max(CASE WHEN title = 1 THEN sc END) AS best_title, "
        "coalesce(max(CASE WHEN title = 0 THEN sc END), 0.0) + "
        "coalesce(max(CASE WHEN title = 1 THEN sc END), 0.0) AS score "
        "FROM temp.rel_cand GROUP BY src, key), "
        "floor(score) AS (SELECT coalesce((SELECT score FROM top ORDER BY score DESC "
        "LIMIT 1 OFFSET :lim + :off - 1), 0.0)), "
        f"best AS MATERIALIZED ({bests}), "
        "ranked AS (SELECT *, row_number() OVER (PARTITION BY src, session_id "
        "ORDER BY length ASC, time DESC, rid DESC) AS rn FROM best) "
        f"SELECT src, title, rid, session_id, rid & {SEQ_MASK} AS seq, type, time, surface, "
        f"score FROM ranked WHERE rn = 1 ORDER BY {SESSION_ORDER} LIMIT :lim OFFSET :off"
    )


def _score(branch: _Branch) -> str:
    score = f"{RANK}({branch.fts}, :plan)"
    return f":title_weight * {score}" if branch.title else score


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
