"""A user home holding every agent format the importers read, built from ``tests/data/formats``.

``fixture_home(base)`` copies ``tests/data/formats/home`` to ``base/home`` and finishes what a
plain copy cannot hold: OpenCode's ``opencode.db`` and Codex's ``state_5.sqlite`` are built
from their SQL scripts and Cursor's ``globalStorage/state.vscdb`` from ``cursor-state.json``
(so the repository holds no binary database), and the Cursor project folder is renamed to
Cursor's encoding of a real folder under ``base`` (Cursor's transcripts name their project only
that way; the importer looks the folder up on this machine), which the Cursor database and its
``workspace.json`` name too.

``home_env(base)`` is the environment of a user whose only setting is ``HOME``: every variable
that moves a producer's default location, and every XDG variable, is removed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from locations import TESTS
from sessionquery.sources.registry import environment_variables

__all__ = [
    "FORMATS",
    "SESSIONS",
    "FixtureHome",
    "cursor_database",
    "fixture_home",
    "home_env",
]

DATA = TESTS / "data" / "formats"

FORMATS = ("gemini", "qwen", "copilot", "opencode", "cursor", "vscode")


@dataclass(frozen=True, slots=True)
class Sample:
    """What one format's main fixture session holds, for the end-to-end checks."""

    kind: str
    session: str
    child: str
    cwd: str  # "{cursor}" stands for the Cursor project folder under the fixture base
    word: str  # in a current event of the session
    child_word: str  # only in the child
    shadowed_word: str | None  # only in an event a rewind or compaction shadowed


SESSIONS = {
    "gemini": Sample(
        "gemini",
        "5a1e0c2e-7f1d-4c5a-9b7e-0d3f6a8b1c01",
        "8c2b9e41-3d6a-4f0e-b1a7-52e4c9d0f702",
        "/home/me/gemapp",
        "zephyr",
        "void quokka_init",
        "marmoset",
    ),
    "qwen": Sample(
        "qwen",
        "3f9d2c1b-5e6a-4b7c-8d9e-0a1b2c3d4e05",
        "3f9d2c1b-5e6a-4b7c-8d9e-0a1b2c3d4e05/agent-explore-7f3c",
        "/home/me/qwenapp",
        "pelican",
        "grep_search",
        "flamingo",
    ),
    "copilot": Sample(
        "copilot",
        "c0e1d2f3-a4b5-4c6d-8e7f-9a0b1c2d3e07",
        "c0e1d2f3-a4b5-4c6d-8e7f-9a0b1c2d3e07/agent-explore-1",
        "/home/me/copilotapp",
        "heron",
        "src/ibis.py:40",
        "stork",
    ),
    "opencode": Sample(
        "opencode",
        "ses_01JF0P1A2B3C4D5E6F7G8H9J0K",
        "ses_01JF0P9Z8Y7X6W5V4U3T2S1R0Q",
        "/home/me/opencodeapp",
        "dingo",
        "png_reencode",
        "bilby",
    ),
    "cursor": Sample(
        "cursor",
        "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c11",
        "4d5e6f7a-8b9c-4dad-8e1f-3a4b5c6d7e14",
        "{cursor}",
        "axolotl",
        "ocelot_retry",
        "wombat",
    ),
    "vscode": Sample(
        "vscode",
        "e2a4c6e8-0b1d-4f3a-9c5e-7a9b1c3d5e09",
        "e2a4c6e8-0b1d-4f3a-9c5e-7a9b1c3d5e09/subagent-tool_sub",
        "/home/me/vscodeapp",
        "lemur",
        "findTextInFiles",
        "okapi",
    ),
}
"""Each format's main fixture session."""


@dataclass(frozen=True, slots=True)
class FixtureHome:
    """A materialized fixture home."""

    base: Path
    home: Path
    cursor_project: Path

    def cwd(self, sample: Sample) -> str:
        """The workspace of a sample session in this home."""
        return str(self.cursor_project) if sample.cwd == "{cursor}" else sample.cwd


def _encode(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path.strip("/"))


def _database(script: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(target)
    try:
        conn.executescript(script.read_text(encoding="utf-8"))
        conn.commit()
    finally:
        conn.close()


def cursor_database(user: Path, project: Path, *, wal: bool = True) -> Path:
    """Build Cursor's ``globalStorage/state.vscdb`` (and ``workspace.json``) under the Cursor
    user folder ``user`` from ``cursor-state.json``, naming ``project`` as the workspace."""
    spec = json.loads((DATA / "cursor-state.json").read_text(encoding="utf-8"))
    folder = json.dumps(str(project))[1:-1]
    workspace = user / "workspaceStorage" / spec["workspace"]
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "workspace.json").write_text(json.dumps({"folder": project.as_uri()}))
    target = user / "globalStorage" / "state.vscdb"
    target.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(target)
    try:
        if wal:
            conn.execute("PRAGMA journal_mode = WAL")
        for table in ("ItemTable", "cursorDiskKV"):
            conn.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            rows = [
                (key, json.dumps(value, ensure_ascii=False).replace("@CURSOR_PROJECT@", folder))
                for key, value in spec[table].items()
            ]
            conn.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
        conn.commit()
    finally:
        conn.close()
    return target


def fixture_home(base: Path) -> FixtureHome:
    """Copy the fixture home under ``base`` and finish it (see the module docstring)."""
    home = base / "home"
    shutil.copytree(DATA / "home", home, symlinks=True)
    _database(DATA / "opencode.sql", home / ".local" / "share" / "opencode" / "opencode.db")
    _database(DATA / "codex-state.sql", home / ".codex" / "state_5.sqlite")
    project = base / "work" / "cursorapp"
    project.mkdir(parents=True)
    projects = home / ".cursor" / "projects"
    (projects / "home-me-cursorapp").rename(projects / _encode(str(project)))
    cursor_database(home / ".config" / "Cursor" / "User", project)
    return FixtureHome(base, home, project)


def home_env(base: Path) -> dict[str, str]:
    """This process's environment with ``HOME`` at ``base/home`` and nothing else moved."""
    drop = environment_variables() | {
        "SESSIONQUERY_HOME",
        "SESSIONQUERY_CONFIG",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
        "USERPROFILE",
        "NO_COLOR",
    }
    env = {key: value for key, value in os.environ.items() if key not in drop}
    env["HOME"] = str(base / "home")
    return env
