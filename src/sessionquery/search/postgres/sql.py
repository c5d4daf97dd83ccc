"""SQL of one PostgreSQL search: candidates, match-span counts, filters and ranking.

Invariants:

* No value is ever interpolated: every value (patterns, lexemes, filter values, live ids) is
  a named bound parameter; only fixed fragments and generated parameter names are joined.
* The predicate and parameter budgets are the SQLite backend's (SPEC §7), checked before
  any statement is prepared, so both backends accept and refuse the same requests.
* Candidates: the position-less tsvector contains every lexeme of the query (or the document
  is oversized and has none), **and** the normal form contains every phrase pattern. Match
  spans are counted on the normal form; the order is SPEC §7's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.filters import (
    CreatedBetween,
    CwdIn,
    EventFilter,
    IdIn,
    ParentIn,
    SeqBetween,
    SessionFilter,
    SurfaceIn,
    TimeBetween,
    TypeIn,
)
from sessionquery.search.postgres.tokens import MatchPlan, lexeme

__all__ = [
    "EVENT_PREDICATE_LIMIT",
    "SESSION_PREDICATE_LIMIT",
    "CompiledFilters",
    "compile_filters",
    "event_search_sql",
    "match_params",
    "session_search_sql",
]

SESSION_PREDICATE_LIMIT = 14
EVENT_PREDICATE_LIMIT = 13
MAX_BOUND_PARAMETERS = 32_766
FIXED_PARAMETERS = 10

EVENT_ORDER = "mc DESC, length ASC, time DESC, seq DESC"
SESSION_ORDER = "mc DESC, length ASC, time DESC, session_id ASC, seq DESC"
"""SPEC §7 ranking; ``session_id`` has the binary ``"C"`` collation (code-point order)."""


@dataclass(slots=True)
class CompiledFilters:
    """Predicates over ``s`` (sessions) and ``d`` (documents) and their named parameters."""

    predicates: list[str] = field(default_factory=list)
    params: dict[str, object] = field(default_factory=dict)

    def bind(self, value: object) -> str:
        name = f"f{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    def where(self) -> str:
        return "".join(f" AND {p}" for p in self.predicates)


def _list(out: CompiledFilters, column: str, values: Sequence[str | None]) -> str:
    if not values:
        return "false"
    names = [out.bind(value) for value in values if value is not None]
    parts = [f"{column} IN ({', '.join(names)})"] if names else []
    if len(names) != len(values):
        parts.append(f"{column} IS NULL")
    return parts[0] if len(parts) == 1 else f"({' OR '.join(parts)})"


def _range(out: CompiledFilters, column: str, start: float | None, end: float | None) -> list[str]:
    # numeric bounds compare exactly with bigint columns, whatever their size
    predicates = []
    if start is not None:
        predicates.append(f"{column} >= {out.bind(Decimal(start))}")
    if end is not None:
        predicates.append(f"{column} <= {out.bind(Decimal(end))}")
    return predicates


def _session(out: CompiledFilters, clause: SessionFilter) -> list[str]:
    if isinstance(clause, IdIn):
        return [_list(out, "s.id", clause.values)]
    if isinstance(clause, CwdIn):
        return [_list(out, "s.cwd", clause.values)]
    if isinstance(clause, ParentIn):
        return [_list(out, "s.parent_session", clause.values)]
    if isinstance(clause, CreatedBetween):
        return _range(out, "s.created_at", clause.start, clause.end)
    wanted = set(clause.values)
    if wanted == {"live", "persisted"}:
        return []
    # rows of this table are persisted and not live (live sessions are the overlay's)
    return ["true" if "persisted" in wanted else "false"]


def _event(out: CompiledFilters, clause: EventFilter) -> list[str]:
    if isinstance(clause, SeqBetween):
        return _range(out, "d.seq", clause.start, clause.end)
    if isinstance(clause, TimeBetween):
        return _range(out, "d.time", clause.start, clause.end)
    if isinstance(clause, TypeIn):
        return [_list(out, "d.type", clause.values)]
    assert isinstance(clause, SurfaceIn)
    return [_list(out, "d.surface", clause.values)]


def compile_filters(
    session_filters: Sequence[SessionFilter],
    event_filters: Sequence[EventFilter],
    *,
    predicate_limit: int,
) -> CompiledFilters:
    """Compile validated filters, enforcing the SQLite backend's budgets.

    Raises:
        SessionQueryError: ``INVALID_FILTER`` when a budget is exceeded.
    """
    out = CompiledFilters()
    for clause in session_filters:
        out.predicates.extend(_session(out, clause))
    for event_clause in event_filters:
        out.predicates.extend(_event(out, event_clause))
    if len(out.predicates) > predicate_limit:
        raise SessionQueryError(
            ErrorCode.INVALID_FILTER,
            f"session search filters compile to {len(out.predicates)} predicates; the limit is "
            f"{predicate_limit}",
        )
    if FIXED_PARAMETERS + len(out.params) > MAX_BOUND_PARAMETERS:
        raise SessionQueryError(
            ErrorCode.INVALID_FILTER,
            f"session search filters bind {len(out.params)} values; the limit is "
            f"{MAX_BOUND_PARAMETERS - FIXED_PARAMETERS}",
        )
    return out


def match_params(plan: MatchPlan) -> dict[str, object]:
    """The bound values of the match predicates and the span count."""
    params: dict[str, object] = {
        "tsq": " & ".join(f"'{lexeme}'" for lexeme in plan.lexemes),
        "patterns": plan.patterns,
    }
    for i, pattern in enumerate(plan.patterns):
        params[f"m{i}"] = pattern
    return params


def _match(plan: MatchPlan) -> tuple[str, str]:
    """``(predicate, span count expression)`` over ``d``."""
    names = [f"%(m{i})s" for i in range(len(plan.phrases))]
    contains = "".join(f" AND strpos(d.norm, {name}) > 0" for name in names)
    if all(len(p) == 1 and lexeme(p[0]) == p[0] for p in plan.phrases):
        # whole single tokens: the tsvector holds exactly the document's tokens, so a match
        # there needs no second look at the text
        predicate = f"(d.tsv @@ %(tsq)s::tsquery OR (d.tsv IS NULL{contains}))"
    else:
        predicate = f"(d.tsv @@ %(tsq)s::tsquery OR d.tsv IS NULL){contains}"
    if plan.simple:
        count = " + ".join(
            f"(length(d.norm) - length(replace(d.norm, {name}, ''))) / length({name})"
            for name in names
        )
    else:
        count = "sqi_span_count(d.norm, %(patterns)s::text[])"
    return predicate, f"({count})"


def session_search_sql(plan: MatchPlan, filters: CompiledFilters) -> str:
    """Persisted sessions (not live) with their best event, ranked.

    Binds ``tsq``, ``m<i>``/``patterns``, ``live`` (ids to leave out), ``lim``, ``off`` and
    the filters' parameters.
    """
    predicate, count = _match(plan)
    return (
        "WITH cand AS MATERIALIZED ("
        "SELECT d.session_id, d.seq, d.type, d.time, d.surface, d.length, "
        f"{count} AS mc FROM sqi_docs AS d JOIN sqi_sessions AS s ON s.id = d.session_id "
        f"WHERE {predicate} AND NOT (d.session_id = ANY(%(live)s::text[])){filters.where()}), "
        "ranked AS (SELECT *, row_number() OVER (PARTITION BY session_id ORDER BY "
        f"{EVENT_ORDER}) AS rn FROM cand), "
        "page AS (SELECT r.session_id, r.seq, r.type, r.time, r.surface, r.length, r.mc "
        f"FROM ranked AS r WHERE r.rn = 1 ORDER BY {SESSION_ORDER} LIMIT %(lim)s OFFSET %(off)s) "
        "SELECT p.session_id, p.seq, p.type, p.time, p.surface, p.length, p.mc, s.header_json, "
        "d.text FROM page AS p JOIN sqi_sessions AS s ON s.id = p.session_id "
        "JOIN sqi_docs AS d ON d.session_id = p.session_id AND d.seq = p.seq "
        "ORDER BY p.mc DESC, p.length ASC, p.time DESC, p.session_id ASC, p.seq DESC"
    )


def event_search_sql(plan: MatchPlan, filters: CompiledFilters) -> str:
    """Events of one persisted session (``sid``), ranked; binds as :func:`session_search_sql`."""
    predicate, count = _match(plan)
    return (
        f"SELECT d.seq, d.type, d.time, d.surface, d.length, {count} AS mc, d.text "
        f"FROM sqi_docs AS d WHERE d.session_id = %(sid)s AND {predicate}{filters.where()} "
        f"ORDER BY {EVENT_ORDER} LIMIT %(lim)s OFFSET %(off)s"
    )
