"""Shared test data for the CLI and MCP tests: a user home holding real-shaped transcripts.

``make_agent_home(home)`` writes one Claude Code transcript under ``.claude/projects`` and one
Codex rollout under ``.codex/sessions``, as a new user's machine would hold them. The Claude
assistant text carries terminal escape sequences (a window-title change and a screen clear)
so tests can check they never reach the terminal raw.


``Cli`` runs ``sessionquery.cli.main`` in this process with captured output (the fast way to
test a command); keep real subprocesses for end-to-end checks (the entry point, start-up,
terminals, the README chain).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "CLAUDE_ID",
    "CLAUDE_WORKSPACE",
    "CODEX_ID",
    "CODEX_WORKSPACE",
    "ESCAPES",
    "Cli",
    "Ran",
    "clean_env",
    "make_agent_home",
    "make_subagents",
]

CLAUDE_ID = "c0ffee00-1111-2222-3333-444444444444"
CODEX_ID = "0195aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
CLAUDE_WORKSPACE = "/home/dev/app"
CODEX_WORKSPACE = "/home/dev/api"
ESCAPES = "\x1b]0;pwned\x07 and \x1b[2J"
"""Escape sequences inside a transcript: retitle the window, clear the screen."""

_VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "SESSIONQUERY_CONFIG", "NO_COLOR")


@dataclass(frozen=True, slots=True)
class Ran:
    """What one in-process command did."""

    status: int
    out: str
    err: str

    def json(self) -> Any:
        """The one JSON document the command printed (it must have succeeded)."""
        assert self.status == 0, self.err
        return json.loads(self.out)


class Cli:
    """``sessionquery`` run in this process, in the test's isolated home.

    The autouse ``isolated_environment`` fixture already points HOME, SESSIONQUERY_HOME and
    the XDG directories at fresh directories; this also drops the variables that would move
    the default sources, and exposes the home so a test can put transcripts there.
    """

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self._capsys = capsys
        self._monkeypatch = monkeypatch
        for name in _VARIABLES:
            monkeypatch.delenv(name, raising=False)
        self.home = Path(os.environ["HOME"])
        self.data = Path(os.environ["SESSIONQUERY_HOME"])

    def setenv(self, name: str, value: str) -> None:
        """Set one environment variable for the rest of the test."""
        self._monkeypatch.setenv(name, value)

    def __call__(self, *args: str) -> Ran:
        from sessionquery.cli import main

        self._capsys.readouterr()  # drop anything printed before
        status = main(list(args))
        captured = self._capsys.readouterr()
        return Ran(status, captured.out, captured.err)


def clean_env(base: Path) -> dict[str, str]:
    """The current environment with HOME, the data and config homes under ``base``."""
    env = {key: value for key, value in os.environ.items() if key not in _VARIABLES}
    (base / "home").mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(base / "home")
    env["SESSIONQUERY_HOME"] = str(base / "sq")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(base / "home" / name.lower())
    return env


def _claude_lines() -> list[dict[str, object]]:
    common = {"sessionId": CLAUDE_ID, "cwd": CLAUDE_WORKSPACE}
    return [
        {
            **common,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2025-03-07T10:00:00.000Z",
            "message": {"role": "user", "content": "the flaky test in checkout keeps failing"},
        },
        {
            **common,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2025-03-07T10:00:05.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Looking into it {ESCAPES} now"}],
            },
        },
    ]


def _codex_lines() -> list[dict[str, object]]:
    def item(second: int, role: str, kind: str, text: str) -> dict[str, object]:
        payload = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        return {
            "timestamp": f"2025-03-08T09:00:0{second}.000Z",
            "type": "response_item",
            "payload": payload,
        }

    meta = {"id": CODEX_ID, "timestamp": "2025-03-08T09:00:00.000Z", "cwd": CODEX_WORKSPACE}
    return [
        {"timestamp": "2025-03-08T09:00:00.000Z", "type": "session_meta", "payload": meta},
        item(1, "user", "input_text", "why does the websocket keep reconnecting"),
        item(2, "assistant", "output_text", "The heartbeat timeout is too short."),
    ]


def _write(path: Path, lines: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def make_subagents(home: Path, count: int) -> list[str]:
    """Add ``count`` subagent transcripts to the Claude session of :func:`make_agent_home`.

    Returns their session ids, oldest first.
    """
    folder = home / ".claude" / "projects" / "-home-dev-app" / CLAUDE_ID / "subagents"
    ids = []
    for number in range(count):
        agent = f"a{number:02d}"
        line = {
            "sessionId": CLAUDE_ID,
            "agentId": agent,
            "isSidechain": True,
            "cwd": CLAUDE_WORKSPACE,
            "type": "user",
            "uuid": f"s{number}",
            "parentUuid": None,
            "timestamp": f"2025-03-07T10:01:{number:02d}.000Z",
            "message": {"role": "user", "content": f"subagent task number {number}"},
        }
        _write(folder / f"agent-{agent}.jsonl", [line])
        ids.append(agent)
    return ids


def make_agent_home(home: Path) -> None:
    """Write a Claude Code and a Codex transcript where those tools keep them under ``home``."""
    _write(home / ".claude" / "projects" / "-home-dev-app" / f"{CLAUDE_ID}.jsonl", _claude_lines())
    day = home / ".codex" / "sessions" / "2025" / "03" / "08"
    _write(day / f"rollout-2025-03-08T09-00-00-{CODEX_ID}.jsonl", _codex_lines())
