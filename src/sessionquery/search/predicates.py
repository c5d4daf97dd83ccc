"""The filter compiler of both search backends: one walk of the validated filter tree.

Each backend describes its SQL dialect in a :class:`FilterDialect` (how a parameter is
named and referenced, how a number is bound, the predicate that never holds and the one that
keeps the rows of one availability); the walk, the order of the predicates and parameters and
the budgets are this module's, so both backends accept and refuse the same requests
(SPEC §7).

Invariants:

* No value is ever interpolated: every filter value is a named bound parameter; predicates
  are templates with ``{column}`` placeholders (``{id}``, ``{cwd}``, ``{parent}``,
  ``{created_at}``, ``{live}``, ``{persisted}``, ``{seq}``, ``{time}``, ``{type}``,
  ``{surface}``) that each statement fills with its own column expressions
  (:meth:`CompiledFilters.where`).
* The predicate and parameter budgets are checked before any statement is prepared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

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

__all__ = [
    "EVENT_PREDICATE_LIMIT",
    "FIXED_PARAMETERS",
    "MAX_BOUND_PARAMETERS",
    "SESSION_PREDICATE_LIMIT",
    "CompiledFilters",
    "FilterDialect",
]

SESSION_PREDICATE_LIMIT = 14
"""Compiled session + event predicates allowed in one session search."""

EVENT_PREDICATE_LIMIT = 13
"""Event predicates allowed in one event search (the fixed session predicate makes 14)."""

MAX_BOUND_PARAMETERS = 32_766
"""SQLite's default host-parameter limit (PostgreSQL keeps the same budget)."""

FIXED_PARAMETERS = 10
"""Parameters every search statement binds besides filter values (query, marks, paging...)."""


@dataclass(slots=True)
class CompiledFilters:
    """Predicate templates (``{column}`` placeholders) and their named parameters."""

    session_predicates: list[str] = field(default_factory=list)
    event_predicates: list[str] = field(default_factory=list)
    params: dict[str, object] = field(default_factory=dict)

    def where(self, columns: Mapping[str, str]) -> str:
        """The predicates as ``AND ...`` SQL for one statement's column expressions."""
        predicates = self.session_predicates + self.event_predicates
        return "".join(f" AND {p.format_map(columns)}" for p in predicates)


@dataclass(frozen=True, slots=True)
class FilterDialect:
    """How one SQL dialect spells the pieces of a filter predicate.

    Attributes:
        prefix: the parameter names are ``<prefix>0``, ``<prefix>1``...
        placeholder: a reference to a bound parameter, ``{}`` standing for its name.
        never: a predicate that holds for no row (an empty value list).
        number: a range bound as the driver binds it exactly.
        availability: the predicate keeping the rows that are ``"live"`` (or
            ``"persisted"``).
    """

    prefix: str
    placeholder: str
    never: str
    number: Callable[[float], object]
    availability: Callable[[str], str]

    def compile(
        self,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventFilter],
        *,
        predicate_limit: int,
    ) -> CompiledFilters:
        """Compile validated metadata filters, enforcing the predicate and parameter budgets.

        Raises:
            SessionQueryError: ``INVALID_FILTER`` when the budget is exceeded.
        """
        out = CompiledFilters()
        for clause in session_filters:
            out.session_predicates.extend(self._session(out, clause))
        for event_clause in event_filters:
            out.event_predicates.extend(self._event(out, event_clause))
        count = len(out.session_predicates) + len(out.event_predicates)
        if count > predicate_limit:
            raise SessionQueryError(
                ErrorCode.INVALID_FILTER,
                f"session search filters compile to {count} predicates; the limit is "
                f"{predicate_limit}",
            )
        if FIXED_PARAMETERS + len(out.params) > MAX_BOUND_PARAMETERS:
            raise SessionQueryError(
                ErrorCode.INVALID_FILTER,
                f"session search filters bind {len(out.params)} values; the limit is "
                f"{MAX_BOUND_PARAMETERS - FIXED_PARAMETERS}",
            )
        return out

    def _bind(self, out: CompiledFilters, value: object) -> str:
        name = f"{self.prefix}{len(out.params)}"
        out.params[name] = value
        return self.placeholder.format(name)

    def _list(self, out: CompiledFilters, column: str, values: Sequence[str | None]) -> str:
        if not values:
            return self.never  # an empty list matches nothing
        names = [self._bind(out, value) for value in values if value is not None]
        parts = [f"{{{column}}} IN ({', '.join(names)})"] if names else []
        if len(names) != len(values):
            parts.append(f"{{{column}}} IS NULL")
        return parts[0] if len(parts) == 1 else f"({' OR '.join(parts)})"

    def _range(
        self, out: CompiledFilters, column: str, start: float | None, end: float | None
    ) -> list[str]:
        predicates = []
        if start is not None:
            predicates.append(f"{{{column}}} >= {self._bind(out, self.number(start))}")
        if end is not None:
            predicates.append(f"{{{column}}} <= {self._bind(out, self.number(end))}")
        return predicates

    def _session(self, out: CompiledFilters, clause: SessionFilter) -> list[str]:
        if isinstance(clause, IdIn):
            return [self._list(out, "id", clause.values)]
        if isinstance(clause, CwdIn):
            return [self._list(out, "cwd", clause.values)]
        if isinstance(clause, ParentIn):
            return [self._list(out, "parent", clause.values)]
        if isinstance(clause, CreatedBetween):
            return self._range(out, "created_at", clause.start, clause.end)
        wanted = set(clause.values)
        if wanted == {"live", "persisted"}:
            return []  # every row is live or persisted
        flags = [flag for flag in ("live", "persisted") if flag in wanted]
        return [self.availability(flags[0]) if flags else self.never]

    def _event(self, out: CompiledFilters, clause: EventFilter) -> list[str]:
        if isinstance(clause, SeqBetween):
            return self._range(out, "seq", clause.start, clause.end)
        if isinstance(clause, TimeBetween):
            return self._range(out, "time", clause.start, clause.end)
        if isinstance(clause, TypeIn):
            return [self._list(out, "type", clause.values)]
        assert isinstance(clause, SurfaceIn)
        return [self._list(out, "surface", clause.values)]
