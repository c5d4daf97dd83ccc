"""Secrets never leave (issue 26), end to end: a history holding one secret of every rule and
three known values, read through every command, the five tools over MCP, the SQLite index
file and the PostgreSQL database; ``sessionquery secrets`` lists every one; the transcripts
are byte-identical afterwards."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from cli_support import clean_env
from secret_history import (
    CLAUDE_SESSION,
    CODEX_SESSION,
    KNOWN_ENV,
    PLANTED,
    WORKSPACE,
    forbidden,
    make_secret_history,
)
from sessionquery.cli import main
from sessionquery.redact import preview

SESSIONS = (CLAUDE_SESSION, CODEX_SESSION)
QUERIES = (
    "deploy", "aws_secret_access_key", "stripe", "Bearer", "key file holds", "webhook",
    "Authorization Basic", "old key", "password", "token", "login", "db_pass", "cookie",
)  # fmt: skip
"""Words near every planted secret, so search snippets show each one's surroundings."""


@dataclass(frozen=True)
class History:
    home: Path
    files: dict[Path, bytes]
    index: Path

    @property
    def flags(self) -> list[str]:
        return [
            "--claude", str(self.home / ".claude" / "projects"),
            "--codex", str(self.home / ".codex" / "sessions"),
            "--index", str(self.index),
        ]  # fmt: skip

    def unchanged(self) -> bool:
        return all(path.read_bytes() == data for path, data in self.files.items())


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> History:
    home = tmp_path / "transcripts"
    files = {path: path.read_bytes() for path in make_secret_history(home)}
    for name, value in KNOWN_ENV.items():
        monkeypatch.setenv(name, value)
    return History(home, files, tmp_path / "index" / "index.sqlite3")


def _leaks(text: str) -> list[str]:
    return [value for value in forbidden() if value in text]


def _run(args: list[str], capsys: pytest.CaptureFixture[str], status: int = 0) -> str:
    assert main(args) == status, capsys.readouterr().err
    captured = capsys.readouterr()
    return captured.out + captured.err


def _seqs(history: History, session: str, capsys: pytest.CaptureFixture[str]) -> list[int]:
    listed = json.loads(_run(["events", session, "--json", *history.flags], capsys))
    return [event["seq"] for event in listed["events"]]


def _every_output(history: History, capsys: pytest.CaptureFixture[str]) -> Iterator[str]:
    flags = history.flags
    yield _run(["index", *flags], capsys)
    for extra in ([], ["--json"]):
        yield _run(["list", *extra, *flags], capsys)
        for query in QUERIES:
            yield _run(["search", query, *extra, *flags], capsys)
        for session in SESSIONS:
            yield _run(["show", session, *extra, *flags], capsys)
            yield _run(["show", session, "--conversation", *extra, *flags], capsys)
            yield _run(["trace", session, *extra, *flags], capsys)
            for query in QUERIES[:4]:
                yield _run(["search-events", session, query, *extra, *flags], capsys)
            for seq in _seqs(history, session, capsys):
                yield _run(["read", session, str(seq), *extra, *flags], capsys)
    for session in SESSIONS:
        for kind in ("markdown", "html", "json"):
            yield _run(["export", session, "--format", kind, *flags], capsys)


def test_no_command_shows_a_secret_and_the_index_file_holds_none(
    history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = list(_every_output(history, capsys))
    assert len(outputs) > 60
    assert [leak for text in outputs for leak in _leaks(text)] == []
    every = "\n".join(outputs)
    for planted in PLANTED:
        assert f"[REDACTED:{planted.rule}]" in every, planted.rule
    assert "[REDACTED:known-value]" in every
    files = [p for p in history.index.parent.iterdir() if p.is_file()]
    written = b"".join(p.read_bytes() for p in files).decode("utf-8", "replace")
    assert files and _leaks(written) == []
    assert history.unchanged()


def test_searching_for_a_secret_finds_nothing(
    history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    for value in [p.value for p in PLANTED] + list(KNOWN_ENV.values()):
        found = json.loads(_run(["search", value, "--phrase", "--json", *history.flags], capsys))
        assert found["items"] == [], value


def test_secrets_lists_every_rule_and_known_value_without_any_value(
    history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    output = _run(["secrets", "--json", *history.flags], capsys, status=3)
    assert _leaks(output) == []
    document = json.loads(output)
    found = {(f["rule"], f["preview"], f["length"]) for f in document["findings"]}
    for planted in PLANTED:
        if planted.rule == "private-key":  # the whole block is one finding
            assert any(rule == planted.rule and length > 200 for rule, _p, length in found)
        else:
            assert (planted.rule, preview(planted.value), len(planted.value)) in found, planted
    known = {f["known_as"] for f in document["findings"] if f["rule"] == "known-value"}
    assert known == set(KNOWN_ENV)
    assert document["sessions"] == 2 and document["unreadable"] == []
    assert {f["session_id"] for f in document["findings"]} == set(SESSIONS)
    text = _run(["secrets", *history.flags], capsys, status=3)
    assert _leaks(text) == [] and "secret(s) in 2 session(s)" in text
    assert history.unchanged()


def test_secrets_on_a_clean_history_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli_support import make_agent_home

    make_agent_home(tmp_path)
    flags = ["--claude", str(tmp_path / ".claude" / "projects")]
    assert "No secrets found" in _run(["secrets", *flags], capsys)


def test_no_redact_shows_a_session_as_stored_to_a_person_only(
    history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    (openai,) = (p for p in PLANTED if p.rule == "openai-api-key")
    shown = _run(["read", CLAUDE_SESSION, "1", "--no-redact", *history.flags], capsys)
    assert openai.value in shown
    exported = _run(["export", CLAUDE_SESSION, "--no-redact", *history.flags], capsys)
    assert openai.value in exported
    for refused in (
        ["read", CLAUDE_SESSION, "1", "--no-redact", "--json"],
        ["show", CLAUDE_SESSION, "--conversation", "--no-redact", "--json"],
        ["export", CLAUDE_SESSION, "--format", "json", "--no-redact"],
        ["search", "deploy", "--no-redact"],
    ):
        assert main([*refused, *history.flags]) == 2
        assert openai.value not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["mcp", "--help"])
    assert "--no-redact" not in capsys.readouterr().out  # the server never unmasks
    assert openai.value not in _run(["read", CLAUDE_SESSION, "1", *history.flags], capsys)


def test_the_postgres_index_holds_no_secret(
    history: History, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    flags = [*history.flags[:4], "--postgres", postgres_dsn]
    _run(["index", *flags], capsys)
    for query in QUERIES:
        assert _leaks(_run(["search", query, "--json", *flags], capsys)) == []
    rows: list[str] = []
    with psycopg.connect(postgres_dsn) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        for (table,) in tables:
            rows += [repr(row) for row in conn.execute(f'SELECT * FROM "{table}"').fetchall()]
    assert len(rows) > 10
    dumped = "\n".join(rows)
    assert "[REDACTED:" in dumped
    assert _leaks(dumped) == []
    assert history.unchanged()


# -- the five tools over MCP -----------------------------------------------------------------

STARTUP_SECONDS = 60


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_no_tool_answer_over_mcp_holds_a_secret(history: History, tmp_path: Path) -> None:
    env = {**clean_env(tmp_path / "mcp"), **KNOWN_ENV}
    args = ["-m", "sessionquery.cli", "mcp", *history.flags, "--cwd", WORKSPACE]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    answers: list[str] = []

    async def call(client: Client, name: str, arguments: dict[str, Any]) -> None:
        result = await client.call_tool(name, arguments)
        assert result.is_error is False, _text(result)
        answers.append(_text(result))

    async def scenario() -> None:
        with anyio.fail_after(STARTUP_SECONDS):
            async with Client(params) as client:
                for query in QUERIES:
                    await call(client, "session_search", {"query": query})
                for session in SESSIONS:
                    await call(client, "session_trace", {"session_id": session})
                    for query in QUERIES[:6]:
                        arguments: dict[str, Any] = {"session_id": session, "query": query}
                        await call(client, "session_event_search", arguments)
                    for seq in range(12):
                        arguments = {"session_id": session, "seq": seq}
                        result = await client.call_tool("session_event_read", arguments)
                        answers.append(_text(result))
                        if not result.is_error:
                            await call(client, "session_event_trace", arguments)

    anyio.run(scenario)
    assert len(answers) > 40
    assert [leak for text in answers for leak in _leaks(text)] == []
    joined = "\n".join(answers)
    assert "[REDACTED:private-key]" in joined and "[REDACTED:known-value]" in joined
    assert history.unchanged()
