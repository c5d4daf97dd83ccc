"""Request normalisation and SQL for one search: the phrase, the filters and the ranking.

Invariants:

* :func:`quote_phrase` is the only place user text becomes FTS5 syntax: the whole query is one
  double-quoted phrase with inner quotes doubled, so no query can be parsed as an operator
  (``OR``, ``NEAR(``, ``*``, ``-x``, ``a:b``, ``((``) or raise an FTS5 syntax error. A query
  with no indexable token becomes an empty phrase, which matches nothing.
* Filters compile to predicate templates over named bound parameters; no value is ever
  interpolated into SQL. The predicate and parameter budgets are checked before any
  statement is prepared.
* Ranking (:data:`EVENT_ORDER`, :data:`SESSION_ORDER`): more highlighted match spans first,
  then shorter documents (code points), then newer events, then session id (binary order),
  then higher seq. The span count comes from FTS5's instance data (:func:`match_count`), never
  from the document's text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import apsw

from sessionquery.search.predicates import (
    EVENT_PREDICATE_LIMIT,
    MAX_BOUND_PARAMETERS,
    SESSION_PREDICATE_LIMIT,
    CompiledFilters,
    FilterDialect,
)
from sessionquery.search.snippet import sanitize_text
from sessionquery.search.sqlite import db

__all__ = [
    "EVENT_PREDICATE_LIMIT",
    "LIVE_COLUMNS",
    "MAX_BOUND_PARAMETERS",
    "PERSISTED_COLUMNS",
    "SEQ_BITS",
    "SESSION_PREDICATE_LIMIT",
    "CompiledFilters",
    "compile_filters",
    "event_search_sql",
    "query_tokens",
    "quote_phrase",
    "session_search_sql",
    "words_expression",
]

SEQ_BITS = 32
"""Document rowid = ``session_key << SEQ_BITS | seq``: one contiguous rowid range per session."""

SEQ_MASK = (1 << SEQ_BITS) - 1

EVENT_ORDER = "mc DESC, length ASC, time DESC, seq DESC"
"""Best event first: most match spans, shortest text, newest, highest seq."""

SESSION_ORDER = "mc DESC, length ASC, time DESC, session_id ASC, seq DESC"
"""Sessions ranked by their best event, ties by id (binary collation)."""

_MATERIALIZED = "MATERIALIZED "
# Without it SQLite may evaluate each candidate's match count twice: once for a sort key and
# once for the row.


def quote_phrase(normalized: str) -> str:
    """The FTS5 MATCH expression for ``normalized``: exactly one literal phrase."""
    return '"' + sanitize_text(normalized).replace('"', '""') + '"'


def query_tokens(conn: db.Connection, normalized: str) -> list[str]:
    """The tokens of ``normalized`` for the index's ``unicode61``, in query order (repeats
    kept): FTS5's own tokenizer, called as for a query, on the text :func:`quote_phrase`
    puts between the quotes, so these are the tokens the ``MATCH`` phrase looks up."""
    tokenizer = conn.fts5_tokenizer("unicode61", [])
    text = sanitize_text(normalized).encode("utf-8")
    found = tokenizer(
        text, apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False, include_colocated=False
    )
    return [str(token) for token in found]


def words_expression(tokens: Sequence[str]) -> str:
    """The FTS5 MATCH expression for ``match="words"``: every distinct token, any order.

    ``tokens`` come from the index's own tokenizer (so they hold letters and digits only);
    each is one quoted single-token phrase and they are joined with ``AND``. Without any
    token the expression is the empty phrase, which matches nothing (as in phrase mode).
    """
    distinct = list(dict.fromkeys(tokens))
    if not distinct:
        return '""'
    return " AND ".join('"' + token.replace('"', '""') + '"' for token in distinct)


def _sql_number(value: float) -> float:
    """``value`` as SQLite can bind it: integers are 64-bit there, so an integer bound beyond
    that range is bound as the REAL it equals (infinite when too large even for a float); it
    then compares with every stored integer exactly as the integer would."""
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


SQLITE_FILTERS = FilterDialect(
    prefix="p",
    placeholder=":{}",
    never="0",
    number=_sql_number,
    availability=lambda flag: f"{{{flag}}} = 1",
)
"""Filters as SQLite predicate templates (``:p0`` parameters, ``0``/``1`` truth values)."""

compile_filters = SQLITE_FILTERS.compile
"""Compile validated metadata filters (:meth:`.predicates.FilterDialect.compile`)."""


PERSISTED_COLUMNS = {
    "id": "s.id",
    "cwd": "s.cwd",
    "parent": "s.parent_session",
    "created_at": "s.created_at",
    "live": "0",
    "persisted": "1",
    "seq": f"(r.id & {SEQ_MASK})",
    "time": "r.time",
    "type": "r.type",
    "surface": "r.surface",
}
"""Filter columns of a stored session's documents (``s``: its session row, ``r``: its row)."""
LIVE_COLUMNS = {**PERSISTED_COLUMNS, "live": "1", "persisted": "s.persisted"}
"""Filter columns of a live session's documents."""


def match_count(fts: str) -> str:
    """The span-count expression of one candidate row of ``fts`` (binds ``:overlap``): FTS5's
    own instance data through :data:`.db.MATCH_SPANS`, linear in the row's matches."""
    return f"{db.MATCH_SPANS}({fts}, :overlap)"


_SOURCES = {
    False: ("main", "doc_fts", "doc_rows", "persisted_sessions", PERSISTED_COLUMNS),
    True: ("temp", "live_fts", "live_rows", "live_sessions", LIVE_COLUMNS),
}
"""Per branch (``live``): schema, FTS table, rows, sessions and the filters' columns."""


def _keep(live: bool, filters: CompiledFilters) -> str:
    """Keys of the branch's sessions that pass the session filters."""
    schema, _fts, _rows, sessions, columns = _SOURCES[live]
    where = " AND ".join(p.format_map(columns) for p in filters.session_predicates)
    return f"SELECT s.key FROM {schema}.{sessions} AS s WHERE {where}"


_SHADOWED = (
    "SELECT key FROM main.persisted_sessions WHERE id IN (SELECT id FROM temp.live_sessions)"
)
"""Keys of the persisted sessions that are live: their live rows shadow their durable ones."""


def _candidates(live: bool, filters: CompiledFilters) -> str:
    """Every matching document of the kept sessions that passes the event filters, with its
    span count. Rows are read only when an event filter needs them."""
    schema, fts, rows, _sessions, columns = _SOURCES[live]
    join = where = ""
    if filters.event_predicates:
        join = f" JOIN {schema}.{rows} AS r ON r.id = {fts}.rowid"
        where = "".join(f" AND {p.format_map(columns)}" for p in filters.event_predicates)
    key = f"{fts}.rowid >> {SEQ_BITS}"
    if filters.session_predicates:
        where = f" AND {key} IN keep{int(live)}{where}"
    if not live:
        where = f" AND {key} NOT IN shadowed{where}"
    return (
        f"SELECT {int(live)} AS src, {fts}.rowid AS rid, {key} AS key, "
        f"{match_count(fts)} AS mc FROM {schema}.{fts}{join} WHERE {fts} MATCH :q{where}"
    )


def _best(live: bool) -> str:
    """The best candidates of the sessions that can reach the page: those whose highest
    count is at least the page's lowest (``floor``), each candidate that reaches it with
    its length and time (the tie-breaks)."""
    schema, _fts, rows, sessions, _columns = _SOURCES[live]
    return (
        "SELECT c.src AS src, c.rid AS rid, c.mc AS mc, r.length AS length, r.time AS time, "
        "r.type AS type, r.surface AS surface, s.id AS session_id FROM cand AS c "
        "JOIN top AS t ON t.src = c.src AND t.key = c.key "
        f"JOIN {schema}.{rows} AS r ON r.id = c.rid JOIN {schema}.{sessions} AS s "
        f"ON s.key = c.key WHERE c.src = {int(live)} AND c.mc >= (SELECT mc FROM floor) "
        "AND c.mc = t.mc"
    )


def session_search_sql(filters: CompiledFilters, *, include_persisted: bool) -> str:
    """Sessions with their best event, ranked; binds ``:q :overlap :lim :off`` + filters.

    Event filters apply to every candidate, so the best event is the best one that passes
    them. The order of work keeps the cost near one pass over the matching rowids:

    1. ``cand``: the matching documents of the sessions that pass the session filters, with
       their span counts (integers from FTS5's instance data; no text is read);
    2. ``top``: each session's highest count; ``floor``: the count of the last session the
       page can hold (``:lim + :off``-th highest), so no session below it can be on the page;
    3. only for the sessions at or above it, the candidates that reach their session's
       count are joined with their rows, and the session's best among them is the shortest,
       newest, highest ``seq`` (:data:`EVENT_ORDER`); the page is then ordered by
       :data:`SESSION_ORDER`.

    Every FTS5 document has its row (both are written together), so reading rows for the
    few best candidates only selects the same sessions and events as reading them all.
    """
    live = [True, False] if include_persisted else [True]
    keeps = "".join(
        f"keep{int(branch)}(key) AS ({_keep(branch, filters)}), "
        for branch in live
        if filters.session_predicates
    )
    if include_persisted:
        keeps += f"shadowed(key) AS ({_SHADOWED}), "
    candidates = " UNION ALL ".join(_candidates(branch, filters) for branch in live)
    bests = " UNION ALL ".join(_best(branch) for branch in live)
    return (
        f"WITH {keeps}cand AS {_MATERIALIZED}({candidates}), "
        f"top AS {_MATERIALIZED}(SELECT src, key, max(mc) AS mc FROM cand GROUP BY src, key), "
        "floor(mc) AS (SELECT coalesce((SELECT mc FROM top ORDER BY mc DESC "
        "LIMIT 1 OFFSET :lim + :off - 1), 0)), "
        f"best AS {_MATERIALIZED}({bests}), "
        "ranked AS (SELECT *, row_number() OVER (PARTITION BY src, session_id "
        "ORDER BY length ASC, time DESC, rid DESC) AS rn FROM best) "
        f"SELECT src, rid, session_id, rid & {SEQ_MASK} AS seq, type, time, surface "
        f"FROM ranked WHERE rn = 1 ORDER BY {SESSION_ORDER} LIMIT :lim OFFSET :off"
    )


def _tables(live: bool, title: bool = False) -> tuple[str, str, str]:
    schema, fts, rows, _sessions, _columns = _SOURCES[live]
    if title:
        prefix = "live_" if live else ""
        return schema, f"{prefix}title_fts", f"{prefix}title_rows"
    return schema, fts, rows


def event_search_sql(filters: CompiledFilters, *, live: bool) -> str:
    """Events of one session (rowids ``:lo..:hi``), ranked; binds ``:q :overlap :lo :hi``..."""
    schema, fts, rows = _tables(live)
    where = filters.where(PERSISTED_COLUMNS)
    return (
        f"SELECT r.id AS rid, r.id & {SEQ_MASK} AS seq, r.type AS type, r.time AS time, "
        "r.surface AS surface, r.length AS length, "
        f"{match_count(fts)} AS mc "
        f"FROM {schema}.{fts} JOIN {schema}.{rows} AS r ON r.id = {fts}.rowid "
        f"WHERE {fts} MATCH :q AND {fts}.rowid BETWEEN :lo AND :hi{where} "
        f"ORDER BY {EVENT_ORDER} LIMIT :lim OFFSET :off"
    )


def text_sql(live: bool, title: bool = False) -> str:
    """One document's (``title``: one title's) stored text and length (binds ``:rid``)."""
    schema, _fts, rows = _tables(live, title)
    return f"SELECT text, length FROM {schema}.{rows} WHERE id = :rid"


def highlight_sql(live: bool, title: bool = False) -> str:
    """One document's text with ``:mark`` before each match span (binds ``:q :mark :rid``)."""
    schema, fts, _rows = _tables(live, title)
    return (
        f"SELECT highlight({fts}, 0, :mark, '') FROM {schema}.{fts} "
        f"WHERE {fts} MATCH :q AND {fts}.rowid = :rid"
    )
