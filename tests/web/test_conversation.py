"""The conversation view model: items, views, positions, tool names and read-added closers."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionquery import JsonlPersistence, SessionQuery, SessionStore
from sessionquery.examples import build_examples
from sessionquery.model import messages as m
from sessionquery.web.conversation import SessionView, added_on_read


@pytest.fixture(scope="module")
def query(tmp_path_factory: pytest.TempPathFactory) -> SessionQuery:
    root = tmp_path_factory.mktemp("examples")
    build_examples(root)
    return SessionQuery(persistence=JsonlPersistence(root))


def view_of(query: SessionQuery, session_id: str) -> SessionView:
    return SessionView(
        query.read_outline(session_id), lambda seqs: query.read_window(session_id, seqs).events
    )


def test_the_log_view_is_every_event_and_the_surface_view_the_fold(query: SessionQuery) -> None:
    view = view_of(query, "billing-rounding")
    assert list(view.order("log")) == list(range(view.event_count))
    assert tuple(view.order("surface")) == view.fold.nodes
    assert view.position("surface", 1) is None and view.position("log", 1) == 1
    assert view.position("surface", 31) == view.fold.nodes.index(31)


def test_items_describe_messages_calls_results_and_compactions(query: SessionQuery) -> None:
    view = view_of(query, "billing-rounding")
    user, assistant, call, result = (view.item(s) for s in (1, 3, 4, 5))
    assert (user.kind, user.surface, user.replaced_by) == ("user", "shadowed", 31)
    assert assistant.kind == "assistant" and assistant.calls == ()  # logged as tool/call
    assert view.item(3, "surface").calls[0].name == "bash"  # no tool/call on the surface
    assert (call.kind, call.surface, call.calls[0].name) == ("tool-call", "log-only", "bash")
    assert (result.kind, result.tool_name, result.is_error) == ("tool-result", "bash", False)
    summary = view.item(31)
    assert summary.compaction and summary.replaces == view.fold.replaced[31]
    assert summary.source_kind == "compaction"


def test_a_window_is_computed_for_its_positions_only(query: SessionQuery) -> None:
    view = view_of(query, "billing-rounding")
    assert [item.seq for item in view.items("log", 10, 13)] == [10, 11, 12]
    surface = view.items("surface", 0, 3)
    assert [item.seq for item in surface] == list(view.fold.nodes[:3])
    assert view.items("log", view.event_count - 1, view.event_count + 50)[-1].seq == 46


def test_closers_added_by_a_read_are_recognised(tmp_path: Path) -> None:
    store = SessionStore(JsonlPersistence(tmp_path))
    session = store.create("open", cwd="/w")
    session.append("turn/start", m.turn_start(0))
    session.append("user/message", m.user_message("hi", id="u"), surface_op="append")
    session.append("step/start", m.step_start(0, 0))
    call = m.tool_call_block("c1", "bash", {"command": "ls"})
    session.append(
        "assistant/message",
        m.assistant_message(None, turn=0, step=0, tool_calls=[call]),
        surface_op="append",
    )
    store.flush("open")
    reader = SessionQuery(persistence=JsonlPersistence(tmp_path))
    events = reader.read_session("open").events
    assert [e.type for e in events[4:]] == ["tool/result", "step/end", "turn/end"]
    assert added_on_read(events) == 3
    view = view_of(SessionQuery(persistence=JsonlPersistence(tmp_path)), "open")
    assert view.stored == 4
    whole = SessionView.whole(reader.read_session("open"))
    assert whole.stored == 4 and whole.item(4).synthetic and whole.item(4) == view.item(4)
    assert view.stored == 4 and view.item(4).synthetic and not view.item(3).synthetic
    assert view.item(4).tool_name == "bash"  # from the assistant message's block
    assert added_on_read(events[:4]) == 0
    store.close("open")
