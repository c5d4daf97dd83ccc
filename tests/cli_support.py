"""Shared test data for the CLI and MCP tests: a user home holding real-shaped transcripts.

``make_agent_home(home)`` writes one Claude Code transcript under ``.claude/projects`` and one
Codex rollout under ``.codex/sessions``, as a new user's machine would hold them. The Claude
assistant text carries terminal escape sequences (a window-title change and a screen clear)
so tests can check they never reach the terminal raw.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = [
    "CLAUDE_ID",
    "CLAUDE_WORKSPACE",
    "CODEX_ID",
    "CODEX_WORKSPACE",
    "ESCAPES",
    "clean_env",
    "make_agent_home",
]

CLAUDE_ID = "c0ffee00-1111-2222-3333-444444444444"
CODEX_ID = "0195aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
CLAUDE_WORKSPACE = "/home/dev/app"
CODEX_WORKSPACE = "/home/dev/api"
ESCAPES = "\x1b]0;pwned\x07 and \x1b[2J"
"""Escape sequences inside a transcript: retitle the window, clear the screen."""

_VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "SESSIONQUERY_CONFIG", "NO_COLOR")


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


def make_agent_home(home: Path) -> None:
    """Write a Claude Code and a Codex transcript where those tools keep them under ``home``."""
    _write(home / ".claude" / "projects" / "-home-dev-app" / f"{CLAUDE_ID}.jsonl", _claude_lines())
    day = home / ".codex" / "sessions" / "2025" / "03" / "08"
    _write(day / f"rollout-2025-03-08T09-00-00-{CODEX_ID}.jsonl", _codex_lines())
