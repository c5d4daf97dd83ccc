"""``sessionquery push`` and ``sessionquery team``: two machine homes push to one team database
(a real server); a history full of secrets pushes none of them. The commands run in process
(``cli_support.run_in_process``); ``push --watch`` and the start-up imports in real ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from cli_support import run_in_process
from secret_history import KNOWN_ENV, forbidden, make_secret_history
from team_support import APP, Machine, env_for, make_machines, role_name


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_in_process(args, env)  # in process; --watch and start-up imports need one


def _role(owner: str, short: str) -> str:
    name = role_name(short)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    params = conninfo_to_dict(owner)
    params["user"] = name
    return make_conninfo("", **params)


def _user(dsn: str) -> str:
    return str(conninfo_to_dict(dsn)["user"])


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Machine, Machine]:
    return make_machines(tmp_path / "machines")


def test_two_machine_homes_push_and_each_checkout_sees_both_machines_of_its_repository(
    postgres_dsn: str, machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    alpha, beta = machines
    env = env_for(alpha, tmp_path)
    init = _cli(["team", "init", "--postgres", postgres_dsn, "--json"], env)
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["leakproof"] is True
    alice, bob = _role(postgres_dsn, "alice"), _role(postgres_dsn, "bob")
    for dsn in (alice, bob):
        granted = _cli(
            ["team", "grant", _user(dsn), APP, "--push", "--postgres", postgres_dsn], env
        )
        assert granted.returncode == 0, granted.stderr
    for machine, dsn in ((alpha, alice), (beta, bob)):
        pushed = _cli(
            ["push", "--postgres", dsn, "--machine", machine.name, "--json"],
            env_for(machine, tmp_path),
        )
        assert pushed.returncode == 0, pushed.stderr
        report = json.loads(pushed.stdout)
        assert (report["new"], report["machine"], report["role"]) == (2, machine.name, _user(dsn))
    again = _cli(["push", "--postgres", alice, "--machine", "alpha"], env_for(alpha, tmp_path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("pushed 0 of 2 sessions from alpha")
    assert "2 unchanged" in again.stdout
    members = _cli(["team", "members", "--postgres", postgres_dsn, "--json"], env)
    listed = {m["role"]: m for m in json.loads(members.stdout)}
    assert listed[_user(alice)]["machines"] == ["alpha"] and listed[_user(alice)]["pushes"]

    app_root = {alpha.sessions[0].id, beta.sessions[0].id}
    for machine, dsn in ((alpha, alice), (beta, bob)):
        found = _tool_search(dsn, machine.sessions[0].cwd, "appwork", env_for(machine, tmp_path))
        seen = {s.id for m in machines for s in m.sessions if s.id in found}
        assert seen == app_root, (machine.name, found)


def _tool_search(dsn: str, cwd: str, query: str, env: dict[str, str]) -> str:
    import anyio
    import mcp_types as types
    from mcp import Client, StdioServerParameters

    args = ["-m", "sessionquery.cli", "mcp", "--postgres", dsn, "--cwd", cwd]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    out: list[str] = []

    async def scenario() -> None:
        with anyio.fail_after(120):
            async with Client(params) as client:
                result = await client.call_tool("session_search", {"query": query})
                (block,) = result.content
                assert isinstance(block, types.TextContent)
                out.append(block.text)

    anyio.run(scenario)
    return out[0]


def test_a_history_full_of_secrets_pushes_none_of_them(postgres_dsn: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_secret_history(home)
    env = {**env_for(Machine("alpha", tmp_path, home, ()), tmp_path), **KNOWN_ENV}
    assert _cli(["team", "init", "--postgres", postgres_dsn], env).returncode == 0
    pushed = _cli(["push", "--postgres", postgres_dsn, "--machine", "alpha", "--json"], env)
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["new"] == 2
    rows: list[str] = []
    with psycopg.connect(postgres_dsn) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        for (table,) in tables:
            rows += [repr(row) for row in conn.execute(f'SELECT * FROM "{table}"').fetchall()]
    dumped = "\n".join(rows)
    assert "[REDACTED:" in dumped
    leaked = [secret for secret in forbidden() if secret in dumped]
    assert leaked == []


def test_push_needs_a_target_and_a_valid_machine_name(
    tmp_path: Path, machines: tuple[Machine, Machine]
) -> None:
    env = env_for(machines[0], tmp_path)
    missing = _cli(["push"], env)
    assert missing.returncode == 2 and "--postgres" in missing.stderr
    bad = _cli(["push", "--postgres", "host=/nonexistent", "--machine", "a:b"], env)
    assert bad.returncode == 2 and "machine name" in bad.stderr
    usage = _cli(["team", "grant", "someone", "--postgres", "host=/nonexistent"], env)
    assert usage.returncode == 2
    for jobs in ("0", "17"):
        refused = _cli(["push", "--postgres", "host=/nonexistent", "--jobs", jobs], env)
        assert refused.returncode == 2 and "--jobs must be between 1 and 16" in refused.stderr


def test_push_watch_pushes_again_until_interrupted(
    postgres_dsn: str, machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    alpha = machines[0]
    env = env_for(alpha, tmp_path)
    assert _cli(["team", "init", "--postgres", postgres_dsn], env).returncode == 0
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sessionquery.cli",
            "push",
            "--postgres",
            postgres_dsn,
            "--machine",
            "alpha",
            "--watch",
            "--interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        second = process.stdout.readline()
    finally:
        process.terminate()
        process.communicate(timeout=120)
    assert "2 new" in first, first
    assert "2 unchanged" in second, second


_IMPORTED_BY = r"""
import contextlib, io, json, sys
from sessionquery.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(json.loads(sys.argv[1]))
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("command", [["--help"], ["push", "--help"], ["team", "--help"]])
def test_help_of_push_and_team_imports_neither_the_team_package_nor_a_driver(
    command: list[str], tmp_path: Path, machines: tuple[Machine, Machine]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY, json.dumps(command)],
        env=env_for(machines[0], tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "sessionquery.cli._team" not in loaded
    assert not {m for m in loaded if m.startswith(("sessionquery.team", "psycopg"))}
