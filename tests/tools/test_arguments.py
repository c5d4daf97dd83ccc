"""Argument checking and normalisation of the five tools (reference contract §6.5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.query.filters import (
    AvailabilityIn,
    CreatedBetween,
    IdIn,
    SeqBetween,
    SurfaceIn,
    TimeBetween,
    TypeIn,
)
from sessionquery.tools.arguments import MAX_SAFE_INTEGER, MAX_TIMESTAMP_CHARS, parse_timestamp
from sessionquery.tools.specs import (
    parse_event_read,
    parse_event_search,
    parse_event_trace,
    parse_session_search,
    parse_trace,
)

INVALID_ARGUMENTS = ToolErrorCode.INVALID_ARGUMENTS
INVALID_FILTER = ErrorCode.INVALID_FILTER


def _error(call: Any, *args: Any) -> SessionQueryError:
    with pytest.raises(SessionQueryError) as info:
        call(*args)
    return info.value


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"seq": "3"}, "seq must be an integer, not string"),
        ({"seq": True}, "seq must be an integer, not boolean true"),
        ({"seq": 1.5}, "seq must be an integer, not number 1.5"),
        ({"seq": 1.0}, "seq must be an integer, not number 1.0"),
        ({"seq": None}, "seq must be an integer, not null"),
        ({"seq": 1, "before": "2"}, "before must be an integer, not string"),
        ({"seq": 1, "session_id": 7}, "session_id must be a string, not integer 7"),
        (
            {"seq": 1, "limit": 5},
            "unknown argument 'limit'; session_event_read accepts: session_id, seq, before, after",
        ),
        ({}, "seq is required"),
    ],
)
def test_event_read_rejects_wrong_json_types_without_coercion(
    arguments: dict[str, Any], message: str
) -> None:
    error = _error(parse_event_read, arguments)
    assert error.code is INVALID_ARGUMENTS
    assert error.message == message


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": 5}, "query must be a string, not integer 5"),
        ({"query": "x", "session_ids": "a"}, "session_ids must be an array, not string"),
        ({"query": "x", "session_ids": ["a", 2]}, "session_ids[1] must be a string, not integer 2"),
        (
            {"query": "x", "include_root_sessions": "true"},
            "include_root_sessions must be a boolean, not string",
        ),
        (
            {"query": "x", "include_root_sessions": 1},
            "include_root_sessions must be a boolean, not integer 1",
        ),
        (
            {"query": "x", "availability": ["archived"]},
            "availability[0] must be one of live, persisted, not 'archived'",
        ),
        (
            {"query": "x", "event_surfaces": ["current", "hidden"]},
            "event_surfaces[1] must be one of current, shadowed, log-only, not 'hidden'",
        ),
        (
            {"query": "x", "cursor": "abc"},
            "unknown argument 'cursor'; session_search accepts: "
            "query, match, session_ids, created_at_from, created_at_to, parent_session_ids, "
            "include_root_sessions, availability, event_seq_from, event_seq_to, event_time_from, "
            "event_time_to, event_types, event_surfaces",
        ),
        ({}, "query is required"),
    ],
)
def test_session_search_rejects_schema_violations_with_named_messages(
    arguments: dict[str, Any], message: str
) -> None:
    error = _error(parse_session_search, arguments)
    assert error.code is INVALID_ARGUMENTS
    assert error.message == message


@pytest.mark.parametrize(
    "name", ["session_ids", "parent_session_ids", "availability", "event_types", "event_surfaces"]
)
def test_session_search_rejects_each_empty_array_by_name(name: str) -> None:
    error = _error(parse_session_search, {"query": "x", name: []})
    assert error.code is INVALID_FILTER
    assert error.message == f"{name} must contain at least one value when supplied"


@pytest.mark.parametrize("name", ["event_types", "surfaces"])
def test_event_search_rejects_each_empty_array_by_name(name: str) -> None:
    error = _error(parse_event_search, {"query": "x", name: []})
    assert error.code is INVALID_FILTER
    assert error.message == f"{name} must contain at least one value when supplied"


@pytest.mark.parametrize("name", ["seq", "before", "after"])
def test_event_read_rejects_negative_and_unsafe_integers(name: str) -> None:
    base: dict[str, Any] = {"seq": 0}
    for bad in (-1, MAX_SAFE_INTEGER + 1):
        error = _error(parse_event_read, {**base, name: bad})
        assert error.code is INVALID_FILTER
        assert error.message == f"{name} must be a non-negative safe integer, not {bad}"


def test_event_trace_rejects_a_negative_seq_by_name() -> None:
    error = _error(parse_event_trace, {"seq": -3})
    assert (error.code, error.message) == (
        INVALID_FILTER,
        "seq must be a non-negative safe integer, not -3",
    )


@pytest.mark.parametrize(
    ("parse", "low", "high"),
    [
        (parse_event_search, "seq_from", "seq_to"),
        (parse_session_search, "event_seq_from", "event_seq_to"),
    ],
)
def test_seq_range_with_from_after_to_is_rejected(parse: Any, low: str, high: str) -> None:
    error = _error(parse, {"query": "x", low: 5, high: 4})
    assert error.code is INVALID_FILTER
    assert error.message == f"{low} must be less than or equal to {high}"


@pytest.mark.parametrize("query", ["", "   ", "\n\t "])
def test_blank_query_is_rejected_as_invalid_query(query: str) -> None:
    error = _error(parse_session_search, {"query": query})
    assert (error.code, error.message) == (
        ErrorCode.INVALID_QUERY,
        "session-search query must contain non-whitespace text",
    )


def test_query_with_nul_is_rejected_as_invalid_query() -> None:
    error = _error(parse_event_search, {"query": "a\x00b"})
    assert error.code is ErrorCode.INVALID_QUERY
    assert error.message == "session-search query must not contain NUL characters"


def test_query_is_trimmed_and_whitespace_collapsed() -> None:
    assert parse_session_search({"query": "  failed \n\t test "}).query == "failed test"


def test_query_whitespace_is_the_ecmascript_set() -> None:
    query = "\ufefffailed\u3000test\ufeff"
    assert parse_session_search({"query": query}).query == "failed test"
    assert parse_event_search({"query": "a\x1cb \x85 c"}).query == "a\x1cb \x85 c"
    assert parse_event_search({"query": "\x1f"}).query == "\x1f"  # not blank
    error = _error(parse_session_search, {"query": "\ufeff\u2028"})
    assert error.code is ErrorCode.INVALID_QUERY


@pytest.mark.parametrize(
    "text",
    [
        "2025-01-31",
        "2025-01-31 09:30:00Z",
        "2025-01-31T09:30:00",
        "2025-01-31T09:30Z+01:00",
        "2025-01-31T09:30:00+0100",
        "2025-01-31t09:30:00z",
        "1738315800000",
    ],
)
def test_timestamp_without_t_or_offset_is_rejected_with_shape_message(text: str) -> None:
    error = _error(parse_timestamp, "time_from", text)
    assert error.code is INVALID_FILTER
    assert error.message.startswith(
        "time_from must be an ISO 8601 timestamp with Z or a numeric offset"
    )


@pytest.mark.parametrize(
    "text",
    [
        "\uff12025-01-31T09:30:00Z",
        "2025-01-31T09:30:00.\u0661\u0662\u0663Z",
        "2025-01-31T09:30:00+\u0660\u0661:00",
    ],
)
def test_timestamp_with_non_ascii_digits_is_rejected_with_shape_message(text: str) -> None:
    error = _error(parse_timestamp, "time_to", text)
    assert error.code is INVALID_FILTER
    assert error.message.startswith(
        "time_to must be an ISO 8601 timestamp with Z or a numeric offset"
    )


@pytest.mark.parametrize(
    "text",
    [
        "2025-02-30T00:00:00Z",
        "2025-13-01T00:00:00Z",
        "2025-01-01T24:00:00Z",
        "2025-01-01T00:60:00Z",
        "2025-01-01T00:00:60Z",
        "2025-01-01T00:00:00+24:00",
        "2025-01-01T00:00:00+01:60",
    ],
)
def test_impossible_timestamp_is_rejected_with_validity_message(text: str) -> None:
    error = _error(parse_timestamp, "created_at_to", text)
    assert error.code is INVALID_FILTER
    assert error.message == f"created_at_to must be a valid ISO 8601 timestamp, not {text!r}"


def test_timestamp_offsets_and_optional_seconds_convert_to_epoch_ms() -> None:
    base = int(datetime(2025, 1, 31, 9, 30, tzinfo=UTC).timestamp() * 1000)
    assert parse_timestamp("t", "2025-01-31T09:30Z").ceil_ms == base
    assert parse_timestamp("t", "2025-01-31T10:30:00+01:00").ceil_ms == base
    assert parse_timestamp("t", "2025-01-31T04:00:00-05:30").ceil_ms == base
    assert parse_timestamp("t", "2025-01-31T09:30:00.25Z").floor_ms == base + 250


def test_a_timestamp_with_thousands_of_fraction_digits_is_a_typed_filter_error() -> None:
    text = "2025-01-31T09:30:00." + "1" * 5000 + "Z"
    error = _error(parse_event_search, {"query": "x", "time_from": text})
    assert error.code is INVALID_FILTER
    assert error.message == (
        f"time_from must be an ISO 8601 timestamp of at most {MAX_TIMESTAMP_CHARS} characters"
    )
    assert len(error.message) < 100


def test_a_long_fraction_within_the_length_bound_is_exact() -> None:
    digits = "9" * (MAX_TIMESTAMP_CHARS - len("2025-01-31T09:30:00.Z"))
    bound = parse_timestamp("t", f"2025-01-31T09:30:00.{digits}Z")
    base = parse_timestamp("t", "2025-01-31T09:30:00Z").floor_ms
    assert (bound.floor_ms, bound.ceil_ms) == (base + 999, base + 1000)


def test_a_seq_with_hundreds_of_digits_is_a_typed_filter_error() -> None:
    error = _error(parse_event_read, {"seq": 10**5000})
    assert error.code is INVALID_FILTER
    assert (
        error.message
        == "seq must be a non-negative safe integer, not an integer of more than 32 digits"
    )


def test_sub_millisecond_digits_raise_the_lower_bound_and_keep_the_upper() -> None:
    bound = parse_timestamp("t", "2025-01-31T09:30:00.1234Z")
    whole = parse_timestamp("t", "2025-01-31T09:30:00.1230000Z")
    assert bound.ceil_ms == whole.ceil_ms + 1
    assert bound.floor_ms == whole.floor_ms
    assert whole.ceil_ms == whole.floor_ms


def test_time_range_from_after_to_is_rejected_comparing_sub_millisecond_digits() -> None:
    error = _error(
        parse_event_search,
        {
            "query": "x",
            "time_from": "2025-01-31T09:30:00.0009Z",
            "time_to": "2025-01-31T09:30:00.0005Z",
        },
    )
    assert error.code is INVALID_FILTER
    assert error.message == "time_from must be earlier than or equal to time_to"


def test_time_range_inside_one_millisecond_matches_nothing_instead_of_failing() -> None:
    args = parse_event_search(
        {
            "query": "x",
            "time_from": "2025-01-31T09:30:00.0005Z",
            "time_to": "2025-01-31T09:30:00.0009Z",
        }
    )
    assert args.empty
    assert not any(isinstance(f, TimeBetween) for f in args.other_filters)


def test_session_search_arguments_map_to_service_filters() -> None:
    args = parse_session_search(
        {
            "query": "deploy",
            "session_ids": ["a", "b"],
            "created_at_from": "2025-01-01T00:00:00Z",
            "parent_session_ids": ["p", "q", "p"],
            "include_root_sessions": True,
            "availability": ["live"],
            "event_seq_from": 2,
            "event_time_to": "2025-01-02T00:00:00Z",
            "event_types": ["user/message"],
            "event_surfaces": ["current"],
        }
    )
    day = int(datetime(2025, 1, 1, tzinfo=UTC).timestamp() * 1000)
    assert args.session_filters == (
        IdIn(("a", "b")),
        CreatedBetween(day, None),
        AvailabilityIn(("live",)),
    )
    assert args.parent_ids == ("p", "q")
    assert args.include_root_sessions
    assert args.event_filters == (
        SeqBetween(2, None),
        TimeBetween(None, day + 86_400_000),
        TypeIn(("user/message",)),
        SurfaceIn(("current",)),
    )
    assert not args.empty


def test_event_read_defaults_before_and_after_to_zero() -> None:
    args = parse_event_read({"seq": 4})
    assert (args.session_id, args.seq, args.before, args.after) == (None, 4, 0, 0)


def test_session_id_with_control_characters_is_an_argument_error() -> None:
    error = _error(parse_trace, {"session_id": "a\nb"})
    assert error.code is INVALID_ARGUMENTS
    assert "session_id" in error.message


def test_empty_session_id_is_an_argument_error() -> None:
    assert _error(parse_trace, {"session_id": ""}).code is INVALID_ARGUMENTS


def test_trace_accepts_no_arguments() -> None:
    assert parse_trace({}).session_id is None


@given(st.integers(min_value=0, max_value=MAX_SAFE_INTEGER))
def test_every_safe_non_negative_integer_is_accepted_as_seq(seq: int) -> None:
    assert parse_event_trace({"seq": seq}).seq == seq


@given(
    st.one_of(
        st.text(), st.booleans(), st.floats(allow_nan=False), st.none(), st.lists(st.integers())
    )
)
def test_no_non_integer_json_value_is_accepted_as_seq(value: object) -> None:
    assert _error(parse_event_trace, {"seq": value}).code is INVALID_ARGUMENTS


@given(
    st.datetimes(
        min_value=datetime(1971, 1, 1),  # noqa: DTZ001 - hypothesis bounds are naive
        max_value=datetime(9998, 1, 1),  # noqa: DTZ001
        timezones=st.just(UTC),
    )
)
def test_utc_timestamps_round_trip_to_their_epoch_milliseconds(moment: datetime) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    bound = parse_timestamp("t", text)
    exact_us = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    assert bound.floor_ms == exact_us // 1000
    assert bound.ceil_ms == -(-exact_us // 1000)
