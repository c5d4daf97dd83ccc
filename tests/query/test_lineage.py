"""Tests for sessionquery.query.lineage over hand-built corpus listings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.model import SessionHeader
from sessionquery.query.lineage import trace_lineage
from sessionquery.query.types import LineageNode, SessionRecord


def record(session_id: str, created_at: int = 0, parent: str | None = None) -> SessionRecord:
    header = SessionHeader(id=session_id, created_at=created_at, parent_session=parent)
    return SessionRecord(header, live=False, persisted=True)


def ids(nodes: tuple[LineageNode, ...]) -> list[str]:
    return [node.record.id for node in nodes]


def test_ancestors_are_nearest_first_and_root_is_the_last() -> None:
    records = [record("root"), record("mid", 1, "root"), record("leaf", 2, "mid")]
    trace = trace_lineage(records, "leaf")
    assert [a.id for a in trace.ancestors] == ["mid", "root"]
    assert trace.complete and trace.root is not None and trace.root.id == "root"


def test_children_are_ordered_by_creation_then_id_at_every_level() -> None:
    records = [
        record("t"),
        record("b", 5, "t"),
        record("a", 5, "t"),
        record("c", 1, "t"),
        record("a2", 9, "a"),
        record("a1", 3, "a"),
        record("unrelated", 0),
    ]
    trace = trace_lineage(records, "t")
    assert ids(trace.descendants) == ["c", "a", "b"]
    assert ids(trace.descendants[1].descendants) == ["a1", "a2"]


def test_a_missing_parent_stops_the_walk() -> None:
    trace = trace_lineage([record("x", 0, "y"), record("z", 0, "x")], "z")
    assert [a.id for a in trace.ancestors] == ["x"]
    assert not trace.complete and trace.root is None and trace.unresolved_parent_id == "y"


@pytest.mark.parametrize("target", ["a", "b", "c"])
def test_a_cycle_anywhere_above_the_target_raises_invalid_lineage(target: str) -> None:
    records = [record("a", 0, "b"), record("b", 0, "a"), record("c", 0, "a")]
    with raises_code(ErrorCode.INVALID_LINEAGE):
        trace_lineage(records, target)


def test_an_absent_target_raises_session_not_found() -> None:
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        trace_lineage([record("a")], "b")


@given(st.lists(st.integers(min_value=0, max_value=30), max_size=30))
def test_every_descendant_appears_exactly_once(parents: list[int]) -> None:
    # Session n's parent is an earlier session (a forest), so no cycles.
    records = [record("s0")] + [
        record(f"s{n}", n, f"s{min(parent, n - 1)}") for n, parent in enumerate(parents, start=1)
    ]
    trace = trace_lineage(records, "s0")
    seen: list[str] = []
    stack = list(trace.descendants)
    while stack:
        node = stack.pop()
        seen.append(node.record.id)
        stack.extend(node.descendants)
    assert sorted(seen) == sorted(r.id for r in records[1:])
