"""A read-only, O(1) window on a session's append-only event list."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from sessionquery.model import (
    SessionEvent,
)

__all__ = ["EventLogView"]


class EventLogView(Sequence[SessionEvent]):
    """A read-only window ``[start, stop)`` of an append-only event list.

    Taking a view costs O(1): it shares the session's list, which only ever grows, so the
    window never changes. Contiguous slices are views too; stepped slices are tuples. A view
    compares equal to any list, tuple or view holding the same events.
    """

    __slots__ = ("_items", "_start", "_stop")

    def __init__(self, items: list[SessionEvent], start: int, stop: int) -> None:
        self._items = items
        self._start = start
        self._stop = stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SessionEvent]: ...

    def __getitem__(self, index: int | slice) -> SessionEvent | Sequence[SessionEvent]:
        length = self._stop - self._start
        if isinstance(index, slice):
            start, stop, step = index.indices(length)
            if step == 1:
                return EventLogView(
                    self._items, self._start + start, self._start + max(start, stop)
                )
            return tuple(self._items[self._start + i] for i in range(start, stop, step))
        position = index.__index__()
        if position < 0:
            position += length
        if not 0 <= position < length:
            raise IndexError(f"event index {index} is out of range for {length} events")
        return self._items[self._start + position]

    def __iter__(self) -> Iterator[SessionEvent]:
        items = self._items
        for position in range(self._start, self._stop):
            yield items[position]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EventLogView | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EventLogView({len(self)} events)"
