"""The prepared cold-read cache: recently read persisted logs, kept parsed and folded.

An LRU of at most ``capacity`` entries keyed by session id. An entry is valid only for the
persistence object it was read from (identity, not equality) and for the revision that
persistence reported; any other (persistence, revision) pair is a miss, so a changed log is
always read again. Entries are *pinned* while a read uses them: eviction skips pinned entries
(the cache may then briefly hold more than ``capacity``, and shrinks again on release).

The cache only ever holds immutable :class:`~sessionquery.query.prepared.PreparedLog`
values, so a hit is observably identical to a fresh read of the same revision.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from sessionquery.query.prepared import PreparedLog

__all__ = ["CacheSlot", "PreparedCache"]


@dataclass(slots=True, eq=False)
class CacheSlot:
    """One cached prepared log and the number of reads currently using it."""

    owner: object
    revision: str
    log: PreparedLog
    pins: int = 0


class PreparedCache:
    """A thread-safe, pin-aware LRU of prepared persisted logs.

    Args:
        capacity: the number of unpinned entries kept (≥ 1).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, CacheSlot] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def ids(self) -> list[str]:
        """Cached ids, least recently used first."""
        with self._lock:
            return list(self._slots)

    def acquire(self, session_id: str, owner: object, revision: str) -> CacheSlot | None:
        """The pinned slot for this exact (id, persistence, revision), or ``None`` on a miss."""
        with self._lock:
            slot = self._slots.get(session_id)
            if slot is None or slot.owner is not owner or slot.revision != revision:
                return None
            slot.pins += 1
            self._slots.move_to_end(session_id)
            return slot

    def insert(self, session_id: str, owner: object, revision: str, log: PreparedLog) -> CacheSlot:
        """Store ``log`` as the newest entry and return its slot, already pinned once."""
        slot = CacheSlot(owner, revision, log, pins=1)
        with self._lock:
            self._slots[session_id] = slot
            self._slots.move_to_end(session_id)
            self._evict()
        return slot

    def release(self, slot: CacheSlot) -> None:
        """Unpin ``slot`` (one :meth:`acquire` or :meth:`insert`)."""
        with self._lock:
            slot.pins -= 1
            self._evict()

    def _evict(self) -> None:
        excess = len(self._slots) - self.capacity
        if excess <= 0:
            return
        for session_id in [key for key, slot in self._slots.items() if slot.pins <= 0][:excess]:
            del self._slots[session_id]
