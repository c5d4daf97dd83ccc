"""Tests for sessionquery.query.cache: the pin-aware LRU of prepared persisted logs."""

from __future__ import annotations

from sessionquery.model import SessionHeader
from sessionquery.query.cache import PreparedCache
from sessionquery.query.prepared import PreparedLog


def prepared(session_id: str) -> PreparedLog:
    return PreparedLog(SessionHeader(id=session_id, created_at=0), 0, (), live=False)


OWNER = object()


def test_a_hit_needs_the_same_owner_and_revision() -> None:
    cache: PreparedCache[PreparedLog] = PreparedCache(2)
    log = prepared("a")
    cache.release(cache.insert("a", OWNER, "r1", log))
    hit = cache.acquire("a", OWNER, "r1")
    assert hit is not None and hit.log is log
    cache.release(hit)
    assert cache.acquire("a", OWNER, "r2") is None
    assert cache.acquire("a", object(), "r1") is None
    assert cache.acquire("b", OWNER, "r1") is None


def test_the_least_recently_used_entry_is_evicted_first() -> None:
    cache: PreparedCache[PreparedLog] = PreparedCache(2)
    for name in ("a", "b"):
        cache.release(cache.insert(name, OWNER, "r", prepared(name)))
    slot = cache.acquire("a", OWNER, "r")
    assert slot is not None
    cache.release(slot)
    cache.release(cache.insert("c", OWNER, "r", prepared("c")))
    assert cache.ids() == ["a", "c"]


def test_a_pinned_entry_is_never_evicted_and_the_cache_shrinks_on_release() -> None:
    cache: PreparedCache[PreparedLog] = PreparedCache(1)
    pinned = cache.insert("a", OWNER, "r", prepared("a"))
    cache.release(cache.insert("b", OWNER, "r", prepared("b")))
    assert cache.ids() == ["a"]  # "b" was the only unpinned entry
    second = cache.insert("c", OWNER, "r", prepared("c"))
    assert cache.ids() == ["a", "c"] and len(cache) == 2
    cache.release(pinned)
    assert cache.ids() == ["c"]
    cache.release(second)
    assert cache.ids() == ["c"]


def test_a_new_revision_replaces_the_entry_of_its_id() -> None:
    cache: PreparedCache[PreparedLog] = PreparedCache(3)
    cache.release(cache.insert("a", OWNER, "r1", prepared("a")))
    newer = prepared("a")
    cache.release(cache.insert("a", OWNER, "r2", newer))
    hit = cache.acquire("a", OWNER, "r2")
    assert hit is not None and hit.log is newer and len(cache) == 1
    cache.release(hit)
