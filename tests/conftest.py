"""Shared pytest setup: an isolated environment per test, hypothesis profiles, and helpers.

``raises_code`` (import it with ``from conftest import raises_code``) asserts that a block
raises a ``SessionQueryError`` with a given code, as STYLE rule 6 asks: tests branch on
``exc.code``, never on message text.

Profiles (select with ``HYPOTHESIS_PROFILE``): ``ci`` (the default, modest example counts so
the suite stays fast) and ``long`` (thorough, for a manual deep run).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode

settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_report_header() -> list[str]:
    """Print the SQLite library version: FTS5 behaviour depends on it."""
    return [f"sqlite: {sqlite3.sqlite_version}"]


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point every home/config location at fresh temporary directories.

    The library must never read the environment itself, but the CLI and MCP entry points do;
    no test may touch the developer's real home or session store.
    """
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("SESSIONQUERY_HOME", str(tmp_path_factory.mktemp("sessionquery_home")))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(Path(home) / name.lower()))


@contextmanager
def raises_code(
    code: ErrorCode | ToolErrorCode, **context: object
) -> Iterator[pytest.ExceptionInfo[SessionQueryError]]:
    """Assert that the block raises a ``SessionQueryError`` with ``code``.

    Each keyword is an item the error's ``context`` must hold. The yielded ``ExceptionInfo``
    lets the test look further at the error after the block.
    """
    with pytest.raises(SessionQueryError) as caught:
        yield caught
    error = caught.value
    assert error.code is code, f"expected {code.value}, got {error!r}"
    for key, value in context.items():
        assert key in error.context, f"{error!r} has no context item {key!r}"
        assert error.context[key] == value, f"context {key!r} of {error!r}"
