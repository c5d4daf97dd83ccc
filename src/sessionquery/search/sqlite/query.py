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
  then higher seq. The span count of a short document is ``length(highlight(..., MARK, ''))``
  minus the stored code-point length (one marker character per span); a long one's comes
  from :mod:`.spans` (:func:`match_count`).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model.textmatch import collapse_whitespace
from sessionquery.search.predicates import (
    EVENT_PREDICATE_LIMIT,
    MAX_BOUND_PARAMETERS,
    SESSION_PREDICATE_LIMIT,
    CompiledFilters,
    FilterDialect,
)
from sessionquery.search.sqlite.snippet import sanitize_text
from sessionquery.search.sqlite.spans import SMALL_DOCUMENT, SPANS_FUNCTION

__all__ = [
    "EVENT_PREDICATE_LIMIT",
    "MATCHES_PER_SESSION",
    "MAX_BOUND_PARAMETERS",
    "MAX_QUERY_BYTES",
    "SEQ_BITS",
    "SESSION_PREDICATE_LIMIT",
    "CompiledFilters",
    "compile_filters",
    "event_search_sql",
    "normalize_query",
    "persisted_matches_sql",
    "persisted_sessions_sql",
    "quote_phrase",
    "session_search_sql",
    "validate_limit",
    "words_expression",
]

MAX_QUERY_BYTES = 1 << 20
"""Queries longer than 1 MiB (UTF-8, after normalisation) are refused."""

SEQ_BITS = 32
"""Document rowid = ``session_key << SEQ_BITS | seq``: one contiguous rowid range per session."""

SEQ_MASK = (1 << SEQ_BITS) - 1

EVENT_ORDER = "mc DESC, length ASC, time DESC, seq DESC"
"""Best event first: most match spans, shortest text, newest, highest seq."""

SESSION_ORDER = "mc DESC, length ASC, time DESC, session_id ASC, seq DESC"
"""Sessions ranked by their best event, ties by id (binary collation)."""

_MATERIALIZED = "MATERIALIZED " if sqlite3.sqlite_version_info >= (3, 35, 0) else ""
# Without it SQLite evaluates each candidate's match count, and so highlight() (which
# re-tokenises the document), twice: once for the window's sort key and once for the row.


def _invalid_query(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_QUERY, message)


def normalize_query(query: object) -> str:
    """Trim and collapse whitespace; refuse non-strings, empty queries, NUL and > 1 MiB.

    Raises:
        SessionQueryError: ``INVALID_QUERY``.
    """
    if not isinstance(query, str):
        raise _invalid_query(f"session-search query must be a string, not {type(query).__name__}")
    if "\x00" in query:
        raise _invalid_query("session-search query must not contain NUL characters")
    normalized = collapse_whitespace(query)  # the original's (JavaScript's) whitespace
    if not normalized:
        raise _invalid_query("session-search query must contain non-whitespace text")
    if len(normalized) > MAX_QUERY_BYTES // 4 and (
        len(normalized.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES
    ):
        raise _invalid_query("session-search query is longer than 1 MiB")
    return normalized


def quote_phrase(normalized: str) -> str:
    """The FTS5 MATCH expression for ``normalized``: exactly one literal phrase."""
    return '"' + sanitize_text(normalized).replace('"', '""') + '"'


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


def validate_limit(limit: object, default: int, maximum: int) -> int:
    """``limit`` or ``default``; must be an integer in ``[1, maximum]``.

    Raises:
        SessionQueryError: ``INVALID_LIMIT``.
    """
    if limit is None:
        return default
    if type(limit) is not int or not 1 <= limit <= maximum:
        raise SessionQueryError(
            ErrorCode.INVALID_LIMIT,
            f"session-search limit must be an integer between 1 and {maximum}, not {limit!r}",
        )
    return limit


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


_PERSISTED_COLUMNS = {
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
_LIVE_COLUMNS = {**_PERSISTED_COLUMNS, "live": "1", "persisted": "s.persisted"}

_BRANCH = (
    "SELECT {src} AS src, r.id AS rid, s.id AS session_id, r.id & {mask} AS seq, "
    "r.type AS type, r.time AS time, r.surface AS surface, r.length AS length, "
    "{mc} AS mc "
    "FROM {schema}.{fts} JOIN {schema}.{rows} AS r ON r.id = {fts}.rowid "
    "JOIN {schema}.{sessions} AS s ON s.key = {fts}.rowid >> {bits} "
    "WHERE {fts} MATCH :q{shadow}{where}"
)

_BRANCH_BY_SESSION = (
    "SELECT {src} AS src, r.id AS rid, s.id AS session_id, r.id & {mask} AS seq, "
    "r.type AS type, r.time AS time, r.surface AS surface, r.length AS length, "
    "{mc} AS mc "
    "FROM {schema}.{sessions} AS s CROSS JOIN {schema}.{fts} "
    "JOIN {schema}.{rows} AS r ON r.id = {fts}.rowid "
    "WHERE {fts} MATCH :q AND {fts}.rowid BETWEEN (s.key << {bits}) "
    "AND ((s.key << {bits}) | {mask}){shadow}{where}"
)
"""The same rows, driven from the sessions that pass the session filters: one FTS5 lookup
restricted to each such session's rowid range instead of every match joined and then
filtered. Chosen when the filters keep few sessions and the query matches many documents
(a workspace-filtered search of a common word)."""


def match_count(fts: str, live: int) -> str:
    """The span-count expression of one candidate row ``r`` of ``fts``.

    Short documents count ``highlight()``'s markers; longer ones call
    :data:`~sessionquery.search.sqlite.spans.SPANS_FUNCTION` (same count, linear time; the
    caller registers it for the search). ``CASE`` evaluates only the branch it takes.
    """
    return (
        f"CASE WHEN r.length <= {SMALL_DOCUMENT} "
        f"THEN length(highlight({fts}, 0, :mark, '')) - r.length "
        f"ELSE {SPANS_FUNCTION}(r.id, {live}) END"
    )


def _branch(live: bool, filters: CompiledFilters, by_session: bool = False) -> str:
    if live:
        schema, names = "temp", ("live_fts", "live_rows", "live_sessions")
        shadow, columns = "", _LIVE_COLUMNS
    else:
        schema, names = "main", ("doc_fts", "doc_rows", "persisted_sessions")
        shadow = " AND s.id NOT IN (SELECT id FROM temp.live_sessions)"
        columns = _PERSISTED_COLUMNS
    fts, rows, sessions = names
    template = _BRANCH_BY_SESSION if by_session else _BRANCH
    return template.format(
        src=int(live),
        mask=SEQ_MASK,
        schema=schema,
        fts=fts,
        rows=rows,
        sessions=sessions,
        bits=SEQ_BITS,
        shadow=shadow,
        where=filters.where(columns),
        mc=match_count(fts, int(live)),
    )


MATCHES_PER_SESSION = 16
"""Driving from sessions pays one FTS5 lookup per session passing the filters; it is chosen
when the query matches more than this many persisted documents per such session."""


def persisted_sessions_sql(filters: CompiledFilters) -> str:
    """How many persisted sessions pass the session filters (binds the filters' values)."""
    where = "".join(f" AND {p.format_map(_PERSISTED_COLUMNS)}" for p in filters.session_predicates)
    return f"SELECT count(*) FROM main.persisted_sessions AS s WHERE 1{where}"


def persisted_matches_sql() -> str:
    """Persisted documents matching ``:q``, counted up to ``:cap``."""
    return "SELECT count(*) FROM (SELECT 1 FROM main.doc_fts WHERE doc_fts MATCH :q LIMIT :cap)"


def session_search_sql(
    filters: CompiledFilters, *, include_persisted: bool, by_session: bool = False
) -> str:
    """Sessions with their best event, ranked; binds ``:q :mark :lim :off`` + filters.

    Event filters apply before grouping, so the best event is the best one that passes them.
    Durable rows of a session that has a live row are shadowed. ``by_session`` drives the
    persisted branch from the filtered sessions (:data:`_BRANCH_BY_SESSION`); the result
    is the same.
    """
    branches = [_branch(True, filters)]
    if include_persisted:
        branches.append(_branch(False, filters, by_session))
    candidates = " UNION ALL ".join(branches)
    return (
        f"WITH cand AS {_MATERIALIZED}({candidates}), ranked AS (SELECT *, row_number() OVER "
        f"(PARTITION BY session_id ORDER BY {EVENT_ORDER}) AS rn FROM cand) "
        "SELECT src, rid, session_id, seq, type, time, surface FROM ranked WHERE rn = 1 "
        f"ORDER BY {SESSION_ORDER} LIMIT :lim OFFSET :off"
    )


def _tables(live: bool) -> tuple[str, str, str]:
    return ("temp", "live_fts", "live_rows") if live else ("main", "doc_fts", "doc_rows")


def event_search_sql(filters: CompiledFilters, *, live: bool) -> str:
    """Events of one session (rowids ``:lo..:hi``), ranked; binds ``:q :mark :lo :hi``..."""
    schema, fts, rows = _tables(live)
    where = filters.where(_PERSISTED_COLUMNS)
    return (
        f"SELECT r.id AS rid, r.id & {SEQ_MASK} AS seq, r.type AS type, r.time AS time, "
        "r.surface AS surface, r.length AS length, "
        f"{match_count(fts, int(live))} AS mc "
        f"FROM {schema}.{fts} JOIN {schema}.{rows} AS r ON r.id = {fts}.rowid "
        f"WHERE {fts} MATCH :q AND {fts}.rowid BETWEEN :lo AND :hi{where} "
        f"ORDER BY {EVENT_ORDER} LIMIT :lim OFFSET :off"
    )


def text_sql(live: bool) -> str:
    """One document's stored text and length (binds ``:rid``)."""
    _schema, _fts, rows = _tables(live)
    return f"SELECT text, length FROM {'temp' if live else 'main'}.{rows} WHERE id = :rid"


def highlight_sql(live: bool) -> str:
    """One document's text with ``:mark`` before each match span (binds ``:q :mark :rid``)."""
    schema, fts, _rows = _tables(live)
    return (
        f"SELECT highlight({fts}, 0, :mark, '') FROM {schema}.{fts} "
        f"WHERE {fts} MATCH :q AND {fts}.rowid = :rid"
    )
