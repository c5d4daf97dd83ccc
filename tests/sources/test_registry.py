"""The importer seam: kinds, default locations, opening, raw units and parsing them again."""

from __future__ import annotations

import json
from pathlib import Path

from sessionquery.persistence import JsonlPersistence
from sessionquery.query.service import SessionQuery
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource
from sessionquery.sources._common import Problem
from sessionquery.sources.registry import (
    KINDS,
    SourceEnvironment,
    default_locations,
    source_kind,
)
from sessionquery.sources.units import SkippedFile, Unit, UnitStore


class MemoryUnits:
    """A unit store holding copies of another store's units (as the archive would)."""

    def __init__(self, location: Path, units: dict[str, tuple[Unit, bytes]]) -> None:
        self._location = location
        self._units = units

    @classmethod
    def copy_of(cls, store: UnitStore, location: Path) -> MemoryUnits:
        units, _ = store.scan()
        return cls(location, {u.key: (u, store.read(u.key, 1 << 30)[0]) for u in units})

    @property
    def location(self) -> Path:
        return self._location

    def fingerprint(self) -> str | None:
        return None

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        return [unit for unit, _ in sorted(self._units.values(), key=lambda u: u[0].key)], []

    def stat(self, key: str) -> Unit | None:
        found = self._units.get(key)
        return None if found is None else found[0]

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        found = self._units.get(key)
        if found is None:
            raise SkippedFile("gone")
        return found[1], found[0]

    def where(self, key: str) -> str:
        return f"{self._location}/{key}"


def _claude_home(root: Path) -> Path:
    projects = root / ".claude" / "projects" / "-w"
    projects.mkdir(parents=True)
    main = [
        {"type": "user", "sessionId": "s-1", "cwd": "/w", "uuid": "u1",
         "timestamp": "2025-01-01T00:00:00Z",
         "message": {"role": "user", "content": "find the flaky scheduler test"}},
    ]  # fmt: skip
    (projects / "s-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in main))
    agent = projects / "s-1" / "subagents"
    agent.mkdir(parents=True)
    child = [
        {"type": "user", "sessionId": "s-1", "cwd": "/w/pkg", "uuid": "a1", "isSidechain": True,
         "timestamp": "2025-01-01T00:00:02Z",
         "message": {"role": "user", "content": "look in the pkg folder"}},
    ]  # fmt: skip
    (agent / "agent-x.jsonl").write_text("".join(json.dumps(line) + "\n" for line in child))
    return root / ".claude" / "projects"


def test_every_kind_has_a_unique_name_and_label() -> None:
    names = [kind.kind for kind in KINDS]
    labels = [kind.label for kind in KINDS]
    assert len(set(names)) == len(names) and len(set(labels)) == len(labels)
    assert names[:3] == ["store", "claude", "codex"]
    assert source_kind("root") is source_kind("store")
    assert source_kind("nonsense") is None


def test_default_locations_follow_the_environment_each_producer_honours(tmp_path: Path) -> None:
    plain = SourceEnvironment(user_home=tmp_path / "me", data_home=tmp_path / "sq")
    located = dict(default_locations(plain))
    assert located["store"] == tmp_path / "sq" / "sessions"
    assert located["claude"] == tmp_path / "me" / ".claude" / "projects"
    assert located["codex"] == tmp_path / "me" / ".codex" / "sessions"
    moved = SourceEnvironment(
        environ={"CLAUDE_CONFIG_DIR": str(tmp_path / "c"), "CODEX_HOME": "rel/codex"},
        user_home=tmp_path / "me",
        data_home=tmp_path / "sq",
    )
    located = dict(default_locations(moved))
    assert located["claude"] == tmp_path / "c" / "projects"
    assert located["codex"] == tmp_path / "me" / "rel" / "codex" / "sessions"


def test_a_kind_opens_its_location_as_its_importer(tmp_path: Path) -> None:
    projects = _claude_home(tmp_path)
    claude = source_kind("claude")
    assert claude is not None
    source = claude.open(projects, metadata_cache=tmp_path / "cache.sqlite3")
    assert isinstance(source, ClaudeCodeSource)
    assert sorted(e.header.id for e in source.list()) == ["s-1", "s-1/agent-x"]
    store = source_kind("store")
    assert store is not None and isinstance(store.open(tmp_path / "st"), JsonlPersistence)
    assert store.units(tmp_path / "st") is None
    codex = source_kind("codex")
    assert codex is not None and isinstance(codex.open(tmp_path / "none"), CodexSource)


def test_units_copied_elsewhere_parse_exactly_as_the_importer_parses_its_folder(
    tmp_path: Path,
) -> None:
    projects = _claude_home(tmp_path)
    claude = source_kind("claude")
    assert claude is not None
    live = claude.units(projects)
    assert live is not None
    units, problems = live.scan()
    assert [u.key for u in units] == ["-w/s-1.jsonl", "-w/s-1/subagents/agent-x.jsonl"]
    assert problems == [] and all(u.role == "transcript" and u.stamp for u in units)
    copies = MemoryUnits.copy_of(live, tmp_path / "archive")
    for path in projects.rglob("*.jsonl"):
        path.unlink()  # the producer purged its transcripts; the copies remain
    archived = claude.open_units(copies)
    assert archived is not None
    original = ClaudeCodeSource.from_units(copies)
    assert [e.header for e in archived.list()] == [e.header for e in original.list()]
    query = SessionQuery(persistence=archived)
    trace = query.trace_session("s-1/agent-x")
    assert trace.root is not None and trace.root.header.id == "s-1"
    assert trace.target.header.cwd == "/w"  # a subagent works in its root's workspace
    log = query.read_session("s-1")
    assert log.events[1].data["origin"] == {"file": "-w/s-1.jsonl", "line": 1}


def test_a_catalog_names_the_unit_of_each_session(tmp_path: Path) -> None:
    source = ClaudeCodeSource(_claude_home(tmp_path))
    source.list()
    assert source.session_units() == {
        "s-1": "-w/s-1.jsonl",
        "s-1/agent-x": "-w/s-1/subagents/agent-x.jsonl",
    }


def test_importers_are_labelled_by_their_kind_in_a_multi_source(tmp_path: Path) -> None:
    combined = MultiSource([ClaudeCodeSource(tmp_path / "a"), CodexSource(tmp_path / "b")])
    assert combined.labels == ["claude", "codex"]


def test_every_importer_of_the_spec_is_a_name_of_the_package() -> None:
    from sessionquery import sources

    for name in (
        "GeminiSource",
        "QwenSource",
        "CopilotCliSource",
        "OpenCodeSource",
        "CursorSource",
        "VscodeCopilotSource",
    ):
        assert name in sources.__all__ and getattr(sources, name).__name__ == name
    assert {k.kind for k in KINDS} == {
        "store", "claude", "codex", "gemini", "qwen", "copilot", "opencode", "cursor", "vscode"
    }  # fmt: skip


def test_the_default_cursor_location_is_read_with_cursor_s_user_folder(tmp_path: Path) -> None:
    cursor = source_kind("cursor")
    assert cursor is not None
    for platform, folder in (
        ("linux", tmp_path / "me" / ".config" / "Cursor" / "User"),
        ("darwin", tmp_path / "me" / "Library" / "Application Support" / "Cursor" / "User"),
        ("win32", tmp_path / "roam" / "Cursor" / "User"),
    ):
        environ = {"APPDATA": str(tmp_path / "roam")} if platform == "win32" else {}
        env = SourceEnvironment(environ, tmp_path / "me", tmp_path / "sq", platform)
        (projects,) = cursor.defaults(env)
        assert projects == tmp_path / "me" / ".cursor" / "projects"
        assert cursor.companions(env, projects) == (folder,)
    moved = SourceEnvironment({"XDG_CONFIG_HOME": str(tmp_path / "xdg")}, tmp_path / "me")
    assert cursor.companions(moved, projects) == (tmp_path / "xdg" / "Cursor" / "User",)
    claude = source_kind("claude")
    assert claude is not None and claude.companions(moved, tmp_path) == ()
