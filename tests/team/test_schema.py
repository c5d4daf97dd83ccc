"""``init_team``, ``grant``, ``revoke``, ``members``: set-up and its refusals (a real server)."""

from __future__ import annotations

import psycopg
import pytest

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch
from sessionquery.team import grant, init_team, is_team, members, revoke
from team.conftest import TeamDb


def _policies(db: TeamDb) -> list[tuple[object, ...]]:
    return db.rows(
        "SELECT tablename, policyname, cmd, qual, with_check FROM pg_policies "
        "WHERE schemaname = current_schema() ORDER BY 1, 2"
    )


def test_setting_a_team_database_up_again_changes_nothing(team_db: TeamDb) -> None:
    before = _policies(team_db)
    with psycopg.connect(team_db.dsn(), autocommit=True) as conn:
        again = init_team(conn)
        assert is_team(conn)
    assert again.created_roles == () and not again.emptied_index
    assert _policies(team_db) == before
    tables = {str(row[0]) for row in before}
    assert {"sq_sessions", "sq_events", "sqi_docs", "sqi_team_terms"} <= tables


def test_an_index_of_another_corpus_is_emptied_when_the_database_becomes_a_team_one(
    postgres_dsn: str,
) -> None:
    PostgresPersistence(postgres_dsn).close()
    PostgresSearch(postgres_dsn).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE sqi_state SET source = 'another corpus'")
        assert not is_team(conn)
        setup = init_team(conn)
        assert setup.emptied_index and is_team(conn)


def test_grants_need_a_team_database_and_an_existing_role(postgres_dsn: str) -> None:
    PostgresPersistence(postgres_dsn).close()
    PostgresSearch(postgres_dsn).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        with raises_code(ErrorCode.INVALID_CONFIG):
            grant(conn, "postgres", "github.com/acme/app")
        init_team(conn)
        with raises_code(ErrorCode.INVALID_CONFIG):
            grant(conn, "no_such_role_anywhere", "github.com/acme/app")
        with raises_code(ErrorCode.INVALID_CONFIG):
            grant(conn, "postgres", "  ")


def test_only_the_owner_sets_up_or_manages_grants(team_db: TeamDb) -> None:
    team_db.role("mallory")
    team_db.grant("mallory", "github.com/acme/app", push=True)
    with psycopg.connect(team_db.dsn("mallory"), autocommit=True) as conn:
        with raises_code(ErrorCode.INVALID_CONFIG):
            init_team(conn)
        with raises_code(ErrorCode.INVALID_CONFIG):
            grant(conn, team_db.roles["mallory"], "*")
        with raises_code(ErrorCode.INVALID_CONFIG):
            members(conn)


def test_pushing_roles_may_empty_the_full_text_pending_lists_and_readers_may_not(
    team_db: TeamDb,
) -> None:
    team_db.role("reader")
    team_db.grant("reader", "*")
    team_db.role("pusher")
    team_db.grant("pusher", "github.com/acme/app", push=True)
    assert team_db.rows("SELECT sq_clean_pending()", "pusher") == [(0,)]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        team_db.rows("SELECT sq_clean_pending()", "reader")


def test_members_lists_each_role_with_its_workspaces(team_db: TeamDb) -> None:
    team_db.role("rita")
    team_db.grant("rita", "github.com/acme/tools")
    team_db.grant("rita", "github.com/acme/app")
    with psycopg.connect(team_db.dsn(), autocommit=True) as conn:
        found = {member.role: member for member in members(conn)}
        rita = found[team_db.roles["rita"]]
        assert rita.workspaces == ("github.com/acme/app", "github.com/acme/tools")
        assert not rita.pushes and rita.machines == ()
        assert revoke(conn, team_db.roles["rita"], "github.com/acme/app")
        found = {member.role: member for member in members(conn)}
        assert found[team_db.roles["rita"]].workspaces == ("github.com/acme/tools",)
