"""Cursor's state.vscdb: conversations read from the database, joined with agent transcripts."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.model import fold_surface
from sessionquery.query.service import SessionQuery
from sessionquery.sources._cursor_composer import SUMMARY_ELSEWHERE
from sessionquery.sources.cursor import CursorSource, CursorUnits

MAIN, CHILD = SESSIONS["cursor"].session, SESSIONS["cursor"].child
TEXT = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d12"
NESTED = "3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6e13"
DRAFT = "5e6f7a8b-9c0d-4ebf-9a2b-4c5d6e7f8a15"
CID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("cursordb"))


def _user(home: FixtureHome) -> Path:
    return home.home / ".config" / "Cursor" / "User"


def _both(home: FixtureHome) -> CursorSource:
    return CursorSource(home.home / ".cursor" / "projects", also=[_user(home)])


def _database(path: Path, kv: dict[str, Any], items: dict[str, Any] | None = None) -> Path:
    """A ``state.vscdb`` with these rows (``bytes`` stored as they are, else JSON text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    for table, rows in (("cursorDiskKV", kv), ("ItemTable", items or {})):
        conn.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        for key, value in rows.items():
            stored = value if isinstance(value, bytes) else json.dumps(value)
            conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (key, stored))
    conn.commit()
    conn.close()
    return path


def _conversation(
    bubbles: list[dict[str, Any]], *, cid: str = CID, **composer: Any
) -> dict[str, Any]:
    """``composerData`` plus bubble rows of one conversation (bubble ids b0, b1, ...)."""
    rows: dict[str, Any] = {}
    headers = []
    for index, bubble in enumerate(bubbles):
        bid = f"b{index}"
        headers.append({"bubbleId": bid, "type": bubble.get("type")})
        rows[f"bubbleId:{cid}:{bid}"] = {"bubbleId": bid, **bubble}
    data = {"composerId": cid, "createdAt": 1_786_000_000_000, "name": "Synthetic"}
    rows[f"composerData:{cid}"] = {**data, "fullConversationHeadersOnly": headers, **composer}
    return rows


def _title(log: Any) -> str:
    """The session's title: its last ``session/title`` event's."""
    return str([e.data["title"] for e in log.events if e.type == "session/title"][-1])


def _read(user: Path, cid: str = CID) -> Any:
    return SessionQuery(persistence=CursorSource(user)).read_session(cid)


# -- the fixture home: both stores joined ----------------------------------------------------


def test_the_database_dates_titles_and_places_its_conversations(home: FixtureHome) -> None:
    source = _both(home)
    listing = {e.header.id: e.header for e in source.list()}
    assert set(listing) == {MAIN, CHILD, NESTED, TEXT}  # the draft has said nothing
    assert source.problems() == []
    assert listing[MAIN].created_at == 1_786_701_600_000  # composerData.createdAt
    assert listing[TEXT].created_at == 0  # a transcript the database does not know
    assert {h.cwd for h in listing.values()} == {str(home.cursor_project)}
    assert listing[CHILD].parent_session == MAIN and listing[CHILD].origin == "subagent"
    query = SessionQuery(persistence=source)
    assert _title(query.read_session(MAIN)) == "Axolotl upload timeout"
    assert _title(query.read_session(NESTED)) == "Quetzal fixtures"


def test_a_conversation_in_both_stores_is_read_from_the_database_once(home: FixtureHome) -> None:
    query = SessionQuery(persistence=_both(home))
    assert [r.id for r in query.list_sessions()].count(MAIN) == 1
    log = query.read_session(MAIN)
    (call, task) = [e for e in log.events if e.type == "tool/call"]
    assert call.data["name"] == "run_terminal_command_v2"  # the database's name, not "Read"
    results = [e for e in log.events if e.type == "tool/result"]
    assert [r.source_event_seqs for r in results] == [(call.seq,), (task.seq,)]
    assert "TIMEOUT_MS = 500" in json.dumps(results[0].data)
    times = [e.time for e in log.events if e.type == "user/message"]
    assert times == sorted(times) and times[0] > 1_786_000_000_000
    prompt = next(e for e in log.events if e.type == "user/message")
    assert prompt.data["source"] == {"kind": "user", "mode": "agent"}
    answer = [e for e in log.events if e.type == "assistant/message"][-1]
    assert answer.data["model"] == "claude-4.5-sonnet"
    texts = [b["text"] for b in answer.data["message"]["content"]]
    assert texts[1] == "```typescript\nconst TIMEOUT_MS = 30_000;\n```"  # a code block


def test_a_conversation_without_messages_in_the_database_is_read_from_its_transcript(
    home: FixtureHome,
) -> None:
    log = SessionQuery(persistence=_both(home)).read_session(NESTED)
    assert log.session.created_at == 1_786_636_800_000
    said = [e for e in log.events if e.type == "assistant/message"]
    assert "two quetzal fixtures" in json.dumps(said[0].data)
    assert _title(log) == "Quetzal fixtures"  # the database's name wins over a derived one


def test_a_summarized_conversation_shadows_what_came_before(home: FixtureHome) -> None:
    log = SessionQuery(persistence=_both(home)).read_session(MAIN)
    summary = next(e for e in log.events if e.data.get("source", {}).get("kind") == "compaction")
    assert summary.data["content"][0] == {"type": "context", "text": SUMMARY_ELSEWHERE}
    current = set(fold_surface(log.events).nodes)
    wombat = [e.seq for e in log.events if "wombat" in json.dumps(e.data)]
    assert wombat and not set(wombat) & current and summary.seq in current


def test_the_documents_hold_no_secret_of_the_database(home: FixtureHome) -> None:
    units = CursorUnits(_user(home))
    found, problems = units.scan()
    assert problems == [] and {u.key for u in found} == {
        f"composer/{cid}" for cid in (MAIN, CHILD, NESTED, DRAFT)
    }
    for unit in found:
        data = units.read(unit.key, 1 << 20)[0].decode()
        assert json.loads(data)["format"] == "cursor-composer/1"
        assert "EncryptionKey" not in data and "c2VjcmV0" not in data and "accessToken" not in data


def test_a_location_is_a_user_folder_its_database_or_a_home(home: FixtureHome) -> None:
    def ids(root: Path) -> set[str]:
        return {e.header.id for e in CursorSource(root).list()}

    user = _user(home)
    assert ids(user) == {MAIN, CHILD}  # NESTED's messages are only in its transcript
    assert ids(user / "globalStorage" / "state.vscdb") == {MAIN, CHILD}
    assert ids(user.parent) == {MAIN, CHILD}
    assert ids(home.home) == {MAIN, CHILD, NESTED, TEXT}
    assert ids(home.home / ".cursor") == {MAIN, TEXT, NESTED}  # transcripts alone
    assert {e.header.created_at for e in CursorSource(home.home / ".cursor").list()} == {0}


# -- shapes --------------------------------------------------------------------------------


def test_tool_results_fail_on_errors_non_zero_exits_and_rejected_commands(tmp_path: Path) -> None:
    def tool(status: str, result: Any, **more: Any) -> dict[str, Any]:
        call = {"name": "run_terminal_command_v2", "status": status, "result": result, **more}
        return {"type": 2, "toolFormerData": call}

    bubbles = [
        {"type": 1, "text": "run the checks", "createdAt": "2026-08-01T10:00:00Z"},
        tool("completed", json.dumps({"output": "ok", "exitCode": 0}), toolCallId="t1"),
        tool("completed", json.dumps({"output": "2 failed", "exitCode": 1}), toolCallId="t2"),
        tool("completed", json.dumps({"output": "", "rejected": True}), toolCallId="t3"),
        tool("error", None, toolCallId="t4", params={"command": "rm -rf build"}),
        tool("running", None, rawArgs=json.dumps({"command": "sleep 9"})),
    ]
    user = tmp_path / "User"
    _database(user / "globalStorage" / "state.vscdb", _conversation(bubbles))
    log = _read(user)
    calls = [e for e in log.events if e.type == "tool/call"]
    assert [c.data["callId"] for c in calls] == ["t1", "t2", "t3", "t4", "bubble-b5"]
    assert json.loads(calls[3].data["arguments"]) == {"command": "rm -rf build"}
    assert json.loads(calls[4].data["arguments"]) == {"command": "sleep 9"}
    results = [e for e in log.events if e.type == "tool/result"]
    answered = [
        (r.data["message"]["source"]["callId"], r.data["message"]["content"][0]["isError"])
        for r in results
    ]
    # the running call has no result of its own: reading the log marks it interrupted
    assert answered == [
        ("t1", False),
        ("t2", True),
        ("t3", True),
        ("t4", True),
        ("bubble-b5", True),
    ]
    assert (
        log.events[-1].type == "turn/end" and log.events[-1].data["reason"]["kind"] == "interrupted"
    )


def test_an_older_release_s_summary_and_inline_conversation_are_read(tmp_path: Path) -> None:
    inline = [
        {"bubbleId": "x1", "type": 1, "text": "first ibex question"},
        {"bubbleId": "x2", "type": 2, "text": "first answer"},
        {"bubbleId": "x3", "type": 1, "text": "second gazelle question"},
    ]
    summary = {
        "summary": {"summary": "They asked about ibexes.", "truncationLastBubbleIdInclusive": "x2"}
    }
    rows = {
        f"composerData:{CID}": {
            "composerId": CID,
            "conversation": inline,
            "latestConversationSummary": summary,
        }
    }
    user = tmp_path / "User"
    _database(user / "globalStorage" / "state.vscdb", rows)
    log = _read(user)
    compaction = next(e for e in log.events if e.data.get("source", {}).get("kind") == "compaction")
    assert compaction.data["content"] == [{"type": "text", "text": "They asked about ibexes."}]
    current = set(fold_surface(log.events).nodes)
    ibex = next(e.seq for e in log.events if "first ibex" in json.dumps(e.data))
    gazelle = next(e.seq for e in log.events if "gazelle" in json.dumps(e.data))
    assert ibex not in current and gazelle in current


def test_bubbles_follow_the_composer_s_order_then_the_unlisted_ones_by_time(
    tmp_path: Path,
) -> None:
    rows = _conversation(
        [
            {"type": 1, "text": "one", "createdAt": "2026-08-01T10:00:00Z"},
            {"type": 2, "text": "two", "createdAt": "2026-08-01T10:00:05Z"},
        ]
    )
    rows[f"bubbleId:{CID}:late"] = {"type": 2, "text": "four", "createdAt": "2026-08-01T10:09Z"}
    rows[f"bubbleId:{CID}:early"] = {"type": 2, "text": "three", "createdAt": "2026-08-01T10:01Z"}
    data = rows[f"composerData:{CID}"]
    data["fullConversationHeadersOnly"] = [  # reversed, a missing bubble, a repeated one
        {"bubbleId": "b1"}, {"bubbleId": "gone"}, {"bubbleId": "b0"}, {"bubbleId": "b1"},
    ]  # fmt: skip
    user = tmp_path / "User"
    _database(user / "globalStorage" / "state.vscdb", rows)
    said = [
        b["text"]
        for e in _read(user).events
        if e.type in ("user/message", "assistant/message")
        for b in (e.data.get("content") or e.data["message"]["content"])
    ]
    assert said == ["two", "one", "three", "four"]


def test_the_headers_table_and_workspace_json_name_the_workspace(tmp_path: Path) -> None:
    user = tmp_path / "User"
    db = _database(
        user / "globalStorage" / "state.vscdb",
        _conversation([{"type": 1, "text": "where am I"}], name=None),
    )
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE composerHeaders (composerId TEXT PRIMARY KEY, workspaceId TEXT,"
        " createdAt INTEGER, lastUpdatedAt INTEGER, isSubagent INTEGER, value TEXT)"
    )
    head = {"type": "head", "composerId": CID, "name": "Headed"}
    conn.execute(
        "INSERT INTO composerHeaders VALUES (?, 'ws9', 5, 6, 0, ?)", (CID, json.dumps(head))
    )
    conn.commit()
    conn.close()
    (user / "workspaceStorage" / "ws9").mkdir(parents=True)
    project = tmp_path / "my project"
    (user / "workspaceStorage" / "ws9" / "workspace.json").write_text(
        json.dumps({"folder": project.as_uri()})
    )
    query = SessionQuery(persistence=CursorSource(user))
    (record,) = query.list_sessions()
    assert record.header.cwd == str(project) and _title(query.read_session(CID)) == "Headed"


def test_older_releases_name_a_composer_s_workspace_in_the_workspace_database(
    tmp_path: Path,
) -> None:
    user = tmp_path / "User"
    _database(user / "globalStorage" / "state.vscdb", _conversation([{"type": 1, "text": "hi"}]))
    workspace = user / "workspaceStorage" / "0123abcd"
    _database(
        workspace / "state.vscdb",
        {},
        {"composer.composerData": {"allComposers": [{"composerId": CID}]}},
    )
    (workspace / "workspace.json").write_text(json.dumps({"folder": "file:///srv/app"}))
    (entry,) = CursorSource(user).list()
    assert entry.header.cwd == "/srv/app"


# -- incremental listing ---------------------------------------------------------------------


class _Counting(CursorUnits):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Any]:
        self.reads.append(key)
        return super().read(key, max_bytes)


def test_a_new_message_re_reads_only_its_conversation(home: FixtureHome, tmp_path: Path) -> None:
    user = tmp_path / "User"
    shutil.copytree(_user(home), user)
    cache = tmp_path / "cache.sqlite3"
    units = _Counting(user)
    source = CursorSource.from_units(units, metadata_cache=cache)
    before = {e.header.id: e.revision for e in source.list()}
    assert sorted(units.reads) == sorted(f"composer/{c}" for c in (MAIN, CHILD, NESTED, DRAFT))
    again = _Counting(user)
    assert {
        e.header.id: e.revision for e in CursorSource.from_units(again, metadata_cache=cache).list()
    } == before
    assert again.reads == []  # a new process reads no conversation of an unchanged database
    conn = sqlite3.connect(user / "globalStorage" / "state.vscdb", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    keep = sqlite3.connect(user / "globalStorage" / "state.vscdb")  # keeps the -wal file
    keep.execute("SELECT 1 FROM cursorDiskKV LIMIT 1").fetchall()
    try:
        bubble = {"bubbleId": "m09", "type": 1, "text": "and the tapir upload?"}
        conn.execute(
            "INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{CHILD}:m09", json.dumps(bubble))
        )
        assert (user / "globalStorage" / "state.vscdb-wal").exists()
        third = _Counting(user)
        after = {
            e.header.id: e.revision
            for e in CursorSource.from_units(third, metadata_cache=cache).list()
        }
        assert third.reads == [f"composer/{CHILD}"] and after[CHILD] != before[CHILD]
        assert {k: v for k, v in after.items() if k != CHILD} == {
            k: v for k, v in before.items() if k != CHILD
        }
    finally:
        keep.close()
        conn.close()
