"""The search request step shared by the SQLite and PostgreSQL backends."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import raises_code
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query import CwdIn, TextContains, TypeIn
from sessionquery.search.request import (
    event_request,
    normalize_query,
    session_request,
    validate_limit,
)

LIMITS: dict[str, Any] = {"default_limit": 20, "max_limit": 100}


def test_a_session_request_is_normalised_and_bound_to_its_mode() -> None:
    phrase = session_request("  flaky   test ", "phrase", [CwdIn(("/w",))], [], None, **LIMITS)
    words = session_request("flaky test", "words", [CwdIn(("/w",))], [], None, **LIMITS)
    assert (phrase.text, phrase.mode, phrase.page_size) == ("flaky test", "phrase", 20)
    assert phrase.session_filters == (CwdIn(("/w",)),)
    assert phrase.fingerprint != words.fingerprint


def test_an_event_request_is_bound_to_its_session() -> None:
    one = event_request("a", "word", "phrase", [TypeIn(("user/message",))], 5, **LIMITS)
    other = event_request("b", "word", "phrase", [TypeIn(("user/message",))], 5, **LIMITS)
    assert one.page_size == 5 and one.session_filters == ()
    assert one.fingerprint != other.fingerprint


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda: session_request("", "phrase", [], [], None, **LIMITS), ErrorCode.INVALID_QUERY),
        (lambda: session_request("q", "Words", [], [], None, **LIMITS), ErrorCode.INVALID_QUERY),
        (lambda: session_request("q", "phrase", [], [], 0, **LIMITS), ErrorCode.INVALID_LIMIT),
        (
            lambda: session_request("q", "phrase", [], [TextContains("x")], None, **LIMITS),
            ErrorCode.INVALID_FILTER,
        ),
        (lambda: event_request(7, "q", "phrase", [], None, **LIMITS), ErrorCode.INVALID_FILTER),
    ],
)
def test_bad_requests_are_refused_with_their_code(call: object, code: ErrorCode) -> None:
    assert callable(call)
    with raises_code(code):
        call()


def test_queries_are_trimmed_and_whitespace_collapsed() -> None:
    assert normalize_query("  failed \t\n  test  ") == "failed test"


def test_query_whitespace_is_the_ecmascript_set() -> None:
    assert normalize_query("\ufefffailed\ufeff\u3000test") == "failed test"
    assert normalize_query("a\x1c\x85b") == "a\x1c\x85b"
    with pytest.raises(SessionQueryError) as caught:
        normalize_query("\ufeff")
    assert caught.value.code is ErrorCode.INVALID_QUERY


@pytest.mark.parametrize("query", ["", "   \n\t", "a\x00b", None, 5, b"bytes"])
def test_empty_nul_and_non_string_queries_are_invalid(query: object) -> None:
    with pytest.raises(SessionQueryError) as caught:
        normalize_query(query)
    assert caught.value.code is ErrorCode.INVALID_QUERY


def test_queries_up_to_one_mebibyte_are_accepted_and_longer_ones_refused() -> None:
    assert len(normalize_query("a" * (1 << 20))) == 1 << 20
    with pytest.raises(SessionQueryError) as caught:
        normalize_query("é" * (1 << 19) + "x")
    assert caught.value.code is ErrorCode.INVALID_QUERY


@pytest.mark.parametrize("limit", [0, -1, 101, 1.5, True, "5"])
def test_limits_outside_one_to_max_are_invalid(limit: object) -> None:
    with pytest.raises(SessionQueryError) as caught:
        validate_limit(limit, 20, 100)
    assert caught.value.code is ErrorCode.INVALID_LIMIT


def test_a_missing_limit_means_the_default() -> None:
    assert validate_limit(None, 20, 100) == 20
    assert validate_limit(100, 20, 100) == 100
