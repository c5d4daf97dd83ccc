"""The five model-facing tools over imported Claude Code and Codex transcripts, end to end.

The real files of the shared corpus are read in place through symlinks under a temporary
tree, combined with ``MultiSource`` and indexed into a SQLite file under the test's temporary
directory. Each format gets one workflow test as an agent would run it: find a session with
``session_search``, trace it, search and read one of its events and trace that event; callers
from another workspace (including the same path with a trailing slash) see none of it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from locations import CORPUS
from sessionquery.errors import ToolErrorCode
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource
from sessionquery.tools import SessionQueryTools, ToolCaller, ToolResult

DEMO = "/path/to/Demo"
VIEWER = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
VIEWER_CHILDREN = [
    f"{VIEWER}/agent-test-hash-123",
    f"{VIEWER}/sidechain-6340ddef-f656-4b72-a065-82390f637678",
    f"{VIEWER}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5",
]
HEAVY = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
HEAVY_SAME_CWD_CHILD = f"{HEAVY}/sidechain-f4546a51-ea10-47e0-b4e0-76802974f8a9"

REPO = "/tmp/repo"
SMALL = "019fc8be-3658-7ca3-9e29-000000000000"
SPECTORA = "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2"
ROLLOUT = "rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl"

UNAUTHORIZED = "SESSION_QUERY_TOOL_UNAUTHORIZED: session target is outside the caller workspace"
NO_MATCHES = "No prior session matches found."


class _World:
    """The tools over the imported corpus; ``call`` runs one tool for one caller."""

    def __init__(self, query: SessionQuery) -> None:
        self.query = query
        # Each workflow finds its session by an exact phrase of it: the literal mode.
        self.tools = SessionQueryTools(query, match="phrase")

    def call(self, caller: ToolCaller, name: str, arguments: dict[str, Any]) -> ToolResult:
        return self.tools.call(name, arguments, caller)

    def ok(self, caller: ToolCaller, name: str, arguments: dict[str, Any]) -> str:
        result = self.call(caller, name, arguments)
        assert not result.is_error, result.text
        return result.text


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_World]:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    root = tmp_path_factory.mktemp("imported")
    claude = root / "claude" / "-demo"
    claude.mkdir(parents=True)
    viewer_files = sorted((CORPUS / "claude-code-viewer").glob("*.jsonl"))
    assert len(viewer_files) == 4
    for path in viewer_files:
        shutil.copyfile(path, claude / path.name)
    codex = root / "codex" / "2025" / "09" / "24"
    codex.mkdir(parents=True)
    small = CORPUS / "agent-sessions" / "codex" / "small.jsonl"
    assert small.is_file() and (CORPUS / "agentcmd" / ROLLOUT).is_file()
    shutil.copyfile(small, codex / "rollout-small.jsonl")
    shutil.copyfile(CORPUS / "agentcmd" / ROLLOUT, codex / ROLLOUT)
    multi = MultiSource([ClaudeCodeSource(root / "claude"), CodexSource(root / "codex")])
    query = SessionQuery(persistence=multi, search=SqliteSearch(root / "index.sqlite3"))
    try:
        yield _World(query)
    finally:
        query.close()


def _best_match_seq(search_text: str, session_id: str) -> int:
    """The ``seq`` of the best match printed for ``session_id`` in a session search."""
    lines = search_text.splitlines()
    start = next(i for i, line in enumerate(lines) if f". Session {session_id} " in line)
    match = next(line for line in lines[start:] if line.strip().startswith("Best match: seq "))
    found = re.search(r"seq (\d+)", match)
    assert found is not None
    return int(found.group(1))


def _read_json(read_text: str) -> Any:
    """The event printed as indented JSON by ``session_event_read``."""
    body = read_text.split("```json\n", 1)[1].split("\n```", 1)[0]
    return json.loads(body)


def _outsider_sees_nothing(
    world: _World, caller: ToolCaller, query: str, session_id: str, seq: int
) -> None:
    search = world.ok(caller, "session_search", {"query": query})
    assert session_id not in search
    targeted: list[tuple[str, dict[str, Any]]] = [
        ("session_trace", {}),
        ("session_event_search", {"query": query}),
        ("session_event_read", {"seq": seq}),
        ("session_event_trace", {"seq": seq}),
    ]
    for name, arguments in targeted:
        seen = world.call(caller, name, {"session_id": session_id, **arguments})
        missing = world.call(caller, name, {"session_id": "no-such-session", **arguments})
        assert seen == missing, name
        assert seen.is_error and seen.code == ToolErrorCode.UNAUTHORIZED.value
        assert seen.text == UNAUTHORIZED


def test_claude_code_transcript_is_found_traced_read_and_event_traced_in_its_workspace(
    world: _World,
) -> None:
    caller = ToolCaller(cwd=DEMO)
    phrase = "update the CLAUDE.md file to the latest state"
    search = world.ok(caller, "session_search", {"query": phrase})
    assert search.startswith("Session search results (1):")
    assert f"\n1. Session {VIEWER} \u2014 untitled\n" in search
    seq = _best_match_seq(search, VIEWER)

    trace = world.ok(caller, "session_trace", {"session_id": VIEWER})
    descendants = trace.split("Descendants:\n", 1)[1].splitlines()
    assert [line.split(" \u2014 ")[0] for line in descendants] == [
        f"- {child}" for child in VIEWER_CHILDREN
    ]
    assert "outside" not in trace
    child_trace = world.ok(caller, "session_trace", {"session_id": VIEWER_CHILDREN[2]})
    assert f"- {VIEWER} \u2014 untitled" in child_trace.split("Descendants:")[0]

    events = world.ok(caller, "session_event_search", {"session_id": VIEWER, "query": phrase})
    assert f"1. seq {seq} | assistant/message | current | " in events

    read = world.ok(caller, "session_event_read", {"session_id": VIEWER, "seq": seq})
    event = _read_json(read)
    assert (event["seq"], event["type"]) == (seq, "assistant/message")
    assert phrase in event["data"]["message"]["content"][0]["text"]
    assert event["data"]["origin"]["file"] == f"-demo/{VIEWER}.jsonl"

    # A tool result cites the call it answers: the event trace shows that source.
    log = world.query.read_session(VIEWER)
    result = next(e for e in log.events if e.type == "tool/result" and e.source_event_seqs)
    assert result.source_event_seqs is not None
    (call_seq,) = result.source_event_seqs
    traced = world.ok(caller, "session_event_trace", {"session_id": VIEWER, "seq": result.seq})
    assert f"Target: seq {result.seq} | tool/result | current | " in traced
    assert f"Events cited directly as sources: seq {call_seq}\n" in traced
    call_trace = world.ok(caller, "session_event_trace", {"session_id": VIEWER, "seq": call_seq})
    assert f"seq {result.seq}" in call_trace.split("Direct derived events:", 1)[1]


def test_subagents_that_started_in_a_sub_folder_are_in_their_roots_workspace(
    world: _World,
) -> None:
    trace = world.ok(ToolCaller(cwd=DEMO), "session_trace", {"session_id": HEAVY})
    descendants = trace.split("Descendants:\n", 1)[1].splitlines()
    assert "outside" not in trace
    assert len(descendants) == 5
    assert f"- {HEAVY_SAME_CWD_CHILD} \u2014 " in trace

    # The project authorizes them: from the sub-folder they started in, nothing is visible.
    inner = ToolCaller(cwd=f"{DEMO}/todo-app")
    search = world.call(inner, "session_search", {"query": "components for a TODO app"})
    assert not search.is_error and search.text.startswith("No prior session matches")
    child = world.call(
        inner,
        "session_trace",
        {"session_id": f"{HEAVY}/sidechain-6690d10e-f521-4ac0-800d-e5eb7a2d8072"},
    )
    assert child.is_error and child.code == "SESSION_QUERY_TOOL_UNAUTHORIZED"


@pytest.mark.parametrize("cwd", [f"{DEMO}/", "/path/to/demo", "/elsewhere", f"{DEMO}/todo-app"])
def test_claude_code_session_is_invisible_from_another_workspace(world: _World, cwd: str) -> None:
    _outsider_sees_nothing(
        world, ToolCaller(cwd=cwd), "update the CLAUDE.md file to the latest state", VIEWER, 4
    )


def test_codex_rollout_is_found_traced_read_and_event_traced_in_its_workspace(
    world: _World,
) -> None:
    caller = ToolCaller(cwd=REPO)
    search = world.ok(caller, "session_search", {"query": "List the files"})
    assert search.startswith("Session search results (1):")
    assert f"\n1. Session {SMALL} \u2014 [trimmed for fixture]\n" in search
    assert "Parent: root" in search
    seq = _best_match_seq(search, SMALL)

    trace = world.ok(caller, "session_trace", {"session_id": SMALL})
    assert "- none (target is a root session)" in trace
    assert trace.endswith("Descendants:\n- none")

    events = world.ok(caller, "session_event_search", {"session_id": SMALL, "query": "files"})
    assert f"seq {seq} | user/message | shadowed | " in events

    read = world.ok(
        caller, "session_event_read", {"session_id": SMALL, "seq": seq, "before": 1, "after": 1}
    )
    event = _read_json(read)
    assert (event["seq"], event["type"]) == (seq, "user/message")
    assert event["data"]["content"][0]["text"] == "List the files"
    assert event["data"]["origin"]["file"] == "2025/09/24/rollout-small.jsonl"
    assert f"seq {seq - 1}" in read and f"seq {seq + 1}" in read

    # The prompt was compacted away: its trace names the compaction that replaced it.
    expected = world.query.trace_event(SMALL, seq)
    assert expected.replaced_by is not None
    traced = world.ok(caller, "session_event_trace", {"session_id": SMALL, "seq": seq})
    assert f"Target: seq {seq} | user/message | shadowed | " in traced
    assert f"Replaced by: seq {expected.replaced_by}\n" in traced
    chain = ", ".join(f"seq {s}" for s in expected.replacement_chain)
    assert f"Replacement chain: {chain}\n" in traced


@pytest.mark.parametrize("cwd", [f"{REPO}/", "/tmp", "/tmp/rep", SPECTORA])
def test_codex_rollout_is_invisible_from_another_workspace(world: _World, cwd: str) -> None:
    _outsider_sees_nothing(world, ToolCaller(cwd=cwd), "List the files", SMALL, 6)


def test_codex_workspace_sees_its_own_rollout_and_not_the_other_one(world: _World) -> None:
    caller = ToolCaller(cwd=SPECTORA)
    search = world.ok(caller, "session_search", {"query": "I see 4 queries"})
    assert "Session 01997ea4-a70d-7da3-8c20-c736db82a7c5 " in search
    assert world.ok(ToolCaller(cwd=REPO), "session_search", {"query": "I see 4 queries"}) == (
        NO_MATCHES
    )
