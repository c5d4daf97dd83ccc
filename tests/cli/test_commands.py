"""The subcommands, run in process (``cli`` fixture): short ids, options, messages, hints.

End-to-end checks through a real ``sessionquery`` process are in ``test_cli.py``.
"""

from __future__ import annotations

from cli_support import CLAUDE_ID, CODEX_ID, Cli, make_agent_home, make_subagents
from sessionquery.examples import build_examples


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
