"""SQL of one PostgreSQL search: candidates, match-span counts, filters and ranking.

Invariants:

* No value is ever interpolated: every value (patterns, lexemes, filter values, live ids) is
  a named bound parameter; only fixed fragments and generated parameter names are joined.
* The predicate and parameter budgets are the SQLite backend's (SPEC §7), checked before
  any statement is prepared, so both backends accept and refuse the same requests.
* Candidates: the position-less tsvector contains every lexeme of the query (or the document
  is oversized and has none), **and** the normal form contains every phrase pattern. Match
  spans are counted on the normal form; the order is SPEC §7's.
* Candidates are read from ``sqi_docs`` joined with ``sqi_sessions`` only when a session
  filter needs the session's columns (:func:`documents_of`): every document has its session
  row (a foreign key), and in a team database both rows carry the same workspace and machine,
  so row-level security keeps a document exactly when it keeps its session.
"""

from __future__ import annotations

from decimal import Decimal

from sessionquery.search.postgres.tokens import MatchPlan, lexeme
from sessionquery.search.predicates import (
    EVENT_PREDICATE_LIMIT,
    SESSION_PREDICATE_LIMIT,
    CompiledFilters,
    FilterDialect,
)

__all__ = [
    "COLUMNS",
    "EVENT_PREDICATE_LIMIT",
    "SESSION_PREDICATE_LIMIT",
    "CompiledFilters",
    "compile_filters",
    "documents_of",
    "event_search_sql",
    "holds",
    "match_params",
    "oversized_or",
    "session_search_sql",
]

EVENT_ORDER = "mc DESC, length ASC, time DESC, seq DESC"
SESSION_ORDER = "mc DESC, length ASC, time DESC, session_id ASC, seq DESC"
"""SPEC §7 ranking; ``session_id`` has the binary ``"C"`` collation (code-point order)."""

POSTGRES_FILTERS = FilterDialect(
    prefix="f",
    placeholder="%({})s",
    never="false",
    # numeric bounds compare exactly with bigint columns, whatever their size
    number=Decimal,
    # rows of the database are persisted and not live (live sessions are the overlay's)
    availability=lambda flag: "true" if flag == "persisted" else "false",
)
"""Filters as PostgreSQL predicates (``%(f0)s`` parameters) over ``s`` and ``d``."""

compile_filters = POSTGRES_FILTERS.compile
"""Compile validated filters with the SQLite backend's budgets
(:meth:`..predicates.FilterDialect.compile`)."""

COLUMNS = {
    "id": "s.id",
    "cwd": "s.cwd",
    "parent": "s.parent_session",
    "created_at": "s.created_at",
    "seq": "d.seq",
    "time": "d.time",
    "type": "d.type",
    "surface": "d.surface",
}
"""The index's column of each filter field (``s`` sessions, ``d`` documents)."""


def documents_of(filters: CompiledFilters) -> str:
    """The ``FROM`` of a candidate scan: ``sqi_docs AS d``, joined with ``sqi_sessions AS s``
    when a session filter reads ``s``."""
    if filters.session_predicates:
        return "sqi_docs AS d JOIN sqi_sessions AS s ON s.id = d.session_id"
    return "sqi_docs AS d"


def match_params(plan: MatchPlan) -> dict[str, object]:
    """The bound values of the match predicates and the span count."""
    params: dict[str, object] = {
        "tsq": " & ".join(f"'{lexeme}'" for lexeme in plan.lexemes),
        "patterns": plan.patterns,
    }
    for i, pattern in enumerate(plan.patterns):
        params[f"m{i}"] = pattern
    return params


def holds(text: str, pattern: str) -> str:
    """Whether the SQL expression ``text`` holds ``pattern`` (a bound, non-empty one).

    Compared in bytes: what a ``replace`` of the pattern leaves is shorter. ``strpos`` would
    count the characters before the match as well, one multibyte step each: twice the cost
    for a candidate holding a phrase (0.9 against 0.4 us a row of 500 bytes). ``replace``
    reads the whole text, though, where ``strpos`` stops at the first match: an oversized
    document (megabytes, no tsvector) is looked through with ``strpos``.
    """
    return f"(octet_length(replace({text}, {pattern}, '')) < octet_length({text}))"


def oversized_or(indexed: str, contains: str) -> str:
    """The documents matching ``indexed`` (a condition on the tsvector) or, for an oversized
    document (no tsvector), passing ``contains`` (a condition on its text).

    Written as the index scans' own condition (the tsvector index, and the oversized
    documents' partial index) and a second one that only looks whether there is a tsvector:
    as one ``OR`` of the two cases, the whole condition was kept as a filter, and every
    candidate's tsvector (kilobytes out of compressed storage at real size) was read and
    matched again after the index had found it.
    """
    return f"(({indexed} OR d.tsv IS NULL) AND (d.tsv IS NOT NULL OR ({contains})))"


def _match(plan: MatchPlan) -> tuple[str, str]:
    """``(predicate, span count expression)`` over ``d``."""
    names = [f"%(m{i})s" for i in range(len(plan.phrases))]
    contains = " AND ".join(holds("d.norm", name) for name in names)
    if all(len(p) == 1 and lexeme(p[0]) == p[0] for p in plan.phrases):
        # whole single tokens: the tsvector holds exactly the document's tokens, so a match
        # there needs no second look at the text; an oversized document (long: strpos stops
        # at the first match) is looked through
        first = " AND ".join(f"strpos(d.norm, {name}) > 0" for name in names)
        predicate = oversized_or("d.tsv @@ %(tsq)s::tsquery", first)
    else:
        predicate = f"(d.tsv @@ %(tsq)s::tsquery OR d.tsv IS NULL) AND {contains}"
    predicate += " AND NOT d.title"  # titles are ranked by relevance search only
    if plan.simple:
        # occurrences = bytes a replace removes / the pattern's bytes (byte lengths need no
        # scan of the text, character lengths do)
        count = " + ".join(
            f"(octet_length(d.norm) - octet_length(replace(d.norm, {name}, ''))) / "
            f"octet_length({name})"
            for name in names
        )
    else:
        count = "sqi_span_count(d.norm, %(patterns)s::text[])"
    return predicate, f"({count})"


def session_search_sql(plan: MatchPlan, filters: CompiledFilters, *, deepest: bool = False) -> str:
    """Persisted sessions (not live) with their best event, ranked.

    Binds ``tsq``, ``m<i>``/``patterns``, ``live`` (ids to leave out), ``lim``, ``off`` and
    the filters' parameters. With ``deepest`` (:mod:`.walk`), the documents of the highest
    ``maxtf`` are looked at in that order, at most ``scan`` of them, and the first ``depth``
    candidates among them are read (binds ``depth``, ``scan`` and ``phrases``, the plan's
    phrase count): ``x`` is the lowest ``maxtf`` of what was looked at (0 when that was every
    document), so that no candidate left unread has a higher one, and only events of more
    than ``phrases * x`` match spans are ranked; each row then ends with ``x``, the
    candidates read and the documents looked at, and a page without sessions is one row of
    ``NULL`` ending with them.
    """
    predicate, count = _match(plan)
    live = f" AND NOT (d.session_id = ANY(%(live)s::text[])){filters.where(COLUMNS)}"
    if not deepest:
        cand = (
            "SELECT d.session_id, d.seq, d.type, d.time, d.surface, d.length, "
            f"{count} AS mc FROM {documents_of(filters)} WHERE {predicate}{live}"
        )
        edge = ranked_from = ""
    else:
        # Looked at in maxtf order until ``depth`` candidates (one more row: the last one
        # looked at may be no candidate) or the window's last row. The spans are counted in
        # the candidates read only, and a document's text is read only when its tsvector
        # holds the words (a phrase of common words is in few of the documents holding them
        # all: the window keeps a walk that cannot answer from reading most of them). The
        # window's own order is the one read in: nothing is sorted, nothing read ahead.
        window = (
            f"(SELECT d.*, row_number() OVER (ORDER BY d.maxtf DESC) AS wn, ({predicate}{live}) "
            f"AS hit FROM {documents_of(filters)} WHERE NOT d.title ORDER BY d.maxtf DESC "
            "LIMIT %(scan)s) AS d"
        )
        cand = (
            "SELECT d.session_id, d.seq, d.type, d.time, d.surface, d.length, d.maxtf, d.wn, "
            f"d.hit, CASE WHEN d.hit THEN {count} END AS mc FROM {window} "
            "WHERE d.hit OR d.wn = %(scan)s ORDER BY d.maxtf DESC LIMIT %(depth)s + 1"
        )
        edge = (
            "edge AS (SELECT CASE WHEN count(*) <= %(depth)s AND NOT "
            "coalesce(bool_or(wn = %(scan)s), false) THEN 0 ELSE min(maxtf) END AS x, "
            "count(*) FILTER (WHERE hit) AS hits, coalesce(max(wn), 0) AS seen FROM cand), "
        )
        ranked_from = " WHERE hit AND mc > %(phrases)s * (SELECT x FROM edge)"
    rows = (
        "SELECT p.session_id, p.seq, p.type, p.time, p.surface, p.length, p.mc, s.header_json, "
        "d.text FROM page AS p JOIN sqi_sessions AS s ON s.id = p.session_id "
        "JOIN sqi_docs AS d ON d.session_id = p.session_id AND d.seq = p.seq"
    )
    alias = "p"
    if deepest:
        # one row at least, for the edge's figures: a depth that puts no session on the page
        # still tells how many candidates it found among the documents it looked at
        rows = f"SELECT r.*, e.x, e.hits, e.seen FROM edge AS e LEFT JOIN ({rows}) AS r ON true"
        alias = "r"
    order = ", ".join(f"{alias}.{key}" for key in SESSION_ORDER.split(", "))
    return (
        f"WITH cand AS MATERIALIZED ({cand}), {edge}"
        "ranked AS (SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY "
        f"{EVENT_ORDER}) AS rn FROM cand{ranked_from}), "
        "page AS (SELECT r.session_id, r.seq, r.type, r.time, r.surface, r.length, r.mc "
        f"FROM ranked AS r WHERE r.rn = 1 ORDER BY {SESSION_ORDER} LIMIT %(lim)s OFFSET %(off)s) "
        f"{rows} ORDER BY {order}"
    )


def event_search_sql(plan: MatchPlan, filters: CompiledFilters) -> str:
    """Events of one persisted session (``sid``), ranked; binds as :func:`session_search_sql`."""
    predicate, count = _match(plan)
    where = filters.where(COLUMNS)
    return (
        f"SELECT d.seq, d.type, d.time, d.surface, d.length, {count} AS mc, d.text "
        f"FROM sqi_docs AS d WHERE d.session_id = %(sid)s AND {predicate}{where} "
        f"ORDER BY {EVENT_ORDER} LIMIT %(lim)s OFFSET %(off)s"
    )
