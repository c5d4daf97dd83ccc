"""The error sanitizer between the tools and the query service (reference contract §6.8)."""

from __future__ import annotations

import logging
import time

import pytest

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.query.cancel import CancelToken
from sessionquery.tools.boundary import (
    BUSY_MESSAGE,
    INDEX_BUILDING_MESSAGE,
    SANITIZED_MESSAGES,
    SEARCH_TIMEOUT_MESSAGE,
    TOOL_FAILED_MESSAGE,
    DeadlineToken,
    ServiceBoundary,
    sanitize,
)

SECRET = "/home/alice/.sessions/secret-id.jsonl line 4: SELECT * FROM events"


def _fail(exc: BaseException) -> object:
    raise exc


@pytest.mark.parametrize("code", sorted(SANITIZED_MESSAGES))
def test_service_error_keeps_its_code_with_a_fixed_detail_free_message(code: ErrorCode) -> None:
    safe = sanitize(SessionQueryError(code, SECRET))
    assert safe.code is code
    assert safe.message == SANITIZED_MESSAGES[code]
    assert "alice" not in str(safe)


@pytest.mark.parametrize("code", [ErrorCode.INVALID_CONFIG, ErrorCode.SOURCE_CONFLICT])
def test_deployment_errors_become_the_generic_tool_failure(code: ErrorCode) -> None:
    safe = sanitize(SessionQueryError(code, SECRET))
    assert (safe.code, safe.message) == (ToolErrorCode.FAILED, TOOL_FAILED_MESSAGE)


def test_foreign_exceptions_become_the_generic_tool_failure() -> None:
    for exc in (OSError(2, "No such file", "/secret/path"), KeyError("x"), RuntimeError(SECRET)):
        assert sanitize(exc).code is ToolErrorCode.FAILED


def test_unauthorized_stays_unauthorized_with_the_fixed_message() -> None:
    safe = sanitize(SessionQueryError(ToolErrorCode.UNAUTHORIZED, SECRET))
    assert safe.code is ToolErrorCode.UNAUTHORIZED
    assert "alice" not in safe.message


def test_every_error_code_except_deployment_ones_has_a_sanitized_message() -> None:
    missing = set(ErrorCode) - set(SANITIZED_MESSAGES)
    assert missing == {ErrorCode.INVALID_CONFIG, ErrorCode.SOURCE_CONFLICT}


def test_busy_is_a_retryable_fixed_try_again_sentence() -> None:
    safe = sanitize(SessionQueryError(ErrorCode.BUSY, SECRET, context={"path": SECRET}))
    assert (safe.code, safe.message) == (ErrorCode.BUSY, BUSY_MESSAGE)
    assert safe.message.endswith("try again shortly")
    assert safe.retryable
    assert dict(safe.context) == {}


def test_index_building_says_how_far_the_build_is_and_to_try_again() -> None:
    context = {"sessions_indexed": 120, "sessions_total": 4000, "path": SECRET}
    safe = sanitize(SessionQueryError(ErrorCode.INDEX_BUILDING, SECRET, context=context))
    assert safe.code is ErrorCode.INDEX_BUILDING
    assert safe.message == (
        "the history index is still being built: 120 of 4000 sessions; try again shortly"
    )
    assert dict(safe.context) == {"sessions_indexed": 120, "sessions_total": 4000}
    assert safe.retryable


@pytest.mark.parametrize(
    "context",
    [
        {},
        {"sessions_indexed": 5},
        {"sessions_indexed": "5", "sessions_total": "9"},
        {"sessions_indexed": True, "sessions_total": 9},
        {"sessions_indexed": 10, "sessions_total": 9},
        {"sessions_indexed": -1, "sessions_total": 9},
        {"sessions_indexed": SECRET, "sessions_total": SECRET},
    ],
)
def test_index_building_without_sane_counts_is_the_fixed_sentence(
    context: dict[str, object],
) -> None:
    safe = sanitize(SessionQueryError(ErrorCode.INDEX_BUILDING, SECRET, context=context))
    assert (safe.code, safe.message) == (ErrorCode.INDEX_BUILDING, INDEX_BUILDING_MESSAGE)
    assert "alice" not in str(safe)


def test_boundary_logs_the_full_diagnostic_and_raises_a_cause_free_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    boundary = ServiceBoundary(None, None)
    with caplog.at_level(logging.WARNING, logger="sessionquery.tools.boundary"):
        with pytest.raises(SessionQueryError) as info:
            boundary.run(lambda _t: _fail(SessionQueryError(ErrorCode.CORRUPT_SESSION, SECRET)))
    assert info.value.code is ErrorCode.CORRUPT_SESSION
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
    assert SECRET in caplog.text


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.INDEX_BUILDING,
        ErrorCode.BUSY,
        ErrorCode.EVENT_NOT_FOUND,
        ErrorCode.SEARCH_DISABLED,
    ],
)
def test_an_expected_outcome_is_one_info_line_without_a_stack(
    caplog: pytest.LogCaptureFixture, code: ErrorCode
) -> None:
    boundary = ServiceBoundary(None, None)
    with caplog.at_level(logging.DEBUG, logger="sessionquery.tools.boundary"):
        with pytest.raises(SessionQueryError) as info:
            boundary.run(lambda _t: _fail(SessionQueryError(code, "still\nbuilding")))
    assert info.value.code is code
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.exc_info is None
    assert record.getMessage() == f"session query call answered {code.value} (still building)"


def test_the_tools_own_search_deadline_is_logged_without_a_stack(
    caplog: pytest.LogCaptureFixture,
) -> None:
    expired = CancelToken()
    expired.cancel()
    boundary = ServiceBoundary(None, DeadlineToken(60_000, expired))
    with caplog.at_level(logging.DEBUG, logger="sessionquery.tools.boundary"):
        with pytest.raises(SessionQueryError) as info:
            boundary.run(lambda t: _fail(SessionQueryError(ErrorCode.ABORTED, "deadline")))
    assert info.value.message == SEARCH_TIMEOUT_MESSAGE
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.INFO, None)]


def test_boundary_passes_the_token_and_returns_the_result() -> None:
    token = CancelToken()
    assert ServiceBoundary(token, token).run(lambda t: t) is token


def test_caller_cancellation_during_the_call_is_reraised_unchanged() -> None:
    cancel = CancelToken()
    original = SessionQueryError(ErrorCode.ABORTED, "session query was aborted (cancelled)")

    def cancelled_call(_token: CancelToken | None) -> object:
        cancel.cancel()
        raise original

    with pytest.raises(SessionQueryError) as info:
        ServiceBoundary(cancel, cancel).run(cancelled_call)
    assert info.value is original


def test_caller_cancellation_wins_over_an_unrelated_failure() -> None:
    cancel = CancelToken()

    def call(_token: CancelToken | None) -> object:
        cancel.cancel()
        raise RuntimeError(SECRET)

    with pytest.raises(SessionQueryError) as info:
        ServiceBoundary(cancel, cancel).run(call)
    assert info.value.code is ErrorCode.ABORTED


def test_already_cancelled_caller_token_stops_before_the_call() -> None:
    cancel = CancelToken()
    cancel.cancel()
    calls: list[object] = []
    with pytest.raises(SessionQueryError) as info:
        ServiceBoundary(cancel, cancel).run(calls.append)
    assert info.value.code is ErrorCode.ABORTED
    assert calls == []


def test_expired_search_deadline_is_reported_as_a_timeout_the_model_can_act_on() -> None:
    token = DeadlineToken(1)
    deadline = time.monotonic() + 5
    while not token.expired and time.monotonic() < deadline:
        pass
    with pytest.raises(SessionQueryError) as info:
        ServiceBoundary(None, token).run(lambda t: t.check() if t else None)
    assert (info.value.code, info.value.message) == (ErrorCode.ABORTED, SEARCH_TIMEOUT_MESSAGE)


def test_deadline_token_follows_its_parent_and_takes_the_earlier_deadline() -> None:
    parent = CancelToken(deadline=time.monotonic() + 1)
    token = DeadlineToken(60_000, parent)
    assert token.deadline == parent.deadline
    assert not token.expired
    parent.cancel()
    assert token.expired
    assert not DeadlineToken(60_000).expired


def test_a_sooner_token_of_a_deadline_token_still_follows_the_callers_cancellation() -> None:
    caller = CancelToken()
    token = DeadlineToken(60_000, caller)
    sooner = token.sooner(30)
    assert token.deadline is not None and sooner.deadline == token.deadline - 30
    assert not sooner.expired and not sooner.cancelled
    caller.cancel()  # e.g. the MCP client cancelled the request
    assert sooner.expired and sooner.cancelled and token.cancelled
    with pytest.raises(SessionQueryError) as info:
        sooner.check()
    assert info.value.code is ErrorCode.ABORTED


def test_a_sooner_token_shares_its_own_cancellation() -> None:
    token = DeadlineToken(60_000)
    sooner = token.sooner(1)
    token.cancel()
    assert sooner.cancelled and sooner.expired
    assert DeadlineToken(60_000).sooner(10**9).expired  # its deadline is long past
