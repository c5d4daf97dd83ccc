"""Tests of ``SessionStore`` (``live/_store.py``): creating sessions, seeds and forks,
write-behind to a persistence (fakes and real JSONL files), closing."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from builders import user_data
from live_support import (
    FakeClock,
    FakePersistence,
    counter_ids,
    make_store,
    record_turn,
    run_threads,
)
from sessionquery.live import (
    SessionStore,
    StoreChange,
)
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceError,
    messages,
)
from sessionquery.persistence import JsonlPersistence, WriteHandle

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


def test_close_of_unknown_session_raises_key_error() -> None:
    store = make_store()
    with pytest.raises(KeyError):
        store.close("nope")
    store.create("s")
    store.close("s")
    with pytest.raises(KeyError):
        store.close("s")


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
    broken = [*seed[:1], SessionEvent("user/message", 1, 0, user_data("x")), *seed[2:]]
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


# --- concurrency ---------------------------------------------------------------------------


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

    run_threads(worker, 8)
    assert sorted(outcomes) == ["created"] + ["refused"] * 7


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
    second = session.append("user/message", user_data("x"), surface_op="append")
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


# --- real files: JsonlPersistence ----------------------------------------------------------


def _stored(root: Path, session_id: str) -> tuple[SessionHeader, int, list[SessionEvent]]:
    """Read a session through a fresh store instance, as another reader would."""
    with JsonlPersistence(root).open_read(session_id) as handle:
        return handle.header, handle.inherited_event_count, handle.read()


def test_jsonl_events_appended_then_flushed_are_readable_from_the_file(tmp_path: Path) -> None:
    store = make_store(JsonlPersistence(tmp_path))
    session = store.create("dir/../odd id", cwd="/w")
    session.append("turn/start", messages.turn_start(0))
    session.append("user/message", user_data("persist me"), surface_op="append")
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
