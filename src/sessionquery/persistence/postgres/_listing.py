"""The SQL conditions of one page of the PostgreSQL store's listing (``list_newest``).

Invariants: every value is a bound parameter (only fixed fragments are joined); the
conditions select exactly the rows whose listing columns (``created_at``, ``cwd``,
``parent_session``, ``id``) pass the header clauses of the filters (id, cwd, created-at,
parent; an empty value list matches nothing, ``None`` matches NULL, range bounds are
inclusive) and that come after the key in the listing order (``created_at DESC, id``,
ids in the ``"C"`` collation, which is code-point order as Python compares them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from sessionquery.persistence.base import ListingKey

if TYPE_CHECKING:
    from sessionquery.query.filters import SessionFilter

__all__ = ["listing_conditions", "page_query"]

_COLUMN: Final = {"id": "id", "cwd": "cwd", "parent": "parent_session"}
_BIGINT_MAX: Final = 2**63 - 1


def _in(column: str, values: Sequence[str | None]) -> tuple[str, list[object]]:
    strings = [value for value in values if value is not None]
    parts: list[str] = []
    params: list[object] = []
    if strings:
        parts.append(f"{column} = ANY(%s::text[])")
        params.append(strings)
    if len(strings) < len(values):
        parts.append(f"{column} IS NULL")
    return ("(" + " OR ".join(parts) + ")" if parts else "false"), params


def _range(start: float | None, end: float | None) -> tuple[str, list[object]]:
    parts: list[str] = []
    params: list[object] = []
    if start is not None:
        low = math.ceil(start)
        if low > _BIGINT_MAX:
            return "false", []
        parts.append("created_at >= %s")
        params.append(max(low, 0))
    if end is not None:
        high = math.floor(end)
        if high < 0:
            return "false", []
        parts.append("created_at <= %s")
        params.append(min(high, _BIGINT_MAX))
    return (" AND ".join(parts) or "true"), params


def listing_conditions(
    filters: Sequence[SessionFilter], after: ListingKey | None
) -> tuple[str, list[object]]:
    """``(WHERE clause, its parameters)`` of a page after ``after`` of ``filters``'s header
    clauses (availability clauses are the caller's)."""
    parts, params = ["created_at IS NOT NULL"], []
    for clause in filters:
        kind = clause.kind
        if kind in _COLUMN:
            sql, values = _in(_COLUMN[kind], getattr(clause, "values", ()))
        elif kind == "created-at":
            sql, values = _range(getattr(clause, "start", None), getattr(clause, "end", None))
        else:
            continue
        parts.append(sql)
        params.extend(values)
    if after is not None:
        created_at, session_id = after
        parts.append("created_at <= %s AND (created_at < %s OR id > %s)")
        params.extend((created_at, created_at, session_id))
    return " AND ".join(parts), params


def page_query(
    columns: str, filters: Sequence[SessionFilter], after: ListingKey | None, limit: int
) -> tuple[str, list[object]]:
    """The query of one page: ``columns`` of ``sq_sessions`` in the listing order, read from
    its index (``sq_sessions_newest``)."""
    where, params = listing_conditions(filters, after)
    sql = f"SELECT {columns} FROM sq_sessions WHERE {where} ORDER BY created_at DESC, id LIMIT %s"
    return sql, [*params, limit]
