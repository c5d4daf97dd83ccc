"""VS Code Copilot Chat sessions: operation logs replayed, undone requests, subagents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.model import fold_surface
from sessionquery.query.service import SessionQuery
from sessionquery.sources.vscode import VscodeCopilotSource

MAIN = SESSIONS["vscode"].session
CHILD = SESSIONS["vscode"].child
EMPTY = "f3b5d7f9-1c2e-4a4b-8d6f-8b0c2d4e6f10"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("vscode"))


def _root(home: FixtureHome) -> Path:
    return home.home / ".config" / "Code" / "User"


def test_sessions_of_workspaces_and_empty_windows_are_listed(home: FixtureHome) -> None:
    listing = {e.header.id: e.header for e in VscodeCopilotSource(_root(home)).list()}
    assert set(listing) == {MAIN, CHILD, EMPTY}
    assert listing[MAIN].cwd == "/home/me/vscodeapp" and listing[EMPTY].cwd is None
    assert listing[CHILD].parent_session == MAIN and listing[CHILD].cwd == "/home/me/vscodeapp"


def test_an_undone_request_stays_in_the_log_shadowed(home: FixtureHome) -> None:
    log = SessionQuery(persistence=VscodeCopilotSource(_root(home))).read_session(MAIN)
    fold = fold_surface(log.events)
    okapi = next(e.seq for e in log.events if e.type == "user/message" and "okapi" in str(e.data))
    rewind = next(e.seq for e in log.events if e.data.get("source", {}).get("kind") == "rewind")
    assert fold.replaced_by[okapi] == rewind
    failed = next(e for e in log.events if e.type == "tool/result" and "exit code 1" in str(e.data))
    assert failed.data["message"]["content"][0]["isError"] is True
    assert [e.data["title"] for e in log.events if e.type == "session/title"][-1] == (
        "Lemur export drops rows"
    )


def test_a_subagent_holds_its_prompt_tools_and_result(home: FixtureHome) -> None:
    log = SessionQuery(persistence=VscodeCopilotSource(_root(home))).read_session(CHILD)
    texts = str([e.data for e in log.events])
    assert "List every loop that starts at index 1" in texts
    assert "tapir.py:30" in texts and "Two loops start at 1" in texts


def test_an_operation_that_does_not_apply_is_a_problem_and_the_rest_is_read(
    tmp_path: Path,
) -> None:
    chats = tmp_path / "workspaceStorage" / "h" / "chatSessions"
    chats.mkdir(parents=True)
    ops = [
        {"kind": 0, "v": {"version": 3, "sessionId": "s", "creationDate": 5, "requests": []}},
        {"kind": 1, "k": ["requests", 7, "response"], "v": []},
        {"kind": 1, "k": ["customTitle"], "v": "kept"},
    ]
    (chats / "s.jsonl").write_text("".join(json.dumps(op) + "\n" for op in ops))
    source = VscodeCopilotSource(tmp_path)
    assert [e.header.id for e in source.list()] == ["s"]
    lines = {(p.line, p.message.split(" (")[0]) for p in source.problems()}
    assert (2, "operation does not apply to the session state") in lines


def test_a_request_replaced_in_place_is_shadowed_by_its_successor(tmp_path: Path) -> None:
    chats = tmp_path / "workspaceStorage" / "h" / "chatSessions"
    chats.mkdir(parents=True)

    def request(rid: str, text: str) -> dict[str, object]:
        return {"requestId": rid, "timestamp": 10, "message": {"text": text}, "response": []}

    state = {"version": 3, "sessionId": "s", "creationDate": 5}
    ops = [
        {"kind": 0, "v": state | {"requests": [request("a", "keep me")]}},
        {"kind": 2, "k": ["requests"], "v": [request("b", "the old wording")]},
        {"kind": 1, "k": ["requests", 1], "v": request("c", "the new wording")},
    ]
    (chats / "s.jsonl").write_text("".join(json.dumps(op) + "\n" for op in ops))
    log = SessionQuery(persistence=VscodeCopilotSource(tmp_path)).read_session("s")
    fold = fold_surface(log.events)
    prompts = {
        str(e.data["content"][0]["text"]): e.seq
        for e in log.events
        if e.type == "user/message" and e.data["content"] and e.data["content"][0].get("text")
    }
    assert fold.surface_of[prompts["the old wording"]] == "shadowed"
    assert fold.surface_of[prompts["the new wording"]] == "current"
    assert fold.surface_of[prompts["keep me"]] == "current"
