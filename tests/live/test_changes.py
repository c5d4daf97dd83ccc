"""Tests of store change notifications (``live/_changes.py``): what subscribers see, in which order,
and that a failing or re-entrant subscriber never breaks an append."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from builders import user_data
from live_support import make_store, record_turn, run_threads
from sessionquery.live import (
    StoreChange,
)
from sessionquery.model import (
    SurfaceError,
)

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
        source.append("user/message", user_data("x"))
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

    run_threads(worker, 6)
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
    session.append("user/message", user_data("x"), surface_op="append")
    assert observed == [1]  # surface_nodes() takes the session lock: no deadlock, state visible
