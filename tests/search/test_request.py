"""The search request step shared by the SQLite and PostgreSQL backends."""

from __future__ import annotations

import pytest

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.query import CwdIn, TextContains, TypeIn
from sessionquery.search.request import event_request, session_request

LIMITS = {"default_limit": 20, "max_limit": 100}


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
