"""Caller identity and the workspace authorization rule (reference contract §6.4)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.errors import ToolErrorCode
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.query.types import LineageNode, LineageTrace, SessionRecord
from sessionquery.tools.access import (
    UNAUTHORIZED_MESSAGE,
    ToolCaller,
    is_authorized,
    is_visible,
    no_current_step,
    project_lineage,
    unauthorized,
)


def _header(session_id: str, cwd: str | None, parent: str | None = None) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1000, cwd=cwd, parent_session=parent)


def _record(session_id: str, cwd: str | None, parent: str | None = None) -> SessionRecord:
    return SessionRecord(_header(session_id, cwd, parent), live=False, persisted=True)


def test_own_session_is_visible_only_when_its_cwd_equals_the_callers() -> None:
    assert is_authorized(_header("me", "/w"), ToolCaller("me", "/w"))
    assert not is_authorized(_header("me", "/w"), ToolCaller("me", "/other"))
    assert not is_authorized(_header("me", "/w"), ToolCaller("me", None))
    assert is_authorized(_header("me", None), ToolCaller("me", None))


def test_other_session_needs_the_exact_same_cwd_string() -> None:
    caller = ToolCaller("me", "/a")
    assert is_authorized(_header("x", "/a"), caller)
    assert not is_authorized(_header("x", "/a/"), caller)
    assert not is_authorized(_header("x", "/a/../a"), caller)
    assert not is_authorized(_header("x", "/A"), caller)
    assert not is_authorized(_header("x", None), caller)


def test_caller_without_cwd_sees_no_other_session_even_cwd_less_ones() -> None:
    caller = ToolCaller("me", None)
    assert not is_authorized(_header("x", None), caller)
    assert not is_authorized(_header("x", "/a"), caller)


_PATHS = st.text(alphabet=st.sampled_from("/aA.é "), max_size=6).map(lambda p: "/" + p)


@given(_PATHS, _PATHS)
def test_other_sessions_are_visible_iff_cwds_are_identical(mine: str, theirs: str) -> None:
    caller = ToolCaller("me", mine)
    assert is_authorized(_header("x", theirs), caller) == (mine == theirs)


def test_unauthorized_error_is_the_same_every_time() -> None:
    first, second = unauthorized(), unauthorized()
    assert first.code is ToolErrorCode.UNAUTHORIZED
    assert (first.message, str(first)) == (second.message, str(second))
    assert first.message == UNAUTHORIZED_MESSAGE
    assert no_current_step().code is ToolErrorCode.NO_CURRENT_STEP


@pytest.mark.parametrize(
    "kwargs",
    [{"session_id": ""}, {"cwd": ""}, {"current_step_seq": -1}, {"current_step_seq": True}],
)
def test_tool_caller_rejects_invalid_fields(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ToolCaller(**kwargs)  # type: ignore[arg-type]


@dataclass
class _FakeLive:
    id: str
    header: SessionHeader
    events: Sequence[SessionEvent]


def _event(seq: int, type_: str) -> SessionEvent:
    return SessionEvent(type=type_, seq=seq, time=seq)


def test_for_session_takes_id_cwd_and_the_last_step_start() -> None:
    events = [
        _event(0, "turn/start"),
        _event(1, "step/start"),
        _event(2, "step/end"),
        _event(3, "step/start"),
        _event(4, "tool/call"),
    ]
    caller = ToolCaller.for_session(_FakeLive("s1", _header("s1", "/w"), events))
    assert caller == ToolCaller(session_id="s1", cwd="/w", current_step_seq=3)


def test_for_session_without_a_step_has_no_current_step() -> None:
    caller = ToolCaller.for_session(_FakeLive("s1", _header("s1", None), [_event(0, "turn/start")]))
    assert caller == ToolCaller(session_id="s1", cwd=None, current_step_seq=None)


def _trace(
    ancestors: Sequence[SessionRecord], descendants: Sequence[LineageNode], complete: bool = True
) -> LineageTrace:
    return LineageTrace(
        target=_record("t", "/w"),
        ancestors=tuple(ancestors),
        descendants=tuple(descendants),
        complete=complete,
        root=None,
        unresolved_parent_id=None if complete else "gone",
    )


def _node(record: SessionRecord, *children: LineageNode) -> LineageNode:
    return LineageNode(record, tuple(children))


def test_lineage_keeps_ancestors_until_the_first_hidden_one_and_marks_the_boundary() -> None:
    trace = _trace([_record("p1", "/w"), _record("p2", "/x"), _record("p3", "/w")], [])
    lineage = project_lineage(trace, ToolCaller("t", "/w"))
    assert [r.id for r in lineage.ancestors] == ["p1"]
    assert lineage.ancestor_boundary


def test_incomplete_lineage_marks_the_boundary_even_when_all_ancestors_are_visible() -> None:
    lineage = project_lineage(
        _trace([_record("p1", "/w")], [], complete=False), ToolCaller("t", "/w")
    )
    assert [r.id for r in lineage.ancestors] == ["p1"]
    assert lineage.ancestor_boundary
    complete = project_lineage(_trace([_record("p1", "/w")], []), ToolCaller("t", "/w"))
    assert not complete.ancestor_boundary


def test_hidden_descendant_hides_its_whole_subtree_behind_one_marker() -> None:
    descendants = [
        _node(_record("c1", "/w"), _node(_record("g1", "/w"))),
        _node(_record("c2", "/x"), _node(_record("g2", "/w"))),
        _node(_record("c3", "/w")),
    ]
    lineage = project_lineage(_trace([], descendants), ToolCaller("t", "/w"))
    rows = [(depth, None if r is None else r.id) for depth, r in lineage.descendants]
    assert rows == [(0, "c1"), (1, "g1"), (0, None), (0, "c3")]
    assert lineage.visible_ids() == ["t", "c1", "g1", "c3"]


def test_deep_lineage_projects_without_recursion_limits() -> None:
    node = _node(_record("d2999", "/w"))
    for depth in range(2998, -1, -1):
        node = _node(_record(f"d{depth}", "/w"), node)
    lineage = project_lineage(_trace([], [node]), ToolCaller("t", "/w"))
    assert len(lineage.descendants) == 3000
    assert lineage.descendants[-1][0] == 2999


_CWDS = st.sampled_from([None, "/a", "/a/", "/b"])


@given(st.sampled_from(["me", "x"]), _CWDS, st.sampled_from([None, "me"]), _CWDS)
def test_is_authorized_is_the_one_workspace_rule_applied_to_a_header(
    session_id: str, cwd: str | None, caller_id: str | None, caller_cwd: str | None
) -> None:
    caller = ToolCaller(caller_id, caller_cwd)
    expected = (
        (cwd == caller_cwd)
        if session_id == caller_id
        else (caller_cwd is not None and cwd == caller_cwd)
    )
    assert is_visible(session_id, cwd, caller) is expected
    assert is_authorized(_header(session_id, cwd), caller) is expected
