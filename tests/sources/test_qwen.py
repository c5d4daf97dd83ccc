"""Qwen Code chat records: the record tree's branches, compression, sidechains and /branch."""

from __future__ import annotations

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.model import fold_surface
from sessionquery.query.service import SessionQuery
from sessionquery.sources.qwen import QwenSource

MAIN = SESSIONS["qwen"].session
CHILD = SESSIONS["qwen"].child
FORK = "9b8a7c6d-1e2f-4a3b-9c4d-5e6f7a8b9c06"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("qwen"))


def _query(home: FixtureHome) -> SessionQuery:
    return SessionQuery(persistence=QwenSource(home.home / ".qwen"))


def test_sessions_subagents_and_branches_are_listed_with_their_lineage(home: FixtureHome) -> None:
    listing = {e.header.id: e.header for e in QwenSource(home.home / ".qwen").list()}
    assert set(listing) == {MAIN, CHILD, FORK}
    assert listing[CHILD].parent_session == MAIN and listing[CHILD].origin == "subagent"
    assert listing[FORK].parent_session == MAIN and listing[FORK].origin == "fork"
    assert {h.cwd for h in listing.values()} == {"/home/me/qwenapp"}
    assert listing[FORK].created_at == 1784192400000  # its own first record, not the copy's


def test_an_abandoned_branch_is_shadowed_and_the_compression_replaces_the_rest(
    home: FixtureHome,
) -> None:
    log = _query(home).read_session(MAIN)
    fold = fold_surface(log.events)
    kinds = {e.seq: e.data.get("source", {}).get("kind") for e in log.events}
    rewind = next(s for s, k in kinds.items() if k == "rewind")
    compaction = next(s for s, k in kinds.items() if k == "compaction")
    flamingo = next(
        e.seq for e in log.events if e.type == "user/message" and "flamingo" in str(e.data)
    )
    assert fold.replaced_by[flamingo] == rewind
    assert fold.replaced_by[rewind] == compaction
    assert fold.nodes == (compaction,)
    assert "lru_cache" in str(log.events[compaction].data["content"])
    titles = [e.data["title"] for e in log.events if e.type == "session/title"]
    assert titles == ["Profile the slow pelican importer", "Speed up the pelican importer"]


def test_tool_calls_and_results_pair_by_call_id(home: FixtureHome) -> None:
    log = _query(home).read_session(CHILD)
    (call,) = [e for e in log.events if e.type == "tool/call"]
    (result,) = [e for e in log.events if e.type == "tool/result"]
    assert call.data["name"] == "grep_search" and result.source_event_seqs == (call.seq,)


def test_a_branch_holds_only_its_own_records(home: FixtureHome) -> None:
    log = _query(home).read_session(FORK)
    (inherited,) = [e for e in log.events if e.type == "qwen/inherited"]
    assert inherited.ignorable and inherited.data["records"] == 3
    assert "pelican" not in str([e.data for e in log.events if e.type.endswith("message")])
