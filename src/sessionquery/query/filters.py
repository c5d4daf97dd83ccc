"""The filter vocabulary of the query service (SPEC §6).

A list of filters is ANDed; values inside one clause are ORed; an empty value list matches
nothing; ranges are inclusive and may be half-open. Every invalid clause raises
``SessionQueryError(INVALID_FILTER)`` when it is constructed, and :func:`validate_session_filters`
/ :func:`validate_event_filters` re-check lists handed in at call time, before any I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, get_args

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SURFACE_CLASSES, SessionHeader, SurfaceClass
from sessionquery.model.textmatch import LiteralPattern, literal_pattern, split_words
from sessionquery.query.types import Availability

__all__ = [
    "AVAILABILITY_VALUES",
    "SURFACE_VALUES",
    "AvailabilityIn",
    "CreatedBetween",
    "CwdIn",
    "EventFilter",
    "IdIn",
    "ParentIn",
    "SeqBetween",
    "SessionFilter",
    "SurfaceIn",
    "TextContains",
    "TimeBetween",
    "TypeIn",
    "event_matches",
    "header_matches",
    "session_matches",
    "validate_event_filters",
    "validate_session_filters",
]

AVAILABILITY_VALUES: tuple[Availability, ...] = get_args(Availability)
"""Every availability flag (``"live"``, ``"persisted"``)."""
SURFACE_VALUES: tuple[SurfaceClass, ...] = SURFACE_CLASSES
"""Every surface class (the model's :data:`~sessionquery.model.SURFACE_CLASSES`)."""


def _invalid(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_FILTER, message)


def _values(
    raw: object, name: str, *, nullable: bool = False, allowed: Sequence[str] | None = None
) -> tuple[Any, ...]:
    if isinstance(raw, str | bytes) or not isinstance(raw, Iterable):
        raise _invalid(f"session {name} filter values must be a list, not {type(raw).__name__}")
    values = tuple(raw)  # pyright: ignore[reportUnknownArgumentType]
    for value in values:
        if value is None and nullable:
            continue
        if not isinstance(value, str):
            raise _invalid(f"session {name} filter values must be strings, not {value!r}")
        if allowed is not None and value not in allowed:
            raise _invalid(
                f"session {name} filter value {value!r} is not one of {', '.join(allowed)}"
            )
    return values


def _bound(value: object, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(f"session {name} range bound must be a number, not {value!r}")
    # Only floats can be non-finite; math.isfinite of a huge int would raise OverflowError.
    if isinstance(value, float) and not math.isfinite(value):
        raise _invalid(f"session {name} range bound must be finite, not {value!r}")
    return value


class _ListClause:
    kind: ClassVar[str]
    nullable: ClassVar[bool] = False
    allowed: ClassVar[Sequence[str] | None] = None
    values: Sequence[Any]

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "values",
            _values(self.values, self.kind, nullable=self.nullable, allowed=self.allowed),
        )

    def canonical(self) -> dict[str, Any]:
        """What the clause selects, however it was written: its kind and its values, ``None``
        first and the rest sorted (a cursor's request fingerprint is made of these)."""
        nulls = [value for value in self.values if value is None]
        rest = sorted(value for value in self.values if value is not None)
        return {"kind": self.kind, "values": nulls + rest}


class _RangeClause:
    kind: ClassVar[str]
    start: float | None
    end: float | None

    def __post_init__(self) -> None:
        start = _bound(self.start, self.kind)
        end = _bound(self.end, self.kind)
        if start is not None and end is not None and start > end:
            raise _invalid(f"session {self.kind} range start {start} is after end {end}")

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the inclusive range."""
        return (self.start is None or value >= self.start) and (
            self.end is None or value <= self.end
        )

    def canonical(self) -> dict[str, Any]:
        """What the clause selects: its kind and bounds (``3`` and ``3.0`` bound the same
        range, so they are written the same)."""
        return {"kind": self.kind, "from": _whole(self.start), "to": _whole(self.end)}


def _whole(value: float | None) -> float | int | None:
    return int(value) if isinstance(value, float) and value.is_integer() else value


@dataclass(frozen=True, slots=True)
class IdIn(_ListClause):
    """Sessions whose id is one of ``values``."""

    values: Sequence[str]
    kind: ClassVar[str] = "id"


@dataclass(frozen=True, slots=True)
class CwdIn(_ListClause):
    """Sessions whose cwd is exactly one of ``values`` (``None`` matches cwd-less sessions)."""

    values: Sequence[str | None]
    kind: ClassVar[str] = "cwd"
    nullable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class CreatedBetween(_RangeClause):
    """Sessions created in ``[start, end]`` (epoch ms, inclusive, either side optional)."""

    start: float | None = None
    end: float | None = None
    kind: ClassVar[str] = "created-at"


@dataclass(frozen=True, slots=True)
class ParentIn(_ListClause):
    """Sessions whose direct parent is one of ``values`` (``None`` = root sessions)."""

    values: Sequence[str | None]
    kind: ClassVar[str] = "parent"
    nullable: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class AvailabilityIn(_ListClause):
    """Sessions that are ``"live"`` or ``"persisted"`` (any listed flag)."""

    values: Sequence[str]
    kind: ClassVar[str] = "availability"
    allowed: ClassVar[Sequence[str] | None] = AVAILABILITY_VALUES


@dataclass(frozen=True, slots=True)
class SeqBetween(_RangeClause):
    """Events with seq in ``[start, end]``."""

    start: float | None = None
    end: float | None = None
    kind: ClassVar[str] = "seq"


@dataclass(frozen=True, slots=True)
class TimeBetween(_RangeClause):
    """Events with time in ``[start, end]`` (epoch ms)."""

    start: float | None = None
    end: float | None = None
    kind: ClassVar[str] = "time"


@dataclass(frozen=True, slots=True)
class TypeIn(_ListClause):
    """Events whose type is one of ``values`` (open vocabulary)."""

    values: Sequence[str]
    kind: ClassVar[str] = "type"


@dataclass(frozen=True, slots=True)
class SurfaceIn(_ListClause):
    """Events whose surface class is one of ``values``."""

    values: Sequence[SurfaceClass]
    kind: ClassVar[str] = "surface"
    allowed: ClassVar[Sequence[str] | None] = SURFACE_VALUES


@dataclass(frozen=True, slots=True)
class TextContains:
    """Events whose semantic text contains ``text``: literal, case-insensitive, and any run
    of whitespace in ``text`` matches any run of whitespace in the event. Scan only; search
    backends reject it.

    Whitespace and case folding are the original system's (JavaScript's ``\\s`` and its
    simple case folding; see :mod:`sessionquery.model.textmatch`): ``"istanbul"`` does not
    match ``"İstanbul"``, and U+FEFF is whitespace while U+0085 is not.
    """

    text: str
    kind: ClassVar[str] = "text"
    pattern: LiteralPattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise _invalid(f"session text filter must be a string, not {self.text!r}")
        parts = split_words(self.text)
        if not parts:
            raise _invalid("session text filter must contain non-whitespace text")
        object.__setattr__(self, "pattern", literal_pattern(parts))

    def matches(self, text: str) -> bool:
        """Whether ``text`` contains the filter text."""
        return self.pattern.found_in(text)

    def canonical(self) -> dict[str, Any]:
        """What the clause selects: its kind and text."""
        return {"kind": self.kind, "text": self.text}


SessionFilter = IdIn | CwdIn | CreatedBetween | ParentIn | AvailabilityIn
EventFilter = SeqBetween | TimeBetween | TypeIn | SurfaceIn | TextContains

_SESSION_TYPES = (IdIn, CwdIn, CreatedBetween, ParentIn, AvailabilityIn)
_EVENT_TYPES = (SeqBetween, TimeBetween, TypeIn, SurfaceIn, TextContains)


def _validate(filters: object, allowed: tuple[type, ...], what: str) -> tuple[Any, ...]:
    if isinstance(filters, str | bytes) or not isinstance(filters, Iterable):
        raise _invalid(f"session {what} filters must be a list of filter clauses")
    clauses = tuple(filters)  # pyright: ignore[reportUnknownArgumentType]
    for clause in clauses:
        if not isinstance(clause, allowed):
            names = ", ".join(kind.__name__ for kind in allowed)
            raise _invalid(f"unknown {what} filter {clause!r}; expected one of {names}")
    return clauses


def validate_session_filters(filters: object) -> tuple[SessionFilter, ...]:
    """Check that ``filters`` is a list of session clauses; return it as a tuple."""
    return _validate(filters, _SESSION_TYPES, "session")


def validate_event_filters(filters: object, *, allow_text: bool = True) -> tuple[EventFilter, ...]:
    """Check that ``filters`` is a list of event clauses; return it as a tuple.

    With ``allow_text=False`` (search backends) a :class:`TextContains` clause is rejected.
    """
    clauses: tuple[EventFilter, ...] = _validate(filters, _EVENT_TYPES, "event")
    if not allow_text and any(isinstance(c, TextContains) for c in clauses):
        raise _invalid("session search metadata filters do not accept text clauses")
    return clauses


def session_matches(
    filters: Sequence[SessionFilter],
    *,
    id: str,
    cwd: str | None,
    created_at: int,
    parent: str | None,
    live: bool,
    persisted: bool,
) -> bool:
    """Whether a session with these fields passes every clause."""
    for clause in filters:
        if isinstance(clause, IdIn):
            ok = id in clause.values
        elif isinstance(clause, CwdIn):
            ok = cwd in clause.values
        elif isinstance(clause, CreatedBetween):
            ok = clause.contains(created_at)
        elif isinstance(clause, ParentIn):
            ok = parent in clause.values
        else:
            ok = ("live" in clause.values and live) or ("persisted" in clause.values and persisted)
        if not ok:
            return False
    return True


def header_matches(
    filters: Sequence[SessionFilter], header: SessionHeader, *, live: bool, persisted: bool
) -> bool:
    """Whether a session with this header and availability passes every clause."""
    return session_matches(
        filters,
        id=header.id,
        cwd=header.cwd,
        created_at=header.created_at,
        parent=header.parent_session,
        live=live,
        persisted=persisted,
    )


def event_matches(
    filters: Sequence[EventFilter],
    *,
    seq: int,
    time: int,
    type: str,
    surface: SurfaceClass,
    text: str,
) -> bool:
    """Whether an event with these fields passes every clause."""
    for clause in filters:
        if isinstance(clause, SeqBetween):
            ok = clause.contains(seq)
        elif isinstance(clause, TimeBetween):
            ok = clause.contains(time)
        elif isinstance(clause, TypeIn):
            ok = type in clause.values
        elif isinstance(clause, SurfaceIn):
            ok = surface in clause.values
        else:
            ok = clause.matches(text)
        if not ok:
            return False
    return True
