"""CodexSource over the real rollouts in the shared corpus and hand-made bad files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from locations import CORPUS
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import (
    SessionEvent,
    extract_event_text,
    fold_surface,
    fold_title,
    interrupted_turn_closers,
)
from sessionquery.persistence.documents import checking
from sessionquery.query.service import SessionQuery
from sessionquery.sources import CodexSource

SPECTORA = "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2"

# real file (relative to the corpus) -> (session id, cwd, tool calls)
EXPECTED = {
    "agentcmd/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl": (
        "01997e76-d124-7592-9cac-2ec05abbca08",
        SPECTORA,
        123,
    ),
    "agentcmd/rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl": (
        "01997ea4-a70d-7da3-8c20-c736db82a7c5",
        SPECTORA,
        16,
    ),
    "agentcmd/rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl": (
        "0199812e-64f0-7f73-91fc-095dda01c36e",
        SPECTORA,
        57,
    ),
    "agentcmd/rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl": (
        "01998190-fba6-7f40-9309-dc4e48c5844a",
        SPECTORA,
        84,
    ),
    "agentcmd/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": (
        "019982b8-3422-79e0-8b3b-05abaf4f3c3e",
        SPECTORA,
        34,
    ),
    "agent-sessions/codex/small.jsonl": ("019fc8be-3658-7ca3-9e29-000000000000", "/tmp/repo", 6),
}
BIG = "01997e76-d124-7592-9cac-2ec05abbca08"
SMALL = "019fc8be-3658-7ca3-9e29-000000000000"


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    """A sessions tree (date folders) holding copies of the vendored real rollouts."""
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    root = tmp_path / "sessions" / "2025" / "09" / "25"
    root.mkdir(parents=True)
    for rel in EXPECTED:
        source = CORPUS / rel
        assert source.is_file(), source
        name = source.name if source.name.startswith("rollout-") else "rollout-small.jsonl"
        shutil.copyfile(source, root / name)
    return tmp_path / "sessions"


def _events(source: CodexSource, session_id: str) -> list[SessionEvent]:
    with source.open_read(session_id) as handle:
        return handle.read()


def test_corpus_codex_files_are_all_in_this_table() -> None:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    found = {
        p.relative_to(CORPUS).as_posix()
        for p in CORPUS.rglob("*.jsonl")
        if p.name.startswith("rollout-") or p.parent.name == "codex"
    }
    assert found == set(EXPECTED)


def test_every_real_rollout_imports_with_id_cwd_and_paired_tool_calls(sessions: Path) -> None:
    source = CodexSource(sessions)
    listing = {entry.header.id: entry for entry in source.list()}
    assert set(listing) == {session_id for session_id, _, _ in EXPECTED.values()}
    for session_id, cwd, calls in EXPECTED.values():
        header = listing[session_id].header
        assert header.cwd == cwd and header.parent_session is None
        events = _events(source, session_id)
        call_ids = [e.data["callId"] for e in events if e.type == "tool/call"]
        assert len(call_ids) == calls
        results = [e.data["message"]["source"]["callId"] for e in events if e.type == "tool/result"]
        assert set(results) <= set(call_ids)
        fold_surface(events)
        fold_surface(events + interrupted_turn_closers(events))
        assert all(e.data["origin"]["line"] >= 1 for e in events)
    assert source.problems() == []


def test_turn_aborted_lines_end_turns_as_aborted(sessions: Path) -> None:
    events = _events(CodexSource(sessions), BIG)
    aborted = [e for e in events if e.type == "turn/end" and e.data["reason"]["kind"] == "aborted"]
    assert len(aborted) == 4
    assert interrupted_turn_closers(events) == []


def test_injected_preamble_is_kept_but_not_searchable(sessions: Path) -> None:
    events = _events(CodexSource(sessions), BIG)
    injected = [
        e for e in events if e.type == "user/message" and e.data["source"]["kind"] == "injected"
    ]
    assert injected
    assert all(extract_event_text(e) == "" for e in injected)
    assert fold_surface(events).surface_of[injected[0].seq] == "current"
    prompts = [
        extract_event_text(e)
        for e in events
        if e.type == "user/message" and e.data["source"]["kind"] == "user"
    ]
    assert any("My request for Codex" in text for text in prompts)


def test_compacted_lines_shadow_the_earlier_surface(sessions: Path) -> None:
    events = _events(CodexSource(sessions), SMALL)
    fold = fold_surface(events)
    replacers = {fold.replaced_by[seq] for seq, k in fold.surface_of.items() if k == "shadowed"}
    assert replacers
    assert {events[seq].data["source"]["kind"] for seq in replacers} == {"compaction"}
    title = fold_title(events)
    assert title is not None and title.title == "[trimmed for fixture]"


def test_function_output_wrapper_is_unwrapped_to_the_command_output(sessions: Path) -> None:
    events = _events(CodexSource(sessions), BIG)
    texts = [extract_event_text(e) for e in events if e.type == "tool/result"]
    assert any("Switched to a new branch 'feat/dashboard-refactor'" in t for t in texts)
    assert not any(t.startswith('{"output"') for t in texts)


def _meta(**payload: object) -> str:
    base = {"id": "child-1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/repo"}
    return json.dumps(
        {
            "timestamp": "2025-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {**base, **payload},
        }
    )


def test_fork_and_subagent_parents_become_parent_session(tmp_path: Path) -> None:
    (tmp_path / "rollout-a.jsonl").write_text(_meta(forked_from_id="root-1") + "\n")
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "root-1", "depth": 1}}}
    (tmp_path / "rollout-b.jsonl").write_text(_meta(id="child-2", source=spawn) + "\n")
    headers = {e.header.id: e.header for e in CodexSource(tmp_path).list()}
    assert (headers["child-1"].parent_session, headers["child-1"].origin) == ("root-1", "fork")
    assert (headers["child-2"].parent_session, headers["child-2"].origin) == (
        "root-1",
        "subagent",
    )


def test_bad_lines_and_missing_meta_are_problems_with_line_numbers(tmp_path: Path) -> None:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    lines = [
        json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "response_item", "payload": user}),
        "garbage",
        json.dumps({"type": "mystery"}),
        '{"type": "response_item", "payl',
    ]
    name = "rollout-2025-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
    (tmp_path / name).write_text("\n".join(lines))
    source = CodexSource(tmp_path)
    (entry,) = source.list()
    assert entry.header.id == "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
    assert entry.header.cwd is None
    assert sorted((p.line or 0) for p in source.problems()) == [0, 0, 2, 3, 4]
    events = _events(source, entry.header.id)
    assert any(extract_event_text(e) == "hi" for e in events)
    fold_surface(events)


def test_empty_rollout_is_a_problem_and_other_files_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "rollout-empty.jsonl").write_text("")
    (tmp_path / "session_index.jsonl").write_text("{}\n")
    source = CodexSource(tmp_path)
    assert source.list() == []
    assert [Path(p.path).name for p in source.problems()] == ["rollout-empty.jsonl"]


def test_a_deadline_check_stops_a_long_rollout_midway_and_leaves_no_trace(tmp_path: Path) -> None:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    line = json.dumps(
        {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item", "payload": user}
    )
    name = "rollout-2025-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
    (tmp_path / name).write_text(_meta(id="long-1") + "\n" + (line + "\n") * (3 * 2048))
    calls: list[int] = []

    def deadline_on_second_check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise SessionQueryError(ErrorCode.ABORTED, "deadline")

    source = CodexSource(tmp_path)
    with checking(deadline_on_second_check), pytest.raises(SessionQueryError) as caught:
        source.list()  # the first listing parses the file
    assert caught.value.code is ErrorCode.ABORTED
    assert len(calls) == 2  # stopped inside the file, not after it
    (entry,) = source.list()  # nothing of the interrupted parse was kept
    assert entry.header.id == "long-1"
    assert source.problems() == []  # the deadline is not a problem of the file
    calls.clear()
    with checking(deadline_on_second_check), pytest.raises(SessionQueryError):
        source.read_documents("long-1")
    assert len(calls) == 2
    assert sum(d.text == "hi" for d in source.read_documents("long-1").documents) == 3 * 2048


def test_a_title_skips_the_ide_context_preamble_and_keeps_the_request(tmp_path: Path) -> None:
    prompt = (
        "# Context from my IDE setup:\n\n## Active file: src/app.py\n\n## Open tabs:\n"
        "- src/app.py: src/app.py\n\n## My request for Codex:\nMake the retry loop back off\n"
    )
    meta = {"id": "t-1", "timestamp": "2025-02-01T00:00:00Z", "cwd": "/w"}
    lines = [
        {"timestamp": "2025-02-01T00:00:00Z", "type": "session_meta", "payload": meta},
        {
            "timestamp": "2025-02-01T00:00:01Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
        },
    ]
    path = tmp_path / "rollout-2025-02-01T00-00-00-t-1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    log = SessionQuery(persistence=CodexSource(tmp_path)).read_session("t-1")
    (title,) = [e for e in log.events if e.type == "session/title"]
    assert title.data["title"] == "Make the retry loop back off"


def test_a_rollout_without_any_timestamp_is_dated_by_its_file_name_else_listed_last(
    tmp_path: Path,
) -> None:
    meta = {"id": "u-1", "cwd": "/w"}
    (tmp_path / "rollout-2024-03-04T05-06-07-u-1.jsonl").write_text(
        json.dumps({"type": "session_meta", "payload": meta}) + "\n"
    )
    (tmp_path / "rollout-undated-u-2.jsonl").write_text(
        json.dumps({"type": "session_meta", "payload": {"id": "u-2", "cwd": "/w"}}) + "\n"
    )
    created = {e.header.id: e.header.created_at for e in CodexSource(tmp_path).list()}
    assert created == {"u-1": 1709528767000, "u-2": 0}
    records = SessionQuery(persistence=CodexSource(tmp_path)).list_sessions()
    assert [r.header.id for r in records] == ["u-1", "u-2"]


# -- forks and subagents: the copied prefix; thread names --------------------------------

PARENT = "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a20"
FORK = "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a21"
SCOUT = "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a22"


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    from formats_support import fixture_home

    return fixture_home(tmp_path).home / ".codex"


def test_a_fork_keeps_only_its_own_turns_and_points_at_the_copied_ones(codex_home: Path) -> None:
    query = SessionQuery(persistence=CodexSource(codex_home / "sessions"))
    log = query.read_session(FORK)
    (inherited,) = [e for e in log.events if e.type == "codex/inherited"]
    assert inherited.ignorable and inherited.data["parent"] == PARENT
    assert inherited.data["lines"] == [2, 9] and inherited.data["count"] == 8
    texts = str([e.data for e in log.events if e.type.endswith("message")])
    assert "salamander" in texts and "gecko" not in texts
    assert query.trace_session(FORK).root is not None


def test_a_word_only_the_copied_prefix_holds_is_found_once_in_the_parent(
    codex_home: Path, tmp_path: Path
) -> None:
    from sessionquery.search.sqlite import SqliteSearch

    with SessionQuery(
        persistence=CodexSource(codex_home / "sessions"),
        search=SqliteSearch(tmp_path / "index.sqlite3"),
    ) as query:
        hits = query.search_sessions("gecko", match="words").items
        assert [hit.record.header.id for hit in hits] == [PARENT]
        assert query.search_events(PARENT, "gecko", match="words").items
        assert not query.search_events(FORK, "gecko", match="words").items
        assert not query.search_events(SCOUT, "gecko", match="words").items


def test_a_subagent_copy_starts_at_the_parents_session_meta(codex_home: Path) -> None:
    log = SessionQuery(persistence=CodexSource(codex_home / "sessions")).read_session(SCOUT)
    (inherited,) = [e for e in log.events if e.type == "codex/inherited"]
    assert inherited.data["lines"] == [2, 8]
    header = log.session
    assert header.parent_session == PARENT and header.origin == "subagent"
    assert header.cwd == "/home/me/codexapp"  # its root's workspace, not crates/gecko
    assert any(e.data.get("source", {}).get("kind") == "compaction" for e in log.events)


def test_without_the_parents_rollout_nothing_is_taken_as_copied_until_it_appears(
    codex_home: Path, tmp_path: Path
) -> None:
    parent = next((codex_home / "sessions").rglob(f"*{PARENT}.jsonl"))
    aside = tmp_path / parent.name
    parent.rename(aside)
    source = CodexSource(codex_home / "sessions", metadata_cache=tmp_path / "cache.sqlite3")
    log = SessionQuery(persistence=source).read_session(FORK)
    assert not [e for e in log.events if e.type == "codex/inherited"]
    aside.rename(parent)
    fresh = CodexSource(codex_home / "sessions", metadata_cache=tmp_path / "cache.sqlite3")
    counts = {e.header.id: e.event_count for e in fresh.list()}
    log = SessionQuery(persistence=fresh).read_session(FORK)
    assert [e for e in log.events if e.type == "codex/inherited"]
    assert counts[FORK] == len(log.events)


def test_thread_names_come_from_the_state_database_and_a_rename_is_seen(codex_home: Path) -> None:
    import sqlite3

    before = {p.name: p.read_bytes() for p in codex_home.iterdir() if p.is_file()}
    source = CodexSource(codex_home / "sessions")
    query = SessionQuery(persistence=source)
    (title,) = query.read_title_snapshots([PARENT])
    assert title.title is not None and title.title.title == "Gecko parser crash"
    after = {p.name: p.read_bytes() for p in codex_home.iterdir() if p.is_file()}
    assert after == before  # the state database is read, never written (no -wal, no -shm)
    listed = source.stat(PARENT)
    conn = sqlite3.connect(codex_home / "state_5.sqlite")
    conn.execute("UPDATE threads SET name = 'Gecko crash on empty input' WHERE id = ?", (PARENT,))
    conn.commit()
    conn.close()
    after_rename = {e.header.id: e for e in source.list()}[PARENT]
    assert listed is not None and after_rename.revision != listed.revision
    (title,) = SessionQuery(persistence=source).read_title_snapshots([PARENT])
    assert title.title is not None and title.title.title == "Gecko crash on empty input"
    assert CodexSource(codex_home / "sessions", state_dir=None).stat(PARENT) is not None


def test_a_parent_growing_does_not_make_its_forks_be_read_again(
    codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionquery.sources.units import FileTree

    source = CodexSource(codex_home / "sessions")
    source.list()
    reads: list[str] = []
    real = FileTree.read

    def counting(tree: FileTree, key: str, max_bytes: int) -> tuple[bytes, object]:
        reads.append(key)
        return real(tree, key, max_bytes)

    monkeypatch.setattr(FileTree, "read", counting)
    parent = next((codex_home / "sessions").rglob(f"*{PARENT}.jsonl"))
    line = {"timestamp": "2026-08-12T12:00:00Z", "type": "event_msg", "payload": {"type": "x"}}
    with parent.open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    counts = {e.header.id: e.event_count for e in source.list()}
    rel = parent.relative_to(codex_home / "sessions").as_posix()
    assert reads == [rel]  # only the parent's file was read again
    assert counts[FORK] == len(SessionQuery(persistence=source).read_session(FORK).events)
