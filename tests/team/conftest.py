"""A team database per test: a fresh schema set up by the superuser with ``team init``, and
login roles of its own (roles are cluster-wide, so each test's names are unique)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from postgres_support import PostgresServer
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch
from sessionquery.team import grant, init_team
from team_support import Machine, make_machines, role_name


@dataclass
class TeamDb:
    """The team database of one test."""

    owner_dsn: str
    roles: dict[str, str] = field(default_factory=dict)

    def dsn(self, role: str | None = None) -> str:
        """The DSN of the database, connecting as ``role`` (a short name) or the owner."""
        params = conninfo_to_dict(self.owner_dsn)
        if role is not None:
            params["user"] = self.roles[role]
        return make_conninfo("", **params)

    def role(self, short: str) -> str:
        """A new login role (its real, unique name)."""
        name = role_name(short)
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        self.roles[short] = name
        return name

    def grant(self, short: str, workspace: str, *, push: bool = False) -> None:
        with psycopg.connect(self.owner_dsn, autocommit=True) as conn:
            grant(conn, self.roles[short], workspace, push=push)

    def rows(self, sql_text: str, role: str | None = None) -> list[tuple[object, ...]]:
        with psycopg.connect(self.dsn(role), autocommit=True) as conn:
            return conn.execute(sql_text).fetchall()


@pytest.fixture
def team_db(postgres_dsn: str) -> Iterator[TeamDb]:
    PostgresPersistence(postgres_dsn).close()
    PostgresSearch(postgres_dsn).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        setup = init_team(conn)
    assert setup.leakproof  # the tests' owner is a superuser
    yield TeamDb(postgres_dsn)


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Machine, Machine]:
    return make_machines(tmp_path / "machines")


__all__ = ["PostgresServer", "TeamDb"]
