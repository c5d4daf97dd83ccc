"""OpenCode: the database read-only (never written), child sessions, compaction, revert."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.model import fold_surface
from sessionquery.query.service import SessionQuery
from sessionquery.sources.opencode import DOCUMENT_FORMAT, OpenCodeSource, OpenCodeUnits

MAIN = SESSIONS["opencode"].session
CHILD = SESSIONS["opencode"].child


@pytest.fixture
def home(tmp_path: Path) -> FixtureHome:
    return fixture_home(tmp_path)


def _root(home: FixtureHome) -> Path:
    return home.home / ".local" / "share" / "opencode"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_sessions_and_their_children_are_listed_without_writing_anything(
    home: FixtureHome,
) -> None:
    before = _files(_root(home))
    source = OpenCodeSource(_root(home))
    listing = {e.header.id: e.header for e in source.list()}
    SessionQuery(persistence=source).read_session(MAIN)
    assert set(listing) == {MAIN, CHILD}
    assert listing[CHILD].parent_session == MAIN and listing[CHILD].origin == "subagent"
    assert listing[MAIN].cwd == "/home/me/opencodeapp"
    assert _files(_root(home)) == before  # no -wal, no -shm, not a byte changed


def test_the_compaction_and_the_revert_shadow_what_they_replace(home: FixtureHome) -> None:
    log = SessionQuery(persistence=OpenCodeSource(_root(home))).read_session(MAIN)
    fold = fold_surface(log.events)
    kinds = {e.data.get("source", {}).get("kind"): e.seq for e in log.events}
    bilby = next(e.seq for e in log.events if e.type == "user/message" and "bilby" in str(e.data))
    assert fold.replaced_by[bilby] == kinds["rewind"]
    assert fold.surface_of[kinds["compaction"]] == "current"
    results = [e for e in log.events if e.type == "tool/result"]
    assert [r.data["message"]["content"][0]["isError"] for r in results] == [False, True, False]
    assert all(r.source_event_seqs for r in results)


def test_a_session_unit_is_a_normalized_document_that_parses_back(home: FixtureHome) -> None:
    units = OpenCodeUnits(_root(home))
    found, problems = units.scan()
    assert problems == [] and [u.key for u in found] == [f"session/{MAIN}", f"session/{CHILD}"]
    data, unit = units.read(f"session/{MAIN}", 1 << 20)
    document = json.loads(data)
    assert document["format"] == DOCUMENT_FORMAT and len(document["messages"]) == 6
    assert unit.stamp == found[0].stamp


def test_a_changed_wal_is_seen_and_only_the_changed_session_read_again(home: FixtureHome) -> None:
    source = OpenCodeSource(_root(home))
    first = {e.header.id: e.revision for e in source.list()}
    writer = sqlite3.connect(_root(home) / "opencode.db")
    try:
        writer.execute(
            "INSERT INTO part VALUES ('prt_new', 'msg_c2', ?, 0, 9, ?)",
            (CHILD, json.dumps({"type": "text", "text": "also the numbat sprites"})),
        )
        writer.commit()
        assert (_root(home) / "opencode.db-wal").exists()
        second = {e.header.id: e.revision for e in source.list()}
        assert second[MAIN] == first[MAIN] and second[CHILD] != first[CHILD]
        log = SessionQuery(persistence=source).read_session(CHILD)
        assert "numbat" in str([e.data for e in log.events])
    finally:
        writer.close()


def test_the_legacy_storage_tree_is_read_when_there_is_no_database(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    (storage / "session" / "proj").mkdir(parents=True)
    (storage / "message" / "ses_old").mkdir(parents=True)
    (storage / "part" / "msg_1").mkdir(parents=True)
    info = {"id": "ses_old", "directory": "/home/me/legacy", "title": "Old", "time": {"created": 7}}
    (storage / "session" / "proj" / "ses_old.json").write_text(json.dumps(info))
    message = {"role": "user", "time": {"created": 8}}
    (storage / "message" / "ses_old" / "msg_1.json").write_text(json.dumps(message))
    part = {"type": "text", "text": "the legacy wallaby prompt"}
    (storage / "part" / "msg_1" / "prt_1.json").write_text(json.dumps(part))
    source = OpenCodeSource(tmp_path)
    (entry,) = source.list()
    assert entry.header.cwd == "/home/me/legacy" and entry.header.created_at == 7
    assert "wallaby" in str(SessionQuery(persistence=source).read_session("ses_old").events)


def test_a_copy_of_the_database_lists_the_same_sessions(home: FixtureHome, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(_root(home), copy)
    assert {e.header for e in OpenCodeSource(copy).list()} == {
        e.header for e in OpenCodeSource(_root(home)).list()
    }


def test_the_database_file_itself_can_be_the_source(home: FixtureHome) -> None:
    by_folder = {e.header for e in OpenCodeSource(_root(home)).list()}
    assert {e.header for e in OpenCodeSource(_root(home) / "opencode.db").list()} == by_folder
