"""Cursor agent transcripts: JSONL and text, the project folder by its encoded name."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.query.service import SessionQuery
from sessionquery.sources.cursor import CursorSource, project_folder

MAIN = SESSIONS["cursor"].session
TEXT = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d12"
NESTED = "3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6e13"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("cursor"))


def _query(home: FixtureHome) -> SessionQuery:
    return SessionQuery(persistence=CursorSource(home.home / ".cursor" / "projects"))


def test_every_layout_is_listed_in_the_project_folder_found_on_disk(home: FixtureHome) -> None:
    listing = {
        e.header.id: e.header for e in CursorSource(home.home / ".cursor" / "projects").list()
    }
    assert set(listing) == {MAIN, TEXT, NESTED}  # the .txt beside MAIN's .jsonl is not read
    assert {h.cwd for h in listing.values()} == {str(home.cursor_project)}
    assert {h.created_at for h in listing.values()} == {0}  # undated: listed last


def test_a_jsonl_transcript_pairs_tool_uses_and_results(home: FixtureHome) -> None:
    log = _query(home).read_session(MAIN)
    (call,) = [e for e in log.events if e.type == "tool/call"]
    (result,) = [e for e in log.events if e.type == "tool/result"]
    assert result.source_event_seqs == (call.seq,)
    prompt = next(e for e in log.events if e.type == "user/message")
    assert [dict(b) for b in prompt.data["content"]] == [
        {"type": "text", "text": "Why does the axolotl upload time out?"}
    ]


def test_a_text_transcript_has_its_thinking_calls_and_results(home: FixtureHome) -> None:
    log = _query(home).read_session(TEXT)
    (call,) = [e for e in log.events if e.type == "tool/call"]
    assert call.data["name"] == "Grep" and '"pattern":"narwhal"' in call.data["arguments"]
    result = next(e for e in log.events if e.type == "tool/result")
    assert "src/narwhal.ts:3" in str(result.data) and result.source_event_seqs == (call.seq,)


def test_an_encoded_project_name_matching_no_folder_has_no_cwd(tmp_path: Path) -> None:
    (tmp_path / "a-b").mkdir()
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert project_folder("a-b", base=tmp_path) is None  # two folders encode the same way
    assert project_folder("a-c", base=tmp_path) is None
    (tmp_path / "x" / "y.z").mkdir(parents=True)
    assert project_folder("x-y-z", base=tmp_path) == str(tmp_path / "x" / "y.z")
