"""Access in a team database: the tools' workspace rule, and row-level security for a role
granted only some workspaces, by every path (library, tools, command line, MCP, psql)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import psycopg
import pytest
from mcp import Client, StdioServerParameters

from postgres_support import find_bindir
from sessionquery import SessionQuery
from sessionquery.errors import PersistenceNotFound
from sessionquery.match_modes import SEARCH_MATCHES
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch, impact
from sessionquery.team import TeamWorkspaces, grant, members, push_sessions, revoke
from sessionquery.tools import SessionQueryTools, ToolCaller
from team.conftest import TeamDb
from team.test_push import sources_of
from team_support import APP, TOOLS, Machine, env_for

STARTUP_SECONDS = 120


@pytest.fixture
def pushed(team_db: TeamDb, machines: tuple[Machine, Machine]) -> TeamDb:
    alpha, beta = machines
    for short, machine in (("alice", alpha), ("bob", beta)):
        team_db.role(short)
        team_db.grant(short, APP, push=True)
        push_sessions(sources_of(machine), team_db.dsn(short), machine=machine.name)
    team_db.role("carol")
    team_db.grant("carol", APP)
    team_db.role("rita")
    team_db.grant("rita", TOOLS)
    return team_db


def _query(dsn: str) -> SessionQuery:
    return SessionQuery(persistence=PostgresPersistence(dsn), search=PostgresSearch(dsn))


def _ids(text: str, machines: tuple[Machine, Machine]) -> set[str]:
    return {s.id for m in machines for s in m.sessions if s.id in text}


@pytest.mark.parametrize("role", [None, "carol"])
def test_a_tool_call_in_either_checkout_finds_both_machines_sessions_of_the_repository(
    pushed: TeamDb, machines: tuple[Machine, Machine], role: str | None
) -> None:
    alpha, beta = machines
    app_root = {alpha.sessions[0].id, beta.sessions[0].id}
    for machine, checkout in ((alpha, alpha.sessions[0].cwd), (beta, beta.sessions[0].cwd)):
        rule = TeamWorkspaces(pushed.dsn(role), machine=machine.name)
        with _query(pushed.dsn(role)) as query:
            tools = SessionQueryTools(query, workspaces=rule)
            caller = ToolCaller(cwd=checkout)
            found = tools.call("session_search", {"query": "appwork"}, caller)
            assert not found.is_error, found.text
            assert _ids(found.text, machines) == app_root, machine.name
            other = tools.call(
                "session_event_read", {"session_id": alpha.sessions[1].id, "seq": 1}, caller
            )
            assert other.is_error and "outside" in other.text
            read = tools.call(
                "session_event_read", {"session_id": beta.sessions[0].id, "seq": 1}, caller
            )
            assert not read.is_error, read.text
        rule.close()


def test_a_sub_folder_of_the_repository_is_a_workspace_of_its_own(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    alpha, beta = machines
    api = beta.sessions[1]
    rule = TeamWorkspaces(pushed.dsn("carol"), machine="alpha")
    with _query(pushed.dsn("carol")) as query:
        tools = SessionQueryTools(query, workspaces=rule)
        found = tools.call(
            "session_search", {"query": "appwork"}, ToolCaller(cwd=f"{alpha.sessions[0].cwd}/api")
        )
    rule.close()
    assert _ids(found.text, machines) == {api.id}


def test_the_exact_cwd_rule_still_holds_without_the_team_rule(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    alpha = machines[0]
    with _query(pushed.dsn()) as query:
        found = SessionQueryTools(query).call(
            "session_search", {"query": "appwork"}, ToolCaller(cwd=alpha.sessions[0].cwd)
        )
    assert _ids(found.text, machines) == {alpha.sessions[0].id}


# --- a role granted only the other repository -------------------------------------------------


@pytest.mark.parametrize("walked", [False, True], ids=["ranked", "walked"])
def test_the_library_shows_a_restricted_role_only_its_workspaces(
    pushed: TeamDb,
    machines: tuple[Machine, Machine],
    walked: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if walked:  # relevance reads through the impact key (search.postgres.impact)
        monkeypatch.setattr(impact, "WALK_DOCUMENTS", 0)
        monkeypatch.setattr(impact, "RARE_DOCUMENTS", 0)
        monkeypatch.setattr(impact, "RARE_SHARE", 0.0)
        monkeypatch.setattr(impact, "DEPTHS", (1, 64))
    alpha, beta = machines
    tools_id = alpha.sessions[1].id
    store = PostgresPersistence(pushed.dsn("rita"))
    assert [entry.header.id for entry in store.list()] == [tools_id]
    assert store.stat(alpha.sessions[0].id) is None
    with pytest.raises(PersistenceNotFound):
        store.open_read(beta.sessions[0].id)
    store.close()
    with _query(pushed.dsn("rita")) as query:
        for match in SEARCH_MATCHES:
            assert query.search_sessions("appwork", match=match).items == []
        found = query.search_sessions("linter", match="relevance").items
        assert [hit.record.id for hit in found] == [tools_id]
        assert [record.id for record in query.list_page().items] == [tools_id]


def test_a_paged_listing_shows_a_role_the_pushed_sessions_of_its_workspaces_only(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    alpha, beta = machines
    app = {alpha.sessions[0].id, beta.sessions[0].id}
    with _query(pushed.dsn("carol")) as query:
        first = query.list_page(limit=1)
        rest = query.list_page(limit=5, cursor=first.next_cursor)
        assert rest.next_cursor is None
        listed = [record.id for record in (*first.items, *rest.items)]
        assert listed == [record.id for record in query.list_sessions()]
        assert app <= set(listed) and alpha.sessions[1].id not in listed  # another repository


TABLES = (
    "sq_sessions",
    "sq_events",
    "sq_changes",
    "sq_workspaces",
    "sq_machines",
    "sq_store",
    "sqi_sessions",
    "sqi_docs",
    "sqi_terms",
    "sqi_team_terms",
    "sqi_team_counts",
    "sqi_state",
    "sq_my_grants",
    "sq_my_ws",
)


def _hidden(machines: tuple[Machine, Machine]) -> list[str]:
    alpha, beta = machines
    hidden = [s.id for s in (alpha.sessions[0], *beta.sessions)]
    return [*hidden, "appwork", "acme/app", "deploy", "login"]


def test_sql_shows_a_restricted_role_no_row_of_another_workspace(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    hidden = _hidden(machines)
    with psycopg.connect(pushed.dsn("rita"), autocommit=True) as conn:
        seen = 0
        for table in TABLES:
            for (row,) in conn.execute(f"SELECT t::text FROM {table} AS t"):
                seen += 1
                assert not any(word in str(row) for word in hidden), (table, row)
        assert seen > 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM sq_grants")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE sq_sessions SET header_json = '{}'")
        (visible,) = conn.execute("SELECT count(*) FROM sqi_docs").fetchone() or (0,)
        assert visible > 0


def test_psql_itself_shows_a_restricted_role_only_its_sessions(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    psql = find_bindir() / "psql"
    out = subprocess.run(
        [str(psql), pushed.dsn("rita"), "-Atc", "SELECT id FROM sq_sessions ORDER BY id"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.split() == [machines[0].sessions[1].id]


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessionquery.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_the_command_line_shows_a_restricted_role_only_its_sessions(
    pushed: TeamDb, machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    env = env_for(machines[0], tmp_path)
    dsn = pushed.dsn("rita")
    listed = _cli(["list", "--postgres", dsn, "--json"], env)
    assert listed.returncode == 0, listed.stderr
    ids = [item["id"] for item in json.loads(listed.stdout)["sessions"]]
    assert ids == [machines[0].sessions[1].id]
    searched = _cli(["search", "appwork", "--postgres", dsn, "--json"], env)
    assert searched.returncode == 0, searched.stderr
    assert not _ids(searched.stdout, machines)


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_mcp_shows_a_restricted_role_only_its_workspaces(
    pushed: TeamDb, machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    alpha = machines[0]
    env = env_for(alpha, tmp_path)
    dsn = pushed.dsn("rita")
    results: dict[str, str] = {}

    async def scenario() -> None:
        for name, cwd in (("tools", alpha.sessions[1].cwd), ("app", alpha.sessions[0].cwd)):
            args = ["-m", "sessionquery.cli", "mcp", "--postgres", dsn, "--cwd", cwd]
            params = StdioServerParameters(command=sys.executable, args=args, env=env)
            with anyio.fail_after(STARTUP_SECONDS):
                async with Client(params) as client:
                    for query in ("toolwork", "appwork"):
                        found = await client.call_tool("session_search", {"query": query})
                        results[f"{name}/{query}"] = _text(found)

    anyio.run(scenario)
    assert _ids(results["tools/toolwork"], machines) == {alpha.sessions[1].id}
    for key in ("tools/appwork", "app/appwork", "app/toolwork"):
        assert not _ids(results[key], machines), key


def test_revoking_a_grant_takes_the_workspace_away_at_once(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    with psycopg.connect(pushed.dsn(), autocommit=True) as conn:
        listed = {member.role: member for member in members(conn)}
        assert listed[pushed.roles["rita"]].workspaces == (TOOLS,)
        assert listed[pushed.roles["alice"]].pushes and listed[pushed.roles["alice"]].machines == (
            "alpha",
        )
        assert not listed[pushed.roles["rita"]].pushes
        assert revoke(conn, pushed.roles["rita"], TOOLS)
        assert not revoke(conn, pushed.roles["rita"], TOOLS)
    assert pushed.rows("SELECT count(*) FROM sq_sessions", "rita") == [(0,)]
    assert pushed.rows("SELECT count(*) FROM sqi_docs", "rita") == [(0,)]


def test_a_members_open_connection_sees_a_grant_change_at_its_next_statement(
    pushed: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    count = "SELECT (SELECT count(*) FROM sq_sessions), (SELECT count(*) FROM sqi_docs)"
    with psycopg.connect(pushed.dsn("rita"), autocommit=True) as member:
        sessions, docs = member.execute(count).fetchone() or (0, 0)
        assert sessions > 0 and docs > 0
        with psycopg.connect(pushed.dsn(), autocommit=True) as owner:
            assert revoke(owner, pushed.roles["rita"], TOOLS)
        # the rule reads the member's grants once a statement, never from an earlier one
        assert member.execute(count).fetchone() == (0, 0)
        with psycopg.connect(pushed.dsn(), autocommit=True) as owner:
            grant(owner, pushed.roles["rita"], TOOLS)
        assert member.execute(count).fetchone() == (sessions, docs)
