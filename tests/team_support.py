"""Two fixture machines for the team-history tests.

Each machine is a directory holding a user home (Claude Code transcripts under
``.claude/projects``, Codex rollouts under ``.codex/sessions``) and git checkouts (only a
``.git/config`` naming the remote: git itself is never run). Machine ``alpha`` has the
repository ``acme/app`` at ``<alpha>/src/app`` and ``acme/tools`` at ``<alpha>/src/tools``;
machine ``beta`` has ``acme/app`` at ``<beta>/work/app-checkout`` (another path, another URL
form of the same remote). Every session's text carries a marker word naming its machine and
repository, so a search for ``appwork`` finds exactly the app sessions.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "APP",
    "TOOLS",
    "Machine",
    "Session",
    "env_for",
    "make_machines",
    "role_name",
    "write_claude",
    "write_codex",
]

APP = "github.com/acme/app"
TOOLS = "github.com/acme/tools"


_role_numbers = itertools.count(1)


def role_name(short: str) -> str:
    """A login role name unique in this test session's cluster (roles are cluster-wide, and
    every test module that makes roles draws from this one counter)."""
    return f"{short}_{os.getpid()}_{next(_role_numbers)}"


@dataclass(frozen=True)
class Session:
    """One fixture session."""

    id: str
    cwd: str
    workspace: str
    text: str


@dataclass(frozen=True)
class Machine:
    """One fixture machine: its name, home and sessions."""

    name: str
    root: Path
    home: Path
    sessions: tuple[Session, ...]

    @property
    def claude(self) -> Path:
        return self.home / ".claude" / "projects"

    @property
    def codex(self) -> Path:
        return self.home / ".codex" / "sessions"


def _checkout(path: Path, url: str) -> None:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n'
        f"\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        encoding="utf-8",
    )


def _jsonl(path: Path, lines: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def write_claude(projects: Path, session_id: str, cwd: str, texts: list[str]) -> Path:
    """A Claude Code transcript: user and assistant turns alternating, one per text."""
    lines: list[dict[str, object]] = []
    parent: str | None = None
    for n, text in enumerate(texts):
        kind = "user" if n % 2 == 0 else "assistant"
        uuid = f"{session_id[:8]}-{n}"
        content: object = text if kind == "user" else [{"type": "text", "text": text}]
        lines.append(
            {
                "sessionId": session_id,
                "cwd": cwd,
                "type": kind,
                "uuid": uuid,
                "parentUuid": parent,
                "timestamp": f"2025-03-07T10:{n // 60:02d}:{n % 60:02d}.000Z",
                "message": {"role": kind, "content": content},
            }
        )
        parent = uuid
    path = projects / cwd.replace("/", "-") / f"{session_id}.jsonl"
    _jsonl(path, lines)
    return path


def write_codex(sessions: Path, session_id: str, cwd: str, texts: list[str]) -> Path:
    """A Codex rollout: user and assistant messages alternating, one per text."""
    stamp = "2025-03-08T09:00:00.000Z"
    lines: list[dict[str, object]] = [
        {
            "timestamp": stamp,
            "type": "session_meta",
            "payload": {"id": session_id, "timestamp": stamp, "cwd": cwd},
        }
    ]
    for n, text in enumerate(texts):
        role, kind = ("user", "input_text") if n % 2 == 0 else ("assistant", "output_text")
        lines.append(
            {
                "timestamp": f"2025-03-08T09:00:{n + 1:02d}.000Z",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": role,
                    "content": [{"type": kind, "text": text}],
                },
            }
        )
    path = sessions / "2025" / "03" / "08" / f"rollout-2025-03-08T09-00-00-{session_id}.jsonl"
    _jsonl(path, lines)
    return path


def _alpha(root: Path) -> Machine:
    home = root / "home"
    app, tools = root / "src" / "app", root / "src" / "tools"
    _checkout(app, "git@github.com:acme/app.git")
    _checkout(tools, "https://github.com/acme/tools.git")
    sessions = (
        Session("a1a1a1a1-0000-4000-8000-000000000001", str(app), APP, "alpha appwork login flaky"),
        Session("a1a1a1a1-0000-4000-8000-000000000002", str(tools), TOOLS, "alpha toolwork linter"),
    )
    write_claude(
        home / ".claude" / "projects",
        sessions[0].id,
        sessions[0].cwd,
        [sessions[0].text, "looking at the login test"],
    )
    write_codex(
        home / ".codex" / "sessions",
        "a1a1a1a1-0000-4000-8000-000000000002",
        sessions[1].cwd,
        [sessions[1].text, "the linter config is wrong"],
    )
    return Machine("alpha", root, home, sessions)


def _beta(root: Path) -> Machine:
    home = root / "home"
    app = root / "work" / "app-checkout"
    _checkout(app, "https://deploy:s3cr3t@GitHub.com/acme/app")
    sessions = (
        Session("b2b2b2b2-0000-4000-8000-000000000003", str(app), APP, "beta appwork deploy"),
        Session(
            "b2b2b2b2-0000-4000-8000-000000000004",
            str(app / "api"),
            f"{APP}#api",
            "beta appwork api route",
        ),
    )
    (app / "api").mkdir()
    write_codex(
        home / ".codex" / "sessions",
        sessions[0].id,
        sessions[0].cwd,
        [sessions[0].text, "the deploy script needs a retry"],
    )
    write_claude(
        home / ".claude" / "projects",
        sessions[1].id,
        sessions[1].cwd,
        [sessions[1].text, "the api route is fine"],
    )
    return Machine("beta", root, home, sessions)


def make_machines(base: Path) -> tuple[Machine, Machine]:
    """The two fixture machines under ``base`` (see the module docstring)."""
    return _alpha(base / "alpha"), _beta(base / "beta")


def env_for(machine: Machine, base: Path) -> dict[str, str]:
    """An environment in which the command line sees only ``machine``'s home."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "SESSIONQUERY"))
    }
    env["HOME"] = str(machine.home)
    env["SESSIONQUERY_HOME"] = str(base / f"sq-{machine.name}")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(machine.home / name.lower())
    return env
