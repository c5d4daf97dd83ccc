"""GitHub Copilot CLI event logs: sub-agents, compaction, rewinds, tool executions."""

from __future__ import annotations

import pytest

from formats_support import SESSIONS, FixtureHome, fixture_home
from sessionquery.model import fold_surface
from sessionquery.query.service import SessionQuery
from sessionquery.sources.copilot import CopilotCliSource

MAIN = SESSIONS["copilot"].session
CHILD = SESSIONS["copilot"].child
BARE = "d1f2e3c4-b5a6-4978-8a9b-0c1d2e3f4a08"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> FixtureHome:
    return fixture_home(tmp_path_factory.mktemp("copilot"))


def _query(home: FixtureHome) -> SessionQuery:
    return SessionQuery(persistence=CopilotCliSource(home.home / ".copilot"))


def test_both_layouts_are_listed_and_agent_events_make_a_child(home: FixtureHome) -> None:
    listing = {e.header.id: e.header for e in CopilotCliSource(home.home / ".copilot").list()}
    assert set(listing) == {MAIN, CHILD, BARE}
    assert listing[CHILD].parent_session == MAIN and listing[CHILD].origin == "subagent"
    assert listing[MAIN].cwd == listing[BARE].cwd == "/home/me/copilotapp"
    assert listing[MAIN].created_at == 1786370400000


def test_the_rewind_and_the_compaction_shadow_what_they_replace(home: FixtureHome) -> None:
    log = _query(home).read_session(MAIN)
    fold = fold_surface(log.events)
    kinds = {e.data.get("source", {}).get("kind"): e.seq for e in log.events}
    stork = next(e.seq for e in log.events if e.type == "user/message" and "stork" in str(e.data))
    assert fold.replaced_by[stork] == kinds["rewind"]
    assert fold.nodes == (kinds["compaction"],)
    failed = next(e for e in log.events if e.type == "tool/result" and "denied" in str(e.data))
    assert failed.data["message"]["content"][0]["isError"] is True
    assert [e.data["title"] for e in log.events if e.type == "session/title"][-1] == (
        "Fix heron cache invalidation"
    )


def test_a_sub_agent_keeps_its_own_calls_and_results(home: FixtureHome) -> None:
    log = _query(home).read_session(CHILD)
    (call,) = [e for e in log.events if e.type == "tool/call"]
    (result,) = [e for e in log.events if e.type == "tool/result"]
    assert call.data["name"] == "grep" and result.source_event_seqs == (call.seq,)
    trace = _query(home).trace_session(CHILD)
    assert trace.root is not None and trace.root.header.id == MAIN
