"""Tests of ``EventLogView`` (``live/_view.py``): snapshots, slices and immutability of what a
session hands out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from live_support import make_store
from sessionquery.live import (
    EventLogView,
)
from sessionquery.model import (
    SessionEvent,
)

# --- snapshots and immutability ------------------------------------------------------------


def test_snapshot_taken_before_an_append_keeps_its_length() -> None:
    session = make_store().create("s")
    session.append("note", 0)
    snapshot = session.events
    session.append("note", 1)
    assert len(snapshot) == 1
    assert [e.seq for e in snapshot] == [0]
    assert len(session.events) == 2
    with pytest.raises(IndexError):
        snapshot[1]


def test_events_view_supports_indexing_slicing_and_iteration() -> None:
    session = make_store().create("s")
    events = [session.append("note", i) for i in range(6)]
    view = session.events
    assert isinstance(view, EventLogView)
    assert view[-1] == events[-1]
    assert view[2:4] == events[2:4]
    assert view[2:4][-1] == events[3]
    assert view[4:2] == []
    assert view[::2] == tuple(events[::2])
    assert list(reversed(view)) == events[::-1]
    assert events[3] in view
    assert view.index(events[4]) == 4
    assert view == tuple(events)
    assert view != events[:5]
    with pytest.raises(IndexError):
        view[-7]


def test_returned_events_and_views_cannot_be_mutated() -> None:
    session = make_store().create("s")
    items = [1, 2]
    payload = {"items": items, "nested": {"k": "v"}}
    event = session.append("note", payload)
    items.append(3)  # the caller's dict was copied on the way in
    assert session.events[0].data == {"items": [1, 2], "nested": {"k": "v"}}
    with pytest.raises(TypeError):
        event.data["items"].append(3)
    with pytest.raises(TypeError):
        session.events[0].data["nested"]["k"] = "changed"
    with pytest.raises(TypeError):
        session.events[0] = event  # type: ignore[index]
    with pytest.raises(AttributeError):
        event.seq = 5  # type: ignore[misc]
    assert session.events[0].data == {"items": [1, 2], "nested": {"k": "v"}}


# --- property: the incremental state equals a full re-fold ---------------------------------


def _iter_seqs(view: Sequence[SessionEvent]) -> Iterator[int]:
    return (event.seq for event in view)


@given(st.lists(st.integers(0, 20), max_size=20), st.integers(-25, 25), st.integers(-25, 25))
def test_event_view_slices_behave_like_list_slices(
    payloads: list[int], start: int, stop: int
) -> None:
    session = make_store().create("s")
    events = [session.append("note", p) for p in payloads]
    view = session.events
    assert list(_iter_seqs(view[start:stop])) == [e.seq for e in events[start:stop]]
    assert list(view[start:stop][1:]) == events[start:stop][1:]
