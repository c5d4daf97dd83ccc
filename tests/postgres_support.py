"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` into a temporary
directory, listening on a unix socket only, trust authentication.

``SESSIONQUERY_TEST_POSTGRES_DSN`` points the tests at an existing server instead (each test
still gets a database of its own, so the role needs ``CREATEDB``). Without either, the tests
that need PostgreSQL fail with a message saying what to install; they never skip.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["PostgresServer", "find_bindir", "running_server"]

ENV_DSN = "SESSIONQUERY_TEST_POSTGRES_DSN"
ENV_BINDIR = "SESSIONQUERY_TEST_POSTGRES_BIN"
_START_TIMEOUT_SECONDS = 60


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries were found and no test server was named."""


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest installed version)."""
    named = os.environ.get(ENV_BINDIR)
    candidates = [named] if named else []
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True
    )
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(out.stdout.strip())
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise PostgresUnavailable(
        "the PostgreSQL tests need a server: install PostgreSQL (Debian: apt-get install -y "
        f"postgresql), set {ENV_BINDIR} to its bin directory, or set {ENV_DSN} to a server "
        "whose role may CREATE DATABASE"
    )


class PostgresServer:
    """A server the tests may create databases on."""

    def __init__(self, admin_dsn: str) -> None:
        self.admin_dsn = admin_dsn
        self._names = itertools.count(1)
        self._prefix = f"sqtest_{os.getpid()}_"
        self._shared: str | None = None

    def new_schema(self) -> str:
        """Create an empty schema in the shared test database; return a DSN that uses it."""
        name = f"t{next(self._names)}"
        if self._shared is None:
            self._shared = self.new_database()
        with psycopg.connect(self._shared, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        params = conninfo_to_dict(self._shared)
        params["options"] = f"-c search_path={name}"
        return make_conninfo("", **params)

    def drop_schema(self, dsn: str) -> None:
        """Drop a schema made by :meth:`new_schema` with everything in it."""
        name = str(conninfo_to_dict(dsn)["options"]).rpartition("=")[2]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')

    def new_database(self) -> str:
        """Create an empty database and return its DSN."""
        name = f"{self._prefix}{next(self._names)}"
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')
        params = conninfo_to_dict(self.admin_dsn)
        params["dbname"] = name
        return make_conninfo("", **params)

    def close(self) -> None:
        """Drop the shared database of :meth:`new_schema`, if one was made."""
        if self._shared is not None:
            self.drop_database(self._shared)
            self._shared = None

    def drop_database(self, dsn: str) -> None:
        """Drop a database made by :meth:`new_database` (its connections are terminated)."""
        name = conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_postgres_user() -> tuple[int, int] | None:
    """``(uid, gid)`` to run the server as when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root needs a 'postgres' system user to run the test server"
        ) from None
    return entry.pw_uid, entry.pw_gid


def _run(command: list[str], user: tuple[int, int] | None) -> None:
    uid, gid = (None, None) if user is None else user
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        timeout=_START_TIMEOUT_SECONDS,
        env={**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
        user=uid,
        group=gid,
        extra_groups=None if user is None else [],
    )
    if result.returncode != 0:
        raise PostgresUnavailable(
            f"{' '.join(command)} failed ({result.returncode}): {result.stderr or result.stdout}"
        )


@contextmanager
def running_server() -> Iterator[PostgresServer]:
    """A server for this test session: the named one, or a fresh throwaway cluster."""
    named = os.environ.get(ENV_DSN)
    if named:
        server = PostgresServer(named)
        try:
            yield server
        finally:
            server.close()
        return
    bindir = find_bindir()
    user = _as_postgres_user()
    base = Path(tempfile.mkdtemp(prefix="sessionquery-pg-"))
    data, sockets = base / "data", base / "run"
    sockets.mkdir()
    if user is not None:
        os.chown(base, *user)
        os.chown(sockets, *user)
    try:
        _run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
            user,
        )
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{sockets}' -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        _run(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(base / "log"),
                "-w",
                "-t",
                str(_START_TIMEOUT_SECONDS),
                "start",
            ],
            user,
        )
        try:
            yield PostgresServer(
                make_conninfo("", host=str(sockets), dbname="postgres", user="postgres")
            )
        finally:
            _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], user)
    finally:
        shutil.rmtree(base, ignore_errors=True)
