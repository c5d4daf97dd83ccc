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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.query.cancel import CancelToken
from sessionquery.redact import SECRET_NAME
from sessionquery.sources.registry import environment_variables

if TYPE_CHECKING:
    from postgres_support import PostgresServer

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
    kept = {"HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "SESSIONQUERY_HOME"}
    for name in environment_variables() - kept:
        monkeypatch.delenv(name, raising=False)  # CODEX_HOME, GEMINI_CLI_HOME, ...
    # The command line masks the values of secret-looking variables (issue 26): a machine's
    # own tokens must not change what a test sees.
    monkeypatch.delenv("SESSIONQUERY_SECRETS", raising=False)
    for name in list(os.environ):
        if SECRET_NAME.fullmatch(name):
            monkeypatch.delenv(name)


# --- PostgreSQL backend ------------------------------------------------------------------------
# One throwaway cluster per test session (see postgres_support); every test that asks for
# ``postgres_dsn`` gets a fresh, empty schema on it (the DSN sets ``search_path``). No server
# means a loud failure, never a skip.


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The PostgreSQL server of this test session."""
    from postgres_support import running_server

    with running_server() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """The DSN of a fresh, empty schema, dropped after the test."""
    dsn = postgres_server.new_schema()
    yield dsn
    postgres_server.drop_schema(dsn)


# --- backend parametrisation -------------------------------------------------------------------
# Contract suites ask for ``storage`` and run once per backend: the embedded default (JSONL
# store + SQLite index) and PostgreSQL (PostgresPersistence + PostgresSearch, one schema per
# test). A test about one backend's own files is marked ``@pytest.mark.one_backend("sqlite")``.

BACKENDS = ("sqlite", "postgres")


@dataclass
class Storage:
    """A persistence and a factory of search indexes over it, for one backend."""

    backend: str
    persistence: Any
    root: Path
    dsn: str | None = None

    def search(self, name: str = "index") -> Any:
        """A new search index of this backend (SQLite: ``<root>/<name>.sqlite``)."""
        if self.dsn is None:
            from sessionquery.search.sqlite import SqliteSearch

            return SqliteSearch(self.root / f"{name}.sqlite")
        from sessionquery.search.postgres import PostgresSearch

        return PostgresSearch(self.dsn)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that uses ``storage`` over the backends."""
    if "storage_backend" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("one_backend")
        metafunc.parametrize("storage_backend", list(only.args) if only else list(BACKENDS))


@pytest.fixture
def storage(
    storage_backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Storage]:
    """The persistence of one backend (see :data:`BACKENDS`), closed after the test."""
    if storage_backend == "sqlite":
        from sessionquery.persistence.jsonl import JsonlPersistence

        yield Storage("sqlite", JsonlPersistence(tmp_path / "store"), tmp_path)
        return
    from sessionquery.persistence.postgres import PostgresPersistence

    dsn = request.getfixturevalue("postgres_dsn")
    persistence = PostgresPersistence(dsn)
    try:
        yield Storage("postgres", persistence, tmp_path, dsn)
    finally:
        persistence.close()


class CpuDeadline(CancelToken):
    """A deadline in the CPU time of the thread that checks it: it expires once that thread
    has used ``seconds`` of CPU from now, and ``deadline`` reads as the wall-clock moment that
    would be, so code that plans by the time left sees the CPU left. A test asserting "this
    fits in half a second" with it holds on a machine at load 16, where the wall clock would
    give the work a tenth of a core. Use it only where the work runs in the calling thread.
    """

    __slots__ = ("_cpu_end",)

    def __init__(self, seconds: float) -> None:
        self._cpu_end = time.thread_time() + seconds
        super().__init__(None)

    @property
    def deadline(self) -> float | None:
        return time.monotonic() + (self._cpu_end - time.thread_time())

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        del value  # CancelToken.__init__ sets it; the CPU clock decides

    @property
    def expired(self) -> bool:
        return self.cancelled or time.thread_time() >= self._cpu_end


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
