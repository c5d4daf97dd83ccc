"""Checking and normalising the arguments a model passes to the five tools.

Invariants:

* arguments are checked against the tool's JSON Schema **without coercion**: a string is
  never an integer, a boolean is never an integer, ``1.5`` and ``1.0`` are not integers,
  ``null`` is not a value of any property; unknown properties are rejected and required ones
  must be present;
* schema violations raise ``SessionQueryError(SESSION_QUERY_TOOL_INVALID_ARGUMENTS)``; the
  semantic checks of the reference contract §6.5 keep its codes (``INVALID_QUERY`` for the
  query, ``INVALID_FILTER`` for arrays, seq values and timestamps); every message names the
  argument and says what is wrong, and none of them is ever sanitised;
* timestamps are ISO 8601 with a ``T`` and a mandatory ``Z`` or ``±HH:MM`` offset and turn
  into inclusive epoch-millisecond bounds: digits below the millisecond move a lower bound up
  to the next millisecond and leave an upper bound on its millisecond, so the bounds never
  admit an event outside the exact instant range. A range whose exact instants are ordered but
  whose millisecond bounds cross (both inside one millisecond) matches nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.model import validate_session_id
from sessionquery.model.textmatch import collapse_whitespace
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
    input_schema,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "EventReadArgs",
    "EventSearchArgs",
    "EventTraceArgs",
    "SessionSearchArgs",
    "TimeBound",
    "TraceArgs",
    "check_arguments",
    "parse_arguments",
    "parse_event_read",
    "parse_event_search",
    "parse_event_trace",
    "parse_session_search",
    "parse_timestamp",
    "parse_trace",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest seq the tools accept (the JSON-safe integer range)."""

_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})",
    re.ASCII,  # ISO 8601 digits are 0-9; Python's \d would also take other scripts' digits
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_JSON_TYPE_NAMES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _args_error(message: str) -> SessionQueryError:
    return SessionQueryError(ToolErrorCode.INVALID_ARGUMENTS, message)


def _filter_error(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_FILTER, message)


def _json_type(value: object) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


# --- schema check ---------------------------------------------------------------------------


def parse_arguments(raw: object) -> dict[str, Any]:
    """Turn a tool call's raw arguments (a mapping or a JSON text) into a plain dict.

    Raises:
        SessionQueryError: ``SESSION_QUERY_TOOL_INVALID_ARGUMENTS`` when the text is not JSON
            or the value is not an object.
    """
    if isinstance(raw, str):
        text = raw.strip() or "{}"
        try:
            raw = json.loads(text, parse_constant=_reject_constant)
        except ValueError:
            raise _args_error(
                "arguments must be a JSON object; the text is not valid JSON"
            ) from None
    if not isinstance(raw, Mapping):
        raise _args_error(f"arguments must be a JSON object, not {_json_type(raw)}")
    arguments: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise _args_error(f"argument names must be strings, not {key!r}")
        arguments[key] = value
    return arguments


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def check_arguments(tool: str, arguments: Mapping[str, Any]) -> None:
    """Check ``arguments`` against the JSON Schema of ``tool`` without coercing anything.

    Raises:
        SessionQueryError: ``SESSION_QUERY_TOOL_INVALID_ARGUMENTS`` naming the first unknown,
            missing or wrongly typed argument.
    """
    schema = input_schema(tool)
    properties: dict[str, Any] = schema["properties"]
    for name in arguments:
        if name not in properties:
            accepted = ", ".join(properties) or "no arguments"
            raise _args_error(f"unknown argument {name!r}; {tool} accepts: {accepted}")
    for name in schema.get("required", []):
        if name not in arguments:
            raise _args_error(f"{name} is required")
    for name, value in arguments.items():
        _check_value(name, value, properties[name])


def _check_value(name: str, value: object, schema: Mapping[str, Any]) -> None:
    expected = schema["type"]
    if value is None:
        raise _args_error(f"{name} must be {_article(expected)}; omit it instead of sending null")
    if not _has_type(value, expected):
        raise _args_error(f"{name} must be {_article(expected)}, not {_describe(value)}")
    if expected == "array":
        assert isinstance(value, list)
        items: Mapping[str, Any] = schema["items"]
        for index, item in enumerate(value):
            if not _has_type(item, items["type"]):
                raise _args_error(
                    f"{name}[{index}] must be {_article(items['type'])}, not {_describe(item)}"
                )
            allowed = items.get("enum")
            if allowed is not None and item not in allowed:
                raise _args_error(
                    f"{name}[{index}] must be one of {', '.join(allowed)}, not {item!r}"
                )


def _has_type(value: object, expected: str) -> bool:
    if expected == "integer":
        return type(value) is int
    if expected == "boolean":
        return type(value) is bool
    if expected == "string":
        return isinstance(value, str)
    if expected == "array":
        return isinstance(value, list)
    return False  # pragma: no cover - the schemas use only the four types above


def _article(json_type: str) -> str:
    return f"an {json_type}" if json_type[0] in "aeiou" else f"a {json_type}"


def _describe(value: object) -> str:
    kind = _json_type(value)
    if isinstance(value, bool | int | float):
        return f"{kind} {json.dumps(value)}"
    return kind


# --- semantic normalisation -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimeBound:
    """A parsed timestamp: the exact instant and its inclusive millisecond bounds.

    Attributes:
        exact: the instant in epoch milliseconds, exactly (sub-millisecond digits kept).
        lower_ms: the millisecond bound when used as a range start.
        upper_ms: the millisecond bound when used as a range end.
    """

    exact: Fraction
    lower_ms: int
    upper_ms: int


def parse_timestamp(name: str, text: str) -> TimeBound:
    """Parse an ISO 8601 timestamp with a mandatory offset into millisecond bounds.

    Raises:
        SessionQueryError: ``INVALID_FILTER`` naming ``name`` when the text has the wrong
            shape or an impossible date, time or offset.
    """
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise _filter_error(
            f"{name} must be an ISO 8601 timestamp with Z or a numeric offset, "
            f"e.g. 2025-01-31T09:30:00Z or 2025-01-31T10:30:00.250+01:00"
        )
    year, month, day, hour, minute = (int(match.group(i)) for i in range(1, 6))
    second = int(match.group(6) or 0)
    fraction = match.group(7) or ""
    offset = match.group(8)
    try:
        if second > 59:
            raise ValueError("leap seconds are not accepted")
        offset_minutes = _offset_minutes(offset)
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise _filter_error(f"{name} must be a valid ISO 8601 timestamp, not {text!r}") from None
    delta = local - _EPOCH - timedelta(minutes=offset_minutes)
    whole_ms = (delta.days * 86_400 + delta.seconds) * 1000
    exact = Fraction(whole_ms) + (
        Fraction(int(fraction), 10 ** len(fraction)) * 1000 if fraction else 0
    )
    floor_ms = int(exact // 1)
    has_sub_ms = exact != floor_ms
    return TimeBound(exact=exact, lower_ms=floor_ms + has_sub_ms, upper_ms=floor_ms)


def _offset_minutes(offset: str) -> int:
    if offset == "Z":
        return 0
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    total = hours * 60 + minutes
    return -total if offset[0] == "-" else total


def _time_range(
    name_from: str, name_to: str, arguments: Mapping[str, Any]
) -> tuple[int | None, int | None, bool]:
    """(start_ms, end_ms, empty) for a pair of timestamp arguments."""
    start = parse_timestamp(name_from, arguments[name_from]) if name_from in arguments else None
    end = parse_timestamp(name_to, arguments[name_to]) if name_to in arguments else None
    if start is not None and end is not None:
        if start.exact > end.exact:
            raise _filter_error(f"{name_from} must be earlier than or equal to {name_to}")
        if start.lower_ms > end.upper_ms:
            return start.lower_ms, end.upper_ms, True
    return (
        None if start is None else start.lower_ms,
        None if end is None else end.upper_ms,
        False,
    )


def _seq(name: str, arguments: Mapping[str, Any]) -> int | None:
    value = arguments.get(name)
    if value is None:
        return None
    assert type(value) is int
    if value < 0 or value > MAX_SAFE_INTEGER:
        raise _filter_error(f"{name} must be a non-negative safe integer, not {value}")
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
        raise _args_error(str(exc)) from None


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
