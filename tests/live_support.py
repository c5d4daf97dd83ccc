"""Shared helpers of the live store tests: a scripted clock, counting ids, a store factory, one
whole recorded turn, an in-memory write handle and persistence, and a thread runner."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from builders import assistant_data, result_data, user_data
from sessionquery.errors import PersistenceClosed
from sessionquery.live import (
    Session,
    SessionStore,
    WritablePersistence,
)
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    messages,
)

__all__ = [
    "FakeClock",
    "FakeHandle",
    "FakePersistence",
    "counter_ids",
    "make_store",
    "record_turn",
    "run_threads",
]


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


def record_turn(session: Session, turn: int, text: str = "hello") -> None:
    """One whole turn: user message, a tool round trip, an answer."""
    session.append("turn/start", messages.turn_start(turn))
    session.append("user/message", user_data(text, f"u{turn}"), surface_op="append")
    session.append("step/start", messages.step_start(turn, 0))
    session.append(
        "assistant/message", assistant_data(turn, "looking", ["c1"]), surface_op="append"
    )
    grep = messages.tool_call_block("c1", "grep", "{}")
    call = session.append("tool/call", messages.tool_call(grep, turn=turn, step=0))
    session.append(
        "tool/result",
        result_data(turn, "c1", "found it"),
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


def run_threads(target: Callable[[int], None], count: int) -> None:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
