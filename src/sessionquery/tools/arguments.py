"""Normalising a model's tool arguments into the service's requests (reference contract §6.5).

Arguments are first checked against the tool's JSON Schema by
:mod:`sessionquery.tools.validation`; this module then applies the semantic checks and turns
them into filters. Invariants:

* the semantic checks keep the reference contract's codes (``INVALID_QUERY`` for the query,
  ``INVALID_FILTER`` for arrays, seq values and timestamps); every message names the argument
  and says what is wrong, and none of them is ever sanitised;
* the query is trimmed and whitespace-collapsed with the original's whitespace set
  (:mod:`sessionquery.model.textmatch`);
* timestamps are ISO 8601 with a ``T`` and a mandatory ``Z`` or ``±HH:MM`` offset, at most
  :data:`MAX_TIMESTAMP_CHARS` characters, parsed exactly by
  :func:`sessionquery.model.timestamp.parse_iso_timestamp` and turned into inclusive
  epoch-millisecond bounds: digits below the millisecond move a lower bound up to the next
  millisecond and leave an upper bound on its millisecond, so the bounds never admit an
  event outside the exact instant range. A range whose exact instants are ordered but whose
  millisecond bounds cross (both inside one millisecond) matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import validate_session_id
from sessionquery.model.textmatch import collapse_whitespace
from sessionquery.model.timestamp import Instant, TimestampError, parse_iso_timestamp
from sessionquery.query.filters import (
    AvailabilityIn,
    CreatedBetween,
    EventFilter,
    IdIn,
    SeqBetween,
    SessionFilter,
    SurfaceIn,
    TimeBetween,
    TypeIn,
)
from sessionquery.tools.schemas import (
    EVENT_READ,
    EVENT_SEARCH,
    EVENT_TRACE,
    SESSION_SEARCH,
    SESSION_TRACE,
)
from sessionquery.tools.validation import MAX_INTEGER_DIGITS, args_error, check_arguments

__all__ = [
    "MAX_SAFE_INTEGER",
    "MAX_TIMESTAMP_CHARS",
    "EventReadArgs",
    "EventSearchArgs",
    "EventTraceArgs",
    "SessionSearchArgs",
    "TraceArgs",
    "parse_event_read",
    "parse_event_search",
    "parse_event_trace",
    "parse_session_search",
    "parse_timestamp",
    "parse_trace",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest seq the tools accept (the JSON-safe integer range)."""

MAX_TIMESTAMP_CHARS = 64
"""The longest timestamp text accepted (``2025-01-31T09:30:00.123456789+01:00`` has 35)."""


def _filter_error(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_FILTER, message)


def parse_timestamp(name: str, text: str) -> Instant:
    """Parse the timestamp argument ``name`` into an exact instant.

    Raises:
        SessionQueryError: ``INVALID_FILTER`` naming ``name`` when the text is too long, has
            the wrong shape or names an impossible date, time or offset.
    """
    if len(text) > MAX_TIMESTAMP_CHARS:
        raise _filter_error(
            f"{name} must be an ISO 8601 timestamp of at most {MAX_TIMESTAMP_CHARS} characters"
        )
    try:
        return parse_iso_timestamp(text)
    except TimestampError as exc:
        if exc.wrong_shape:
            raise _filter_error(
                f"{name} must be an ISO 8601 timestamp with Z or a numeric offset, "
                f"e.g. 2025-01-31T09:30:00Z or 2025-01-31T10:30:00.250+01:00"
            ) from None
        raise _filter_error(f"{name} must be a valid ISO 8601 timestamp, not {text!r}") from None


def _time_range(
    name_from: str, name_to: str, arguments: Mapping[str, Any]
) -> tuple[int | None, int | None, bool]:
    """(start_ms, end_ms, empty) for a pair of timestamp arguments."""
    start = parse_timestamp(name_from, arguments[name_from]) if name_from in arguments else None
    end = parse_timestamp(name_to, arguments[name_to]) if name_to in arguments else None
    if start is not None and end is not None:
        if start > end:
            raise _filter_error(f"{name_from} must be earlier than or equal to {name_to}")
        if start.ceil_ms > end.floor_ms:
            return start.ceil_ms, end.floor_ms, True
    return (
        None if start is None else start.ceil_ms,
        None if end is None else end.floor_ms,
        False,
    )


def _seq(name: str, arguments: Mapping[str, Any]) -> int | None:
    value = arguments.get(name)
    if value is None:
        return None
    assert type(value) is int
    if value < 0 or value > MAX_SAFE_INTEGER:
        shown = (
            str(value)
            if abs(value) < 10**MAX_INTEGER_DIGITS
            else f"an integer of more than {MAX_INTEGER_DIGITS} digits"
        )
        raise _filter_error(f"{name} must be a non-negative safe integer, not {shown}")
    return value


def _seq_range(
    name_from: str, name_to: str, arguments: Mapping[str, Any]
) -> tuple[int | None, int | None]:
    start, end = _seq(name_from, arguments), _seq(name_to, arguments)
    if start is not None and end is not None and start > end:
        raise _filter_error(f"{name_from} must be less than or equal to {name_to}")
    return start, end


def _non_empty(name: str, arguments: Mapping[str, Any]) -> tuple[str, ...] | None:
    values = arguments.get(name)
    if values is None:
        return None
    if not values:
        raise _filter_error(f"{name} must contain at least one value when supplied")
    return tuple(values)


def _session_id(name: str, value: object) -> str:
    try:
        return validate_session_id(value, name)
    except ValueError as exc:
        raise args_error(str(exc)) from None


def _ids(name: str, arguments: Mapping[str, Any]) -> tuple[str, ...] | None:
    values = _non_empty(name, arguments)
    if values is None:
        return None
    return tuple(_session_id(f"{name}[{i}]", value) for i, value in enumerate(values))


def _optional_session_id(arguments: Mapping[str, Any]) -> str | None:
    value = arguments.get("session_id")
    return None if value is None else _session_id("session_id", value)


def _query(arguments: Mapping[str, Any]) -> str:
    raw: str = arguments["query"]
    if "\x00" in raw:
        raise SessionQueryError(ErrorCode.INVALID_QUERY, "query must not contain NUL characters")
    query = collapse_whitespace(raw)
    if not query:
        raise SessionQueryError(ErrorCode.INVALID_QUERY, "query must contain non-whitespace text")
    return query


@dataclass(frozen=True, slots=True)
class SessionSearchArgs:
    """Normalised ``session_search`` arguments.

    Attributes:
        query: the trimmed, whitespace-collapsed query.
        session_filters: id, created-at and availability clauses (never cwd or parent: the
            workflow adds those after authorizing).
        parent_ids: requested parent ids in first-seen order without duplicates, or ``None``.
        include_root_sessions: whether parentless sessions join the parent filter.
        event_filters: the event metadata clauses.
        empty: a time range that can match nothing (the search is skipped).
    """

    query: str
    session_filters: tuple[SessionFilter, ...]
    parent_ids: tuple[str, ...] | None
    include_root_sessions: bool
    event_filters: tuple[EventFilter, ...]
    empty: bool


@dataclass(frozen=True, slots=True)
class EventSearchArgs:
    """Normalised ``session_event_search`` arguments (seq bounds stay separate because the
    workflow caps ``seq_to`` on the caller's own session)."""

    session_id: str | None
    query: str
    seq_from: int | None
    seq_to: int | None
    other_filters: tuple[EventFilter, ...]
    empty: bool


@dataclass(frozen=True, slots=True)
class TraceArgs:
    """Normalised ``session_trace`` arguments."""

    session_id: str | None


@dataclass(frozen=True, slots=True)
class EventTraceArgs:
    """Normalised ``session_event_trace`` arguments."""

    session_id: str | None
    seq: int


@dataclass(frozen=True, slots=True)
class EventReadArgs:
    """Normalised ``session_event_read`` arguments (``before``/``after`` default 0)."""

    session_id: str | None
    seq: int
    before: int
    after: int


def _event_metadata(
    arguments: Mapping[str, Any], prefix: str, surfaces_name: str
) -> tuple[list[EventFilter], bool]:
    """Time, type and surface clauses; the bool says the time range is empty."""
    filters: list[EventFilter] = []
    start, end, empty = _time_range(f"{prefix}time_from", f"{prefix}time_to", arguments)
    if (start is not None or end is not None) and not empty:
        filters.append(TimeBetween(start, end))
    types = _non_empty("event_types", arguments)
    if types is not None:
        filters.append(TypeIn(types))
    surfaces = _non_empty(surfaces_name, arguments)
    if surfaces is not None:
        filters.append(SurfaceIn(surfaces))  # type: ignore[arg-type]
    return filters, empty


def parse_session_search(arguments: Mapping[str, Any]) -> SessionSearchArgs:
    """Check and normalise ``session_search`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS``, ``INVALID_QUERY`` or
            ``INVALID_FILTER`` with a message naming the argument.
    """
    check_arguments(SESSION_SEARCH, arguments)
    query = _query(arguments)
    session_filters: list[SessionFilter] = []
    ids = _ids("session_ids", arguments)
    if ids is not None:
        session_filters.append(IdIn(ids))
    created_from, created_to, created_empty = _time_range(
        "created_at_from", "created_at_to", arguments
    )
    if (created_from is not None or created_to is not None) and not created_empty:
        session_filters.append(CreatedBetween(created_from, created_to))
    parents = _ids("parent_session_ids", arguments)
    availability = _non_empty("availability", arguments)
    if availability is not None:
        session_filters.append(AvailabilityIn(availability))
    event_filters: list[EventFilter] = []
    seq_from, seq_to = _seq_range("event_seq_from", "event_seq_to", arguments)
    if seq_from is not None or seq_to is not None:
        event_filters.append(SeqBetween(seq_from, seq_to))
    metadata, events_empty = _event_metadata(arguments, "event_", "event_surfaces")
    event_filters.extend(metadata)
    return SessionSearchArgs(
        query=query,
        session_filters=tuple(session_filters),
        parent_ids=None if parents is None else tuple(dict.fromkeys(parents)),
        include_root_sessions=bool(arguments.get("include_root_sessions", False)),
        event_filters=tuple(event_filters),
        empty=created_empty or events_empty,
    )


def parse_event_search(arguments: Mapping[str, Any]) -> EventSearchArgs:
    """Check and normalise ``session_event_search`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS``, ``INVALID_QUERY`` or
            ``INVALID_FILTER`` with a message naming the argument.
    """
    check_arguments(EVENT_SEARCH, arguments)
    session_id = _optional_session_id(arguments)
    query = _query(arguments)
    seq_from, seq_to = _seq_range("seq_from", "seq_to", arguments)
    metadata, empty = _event_metadata(arguments, "", "surfaces")
    return EventSearchArgs(
        session_id=session_id,
        query=query,
        seq_from=seq_from,
        seq_to=seq_to,
        other_filters=tuple(metadata),
        empty=empty,
    )


def parse_trace(arguments: Mapping[str, Any]) -> TraceArgs:
    """Check and normalise ``session_trace`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS`` naming the argument.
    """
    check_arguments(SESSION_TRACE, arguments)
    return TraceArgs(session_id=_optional_session_id(arguments))


def parse_event_trace(arguments: Mapping[str, Any]) -> EventTraceArgs:
    """Check and normalise ``session_event_trace`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS`` or ``INVALID_FILTER`` naming the
            argument.
    """
    check_arguments(EVENT_TRACE, arguments)
    seq = _seq("seq", arguments)
    assert seq is not None
    return EventTraceArgs(session_id=_optional_session_id(arguments), seq=seq)


def parse_event_read(arguments: Mapping[str, Any]) -> EventReadArgs:
    """Check and normalise ``session_event_read`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS`` or ``INVALID_FILTER`` naming the
            argument.
    """
    check_arguments(EVENT_READ, arguments)
    seq = _seq("seq", arguments)
    assert seq is not None
    return EventReadArgs(
        session_id=_optional_session_id(arguments),
        seq=seq,
        before=_seq("before", arguments) or 0,
        after=_seq("after", arguments) or 0,
    )
