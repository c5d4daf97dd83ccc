"""Every new format end to end, with nothing but ``HOME`` pointing at a fixture home.

For each of Gemini CLI, Qwen Code, Copilot CLI, OpenCode, Cursor and VS Code Copilot Chat, a
session with tool calls and results, a subagent or child (the Cursor format has none) and a
rewind or compaction (likewise) is listed, searched, read and traced through the command line
(in process), the five tools and the MCP server (a real ``sessionquery mcp`` process), and
``sessionquery sources`` shows its source.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from cli_support import run_in_process
from formats_support import FORMATS, SESSIONS, FixtureHome, Sample, fixture_home, home_env
from sessionquery.app import App
from sessionquery.config import Config
from sessionquery.tools import SessionQueryTools, ToolCaller

pytestmark = pytest.mark.slow  # every format through every interface, MCP servers included

STARTUP_SECONDS = 120


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("formats"))


@pytest.fixture(scope="module")
def env(home: FixtureHome) -> dict[str, str]:
    return home_env(home.base)


def _run(args: list[str], env: dict[str, str]) -> Any:
    result = run_in_process([*args, "--json"], env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def listed(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    document = _run(["list", "--all"], env)
    return {record["id"]: record for record in document["sessions"]}


def _shadowed_seq(env: dict[str, str], sample: Sample) -> int:
    events = _run(["events", sample.session], env)["events"]
    shadowed = [e["seq"] for e in events if e["surface"] == "shadowed"]
    assert shadowed, f"{sample.kind}: no shadowed event"
    return int(shadowed[0])


def test_sources_shows_every_kind_found_in_the_home(env: dict[str, str]) -> None:
    document = _run(["sources"], env)
    found = {item["kind"]: item for item in document["sources"]}
    for kind in (*FORMATS, "codex"):
        assert found[kind]["exists"] is True and found[kind]["from"] == "default", kind
        assert found[kind]["sessions"] >= 1 and found[kind]["error"] is None, kind
        assert found[kind]["problems"] == [], (kind, found[kind]["problems"])


@pytest.mark.parametrize("kind", FORMATS)
def test_the_command_line_lists_searches_reads_and_traces(
    kind: str, env: dict[str, str], home: FixtureHome, listed: dict[str, dict[str, Any]]
) -> None:
    sample = SESSIONS[kind]
    assert listed[sample.session]["cwd"] == home.cwd(sample)
    found = _run(["search", sample.word], env)["items"]
    assert sample.session in [item["session"]["id"] for item in found]
    best = next(item for item in found if item["session"]["id"] == sample.session)
    read = _run(["read", sample.session, str(best["best_match"]["seq"])], env)
    assert sample.word in json.dumps(read["target"]["data"]).lower()
    trace = _run(["trace", sample.session], env)
    children = [node["session"]["id"] for node in trace["descendants"]]
    if sample.child:
        assert listed[sample.child]["parent_session"] == sample.session
        assert sample.child in children
        child_hits = _run(["search-events", sample.child, sample.child_word], env)["items"]
        assert child_hits, (kind, sample.child_word)
    if sample.shadowed_word is not None:
        seq = _shadowed_seq(env, sample)
        traced = _run(["trace-event", sample.session, str(seq)], env)
        assert traced["replaced_by"] is not None and traced["target"]["surface"] == "shadowed"


@pytest.fixture(scope="module")
def tools(env: dict[str, str]) -> Any:
    app = App(Config.from_env(env))
    service = app.service(app.open_index())
    yield SessionQueryTools(service)
    service.close()


@pytest.mark.parametrize("kind", FORMATS)
def test_the_tools_search_trace_read_and_trace_events_in_the_workspace(
    kind: str, tools: SessionQueryTools, home: FixtureHome, env: dict[str, str]
) -> None:
    sample = SESSIONS[kind]
    caller = ToolCaller(cwd=home.cwd(sample))
    found = tools.call("session_search", {"query": sample.word}, caller)
    assert not found.is_error and f"Session {sample.session} " in found.text, found.text
    trace = tools.call("session_trace", {"session_id": sample.session}, caller)
    assert not trace.is_error and "outside" not in trace.text
    if sample.child:
        assert f"- {sample.child} " in trace.text
    read = tools.call("session_event_read", {"session_id": sample.session, "seq": 1}, caller)
    assert not read.is_error, read.text
    if sample.shadowed_word is not None:
        seq = _shadowed_seq(env, sample)
        traced = tools.call(
            "session_event_trace", {"session_id": sample.session, "seq": seq}, caller
        )
        assert not traced.is_error and "Replaced by: seq" in traced.text, traced.text
    outsider = ToolCaller(cwd="/somewhere/else")
    hidden = tools.call("session_search", {"query": sample.word}, outsider)
    assert sample.session not in hidden.text


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("kind", FORMATS)
def test_the_mcp_server_finds_and_traces_each_format(
    kind: str, env: dict[str, str], home: FixtureHome
) -> None:
    sample = SESSIONS[kind]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sessionquery.cli", "mcp", "--cwd", home.cwd(sample)],
        env=env,
    )

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(params) as client:
                found = await client.call_tool("session_search", {"query": sample.word})
                assert found.is_error is False and sample.session in _text(found), _text(found)
                trace = await client.call_tool("session_trace", {"session_id": sample.session})
                assert trace.is_error is False, _text(trace)
                if sample.child:
                    assert sample.child in _text(trace)

    anyio.run(scenario)


def test_a_kind_can_be_named_with_source_kind_path(env: dict[str, str], home: FixtureHome) -> None:
    gemini = str(home.home / ".gemini")
    listed = _run(["list", "--all", "--source", f"gemini={gemini}"], env)
    assert {r["id"] for r in listed["sessions"]} >= {SESSIONS["gemini"].session}
    assert all(r["id"] != SESSIONS["qwen"].session for r in listed["sessions"])
    result = run_in_process(["list", "--source", "nonsense=/x"], env)
    assert result.returncode == 2 and "unknown source kind 'nonsense'" in result.stderr


def test_cursor_s_source_reads_its_user_folder_beside_the_projects_folder(
    env: dict[str, str], home: FixtureHome
) -> None:
    user = home.home / ".config" / "Cursor" / "User"
    (cursor,) = [i for i in _run(["sources"], env)["sources"] if i["kind"] == "cursor"]
    assert cursor["companions"] == [str(user)] and cursor["sessions"] == 4
    named = _run(["list", "--all", "--source", f"cursor={user}"], env)["sessions"]
    assert {r["id"] for r in named} == {SESSIONS["cursor"].session, SESSIONS["cursor"].child}
    assert all(r["created_at"] > 0 for r in named)
