"""The shared test helpers of ``conftest.py``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import raises_code
from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode


def _fail(code: ErrorCode | ToolErrorCode, **context: object) -> None:
    raise SessionQueryError(code, "boom", context=context)


def test_raises_code_passes_on_the_code_and_yields_the_error() -> None:
    with raises_code(ErrorCode.BUSY, attempt=2) as caught:
        _fail(ErrorCode.BUSY, attempt=2, extra="ignored")
    assert caught.value.message == "boom"


@pytest.mark.parametrize(
    "raise_it",
    [
        lambda: _fail(ErrorCode.INDEX_FAILED),
        lambda: _fail(ToolErrorCode.FAILED),
        lambda: _fail(ErrorCode.BUSY, attempt=3),
        lambda: _fail(ErrorCode.BUSY),
        lambda: None,
    ],
    ids=["other-code", "tool-code", "other-context", "missing-context", "nothing-raised"],
)
def test_raises_code_fails_on_another_code_context_or_no_error(
    raise_it: Callable[[], None],
) -> None:
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        with raises_code(ErrorCode.BUSY, attempt=2):
            raise_it()


def test_raises_code_lets_other_exceptions_through() -> None:
    with pytest.raises(KeyError), raises_code(ErrorCode.BUSY):
        raise KeyError("not ours")
