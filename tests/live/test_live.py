"""Tests for the live store: appends, refusals, forks, snapshots, concurrency, write-behind."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionquery.errors import PersistenceClosed
from sessionquery.live import (
    EventLogView,
    Session,
    SessionClosed,
    SessionStore,
    StoreChange,
    WritablePersistence,
)
from sessionquery.model import (
    Replace,
    SessionEvent,
    SessionHeader,
    SurfaceError,
    fold_surface,
    messages,
)
from sessionquery.persistence import JsonlPersistence, WriteHandle

# --- helpers -------------------------------------------------------------------------------


class FakeClock:
    """Deterministic epoch-ms clock: returns the next value of a script, then keeps the last."""

    def __init__(self, *values: int) -> None:
        self.values = list(values) or [1_000]
        self.calls = 0

    def __call__(self) -> int:
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return value


def counter_ids(prefix: str = "s") -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"{prefix}{next(numbers)}"


def make_store(persistence: WritablePersistence | None = None, **kwargs: Any) -> SessionStore:
    kwargs.setdefault("clock", FakeClock(1_000))
    kwargs.setdefault("id_factory", counter_ids())
    return SessionStore(persistence, **kwargs)


def user(text: str, message_id: str = "u") -> messages.UserMessageData:
    return messages.user_message(text, id=message_id)


def assistant(turn: int, text: str, calls: Sequence[str] = ()) -> messages.AssistantMessageData:
    blocks = [messages.tool_call_block(c, "grep", "{}") for c in calls]
    return messages.assistant_message(text, turn=turn, step=0, tool_calls=blocks)


def tool_result(turn: int, call_id: str, output: str) -> messages.ToolResultData:
    return messages.tool_result(output, call_id=call_id, turn=turn, step=0)


def record_turn(session: Session, turn: int, text: str = "hello") -> None:
    """One whole turn: user message, a tool round trip, an answer."""
    session.append("turn/start", messages.turn_start(turn))
    session.append("user/message", user(text, f"u{turn}"), surface_op="append")
    session.append("step/start", messages.step_start(turn, 0))
    session.append("assistant/message", assistant(turn, "looking", ["c1"]), surface_op="append")
    grep = messages.tool_call_block("c1", "grep", "{}")
    call = session.append("tool/call", messages.tool_call(grep, turn=turn, step=0))
    session.append(
        "tool/result",
        tool_result(turn, "c1", "found it"),
        surface_op="append",
        source_event_seqs=[call.seq],
    )
    session.append("step/end", messages.step_end(turn, 0))
    session.append("turn/end", messages.turn_end(turn))


@dataclass
class FakeHandle:
    """In-memory WriteHandle: ``buffer`` is written-not-synced, ``durable`` is fsynced."""

    header: SessionHeader
    inherited_event_count: int
    buffer: list[SessionEvent] = field(default_factory=list)
    durable: list[SessionEvent] = field(default_factory=list)
    fail_flushes: int = 0
    fail_close: bool = False
    flushes: int = 0
    closed: bool = False

    def append(self, events: Sequence[SessionEvent]) -> None:
        if self.closed:
            raise PersistenceClosed("handle is closed")
        self.buffer.extend(events)

    def flush(self) -> None:
        if self.closed:
            raise PersistenceClosed("handle is closed")
        if self.fail_flushes:
            self.fail_flushes -= 1
            raise OSError(28, "No space left on device")
        self.durable.extend(self.buffer)
        self.buffer.clear()
        self.flushes += 1

    def close(self) -> None:
        if self.fail_close:
            raise OSError(5, "Input/output error")
        if not self.closed:
            self.flush()
            self.closed = True


@dataclass
class FakePersistence:
    fail_flushes: int = 0  # given to each new handle
    handles: dict[str, FakeHandle] = field(default_factory=dict)

    def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> FakeHandle:
        if header.id in self.handles:
            raise FileExistsError(header.id)
        handle = FakeHandle(header, inherited_event_count, fail_flushes=self.fail_flushes)
        self.handles[header.id] = handle
        return handle


def state(session: Session) -> tuple[int, list[SessionEvent], tuple[int, ...]]:
    return len(session.events), list(session.events), session.surface_nodes()


# --- create and append ---------------------------------------------------------------------


def test_create_takes_id_from_factory_and_created_at_from_clock() -> None:
    store = make_store(clock=FakeClock(42), id_factory=counter_ids("abc-"))
    session = store.create(cwd="/work/project")
    assert session.id == "abc-1"
    assert session.header == SessionHeader(id="abc-1", created_at=42, cwd="/work/project")
    assert session.inherited_event_count == 0
    assert not session.header.is_seeded
    assert store.get("abc-1") is session
    assert store.sessions() == [session]


def test_default_clock_and_id_factory_give_wall_time_and_unique_ids() -> None:
    store = SessionStore()
    first, second = store.create(), store.create()
    assert first.id != second.id
    assert first.header.created_at > 1_600_000_000_000


def test_append_assigns_contiguous_seqs_and_clock_times() -> None:
    store = make_store(clock=FakeClock(10, 20, 30, 40))
    session = store.create("s", created_at=5)
    first = session.append("turn/start", messages.turn_start(0))
    second = session.append("user/message", user("hi"), surface_op="append")
    assert (first.seq, first.time) == (0, 10)
    assert (second.seq, second.time) == (1, 20)
    assert list(session.events) == [first, second]
    assert session.events[1].data["content"][0]["text"] == "hi"


def test_append_time_never_decreases_when_clock_goes_back() -> None:
    store = make_store(clock=FakeClock(0, 500, 100, 700))
    session = store.create("s")
    times = [session.append("note", i).time for i in range(3)]
    assert times == [500, 500, 700]


def test_create_with_duplicate_live_id_raises_value_error() -> None:
    store = make_store()
    store.create("dup")
    with pytest.raises(ValueError, match="already live"):
        store.create("dup")
    assert len(store.sessions()) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"session_id": ""},
        {"session_id": "bad\x00id"},
        {"cwd": "relative/path"},
        {"delegation_depth": -1},
        {"created_at": -5},
        {"parent_session": "x\ny"},
    ],
)
def test_create_with_invalid_header_field_raises_value_error(kwargs: dict[str, Any]) -> None:
    store = make_store()
    with pytest.raises(ValueError):
        store.create(**kwargs)
    assert store.sessions() == []


def test_create_records_a_parent_session_that_is_not_live() -> None:
    store = make_store()
    session = store.create("child", parent_session="never-seen", origin="subagent")
    assert session.header.parent_session == "never-seen"
    assert session.header.origin == "subagent"


def test_closed_session_id_can_be_created_again_without_persistence() -> None:
    store = make_store()
    store.create("again")
    store.close("again")
    assert store.create("again").events == []


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
    session.append("user/message", user("question"), surface_op="append")  # 1
    session.append("assistant/message", assistant(0, "answer"), surface_op="append")  # 2
    session.append("tool/result", tool_result(0, "c1", "out"), surface_op="append")  # 3
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
    data: object = tool_result(0, "c1", "x") if event_type == "tool/result" else user("x")
    with pytest.raises(SurfaceError):
        session.append(event_type, data, **kwargs)
    assert state(session) == before
    assert fold_surface(session.events).nodes == (1, 2, 3)


def test_tool_result_rewrite_may_change_only_the_output_text() -> None:
    session = _surface_session()
    changed_call = tool_result(0, "other-call", "out")
    with pytest.raises(SurfaceError):
        session.append("tool/result", changed_call, surface_op=Replace(3, 3))
    rewrite = session.append(
        "tool/result", tool_result(0, "c1", "shorter"), surface_op=Replace(3, 3)
    )
    assert session.surface_nodes() == (1, 2, rewrite.seq)
    assert session.surface_class(3) == "shadowed"


def test_invalid_envelope_is_refused_and_changes_nothing() -> None:
    session = _surface_session()
    before = state(session)
    with pytest.raises(ValueError):
        session.append("", {})
    with pytest.raises(ValueError):
        session.append("user/message", user("x"), surface_op="prepend")  # type: ignore[arg-type]
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


def test_close_of_unknown_session_raises_key_error() -> None:
    store = make_store()
    with pytest.raises(KeyError):
        store.close("nope")
    store.create("s")
    store.close("s")
    with pytest.raises(KeyError):
        store.close("s")


def test_compaction_replace_shadows_the_run_and_cites_it() -> None:
    session = _surface_session()
    summary = session.append(
        "user/message",
        user("summary of earlier work"),
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


# --- seeds and forks -----------------------------------------------------------------------


def _seed(n_turns: int = 1) -> list[SessionEvent]:
    source = make_store().create("seed-source")
    for turn in range(n_turns):
        record_turn(source, turn)
    return list(source.events)


def test_seeded_create_is_seeded_with_inherited_count_of_the_seed() -> None:
    seed = _seed()
    session = make_store(clock=FakeClock(1)).create("s", seed=seed)
    assert session.header.is_seeded
    assert session.inherited_event_count == len(seed) == 8
    assert list(session.events) == seed
    appended = session.append("note", "after")
    assert appended.seq == 8
    assert appended.time == seed[-1].time  # never earlier than the inherited history


def test_seeded_create_accepts_a_given_inherited_count_within_the_seed() -> None:
    seed = _seed()
    assert make_store().create("a", seed=seed, inherited_event_count=3).inherited_event_count == 3
    assert make_store().create("b", seed=seed, inherited_event_count=0).header.is_seeded


@pytest.mark.parametrize("count", [-1, 9, True, 2.0])
def test_seeded_create_refuses_inherited_count_outside_the_seed(count: object) -> None:
    store = make_store()
    with pytest.raises(ValueError, match="inherited_event_count"):
        store.create("s", seed=_seed(), inherited_event_count=count)  # type: ignore[arg-type]
    assert store.get("s") is None


def test_seed_that_breaks_surface_rules_is_refused() -> None:
    seed = _seed()
    broken = [*seed[:1], SessionEvent("user/message", 1, 0, user("x")), *seed[2:]]
    store = make_store()
    with pytest.raises(SurfaceError):
        store.create("s", seed=broken)
    with pytest.raises(SurfaceError):
        store.create("s", seed=seed[1:])  # seqs must start at 0
    with pytest.raises(ValueError, match="SessionEvent"):
        store.create("s", seed=[{"type": "note"}])  # type: ignore[list-item]
    assert store.sessions() == []


def test_fork_at_turn_end_inherits_the_prefix_and_source_identity() -> None:
    store = make_store()
    source = store.create("src", cwd="/w", delegation_depth=2, agent_preset="coder")
    record_turn(source, 0)
    record_turn(source, 1)
    fork = store.fork("src", 7)
    assert fork.id == "s1"
    assert fork.header.parent_session == "src"
    assert fork.header.origin == "fork"
    assert fork.header.is_seeded
    assert (fork.header.cwd, fork.header.delegation_depth, fork.header.agent_preset) == (
        "/w",
        2,
        "coder",
    )
    assert fork.inherited_event_count == 8
    assert list(fork.events) == list(source.events[:8])
    record_turn(fork, 1, "a different second turn")
    assert len(source.events) == 16  # the source is unaffected by the fork's appends
    assert fork.events[9].data["content"][0]["text"] == "a different second turn"


def test_fork_with_explicit_id_uses_it() -> None:
    store = make_store()
    record_turn(store.create("src"), 0)
    assert store.fork("src", 7, session_id="branch").id == "branch"
    with pytest.raises(ValueError, match="already live"):
        store.fork("src", 7, session_id="branch")


@pytest.mark.parametrize("through_seq", [0, 1, 6])
def test_fork_at_a_non_turn_end_is_refused(through_seq: int) -> None:
    store = make_store()
    record_turn(store.create("src"), 0)
    with pytest.raises(ValueError, match="turn/end"):
        store.fork("src", through_seq)
    assert [s.id for s in store.sessions()] == ["src"]


@pytest.mark.parametrize("through_seq", [-1, 8, True, "7"])
def test_fork_outside_the_source_log_is_refused(through_seq: object) -> None:
    store = make_store()
    record_turn(store.create("src"), 0)
    with pytest.raises(ValueError, match="through_seq"):
        store.fork("src", through_seq)  # type: ignore[arg-type]


def test_fork_of_a_session_that_is_not_live_raises_key_error() -> None:
    store = make_store()
    record_turn(store.create("src"), 0)
    store.close("src")
    with pytest.raises(KeyError):
        store.fork("src", 7)
    with pytest.raises(KeyError):
        store.fork("never", 0)


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


# --- concurrency ---------------------------------------------------------------------------


def _run_threads(target: Callable[[int], None], count: int) -> None:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()


def test_concurrent_appends_get_unique_contiguous_seqs() -> None:
    session = make_store().create("s")
    returned: list[SessionEvent] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        for n in range(200):
            event = session.append(
                "user/message", user(f"{index}-{n}", f"m{index}-{n}"), surface_op="append"
            )
            with lock:
                returned.append(event)

    _run_threads(worker, 6)
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

    _run_threads(worker, 4)
    store.flush()
    handle = persistence.handles["s"]
    assert handle.buffer == []
    assert handle.durable == list(session.events)


def test_concurrent_creates_of_one_id_admit_exactly_one() -> None:
    store = make_store()
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        barrier.wait(timeout=5)
        try:
            store.create("same")
            outcomes.append("created")
        except ValueError:
            outcomes.append("refused")

    _run_threads(worker, 8)
    assert sorted(outcomes) == ["created"] + ["refused"] * 7


# --- subscriptions -------------------------------------------------------------------------


def test_subscriber_sees_created_appended_and_closed_changes_in_order() -> None:
    store = make_store()
    changes: list[StoreChange] = []
    unsubscribe = store.subscribe(changes.append)
    session = store.create("s")
    event = session.append("note", 1)
    store.close("s")
    assert changes == [
        StoreChange("created", "s"),
        StoreChange("appended", "s", event),
        StoreChange("closed", "s"),
    ]
    unsubscribe()
    unsubscribe()  # idempotent
    store.create("t").append("note", 2)
    assert len(changes) == 3


def test_subscriber_is_not_told_about_refused_appends_or_forks() -> None:
    store = make_store()
    source = store.create("src")
    record_turn(source, 0)
    changes: list[StoreChange] = []
    store.subscribe(changes.append)
    with pytest.raises(SurfaceError):
        source.append("user/message", user("x"))
    with pytest.raises(ValueError):
        store.fork("src", 3)
    store.fork("src", 7, session_id="f")
    assert changes == [StoreChange("created", "f")]


def test_subscriber_sees_concurrent_appends_once_each_in_seq_order() -> None:
    store = make_store()
    sessions = [store.create(f"s{i}") for i in range(3)]
    seen: dict[str, list[int]] = {s.id: [] for s in sessions}
    store.subscribe(lambda c: seen[c.session_id].append(c.event.seq) if c.event else None)

    def worker(index: int) -> None:
        session = sessions[index % 3]
        for n in range(100):
            session.append("note", [index, n])

    _run_threads(worker, 6)
    assert all(seqs == list(range(200)) for seqs in seen.values())


def test_failing_subscriber_is_logged_and_does_not_break_the_append(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = make_store()
    seen: list[StoreChange] = []

    def broken(change: StoreChange) -> None:
        raise RuntimeError("subscriber bug")

    store.subscribe(broken)
    store.subscribe(seen.append)
    session = store.create("s")
    with caplog.at_level(logging.ERROR, logger="sessionquery.live"):
        event = session.append("note", 1)
    assert session.events[-1] == event
    assert StoreChange("appended", "s", event) in seen
    assert any("subscriber bug" in (r.exc_text or "") for r in caplog.records)


def test_subscriber_may_append_from_its_callback_without_deadlock() -> None:
    store = make_store()
    session = store.create("s")
    kinds: list[tuple[str, Any]] = []

    def echo(change: StoreChange) -> None:
        assert change.event is not None
        kinds.append((change.kind, change.event.data))
        if change.event.type == "ping":
            session.append("pong", change.event.seq)

    store.subscribe(echo)
    done = threading.Event()

    def run() -> None:
        session.append("ping", None)
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive() and done.is_set()
    assert [e.type for e in session.events] == ["ping", "pong"]
    assert kinds == [("appended", None), ("appended", 0)]


def test_callbacks_run_after_the_session_lock_is_released() -> None:
    store = make_store()
    session = store.create("s")
    observed: list[int] = []
    store.subscribe(lambda change: observed.append(len(session.surface_nodes())))
    session.append("user/message", user("x"), surface_op="append")
    assert observed == [1]  # surface_nodes() takes the session lock: no deadlock, state visible


# --- persistence (write-behind) ------------------------------------------------------------


def test_create_opens_a_writer_with_the_header_and_inherited_count() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    plain = store.create("plain", cwd="/w")
    seeded = store.create("seeded", seed=_seed(), inherited_event_count=5)
    assert persistence.handles["plain"].header == plain.header
    assert persistence.handles["plain"].inherited_event_count == 0
    assert persistence.handles["seeded"].header == seeded.header
    assert persistence.handles["seeded"].inherited_event_count == 5
    assert persistence.handles["seeded"].durable == list(seeded.events)


def test_seed_that_cannot_be_flushed_at_create_stays_buffered_for_the_next_flush() -> None:
    persistence = FakePersistence(fail_flushes=1)
    store = make_store(persistence)
    session = store.create("s", seed=_seed())
    handle = persistence.handles["s"]
    assert (len(handle.buffer), handle.durable) == (8, [])
    store.flush("s")
    assert handle.durable == list(session.events)


def test_persistence_refusing_create_leaves_no_live_session() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    store.create("s")
    store.close("s")
    with pytest.raises(FileExistsError):
        store.create("s")
    assert store.get("s") is None
    assert store.create("t").id == "t"


def test_appends_are_buffered_until_flush() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    session = store.create("s")
    first = session.append("turn/start", messages.turn_start(0))
    second = session.append("user/message", user("x"), surface_op="append")
    handle = persistence.handles["s"]
    assert (handle.buffer, handle.durable) == ([first, second], [])
    store.flush("s")
    assert (handle.buffer, handle.durable) == ([], [first, second])


def test_turn_end_append_makes_everything_durable() -> None:
    persistence = FakePersistence()
    session = make_store(persistence).create("s")
    record_turn(session, 0)
    handle = persistence.handles["s"]
    assert handle.durable == list(session.events)
    assert handle.flushes == 1
    session.append("turn/start", messages.turn_start(1))
    assert len(handle.durable) == 8


def test_close_flushes_and_releases_the_writer() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    session = store.create("s")
    session.append("note", 1)
    store.close("s")
    handle = persistence.handles["s"]
    assert handle.closed
    assert handle.durable == list(session.events)


def test_store_flush_without_id_flushes_every_session() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    for name in "abc":
        store.create(name).append("note", name)
    store.flush()
    assert all(len(h.durable) == 1 for h in persistence.handles.values())
    with pytest.raises(KeyError):
        store.flush("zzz")


def test_failed_flush_keeps_events_and_a_later_flush_succeeds() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    session = store.create("s")
    handle = persistence.handles["s"]
    handle.fail_flushes = 1
    session.append("turn/start", messages.turn_start(0))
    with pytest.raises(OSError):
        session.append("turn/end", messages.turn_end(0))
    # The turn/end is recorded; only its durability barrier failed.
    assert [e.type for e in session.events] == ["turn/start", "turn/end"]
    assert handle.durable == []
    session.append("note", "more")
    store.flush("s")
    assert handle.durable == list(session.events)


def test_failed_flush_in_store_flush_still_flushes_other_sessions() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    store.create("a").append("note", 1)
    store.create("b").append("note", 2)
    persistence.handles["a"].fail_flushes = 1
    with pytest.raises(OSError):
        store.flush()
    assert persistence.handles["b"].durable != []
    store.flush()
    assert persistence.handles["a"].durable != []


def test_failed_close_keeps_the_session_live_and_open() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    changes: list[StoreChange] = []
    store.subscribe(changes.append)
    session = store.create("s")
    session.append("note", 1)
    persistence.handles["s"].fail_flushes = 1
    with pytest.raises(OSError):
        store.close("s")
    assert store.get("s") is session
    assert not session.is_closed
    session.append("note", 2)
    store.close("s")
    assert persistence.handles["s"].durable == list(session.events)
    assert [c.kind for c in changes].count("closed") == 1


def test_writer_failing_to_release_still_ends_the_live_session() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    session = store.create("s")
    session.append("note", 1)
    persistence.handles["s"].fail_close = True
    with pytest.raises(OSError):
        store.close("s")
    assert store.get("s") is None
    assert session.is_closed
    assert persistence.handles["s"].durable == list(session.events)


def test_turn_end_append_racing_a_close_returns_its_durable_event() -> None:
    persistence = FakePersistence()
    store = make_store(persistence)
    session = store.create("s")
    session.append("turn/start", messages.turn_start(1))
    real_flush = session.flush
    racing = True

    def close_between_record_and_flush() -> None:
        # The interleaving of two threads: close() runs to completion after the turn/end is
        # recorded and before the appending thread reaches its durability barrier.
        nonlocal racing
        if racing:
            racing = False
            store.close("s")
        real_flush()

    session.flush = close_between_record_and_flush  # type: ignore[method-assign]
    event = session.append("turn/end", messages.turn_end(1))
    assert event.seq == 1 and session.is_closed
    assert persistence.handles["s"].durable == list(session.events)
    real_flush()  # everything is durable: flushing the closed session is a no-op


def test_writer_refusing_an_append_retries_the_hand_over_at_flush() -> None:
    persistence = FakePersistence()
    session = make_store(persistence).create("s")
    handle = persistence.handles["s"]
    handle.closed = True
    session.append("note", 1)  # the writer refuses; the event stays in memory
    assert len(session.events) == 1
    handle.closed = False
    session.flush()
    assert handle.durable == list(session.events)


def test_store_as_context_manager_closes_every_session() -> None:
    persistence = FakePersistence()
    with make_store(persistence) as store:
        store.create("a").append("note", 1)
        store.create("b")
    assert store.sessions() == []
    assert all(h.closed for h in persistence.handles.values())


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
            user(f"summary {a}-{b}"),
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
        "user": user("q"),
        "assistant": assistant(0, "a"),
        "tool": tool_result(0, f"c{a}", "out"),
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


# --- real files: JsonlPersistence ----------------------------------------------------------


def _stored(root: Path, session_id: str) -> tuple[SessionHeader, int, list[SessionEvent]]:
    """Read a session through a fresh store instance, as another reader would."""
    with JsonlPersistence(root).open_read(session_id) as handle:
        return handle.header, handle.inherited_event_count, handle.read()


def test_jsonl_events_appended_then_flushed_are_readable_from_the_file(tmp_path: Path) -> None:
    store = make_store(JsonlPersistence(tmp_path))
    session = store.create("dir/../odd id", cwd="/w")
    session.append("turn/start", messages.turn_start(0))
    session.append("user/message", user("persist me"), surface_op="append")
    assert _stored(tmp_path, session.id)[2] == []  # written behind: nothing durable yet
    store.flush(session.id)
    header, inherited, events = _stored(tmp_path, session.id)
    assert (header, inherited, events) == (session.header, 0, list(session.events))
    store.close(session.id)


def test_jsonl_turn_end_makes_everything_durable_without_a_flush(tmp_path: Path) -> None:
    store = make_store(JsonlPersistence(tmp_path))
    session = store.create("s")
    record_turn(session, 0)
    assert _stored(tmp_path, "s")[2] == list(session.events)
    session.append("turn/start", messages.turn_start(1))
    assert len(_stored(tmp_path, "s")[2]) == 8
    store.close("s")
    assert _stored(tmp_path, "s")[2] == list(session.events)


def test_jsonl_fork_is_stored_seeded_with_its_inherited_prefix(tmp_path: Path) -> None:
    store = make_store(JsonlPersistence(tmp_path))
    record_turn(store.create("src", cwd="/w"), 0)
    fork = store.fork("src", 7, session_id="branch")
    header, inherited, events = _stored(tmp_path, "branch")
    assert header == fork.header
    assert header.is_seeded and header.parent_session == "src"
    assert inherited == 8
    assert events == list(fork.events)
    store.close_all()


class _FlakyHandle:
    """A real JSONL writer whose next ``fail`` flushes raise, as a full disk would."""

    def __init__(self, inner: WriteHandle, fail: list[int]) -> None:
        self._inner = inner
        self._fail = fail

    @property
    def header(self) -> SessionHeader:
        return self._inner.header

    def append(self, events: Sequence[SessionEvent]) -> None:
        self._inner.append(events)

    def flush(self) -> None:
        if self._fail[0]:
            self._fail[0] -= 1
            raise OSError(28, "No space left on device")
        self._inner.flush()

    def close(self) -> None:
        self.flush()
        self._inner.close()


@dataclass
class _FlakyPersistence:
    inner: JsonlPersistence
    fail: list[int] = field(default_factory=lambda: [0])

    def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> _FlakyHandle:
        handle = self.inner.create(header, inherited_event_count=inherited_event_count)
        return _FlakyHandle(handle, self.fail)


def test_jsonl_failed_flush_keeps_events_and_a_later_flush_writes_them(tmp_path: Path) -> None:
    persistence = _FlakyPersistence(JsonlPersistence(tmp_path))
    store = make_store(persistence)
    session = store.create("s")
    persistence.fail[0] = 1
    session.append("turn/start", messages.turn_start(0))
    with pytest.raises(OSError):
        session.append("turn/end", messages.turn_end(0))
    assert _stored(tmp_path, "s")[2] == []
    assert len(session.events) == 2  # still readable from memory
    session.append("turn/start", messages.turn_start(1))
    store.flush("s")
    assert _stored(tmp_path, "s")[2] == list(session.events)
    persistence.fail[0] = 1
    with pytest.raises(OSError):
        store.close("s")
    session.append("note", "still open after a failed close")
    store.close("s")
    assert _stored(tmp_path, "s")[2] == list(session.events)


def test_jsonl_closed_session_releases_its_writer(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path)
    store = make_store(persistence)
    session = store.create("s")
    session.append("note", 1)
    store.close("s")
    with persistence.open_write("s") as writer:  # ownership was released by close
        writer.append([SessionEvent("note", 1, 5, 2)])
    assert [e.data for e in _stored(tmp_path, "s")[2]] == [1, 2]
