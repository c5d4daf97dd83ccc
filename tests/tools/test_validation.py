"""Checking raw tool arguments against the schemas (sessionquery.tools.validation)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.errors import SessionQueryError, ToolErrorCode
from sessionquery.tools.schemas import integer, object_schema, string, strings
from sessionquery.tools.specs import input_schema
from sessionquery.tools.validation import (
    MAX_INTEGER_DIGITS,
    MAX_JSON_DEPTH,
    _nesting_depth,  # pyright: ignore[reportPrivateUsage]
    check_arguments,
    describe_value,
    parse_arguments,
)

INVALID_ARGUMENTS = ToolErrorCode.INVALID_ARGUMENTS


def _error(call: Any, *args: Any) -> SessionQueryError:
    with pytest.raises(SessionQueryError) as info:
        call(*args)
    return info.value


def _check(tool: str, arguments: dict[Any, Any]) -> dict[str, Any]:
    return check_arguments(tool, input_schema(tool), arguments)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("[1]", "arguments must be a JSON object, not array"),
        ("{not json", "arguments must be a JSON object; the text is not valid JSON"),
        ('{"seq": NaN}', "arguments must be a JSON object; the text is not valid JSON"),
        (42, "arguments must be a JSON object, not integer"),
        ({1: "x"}, "argument names must be strings, not integer"),
    ],
)
def test_raw_arguments_must_be_a_json_object(raw: object, message: str) -> None:
    error = _error(parse_arguments, raw)
    assert (error.code, error.message) == (INVALID_ARGUMENTS, message)


def test_json_text_arguments_parse_like_a_mapping() -> None:
    assert parse_arguments('{"seq": 3, "session_id": "s"}') == {"seq": 3, "session_id": "s"}
    assert parse_arguments("") == {}


def test_json_text_float_is_not_accepted_as_an_integer() -> None:
    arguments = parse_arguments('{"seq": 3.0}')
    assert _error(_check, "session_event_read", arguments).code is INVALID_ARGUMENTS


@pytest.mark.parametrize("depth", [1000, 100_000])
@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_json_text_nested_a_thousand_levels_or_more_is_an_argument_error(
    depth: int, opener: str
) -> None:
    closer = "]" if opener == "[" else "}"
    text = '{"seq": ' + opener * depth + "1" + closer * depth + "}"
    error = _error(parse_arguments, text)
    assert (error.code, error.message) == (
        INVALID_ARGUMENTS,
        f"arguments must be a JSON object nested at most {MAX_JSON_DEPTH} levels deep",
    )


def test_json_text_nested_within_the_bound_parses_and_brackets_in_strings_do_not_count() -> None:
    nested = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    assert parse_arguments('{"x": ' + nested + "}")["x"] is not None
    brackets = "[" * 5000
    assert parse_arguments('{"query": "' + brackets + '\\" {"}') == {"query": brackets + '" {'}


@pytest.mark.parametrize(
    "text",
    ['"' + '\\"' * 200_000, '{"q": "' + '\\"' * 200_000, '"' * 400_000, "][" * 200_000],
    ids=["unterminated-escapes", "unterminated-string", "quotes", "brackets"],
)
def test_hostile_quotes_and_brackets_are_refused_in_linear_time(text: str) -> None:
    started = time.monotonic()
    error = _error(parse_arguments, text)
    assert error.code is INVALID_ARGUMENTS
    assert time.monotonic() - started < 20  # quadratic scanning would take hours


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@given(
    st.recursive(
        st.text(alphabet='[]{}"\\ax'),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text('[]{}"\\'), inner, max_size=3)
        ),
        max_leaves=30,
    )
)
def test_nesting_is_counted_outside_string_literals(value: object) -> None:
    text = json.dumps(value)
    assert _nesting_depth(text) == _depth(value)
    assert _nesting_depth(json.dumps(value, ensure_ascii=False)) == _depth(value)


def test_json_text_with_an_integer_of_thousands_of_digits_is_an_argument_error() -> None:
    error = _error(parse_arguments, '{"seq": ' + "9" * 5000 + "}")
    assert (error.code, error.message) == (
        INVALID_ARGUMENTS,
        f"argument numbers must have at most {MAX_INTEGER_DIGITS} digits",
    )
    assert parse_arguments('{"seq": -' + "9" * MAX_INTEGER_DIGITS + "}")["seq"] < 0


def test_a_huge_integer_is_described_without_printing_it() -> None:
    assert describe_value(10**5000) == f"integer of more than {MAX_INTEGER_DIGITS} digits"
    assert describe_value(-7) == "integer -7"
    assert describe_value(True) == "boolean true"
    assert describe_value(1.5) == "number 1.5"
    error = _error(_check, "session_search", {"query": 10**5000})
    assert (
        error.message
        == f"query must be a string, not integer of more than {MAX_INTEGER_DIGITS} digits"
    )


def test_an_unknown_argument_name_is_quoted_only_in_part() -> None:
    error = _error(_check, "session_trace", {"x" * 10_000: 1})
    assert error.code is INVALID_ARGUMENTS
    assert len(error.message) < 200


@given(
    st.recursive(
        st.integers(min_value=-(10**30), max_value=10**30) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=20,
    )
)
def test_json_text_within_the_bounds_round_trips(value: object) -> None:
    text = json.dumps({"value": value})
    assert parse_arguments(text) == {"value": value}


def test_an_optional_argument_sent_as_null_counts_as_omitted() -> None:
    arguments = {"seq": 3, "session_id": None, "before": None, "after": 2}
    assert _check("session_event_read", arguments) == {"seq": 3, "after": 2}
    assert _check("session_trace", {"session_id": None}) == {}


def test_a_required_argument_sent_as_null_is_refused_by_name() -> None:
    error = _error(_check, "session_event_read", {"seq": None})
    assert (error.code, error.message) == (INVALID_ARGUMENTS, "seq must be an integer, not null")


_ENUM_SCHEMA = object_schema(
    {
        "mode": string("A mode.", ["relevance", "phrase"]),
        "kinds": strings("Kinds.", ["a", "b"]),
        "n": integer("A count.", minimum=0),
    }
)


def test_a_string_property_with_an_enum_accepts_only_its_values() -> None:
    assert check_arguments("t", _ENUM_SCHEMA, {"mode": "phrase"}) == {"mode": "phrase"}
    error = _error(check_arguments, "t", _ENUM_SCHEMA, {"mode": "fuzzy"})
    assert (error.code, error.message) == (
        INVALID_ARGUMENTS,
        "mode must be one of relevance, phrase, not 'fuzzy'",
    )
    error = _error(check_arguments, "t", _ENUM_SCHEMA, {"kinds": ["a", "c"]})
    assert error.message == "kinds[1] must be one of a, b, not 'c'"
    assert check_arguments("t", _ENUM_SCHEMA, {"mode": None}) == {}
