"""Tests of ``Session`` (``live/_session.py``): appends, the refusals that leave a session
unchanged, concurrent appends, and the incremental surface state against a full re-fold."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assistant_data, result_data, user_data
from live_support import FakeClock, FakePersistence, make_store, record_turn, run_threads
from sessionquery.live import (
    Session,
    SessionClosed,
)
from sessionquery.model import (
    Replace,
    SessionEvent,
    SurfaceError,
    fold_surface,
    messages,
)

# --- helpers -------------------------------------------------------------------------------


def state(session: Session) -> tuple[int, list[SessionEvent], tuple[int, ...]]:
    return len(session.events), list(session.events), session.surface_nodes()


# --- create and append ---------------------------------------------------------------------


def test_append_assigns_contiguous_seqs_and_clock_times() -> None:
    store = make_store(clock=FakeClock(10, 20, 30, 40))
    session = store.create("s", created_at=5)
    first = session.append("turn/start", messages.turn_start(0))
    second = session.append("user/message", user_data("hi"), surface_op="append")
    assert (first.seq, first.time) == (0, 10)
    assert (second.seq, second.time) == (1, 20)
    assert list(session.events) == [first, second]
    assert session.events[1].data["content"][0]["text"] == "hi"


def test_append_time_never_decreases_when_clock_goes_back() -> None:
    store = make_store(clock=FakeClock(0, 500, 100, 700))
    session = store.create("s")
    times = [session.append("note", i).time for i in range(3)]
    assert times == [500, 500, 700]


# --- refusals leave the session unchanged -------------------------------------------------


@pytest.mark.parametrize(
    "bad_data",
    [float("nan"), float("inf"), {1: "non-str key"}, {"a": {1, 2}}, object(), "\ud800"],
)
def test_append_with_invalid_json_data_is_refused_and_changes_nothing(bad_data: object) -> None:
    session = make_store().create("s")
    session.append("turn/start", messages.turn_start(0))
    before = state(session)
    with pytest.raises(ValueError):
        session.append("note", bad_data)
    assert state(session) == before
    assert session.append("note", "ok").seq == 1


def _surface_session() -> Session:
    session = make_store().create("s")
    session.append("turn/start", messages.turn_start(0))  # 0, log-only
    session.append("user/message", user_data("question"), surface_op="append")  # 1
    session.append("assistant/message", assistant_data(0, "answer"), surface_op="append")  # 2
    session.append("tool/result", result_data(0, "c1", "out"), surface_op="append")  # 3
    return session


@pytest.mark.parametrize(
    ("event_type", "kwargs"),
    [
        ("user/message", {}),  # eligible without surface op
        ("turn/end", {"surface_op": "append"}),  # non-eligible with surface op
        ("step/start", {"source_event_seqs": [1]}),  # non-eligible with sources
        ("user/message", {"surface_op": Replace(0, 0), "source_event_seqs": [0]}),  # log-only
        ("user/message", {"surface_op": Replace(1, 9)}),  # endpoint not earlier
        ("user/message", {"surface_op": Replace(2, 1), "source_event_seqs": [1, 2]}),  # reversed
        ("user/message", {"surface_op": Replace(1, 2), "source_event_seqs": [1]}),  # missing src
        ("assistant/message", {"surface_op": "append", "source_event_seqs": [1]}),
        ("user/message", {"surface_op": "append", "source_event_seqs": []}),
        ("user/message", {"surface_op": "append", "source_event_seqs": [1, 1]}),
        ("user/message", {"surface_op": "append", "source_event_seqs": [4]}),  # not earlier
        ("tool/result", {"surface_op": Replace(2, 2), "source_event_seqs": [2]}),  # not a result
    ],
)
def test_surface_violation_is_refused_and_changes_nothing(
    event_type: str, kwargs: dict[str, Any]
) -> None:
    session = _surface_session()
    before = state(session)
    data: object = result_data(0, "c1", "x") if event_type == "tool/result" else user_data("x")
    with pytest.raises(SurfaceError):
        session.append(event_type, data, **kwargs)
    assert state(session) == before
    assert fold_surface(session.events).nodes == (1, 2, 3)


def test_tool_result_rewrite_may_change_only_the_output_text() -> None:
    session = _surface_session()
    changed_call = result_data(0, "other-call", "out")
    with pytest.raises(SurfaceError):
        session.append("tool/result", changed_call, surface_op=Replace(3, 3))
    rewrite = session.append(
        "tool/result", result_data(0, "c1", "shorter"), surface_op=Replace(3, 3)
    )
    assert session.surface_nodes() == (1, 2, rewrite.seq)
    assert session.surface_class(3) == "shadowed"


def test_invalid_envelope_is_refused_and_changes_nothing() -> None:
    session = _surface_session()
    before = state(session)
    with pytest.raises(ValueError):
        session.append("", {})
    with pytest.raises(ValueError):
        session.append("user/message", user_data("x"), surface_op="prepend")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        session.append("note", {}, ignorable="yes")  # type: ignore[arg-type]
    assert state(session) == before


def test_append_after_close_raises_session_closed_and_keeps_events_readable() -> None:
    store = make_store()
    session = store.create("s")
    session.append("note", 1)
    store.close("s")
    with pytest.raises(SessionClosed):
        session.append("note", 2)
    assert session.is_closed
    assert [e.data for e in session.events] == [1]
    assert store.get("s") is None


def test_compaction_replace_shadows_the_run_and_cites_it() -> None:
    session = _surface_session()
    summary = session.append(
        "user/message",
        user_data("summary of earlier work"),
        surface_op=Replace(1, 3),
        source_event_seqs=[1, 2, 3],
    )
    assert session.surface_nodes() == (summary.seq,)
    assert [session.surface_class(s) for s in range(5)] == [
        "log-only",
        "shadowed",
        "shadowed",
        "shadowed",
        "current",
    ]
    with pytest.raises(IndexError):
        session.surface_class(5)
    assert fold_surface(session.events).nodes == (summary.seq,)


def test_last_seq_tracks_latest_event_of_each_type() -> None:
    session = make_store().create("s")
    assert session.last_seq("step/start") is None
    record_turn(session, 0)
    record_turn(session, 1)
    assert session.last_seq("step/start") == 10
    assert session.last_seq("turn/end") == 15


# --- concurrency ---------------------------------------------------------------------------


def test_concurrent_appends_get_unique_contiguous_seqs() -> None:
    session = make_store().create("s")
    returned: list[SessionEvent] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        for n in range(200):
            event = session.append(
                "user/message", user_data(f"{index}-{n}", f"m{index}-{n}"), surface_op="append"
            )
            with lock:
                returned.append(event)

    run_threads(worker, 6)
    assert sorted(e.seq for e in returned) == list(range(1200))
    assert [e.seq for e in session.events] == list(range(1200))
    assert sorted(returned, key=lambda e: e.seq) == list(session.events)
    times = [e.time for e in session.events]
    assert times == sorted(times)
    assert len(fold_surface(session.events).nodes) == 1200


def test_concurrent_appends_and_flushes_hand_every_event_to_the_writer_once_in_order() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    session = store.create("s")

    def worker(index: int) -> None:
        for n in range(150):
            session.append("note", [index, n])
            if n % 10 == 0:
                session.flush()

    run_threads(worker, 4)
    store.flush()
    handle = persistence.handles["s"]
    assert handle.buffer == []
    assert handle.durable == list(session.events)


# --- property: the incremental state equals a full re-fold ---------------------------------


@st.composite
def _attempts(draw: st.DrawFn) -> list[tuple[str, int, int, bool, bool]]:
    kinds = st.sampled_from(["user", "assistant", "tool", "system", "note", "replace"])
    step = st.tuples(kinds, st.integers(0, 12), st.integers(0, 12), st.booleans(), st.booleans())
    return draw(st.lists(step, max_size=30))


def _attempt_kwargs(
    attempt: tuple[str, int, int, bool, bool], next_seq: int, nodes: tuple[int, ...]
) -> tuple[str, object, dict[str, Any]]:
    kind, a, b, with_sources, wrong = attempt
    sources = [a % max(next_seq, 1)] if with_sources and next_seq else None
    if kind == "note":
        return "step/start", {"turn": 0, "step": a}, {"source_event_seqs": sources} if wrong else {}
    if kind == "replace":
        if wrong or not nodes:  # raw seqs: often log-only, shadowed or in the future
            start, end, cited = a, b, list(range(min(a, b), max(a, b) + 1))
        else:
            i, j = sorted((a % len(nodes), b % len(nodes)))
            start, end, cited = nodes[i], nodes[j], list(nodes[i : j + 1])
        return (
            "user/message",
            user_data(f"summary {a}-{b}"),
            {
                "surface_op": Replace(start, end),
                "source_event_seqs": cited if with_sources else None,
            },
        )
    event_type = {
        "user": "user/message",
        "assistant": "assistant/message",
        "tool": "tool/result",
        "system": "system/message",
    }[kind]
    data: object = {
        "user": user_data("q"),
        "assistant": assistant_data(0, "a"),
        "tool": result_data(0, f"c{a}", "out"),
        "system": {"turn": 0, "step": 0, "message": {"role": "system", "content": []}},
    }[kind]
    return (
        event_type,
        data,
        {"surface_op": None if wrong else "append", "source_event_seqs": sources},
    )


@settings(max_examples=150, deadline=None)
@given(_attempts())
def test_random_appends_match_a_full_fold_and_refusals_change_nothing(
    attempts: list[tuple[str, int, int, bool, bool]],
) -> None:
    session = make_store().create("s")
    for attempt in attempts:
        before = list(session.events)
        event_type, data, kwargs = _attempt_kwargs(attempt, len(before), session.surface_nodes())
        candidate = SessionEvent(event_type, len(before), 1_000, data, **kwargs)
        try:
            fold_surface([*before, candidate])
            expected_ok = True
        except SurfaceError:
            expected_ok = False
        try:
            session.append(event_type, data, **kwargs)
            accepted = True
        except SurfaceError:
            accepted = False
        assert accepted == expected_ok
        assert len(session.events) == len(before) + accepted
        fold = fold_surface(session.events)
        assert fold.nodes == session.surface_nodes()
        assert all(session.surface_class(s) == c for s, c in fold.surface_of.items())
