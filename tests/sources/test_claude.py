"""ClaudeCodeSource over the real transcripts in the shared corpus and hand-made bad files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from locations import CORPUS
from sessionquery.errors import ErrorCode, PersistenceNotFound, SessionQueryError
from sessionquery.model import (
    SessionEvent,
    extract_event_text,
    fold_surface,
    fold_title,
    interrupted_turn_closers,
)
from sessionquery.persistence.base import SessionPersistence
from sessionquery.persistence.documents import checking
from sessionquery.query.service import SessionQuery
from sessionquery.sources import ClaudeCodeSource

# Every Claude Code transcript of the corpus, by folder (the rest are Codex or dsh logs).
CLAUDE_FILES = {
    "claude-code-viewer": [
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        "agent-test-hash-123.jsonl",
        "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    ],
    "episodic-memory": [
        "large-conversation.jsonl",
        "long-conversation.jsonl",
        "medium-conversation.jsonl",
        "short-conversation.jsonl",
    ],
    "agentcmd": [
        "06381696-0074-49f8-863e-6ad4fac507f9.jsonl",
        "full-session-four.jsonl",
        "full-session-two.jsonl",
        "full-session.jsonl",
    ],
    "agent-sessions/claude": ["small.jsonl"],
}

DEMO = "/path/to/Demo"
MONO = "/Users/jnarowski/Dev/sourceborn/src/agent-workflows-monorepo-v2"
VIEWER_PARENT = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
SIDECHAIN_HEAVY = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"

# id -> (cwd, parent, title)
EXPECTED = {
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a": (DEMO, None, None),
    VIEWER_PARENT: (DEMO, None, None),
    f"{VIEWER_PARENT}/agent-test-hash-123": (DEMO, VIEWER_PARENT, None),
    f"{VIEWER_PARENT}/sidechain-6340ddef-f656-4b72-a065-82390f637678": (DEMO, VIEWER_PARENT, None),
    f"{VIEWER_PARENT}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5": (DEMO, VIEWER_PARENT, None),
    SIDECHAIN_HEAVY: (DEMO, None, "Empty Repo Setup: CLAUDE.md Foundation Created"),
    # Subagents work in their root's workspace, wherever they started (issue 24).
    f"{SIDECHAIN_HEAVY}/sidechain-0d692b0f-17cb-4fd0-94fb-215dabcef803": (
        DEMO,
        SIDECHAIN_HEAVY,
        None,
    ),
    f"{SIDECHAIN_HEAVY}/sidechain-60dade70-20bb-4edb-9dad-9f08267e0cc2": (
        DEMO,
        SIDECHAIN_HEAVY,
        None,
    ),
    f"{SIDECHAIN_HEAVY}/sidechain-6690d10e-f521-4ac0-800d-e5eb7a2d8072": (
        DEMO,
        SIDECHAIN_HEAVY,
        None,
    ),
    f"{SIDECHAIN_HEAVY}/sidechain-f4546a51-ea10-47e0-b4e0-76802974f8a9": (
        DEMO,
        SIDECHAIN_HEAVY,
        None,
    ),
    f"{SIDECHAIN_HEAVY}/sidechain-f4ab2bf6-d642-431a-85cb-66691f24c404": (
        DEMO,
        SIDECHAIN_HEAVY,
        None,
    ),
    "0fae0449-64d3-4788-8622-d3a47d82c14b": (
        "/Users/testuser/Documents/GitHub/projects/example-project/.worktrees/streaming",
        None,
        "Clarifying AI Assistant's Action-Taking Guidelines",
    ),
    "9a9eadc8-c1f1-493e-a0f1-884aa996b05b": (
        "/Users/testuser/Documents/GitHub/example-org/example-project",
        None,
        None,
    ),
    "medium-conversation": (
        None,
        None,
        "Debugging Complex Web App Authentication and State Management",
    ),
    "982581eb-41b9-46da-86c1-ac34168117a8": (
        "/Users/testuser/.worktrees/example-feature/skills/collaboration/"
        "remembering-conversations/tool",
        None,
        "Prerequisites Checking: Unveiling Hidden Requirements and Technical Nuances",
    ),
    "06381696-0074-49f8-863e-6ad4fac507f9": (MONO, None, None),
    "2d984148-cddb-4605-aac1-13e720fe613c": (MONO, None, None),
    "8a2518dd-ff41-4d5f-83a1-407b03598cc6": (MONO, None, None),
    "cfa1e878-62b5-4e40-b281-bbf9b250d766": (MONO, None, None),
    "ses_stage0_small": ("/tmp", None, "Stage0 AI title"),
    "ses_stage0_small/sidechain-sys1": ("/tmp", "ses_stage0_small", None),
}

# Tool results whose call is not in the same session (synthetic tool_use blocks without id).
UNPAIRED_RESULTS = {
    "ses_stage0_small/sidechain-sys1": ["tool_use_stage0_001", "tool_use_stage0_002"],
}

# Distinctive phrases, each from one real file, and the session that must contain them.
PHRASES = {
    "Create React components for the TODO app": f"{SIDECHAIN_HEAVY}/sidechain-6690d10e-f521-"
    "4ac0-800d-e5eb7a2d8072",
    "Run the test suite": f"{VIEWER_PARENT}/agent-test-hash-123",
}


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A projects tree holding copies of the vendored real transcripts."""
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    root = tmp_path / "projects"
    for folder, names in CLAUDE_FILES.items():
        project = root / ("-" + folder.replace("/", "-"))
        project.mkdir(parents=True)
        for name in names:
            source = CORPUS / folder / name
            assert source.is_file(), source
            shutil.copyfile(source, project / name)
    return root


DERIVED_TITLES = {
    "cfa1e878-62b5-4e40-b281-bbf9b250d766": "Hey",
    "2d984148-cddb-4605-aac1-13e720fe613c": (
        "Can you add the first two initials of actual user who is logged into the NavUser"
    ),
    "06381696-0074-49f8-863e-6ad4fac507f9": (
        "Let's explore scrolling, scroll to bottom, scrolling when new messages are…"
    ),
    f"{VIEWER_PARENT}/agent-test-hash-123": "Run the test suite",
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a": None,  # only a slash command: nothing to derive
}


def test_sessions_without_a_stated_title_get_one_from_their_first_real_prompt(
    projects: Path,
) -> None:
    source = ClaudeCodeSource(projects)
    for session_id, title in DERIVED_TITLES.items():
        snapshot = fold_title(_events(source, session_id))
        assert (snapshot.title if snapshot else None) == title, session_id
        if snapshot is not None:
            assert snapshot.source == {"kind": "derived"}
            assert len(snapshot.title) <= 80
            (prompt_seq,) = snapshot.message_seqs
            assert _events(source, session_id)[prompt_seq].type == "user/message"
    stated = fold_title(_events(source, SIDECHAIN_HEAVY))
    assert stated is not None
    assert stated.source == {"kind": "claude-summary"}


def _events(source: ClaudeCodeSource, session_id: str) -> list[SessionEvent]:
    with source.open_read(session_id) as handle:
        return handle.read()


def test_corpus_lists_every_claude_transcript_in_this_table() -> None:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    listed = {f"{folder}/{name}" for folder, names in CLAUDE_FILES.items() for name in names}
    found = set()
    for path in CORPUS.rglob("*.jsonl"):
        rel = path.relative_to(CORPUS).as_posix()
        if path.name.startswith("rollout-") or "/codex/" in f"/{rel}" or "deepseek" in rel:
            continue
        found.add(rel)
    assert found == listed


def test_every_real_transcript_imports_with_expected_ids_cwds_parents_and_titles(
    projects: Path,
) -> None:
    source = ClaudeCodeSource(projects)
    assert isinstance(source, SessionPersistence)
    listing = {entry.header.id: entry for entry in source.list()}
    assert set(listing) == set(EXPECTED)
    for session_id, (cwd, parent, title) in EXPECTED.items():
        header = listing[session_id].header
        assert header.cwd == cwd, session_id
        assert header.parent_session == parent, session_id
        assert header.origin == ("subagent" if parent else None)
        events = _events(source, session_id)
        assert listing[session_id].event_count == len(events)
        snapshot = fold_title(events)
        stated = snapshot if snapshot and snapshot.source.get("kind") != "derived" else None
        assert (stated.title if stated else None) == title, session_id


def test_every_imported_log_folds_with_and_without_crash_tail_closers(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    for entry in source.list():
        events = _events(source, entry.header.id)
        assert [event.seq for event in events] == list(range(len(events)))
        fold_surface(events)
        fold_surface(events + interrupted_turn_closers(events))
        for event in events:
            assert isinstance(event.data, dict)
            origin = event.data["origin"]
            assert origin["file"].endswith(".jsonl") and not origin["file"].startswith("/")
            assert origin["line"] >= 1
            if event.ignorable:
                assert event.surface_op is None
                assert isinstance(event.data["raw"], str)


def test_every_tool_result_pairs_with_a_call_except_the_documented_ones(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    for entry in source.list():
        events = _events(source, entry.header.id)
        calls = {e.data["callId"] for e in events if e.type == "tool/call"}
        blocks = {
            block["id"]
            for e in events
            if e.type == "assistant/message"
            for block in e.data["message"]["content"]
            if block["type"] == "tool-call"
        }
        assert calls == blocks
        unpaired = [
            e.data["message"]["source"]["callId"]
            for e in events
            if e.type == "tool/result" and e.data["message"]["source"]["callId"] not in calls
        ]
        assert unpaired == UNPAIRED_RESULTS.get(entry.header.id, [])


def test_unanswered_calls_at_the_end_are_left_for_crash_tail_repair(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    events = _events(source, "cfa1e878-62b5-4e40-b281-bbf9b250d766")
    closers = interrupted_turn_closers(events)
    assert [c.type for c in closers][-1] == "turn/end"
    assert [c.type for c in closers].count("tool/result") == 3
    closed = _events(source, "2d984148-cddb-4605-aac1-13e720fe613c")
    assert interrupted_turn_closers(closed) == []
    assert closed[-1].type == "turn/end"


def test_standalone_agent_file_is_a_subagent_child_of_its_parent(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    entry = source.stat(f"{VIEWER_PARENT}/agent-test-hash-123")
    assert entry is not None
    assert entry.header.parent_session == VIEWER_PARENT
    assert entry.header.delegation_depth == 1
    assert source.stat(VIEWER_PARENT) is not None


def test_sidechain_heavy_transcript_yields_five_subagent_children(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    children = [e for e in source.list() if e.header.parent_session == SIDECHAIN_HEAVY]
    assert len(children) == 5
    assert {child.header.origin for child in children} == {"subagent"}
    parent = _events(source, SIDECHAIN_HEAVY)
    assert not any("Create React components" in extract_event_text(e) for e in parent[:5])


def test_split_assistant_lines_merge_into_one_message_with_all_their_lines(
    projects: Path,
) -> None:
    source = ClaudeCodeSource(projects)
    events = _events(source, f"{SIDECHAIN_HEAVY}/sidechain-60dade70-20bb-4edb-9dad-9f08267e0cc2")
    merged = [e for e in events if e.type == "assistant/message" and "lines" in e.data["origin"]]
    assert merged
    lines = merged[0].data["origin"]["lines"]
    assert len(lines) >= 2 and lines == sorted(lines)


def test_compaction_shadows_the_compacted_run(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    events = _events(source, "ses_stage0_small")
    fold = fold_surface(events)
    shadowed = [seq for seq, kind in fold.surface_of.items() if kind == "shadowed"]
    assert shadowed
    replacer = events[fold.replaced_by[shadowed[0]]]
    assert replacer.type == "user/message"
    assert replacer.data["source"]["kind"] == "compaction"


def test_thinking_becomes_reasoning_that_is_not_searchable(projects: Path) -> None:
    source = ClaudeCodeSource(projects)
    events = _events(source, "ses_stage0_small/sidechain-sys1")
    message = next(e for e in events if e.type == "assistant/message")
    kinds = [b["type"] for b in message.data["message"]["content"]]
    assert kinds[:2] == ["reasoning", "text"]
    assert "Reasoning goes here" not in extract_event_text(message)


@pytest.mark.parametrize(("phrase", "session_id"), sorted(PHRASES.items()))
def test_distinctive_phrase_is_in_the_semantic_text_of_its_session(
    projects: Path, phrase: str, session_id: str
) -> None:
    source = ClaudeCodeSource(projects)
    texts = [extract_event_text(e) for e in _events(source, session_id)]
    assert any(phrase in text for text in texts)


def test_subagents_folder_layout_links_to_the_session_folder(tmp_path: Path) -> None:
    folder = tmp_path / "-proj" / "parent-1" / "subagents"
    folder.mkdir(parents=True)
    line = {
        "type": "user",
        "sessionId": "parent-1",
        "agentId": "abc",
        "isSidechain": True,
        "cwd": "/work",
        "timestamp": "2025-01-01T00:00:00Z",
        "uuid": "u1",
        "message": {"role": "user", "content": "find the flaky test"},
    }
    (folder / "agent-abc.jsonl").write_text(json.dumps(line) + "\n")
    (entry,) = ClaudeCodeSource(tmp_path).list()
    assert entry.header.id == "parent-1/agent-abc"
    assert entry.header.parent_session == "parent-1"
    assert entry.header.created_at == 1735689600000


def _write(path: Path, lines: list[str], *, final_newline: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""))


def _user(text: str, **extra: object) -> str:
    record = {
        "type": "user",
        "sessionId": "s-1",
        "cwd": "/work",
        "timestamp": "2025-01-01T00:00:00Z",
        "uuid": text,
        "message": {"role": "user", "content": text},
        **extra,
    }
    return json.dumps(record)


def test_bad_lines_become_problems_with_line_numbers_and_the_rest_is_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "-proj" / "s-1.jsonl"
    _write(
        path,
        [
            _user("first"),
            "{not json",
            json.dumps({"type": "brand-new"}),
            "[1, 2]",
            _user("last"),
            '{"type": "user", "mess',
        ],
        final_newline=False,
    )
    source = ClaudeCodeSource(tmp_path)
    problems = {(p.line, p.path) for p in source.problems()}
    assert problems == {(2, str(path)), (3, str(path)), (4, str(path)), (6, str(path))}
    messages = [e for e in _events(source, "s-1") if e.type == "user/message"]
    assert [m.data["content"][0]["text"] for m in messages] == ["first", "last"]
    unknown = [e for e in _events(source, "s-1") if e.type == "claude/brand-new"]
    assert unknown and unknown[0].ignorable


def test_file_without_session_id_or_cwd_gets_a_file_name_id_and_two_problems(
    tmp_path: Path,
) -> None:
    path = tmp_path / "-proj" / "nameless.jsonl"
    _write(path, [json.dumps({"type": "summary", "summary": "A title"})])
    source = ClaudeCodeSource(tmp_path)
    (entry,) = source.list()
    assert entry.header.id == "nameless" and entry.header.cwd is None
    assert [p.line for p in source.problems()] == [None, None]


def test_relative_cwd_is_dropped_with_a_problem(tmp_path: Path) -> None:
    _write(tmp_path / "p" / "s-1.jsonl", [_user("hi").replace('"/work"', '"work"')])
    source = ClaudeCodeSource(tmp_path)
    assert source.list()[0].header.cwd is None
    assert any("not absolute" in p.message for p in source.problems())


def test_empty_file_is_a_problem_and_not_a_session(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "empty.jsonl").write_text("")
    source = ClaudeCodeSource(tmp_path)
    assert source.list() == []
    assert [(Path(p.path).name, p.line) for p in source.problems()] == [("empty.jsonl", None)]


def test_missing_root_and_non_transcript_directory_are_problems_not_errors(
    tmp_path: Path,
) -> None:
    missing = ClaudeCodeSource(tmp_path / "nope")
    assert missing.list() == []
    assert len(missing.problems()) == 1
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    assert ClaudeCodeSource(tmp_path / "notes").list() == []
    assert len(ClaudeCodeSource(tmp_path / "notes").problems()) == 1


def test_foreign_jsonl_files_are_read_with_problems_not_fatal() -> None:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    source = ClaudeCodeSource(CORPUS / "deepseek-harness")
    listing = source.list()
    assert len(listing) == 3
    problems = source.problems()
    assert problems and all(p.path.startswith(str(CORPUS)) for p in problems)
    for entry in listing:
        fold_surface(_events(source, entry.header.id))


def test_revision_changes_only_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "p" / "s-1.jsonl"
    _write(path, [_user("one")])
    source = ClaudeCodeSource(tmp_path)
    first = source.stat("s-1")
    assert first is not None and source.stat("s-1") == first
    with path.open("a") as handle:
        handle.write(_user("two") + "\n")
    os.utime(path, ns=(first.header.created_at * 10**6, 10**18))
    second = source.stat("s-1")
    assert second is not None and second.revision != first.revision
    assert second.event_count is not None and first.event_count is not None
    assert second.event_count > first.event_count


def test_unknown_id_raises_not_found(tmp_path: Path) -> None:
    with pytest.raises(PersistenceNotFound):
        ClaudeCodeSource(tmp_path).open_read("nope")


def test_two_files_claiming_one_session_id_get_distinct_ids(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "s-1.jsonl", [_user("one")])
    _write(tmp_path / "b" / "copy.jsonl", [_user("two")])
    ids = sorted(e.header.id for e in ClaudeCodeSource(tmp_path).list())
    assert ids == ["s-1", "s-1@b/copy.jsonl"]


def test_a_deadline_check_stops_a_long_transcript_midway_and_leaves_no_trace(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "-proj" / "s-1.jsonl", [_user(f"line {n}") for n in range(3 * 2048)])
    calls: list[int] = []

    def deadline_on_second_check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise SessionQueryError(ErrorCode.ABORTED, "deadline")

    source = ClaudeCodeSource(tmp_path)
    with checking(deadline_on_second_check), pytest.raises(SessionQueryError) as caught:
        source.list()  # the first listing parses the file
    assert caught.value.code is ErrorCode.ABORTED
    assert len(calls) == 2  # stopped inside the file, not after it
    (entry,) = source.list()  # nothing of the interrupted parse was kept
    assert entry.event_count is not None and entry.event_count > 3 * 2048
    assert source.problems() == []  # the deadline is not a problem of the file
    calls.clear()
    with checking(deadline_on_second_check), pytest.raises(SessionQueryError):
        source.read_documents("s-1")
    assert len(calls) == 2
    assert len(source.read_documents("s-1").documents) == 3 * 2048


def test_a_transcript_without_any_timestamp_is_listed_last_not_as_newest(tmp_path: Path) -> None:
    message = {"role": "user", "content": "a"}
    dated: dict[str, object] = {"type": "user", "sessionId": "dated", "cwd": "/w", "uuid": "u1"}
    dated |= {"timestamp": "2024-01-01T00:00:00Z", "message": message}
    undated: dict[str, object] = {"type": "user", "sessionId": "undated", "cwd": "/w"}
    undated |= {"uuid": "u2", "message": message}
    (tmp_path / "-w").mkdir()
    (tmp_path / "-w" / "dated.jsonl").write_text(json.dumps(dated) + "\n")
    (tmp_path / "-w" / "undated.jsonl").write_text(json.dumps(undated) + "\n")
    records = SessionQuery(persistence=ClaudeCodeSource(tmp_path)).list_sessions()
    assert [(r.header.id, r.header.created_at) for r in records] == [
        ("dated", 1704067200000),
        ("undated", 0),
    ]
