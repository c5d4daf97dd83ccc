"""The semantic checks every tool's arguments share (reference contract §6.5).

Arguments are first checked against the tool's JSON Schema by
:mod:`sessionquery.tools.validation`; each tool's ``parse`` (:mod:`sessionquery.tools.specs`)
then reads them with these helpers, which apply the semantic checks and build filters. The
helpers take the checked arguments mapping and the argument's name. Invariants:

* the semantic checks keep the reference contract's codes (``INVALID_QUERY`` for the query,
  ``INVALID_FILTER`` for arrays, seq values and timestamps); every message names the argument
  and says what is wrong, and none of them is ever sanitised;
* the query is normalised by the searches' own rule
  (:func:`sessionquery.search.request.normalize_query`: trimmed and whitespace-collapsed with
  the original's whitespace set), so the tools and the search never disagree on it;
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
from typing import Any

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import validate_session_id
from sessionquery.model.timestamp import Instant, TimestampError, parse_iso_timestamp
from sessionquery.query.filters import EventFilter, SurfaceIn, TimeBetween, TypeIn
from sessionquery.search.request import normalize_query
from sessionquery.tools.validation import MAX_INTEGER_DIGITS, args_error

__all__ = [
    "MAX_SAFE_INTEGER",
    "MAX_TIMESTAMP_CHARS",
    "event_metadata",
    "ids",
    "non_empty",
    "optional_session_id",
    "parse_timestamp",
    "query_text",
    "seq",
    "seq_range",
    "time_range",
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


def time_range(
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


def seq(name: str, arguments: Mapping[str, Any]) -> int | None:
    """The seq-like integer argument ``name`` (``None`` when omitted).

    Raises:
        SessionQueryError: ``INVALID_FILTER`` when negative or above :data:`MAX_SAFE_INTEGER`.
    """
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


def seq_range(
    name_from: str, name_to: str, arguments: Mapping[str, Any]
) -> tuple[int | None, int | None]:
    """A pair of seq arguments, checked to be ordered."""
    start, end = seq(name_from, arguments), seq(name_to, arguments)
    if start is not None and end is not None and start > end:
        raise _filter_error(f"{name_from} must be less than or equal to {name_to}")
    return start, end


def non_empty(name: str, arguments: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The array argument ``name``; an empty array is an ``INVALID_FILTER`` error."""
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


def ids(name: str, arguments: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The session-id array argument ``name``, each id validated."""
    values = non_empty(name, arguments)
    if values is None:
        return None
    return tuple(_session_id(f"{name}[{i}]", value) for i, value in enumerate(values))


def optional_session_id(arguments: Mapping[str, Any]) -> str | None:
    """The validated ``session_id`` argument, or ``None`` when omitted."""
    value = arguments.get("session_id")
    return None if value is None else _session_id("session_id", value)


def query_text(arguments: Mapping[str, Any]) -> str:
    """The ``query`` argument, normalised as every search normalises it (one definition:
    :func:`sessionquery.search.request.normalize_query`).

    Raises:
        SessionQueryError: ``INVALID_QUERY`` for a query with NUL, without text or longer
            than 1 MiB.
    """
    return normalize_query(arguments["query"])


def event_metadata(
    arguments: Mapping[str, Any], prefix: str, surfaces_name: str
) -> tuple[list[EventFilter], bool]:
    """Time, type and surface clauses; the bool says the time range is empty."""
    filters: list[EventFilter] = []
    start, end, empty = time_range(f"{prefix}time_from", f"{prefix}time_to", arguments)
    if (start is not None or end is not None) and not empty:
        filters.append(TimeBetween(start, end))
    types = non_empty("event_types", arguments)
    if types is not None:
        filters.append(TypeIn(types))
    surfaces = non_empty(surfaces_name, arguments)
    if surfaces is not None:
        filters.append(SurfaceIn(surfaces))  # type: ignore[arg-type]
    return filters, empty
