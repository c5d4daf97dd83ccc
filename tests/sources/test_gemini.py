"""Gemini CLI recordings: the producer's replay (rewinds, checkpoints), lineage, workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.model import fold_surface
from sessionquery.query.service import SessionQuery
from sessionquery.sources.gemini import GeminiSource

MAIN = SESSIONS["gemini"].session
CHILD = SESSIONS["gemini"].child
LEGACY = "0b6c1f2a-9e8d-4b7c-a6f5-e4d3c2b1a003"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("gemini"))


def _source(home: FixtureHome) -> GeminiSource:
    return GeminiSource(home.home / ".gemini")


def test_recordings_list_with_project_paths_lineage_and_start_times(home: FixtureHome) -> None:
    listing = {e.header.id: e.header for e in _source(home).list()}
    assert set(listing) == {MAIN, CHILD, LEGACY}
    assert listing[MAIN].cwd == "/home/me/gemapp" and listing[MAIN].parent_session is None
    assert listing[CHILD].parent_session == MAIN and listing[CHILD].origin == "subagent"
    assert listing[CHILD].cwd == "/home/me/gemapp"  # its root's project, not its lib/ folder
    assert listing[LEGACY].cwd == "/home/me/oldproj"  # found by the projectHash
    assert listing[MAIN].created_at == 1785578400000
    assert _source(home).problems() == []


def test_a_message_written_again_is_one_event_with_its_last_version(home: FixtureHome) -> None:
    log = SessionQuery(persistence=_source(home)).read_session(MAIN)
    calls = [e for e in log.events if e.type == "tool/call"]
    assert [c.data["callId"] for c in calls] == ["call-1", "call-2"]
    results = [e for e in log.events if e.type == "tool/result"]
    first = results[0].data["message"]["content"][0]["content"][0]["text"]
    assert first == "ld: error: undefined reference to quokka_init"
    assert results[0].source_event_seqs == (calls[0].seq,)
    assistant = next(e for e in log.events if e.type == "assistant/message")
    assert assistant.data["origin"]["lines"] == [4, 5]
    assert assistant.data["usage"]["total"] == 864


def test_a_rewind_and_a_checkpoint_shadow_what_they_drop(home: FixtureHome) -> None:
    log = SessionQuery(persistence=_source(home)).read_session(MAIN)
    fold = fold_surface(log.events)
    by_text = {
        e.data["content"][0].get("text"): e.seq
        for e in log.events
        if e.type == "user/message" and e.data["content"]
    }
    rewound = by_text["Try the other way: vendor the old marmoset patch instead"]
    assert fold.surface_of[rewound] == "shadowed"
    rewind = next(e for e in log.events if e.data.get("source", {}).get("kind") == "rewind")
    assert fold.replaced_by[rewound] == rewind.seq
    snapshot = next(k for k in by_text if k and k.startswith("<state_snapshot>"))
    assert fold.surface_of[by_text[snapshot]] == "current"
    assert fold.surface_of[by_text["Why does the nightly build fail on the zephyr module?"]] == (
        "shadowed"
    )
    titles = [e.data["title"] for e in log.events if e.type == "session/title"]
    assert titles[-1] == "Fix the zephyr build link error"


def test_the_subagent_is_traced_from_its_parent(home: FixtureHome) -> None:
    query = SessionQuery(persistence=_source(home))
    trace = query.trace_session(MAIN)
    assert [node.record.header.id for node in trace.descendants] == [CHILD]
    call = next(e for e in query.read_session(MAIN).events if e.type == "assistant/message"
                and any(b.get("agentId") for b in e.data["message"]["content"]))  # fmt: skip
    assert call.data["message"]["content"][-1]["agentId"] == CHILD


def test_a_legacy_json_recording_is_read_as_one_document(home: FixtureHome) -> None:
    log = SessionQuery(persistence=_source(home)).read_session(LEGACY)
    assert [e.type for e in log.events if e.type.endswith("message")] == [
        "user/message",
        "assistant/message",
    ]
    result = next(e for e in log.events if e.type == "tool/result")
    assert "capybara-3.json" in result.data["message"]["content"][0]["content"][0]["text"]


def test_a_recording_without_metadata_or_project_is_listed_with_problems(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "nowhere" / "chats"
    chats.mkdir(parents=True)
    record = {"id": "m1", "timestamp": "2026-01-02T03:04:05Z", "type": "user", "content": "hi"}
    (chats / "session-2026-01-02T03-04-abcd.jsonl").write_text(json.dumps(record) + "\n")
    source = GeminiSource(tmp_path / ".gemini")
    (entry,) = source.list()
    assert entry.header.id == "session-2026-01-02T03-04-abcd" and entry.header.cwd is None
    messages = sorted(p.message for p in source.problems())
    assert messages[0].startswith("no sessionId") and messages[1].startswith("project path")


def test_a_tmp_folder_can_be_the_root(home: FixtureHome) -> None:
    source = GeminiSource(home.home / ".gemini" / "tmp")
    listing = {e.header.id: e.header for e in source.list()}
    assert listing[MAIN].cwd == "/home/me/gemapp"  # from tmp/gemapp/.project_root
