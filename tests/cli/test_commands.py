"""The subcommands, run in process (``cli`` fixture): short ids, options, messages, hints.

End-to-end checks through a real ``sessionquery`` process are in ``test_cli.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from cli_support import CLAUDE_ID, CODEX_ID, Cli, make_agent_home, make_subagents
from sessionquery.cli._launcher import launcher
from sessionquery.examples import EXAMPLE_SESSION_IDS, build_examples
from sessionquery.live import SessionStore
from sessionquery.model.messages import user_message
from sessionquery.persistence import JsonlPersistence


def _claude_family(cli: Cli, children: int = 3) -> list[str]:
    make_agent_home(cli.home)
    agents = make_subagents(cli.home, children)
    return [f"{CLAUDE_ID}/agent-{agent}" for agent in agents]


def test_list_shows_a_short_id_for_every_root_and_child_and_json_the_full_one(cli: Cli) -> None:
    children = _claude_family(cli)
    ran = cli("list")
    assert ran.status == 0, ran.err
    shown = [line.split()[0] for line in ran.out.splitlines()[1:] if line.strip()][:-1]
    assert sorted(shown) == sorted(
        ["c0ffee00", "c0ffee00/1", "c0ffee00/2", "c0ffee00/3", CODEX_ID[:8]]
    )
    document = cli("list", "--json").json()
    by_id = {item["id"]: item["short_id"] for item in document["sessions"]}
    assert by_id[children[0]] == "c0ffee00/1"
    assert by_id[CLAUDE_ID] == "c0ffee00"


def test_every_command_accepts_the_short_ids_list_shows(cli: Cli) -> None:
    children = _claude_family(cli)
    for args in (
        ["show", "c0ffee00/2", "--json"],
        ["events", "c0ffee00/2", "--json"],
        ["read", "c0ffee00/2", "0", "--json"],
        ["trace", "c0ffee00/2", "--json"],
        ["trace-event", "c0ffee00/2", "0", "--json"],
        ["search-events", "c0ffee00/2", "subagent", "--json"],
    ):
        ran = cli(*args)
        assert ran.status == 0, (args, ran.err)
        assert children[1] in ran.out, args
    found = cli("search", "subagent", "--session", "c0ffee00/2", "--json").json()
    assert [item["session"]["id"] for item in found["items"]] == [children[1]]
    assert found["items"][0]["short_id"] == "c0ffee00/2"
    kids = cli("search", "subagent", "--parent", "c0ffee00", "--json").json()
    assert {item["session"]["id"] for item in kids["items"]} == set(children)


def test_the_start_of_a_root_with_subagents_names_the_root(cli: Cli) -> None:
    _claude_family(cli, children=5)
    document = cli("show", "c0ff", "--json").json()
    assert document["session"]["id"] == CLAUDE_ID


def test_a_start_of_two_roots_is_a_usage_error_listing_both(cli: Cli) -> None:
    build_examples(cli.home / "store")
    ran = cli("show", "dashboard", "--root", str(cli.home / "store"))
    assert ran.status == 2
    assert ran.err == (
        "SESSION_QUERY_USAGE: 'dashboard' is the start of 2 session ids: "
        "dashboard-dark-mode, dashboard-websocket\n"
    )


# -- the first hour: quickstart's sample, the printed commands, the MCP registration --------------


def test_quickstarts_sample_is_a_default_source_until_it_is_deleted(cli: Cli) -> None:
    assert cli("quickstart").status == 0
    listed = cli("list", "--json").json()
    assert {item["id"] for item in listed["sessions"]} == set(EXAMPLE_SESSION_IDS)
    sources = cli("sources", "--json").json()["sources"]
    assert [(s["label"], s["name"], s["sessions"]) for s in sources if s["exists"]] == [
        ("sample", "sample", 5)
    ]
    shutil.rmtree(cli.data / "quickstart" / "sessions")
    ran = cli("list")
    assert ran.status == 1 and ran.err.startswith("SESSION_QUERY_INVALID_CONFIG: no session")


def test_quickstarts_closing_commands_use_the_absolute_path_when_not_on_the_path(
    cli: Cli, tmp_path: Path
) -> None:
    cli.setenv("PATH", str(tmp_path))  # no sessionquery there
    ran = cli("quickstart")
    assert ran.status == 0, ran.err
    tail = ran.out[ran.out.index("Try it yourself:") :].splitlines()
    command = shlex.join(launcher())
    assert tail[1:4] == [
        f"  {command} list",
        f"  {command} search websocket",
        f"  {command} trace-event billing-rounding 20",
    ]
    assert "not on your PATH" in tail[-1]


def test_quickstarts_closing_commands_are_bare_when_sessionquery_is_on_the_path(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sessionquery").symlink_to(launcher()[0])
    cli.setenv("PATH", str(tmp_path / "bin"))
    ran = cli("quickstart", "--root", str(tmp_path / "sample"))
    tail = ran.out[ran.out.index("Try it yourself:") :].splitlines()
    assert tail[1].startswith("  sessionquery list --root ")
    assert "PATH" not in ran.out[ran.out.index("Try it yourself:") :]


def _registration(client: str, text: str) -> tuple[str, list[str]]:
    if client == "claude":
        words = shlex.split(text)
        assert words[:6] == ["claude", "mcp", "add", "--scope", "user", "sessionquery"]
        assert words[6] == "--"
        return words[7], words[8:]
    if client == "codex":
        table = tomllib.loads(text)["mcp_servers"]["sessionquery"]
        return table["command"], table["args"]
    server = json.loads(text)["mcpServers"]["sessionquery"]
    return server["command"], server["args"]


@pytest.mark.parametrize("client", ["claude", "codex", "cursor"])
def test_print_config_registers_the_absolute_command_with_the_given_options(
    cli: Cli, tmp_path: Path, client: str
) -> None:
    ran = cli("mcp", "--print-config", client, "--root", str(tmp_path), "--cwd", ".")
    assert ran.status == 0, ran.err
    command, args = _registration(client, ran.out)
    assert [command, *args] == [
        *launcher(),
        "mcp",
        "--root",
        str(tmp_path),
        "--cwd",
        os.getcwd(),
    ]
    assert Path(command).is_absolute() and Path(command).exists()
    assert ran.err.endswith(":\n") and "\n" not in ran.err[:-1]


# -- workspaces ---------------------------------------------------------------------------------


def _store_in(root: Path, workspace: Path) -> None:
    store = SessionStore(JsonlPersistence(root))
    session = store.create("here", cwd=str(workspace))
    session.append(
        "user/message", user_message("the flaky test again", id="m0"), surface_op="append"
    )
    store.close("here")


@pytest.mark.parametrize("spelling", [".", "./", "../proj", "{abs}/", "{abs}/sub/.."])
def test_cwd_is_made_absolute_before_it_is_compared(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    workspace = tmp_path / "proj"
    (workspace / "sub").mkdir(parents=True)
    _store_in(tmp_path / "store", workspace)
    monkeypatch.chdir(workspace)
    cwd = spelling.format(abs=workspace)
    flags = ["--root", str(tmp_path / "store"), "--index", str(tmp_path / "i.sqlite3")]
    listed = cli("list", "--cwd", cwd, "--json", *flags).json()
    assert [item["id"] for item in listed["sessions"]] == ["here"]
    found = cli("search", "flaky", "--cwd", cwd, "--json", *flags).json()
    assert [item["session"]["id"] for item in found["items"]] == ["here"]
