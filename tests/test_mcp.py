"""Tests for the MCP server: a real ``sessionquery mcp`` subprocess driven by the SDK client,
plus in-process checks of the adapter (caller resolution, error results) for speed."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from cli_support import CLAUDE_ID, CLAUDE_WORKSPACE, clean_env, make_agent_home
from locations import BENCHMARKS
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.examples import BILLING_WORKSPACE, build_examples
from sessionquery.mcp import CallerSpec, IndexBuilder, build_server, resolve_caller
from sessionquery.persistence import JsonlPersistence
from sessionquery.query.cancel import CancelToken
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.tools import SessionQueryTools

TOOL_NAMES = {
    "session_search",
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
}
# Generous: starting an interpreter and importing the SDK is slow on a loaded machine.
STARTUP_SECONDS = 90


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    build_examples(root)
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    env["HOME"] = str(tmp_path / "home")
    env["SESSIONQUERY_HOME"] = str(tmp_path / "sq")
    return env


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def _definitions() -> list[dict[str, object]]:
    with SessionQuery() as query:
        tools = SessionQueryTools(query)
        return [
            {"name": d.name, "description": d.description, "input_schema": d.input_schema}
            for d in tools.definitions
        ]


def _prompt_section() -> str:
    with SessionQuery() as query:
        return SessionQueryTools(query).prompt_section


def test_stdio_server_lists_read_only_tools_and_answers_calls(store: Path, tmp_path: Path) -> None:
    args = ["-m", "sessionquery.cli", "mcp", "--root", str(store)]
    args += ["--index", str(tmp_path / "index.sqlite3"), "--cwd", BILLING_WORKSPACE]
    params = StdioServerParameters(command=sys.executable, args=args, env=_env(tmp_path))

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(params) as client:
                assert client.instructions == _prompt_section()
                listed = await client.list_tools()
                assert {tool.name for tool in listed.tools} == TOOL_NAMES
                for tool in listed.tools:
                    assert tool.annotations is not None
                    assert tool.annotations.read_only_hint is True
                expected = {d["name"]: d for d in _definitions()}
                for tool in listed.tools:
                    assert tool.input_schema == expected[tool.name]["input_schema"]
                    assert tool.description == expected[tool.name]["description"]

                found = await client.call_tool("session_search", {"query": "rounding"})
                assert found.is_error is False
                assert "billing-rounding" in _text(found)
                assert "dashboard" not in _text(found)

                read = await client.call_tool(
                    "session_event_read", {"session_id": "billing-rounding", "seq": 1}
                )
                assert read.is_error is False
                assert "test_invoice_total_rounding" in _text(read)

                denied = await client.call_tool(
                    "session_event_read", {"session_id": "dashboard-websocket", "seq": 1}
                )
                assert denied.is_error is True
                assert _text(denied).startswith("SESSION_QUERY_TOOL_UNAUTHORIZED: ")
                assert "websocket" not in _text(denied)

    anyio.run(scenario)


def _stdio(args: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "sessionquery.cli", "mcp", *args], env=env
    )


async def _every_tool_answers(client: Client, code: str) -> None:
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == TOOL_NAMES
    for name in sorted(TOOL_NAMES):
        result = await client.call_tool(name, {"query": "x", "session_id": "x", "seq": 1})
        assert result.is_error is True
        text = _text(result)
        assert text.startswith(f"{code}: "), text
        assert "\n" not in text


def test_mcp_with_unknown_session_serves_and_answers_every_call_with_the_reason(
    store: Path, tmp_path: Path
) -> None:
    index = tmp_path / "index.sqlite3"
    args = ["--root", str(store), "--index", str(index), "--session", "no-such-session"]

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(_stdio(args, _env(tmp_path))) as client:
                assert client.instructions == _prompt_section()  # the handshake completed
                await _every_tool_answers(client, "SESSION_QUERY_SESSION_NOT_FOUND")

    anyio.run(scenario)
    assert not index.exists()


def test_mcp_without_any_source_serves_and_answers_with_invalid_config(tmp_path: Path) -> None:
    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(_stdio([], clean_env(tmp_path))) as client:
                await _every_tool_answers(client, "SESSION_QUERY_INVALID_CONFIG")

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["--session"], "argument --session: expected one argument"),
        (["--cwd", "/a", "--session", "b"], "not allowed with argument"),
    ],
)
def test_mcp_with_a_bad_command_line_serves_and_answers_every_call_with_the_usage_error(
    tmp_path: Path, args: list[str], reason: str
) -> None:
    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(_stdio(args, clean_env(tmp_path))) as client:
                assert client.instructions == _prompt_section()  # the handshake completed
                await _every_tool_answers(client, "SESSION_QUERY_INVALID_CONFIG")
                result = await client.call_tool("session_search", {"query": "x"})
                text = _text(result)
                assert text.startswith(
                    "SESSION_QUERY_INVALID_CONFIG: the server's command line is wrong: "
                )
                assert reason in text

    anyio.run(scenario)


def _run_mcp(args: list[str], env: dict[str, str], stdin: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessionquery.cli", "mcp", *args],
        env=env,
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )


def test_mcp_with_a_bad_command_line_logs_the_reason_and_ends_with_its_client(
    tmp_path: Path,
) -> None:
    done = _run_mcp(["--frobnicate"], clean_env(tmp_path), subprocess.DEVNULL)
    assert done.returncode == 2  # served until stdin closed, then the usage-error status
    assert "sessionquery mcp: misconfigured" in done.stderr
    assert "unrecognized arguments: --frobnicate" in done.stderr
    assert "Traceback" not in done.stderr


def test_mcp_with_a_bad_command_line_on_a_terminal_is_an_ordinary_usage_error(
    tmp_path: Path,
) -> None:
    leader, terminal = os.openpty()
    try:
        done = _run_mcp(["--frobnicate"], clean_env(tmp_path), terminal)
    finally:
        os.close(terminal)
        os.close(leader)
    assert done.returncode == 2
    assert done.stderr.startswith("SESSION_QUERY_USAGE: unrecognized arguments: --frobnicate")
    assert "misconfigured" not in done.stderr


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("where", ["tcp", "socket"])
def test_mcp_whose_database_cannot_be_reached_tells_the_model_why_but_not_where(
    tmp_path: Path, where: str
) -> None:
    port = _closed_port()
    socket_dir = tmp_path / "no-server-here"
    socket_dir.mkdir()
    dsn = (
        f"postgresql://probe@127.0.0.1:{port}/history"
        if where == "tcp"
        else f"postgresql://probe@/history?host={socket_dir}&port={port}"
    )
    errlog = (tmp_path / "stderr.txt").open("w+", encoding="utf-8")
    params = _stdio(["--postgres", dsn, "--cwd", "/w"], clean_env(tmp_path))

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                for name in sorted(TOOL_NAMES):
                    result = await client.call_tool(
                        name, {"query": "x", "session_id": "x", "seq": 1}
                    )
                    assert result.is_error is True
                    text = _text(result)
                    assert text.startswith("SESSION_QUERY_PERSISTENCE_FAILED: "), text
                    for secret in ("127.0.0.1", str(port), str(socket_dir), "probe", "history"):
                        assert secret not in text, (secret, text)
                    assert "refused" in text or "socket" in text

    try:
        anyio.run(scenario)
        errlog.seek(0)
        log = errlog.read()
    finally:
        errlog.close()
    assert str(port) in log  # the operator's log keeps the address
    assert "Traceback" not in log


def test_mcp_with_no_options_serves_claude_and_codex_sessions_from_home(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    make_agent_home(Path(env["HOME"]))
    work = tmp_path / "work"
    work.mkdir()
    args = ["--cwd", CLAUDE_WORKSPACE]

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(_stdio(args, env)) as client:
                found = await client.call_tool("session_search", {"query": "flaky"})
                assert found.is_error is False, _text(found)
                assert CLAUDE_ID in _text(found)
                assert "\x1b" not in _text(found)
                read = await client.call_tool(
                    "session_event_read", {"session_id": CLAUDE_ID, "seq": 1}
                )
                assert read.is_error is False, _text(read)
                assert "flaky test in checkout" in _text(read)

    anyio.run(scenario)


def _busiest_workspace(projects: Path) -> str:
    """The cwd most main Claude Code transcripts under ``projects`` were recorded in."""
    counts: dict[str, int] = {}
    for path in projects.glob("*/*.jsonl"):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                cwd = json.loads(line).get("cwd")
                if isinstance(cwd, str):
                    counts[cwd] = counts.get(cwd, 0) + 1
                    break
    return max(sorted(counts), key=counts.__getitem__)


_PARTIAL = re.compile(
    r"^The history index is still being built \((\d+) of (\d+) sessions indexed\)"
)


def test_mcp_on_a_fresh_index_answers_from_the_indexed_part_marked_partial(
    tmp_path: Path,
) -> None:
    """On a history whose first index build takes seconds, a search sent right after the
    handshake is answered from what the background build committed so far, headed by how much
    that is, instead of waiting for the build (it used to wait out its 30 s deadline and
    answer INDEX_BUILDING). How soon is a benchmark figure (benchmarks/mcp_search.py), not an
    assertion; the partial mark shows it did not wait for the build to end."""
    sys.path.insert(0, str(BENCHMARKS))
    from history import HistorySpec, generate_history

    home = generate_history(
        tmp_path / "home", HistorySpec(transcripts=250, target_bytes=120_000_000)
    )
    projects = Path(home.claude_projects)
    args = ["--claude", str(projects), "--codex", home.codex_sessions]
    args += ["--index", str(tmp_path / "fresh.sqlite3"), "--cwd", _busiest_workspace(projects)]
    errlog = (tmp_path / "stderr.txt").open("w+", encoding="utf-8")
    answers: list[str] = []

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(
                stdio_client(_stdio(args, clean_env(tmp_path)), errlog=errlog)
            ) as client:
                while True:  # until the answer has hits (the first batch may not be committed)
                    found = await client.call_tool("session_search", {"query": "the"})
                    assert found.is_error is False, _text(found)
                    answers.append(_text(found))
                    if "Session search results (" in answers[-1]:
                        return

    try:
        anyio.run(scenario)
        errlog.seek(0)
        log = errlog.read()
    finally:
        errlog.close()
    marked = _PARTIAL.match(answers[-1])
    assert marked is not None, answers[-1][:300]
    indexed, total = int(marked.group(1)), int(marked.group(2))
    assert 0 < indexed < total
    assert "Traceback" not in log


# -- in process ----------------------------------------------------------------------------


def _serve(
    store: Path, index: Path, caller: CallerSpec, body: Callable[[Client], Awaitable[None]]
) -> None:
    persistence = JsonlPersistence(store)

    def open_query() -> SessionQuery:
        return SessionQuery(persistence=persistence, search=SqliteSearch(index))

    server = build_server(open_query, caller)

    async def scenario() -> None:
        with anyio.fail_after(30):
            async with Client(server) as client:
                await body(client)

    anyio.run(scenario)


def test_session_caller_takes_the_recorded_cwd_of_that_session(store: Path) -> None:
    with SessionQuery(persistence=JsonlPersistence(store)) as query:
        spec = resolve_caller(query, cwd="/ignored", session_id="billing-rounding-scan")
    assert spec == CallerSpec(session_id="billing-rounding-scan", cwd=BILLING_WORKSPACE)


def test_session_caller_accepts_a_unique_start_and_refuses_an_ambiguous_one(store: Path) -> None:
    with SessionQuery(persistence=JsonlPersistence(store)) as query:
        spec = resolve_caller(query, cwd=None, session_id="billing-rounding-s")
        assert spec == CallerSpec(session_id="billing-rounding-scan", cwd=BILLING_WORKSPACE)
        exact = resolve_caller(query, cwd=None, session_id="billing-rounding")
        assert exact.session_id == "billing-rounding"
        with pytest.raises(SessionQueryError) as caught:
            resolve_caller(query, cwd=None, session_id="billing-rounding-")
    assert caught.value.code is ErrorCode.INVALID_CONFIG


def test_unknown_session_caller_raises_session_not_found(store: Path) -> None:
    with SessionQuery(persistence=JsonlPersistence(store)) as query:
        with pytest.raises(SessionQueryError) as caught:
            resolve_caller(query, cwd=None, session_id="nope")
    assert caught.value.code is ErrorCode.SESSION_NOT_FOUND


def test_cwd_caller_is_taken_verbatim(store: Path) -> None:
    with SessionQuery(persistence=JsonlPersistence(store)) as query:
        spec = resolve_caller(query, cwd=BILLING_WORKSPACE + "/", session_id=None)
    assert spec == CallerSpec(session_id=None, cwd=BILLING_WORKSPACE + "/")


def test_server_acting_as_a_session_traces_it_without_arguments(
    store: Path, tmp_path: Path
) -> None:
    caller = CallerSpec(session_id="billing-rounding-scan", cwd=BILLING_WORKSPACE)

    async def body(client: Client) -> None:
        traced = await client.call_tool("session_trace", {})
        assert traced.is_error is False
        text = _text(traced)
        assert text.startswith("Session billing-rounding-scan")
        assert "billing-rounding —" in text  # the visible parent
        searched = await client.call_tool("session_search", {"query": "rounding"})
        assert "billing-rounding-scan" not in _text(searched)  # never the caller's own session

    _serve(store, tmp_path / "index.sqlite3", caller, body)


def test_failure_reading_the_acting_session_reaches_the_model_sanitized(
    store: Path, tmp_path: Path
) -> None:
    caller = CallerSpec(session_id="billing-rounding-scan", cwd=BILLING_WORKSPACE)
    log = store / "billing-rounding-scan.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join([lines[0], "{not json\n", *lines[1:]]), encoding="utf-8")

    async def body(client: Client) -> None:
        result = await client.call_tool("session_trace", {})
        assert result.is_error is True
        text = _text(result)
        assert text == "SESSION_QUERY_CORRUPT_SESSION: session event history is corrupt"
        assert str(store) not in text

    _serve(store, tmp_path / "index.sqlite3", caller, body)


def test_workspace_with_a_trailing_slash_sees_nothing(store: Path, tmp_path: Path) -> None:
    caller = CallerSpec(session_id=None, cwd=BILLING_WORKSPACE + "/")

    async def body(client: Client) -> None:
        found = await client.call_tool("session_search", {"query": "rounding"})
        assert found.is_error is False
        assert "billing-rounding" not in _text(found)

    _serve(store, tmp_path / "index.sqlite3", caller, body)


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("session_event_read", {"session_id": "billing-rounding", "seq": "1"}, "INVALID_ARGUMENTS"),
        ("session_event_read", {"session_id": "billing-rounding", "seq": 9999}, "EVENT_NOT_FOUND"),
        ("session_search", {"query": "x", "limit": 5}, "INVALID_ARGUMENTS"),
        ("no_such_tool", {}, "TOOL_UNKNOWN"),
    ],
)
def test_tool_failures_are_error_results_not_protocol_errors(
    store: Path, tmp_path: Path, name: str, arguments: dict[str, object], code: str
) -> None:
    caller = CallerSpec(session_id=None, cwd=BILLING_WORKSPACE)

    async def body(client: Client) -> None:
        result = await client.call_tool(name, arguments)
        assert result.is_error is True
        assert _text(result).startswith("SESSION_QUERY_")
        assert code in _text(result).split(":")[0]

    _serve(store, tmp_path / "index.sqlite3", caller, body)


def test_foreign_index_serves_and_answers_every_call_with_index_failed(
    store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlite3

    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    with conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    before = foreign.read_bytes()
    caller = CallerSpec(session_id=None, cwd=BILLING_WORKSPACE)

    async def body(client: Client) -> None:
        await _every_tool_answers(client, "SESSION_QUERY_INDEX_FAILED")

    with caplog.at_level(logging.ERROR, logger="sessionquery.mcp"):
        _serve(store, foreign, caller, body)
    assert foreign.read_bytes() == before
    (record,) = [r for r in caplog.records if "misconfigured" in r.getMessage()]
    assert "SESSION_QUERY_INDEX_FAILED" in record.getMessage()


def test_index_builder_brings_the_index_up_to_date_in_the_background(
    store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    search = SqliteSearch(tmp_path / "index.sqlite3")
    with SessionQuery(persistence=JsonlPersistence(store), search=search) as query:

        def update(token: CancelToken, progress: Callable[[int, int], None]) -> object:
            return search.update(query.corpus, cancel=token, progress=progress)

        builder = IndexBuilder(update, interval=0.0)
        with caplog.at_level(logging.INFO, logger="sessionquery.mcp"):
            builder.start()
            assert builder.wait(timeout=60)
            builder.stop()
        messages = [r.getMessage() for r in caplog.records]
        assert messages[0] == "bringing the search index up to date in the background"
        assert "indexing: 5 of 5 sessions" in messages
        assert messages[-1].startswith("the search index is up to date")
        assert search.update(query.corpus).persisted_indexed == 0  # nothing left to do
