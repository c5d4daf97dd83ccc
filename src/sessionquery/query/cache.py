"""The prepared cold-read cache: recently read persisted logs, kept parsed and folded.

An LRU of at most ``capacity`` entries keyed by session id. An entry is valid only for the
persistence object it was read from (identity, not equality) and for the revision that
persistence reported; any other (persistence, revision) pair is a miss, so a changed log is
always read again. Entries are *pinned* while a read uses them: eviction skips pinned entries
(the cache may then briefly hold more than ``capacity``, and shrinks again on release).

The cache only ever holds immutable :class:`~sessionquery.query.prepared.PreparedLog`
values (or, in the service's second cache, :class:`~sessionquery.query.outline.OutlinedLog`
values that hold an open read handle: ``discard`` closes an entry once it is evicted or
replaced and no read uses it), so a hit is observably identical to a fresh read of the same
revision.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CacheSlot", "PreparedCache"]

LogT = TypeVar("LogT")


@dataclass(slots=True, eq=False)
class CacheSlot(Generic[LogT]):
    """One cached log and the number of reads currently using it."""

    owner: object
    revision: str
    log: LogT
    pins: int = 0
    gone: bool = False  # no longer in the cache: discarded once unpinned


class PreparedCache(Generic[LogT]):
    """A thread-safe, pin-aware LRU of prepared persisted logs.

    Args:
        capacity: the number of unpinned entries kept (≥ 1).
        discard: called (outside the lock) with each value that left the cache and is no
            longer pinned.
    """

    def __init__(self, capacity: int, discard: Callable[[LogT], None] | None = None) -> None:
        self.capacity = capacity
        self._discard = discard
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, CacheSlot[LogT]] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def ids(self) -> list[str]:
        """Cached ids, least recently used first."""
        with self._lock:
            return list(self._slots)

    def acquire(self, session_id: str, owner: object, revision: str) -> CacheSlot[LogT] | None:
        """The pinned slot for this exact (id, persistence, revision), or ``None`` on a miss."""
        with self._lock:
            slot = self._slots.get(session_id)
            if slot is None or slot.owner is not owner or slot.revision != revision:
                return None
            slot.pins += 1
            self._slots.move_to_end(session_id)
            return slot

    def insert(self, session_id: str, owner: object, revision: str, log: LogT) -> CacheSlot[LogT]:
        """Store ``log`` as the newest entry and return its slot, already pinned once."""
        slot = CacheSlot(owner, revision, log, pins=1)
        with self._lock:
            replaced = self._slots.get(session_id)
            self._slots[session_id] = slot
            self._slots.move_to_end(session_id)
            gone = self._evict()
            if replaced is not None:
                replaced.gone = True
                if replaced.pins <= 0:
                    gone.append(replaced)
        self._discarded(gone)
        return slot

    def release(self, slot: CacheSlot[LogT]) -> None:
        """Unpin ``slot`` (one :meth:`acquire` or :meth:`insert`)."""
        with self._lock:
            slot.pins -= 1
            gone = self._evict()
            if slot.gone and slot.pins <= 0 and slot not in gone:
                gone.append(slot)
        self._discarded(gone)

    def _evict(self) -> list[CacheSlot[LogT]]:
        excess = len(self._slots) - self.capacity
        if excess <= 0:
            return []
        evicted = [(key, slot) for key, slot in self._slots.items() if slot.pins <= 0][:excess]
        for session_id, slot in evicted:
            del self._slots[session_id]
            slot.gone = True
        return [slot for _key, slot in evicted]

    def _discarded(self, slots: list[CacheSlot[LogT]]) -> None:
        if self._discard is not None:
            for slot in slots:
                self._discard(slot.log)
