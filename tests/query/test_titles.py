"""Tests for sessionquery.query.titles: deduplication and per-id results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessionquery.errors import ErrorCode
from sessionquery.live import SessionStore
from sessionquery.model import SessionHeader
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.cache import PreparedCache
from sessionquery.query.corpus import ServiceCorpus
from sessionquery.query.titles import TitleMemo, read_titles, unique_ids
from strategies import LogBuilder


def test_unique_ids_keeps_first_occurrences_in_order() -> None:
    assert unique_ids(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert unique_ids(iter(())) == []


@pytest.mark.parametrize("ids", ["abc", b"abc", 3, ["a", 1], [None]])
def test_unique_ids_rejects_anything_but_strings(ids: Any) -> None:
    with pytest.raises(TypeError):
        unique_ids(ids)


def test_live_and_persisted_titles_come_back_in_request_order(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    b = LogBuilder()
    b.title("stored title")
    with persistence.create(SessionHeader(id="cold", created_at=1)) as handle:
        handle.append(b.events)
    store = SessionStore()
    store.create("warm", created_at=2).append(
        "session/title", {"title": "live title", "messageSeqs": [], "source": {"kind": "user"}}
    )
    corpus = ServiceCorpus(store, persistence, PreparedCache(1))
    results = read_titles(corpus, ["cold", "warm", "gone", "cold"], concurrency=4)
    assert [r.session_id for r in results] == ["cold", "warm", "gone"]
    assert [r.title.title if r.title else None for r in results] == [
        "stored title",
        "live title",
        None,
    ]
    gone = results[2]
    assert gone.error is not None and gone.error.code is ErrorCode.SESSION_NOT_FOUND


class _CountingReads(JsonlPersistence):
    """A real JSONL store that counts how often each log's title is read (the title read the
    service uses; a full read for a title would count here too)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: dict[str, int] = {}

    def read_title(self, session_id: str) -> Any:
        self.reads[session_id] = self.reads.get(session_id, 0) + 1
        return super().read_title(session_id)

    def open_read(self, session_id: str) -> Any:
        self.reads[session_id] = self.reads.get(session_id, 0) + 1
        return super().open_read(session_id)


def _stored(persistence: JsonlPersistence, session_id: str, title: str) -> LogBuilder:
    b = LogBuilder()
    b.user("hello")
    b.title(title)
    with persistence.create(SessionHeader(id=session_id, created_at=1)) as handle:
        handle.append(b.events)
    return b


def test_a_memo_reads_each_title_once_per_revision_and_again_after_a_change(
    tmp_path: Path,
) -> None:
    persistence = _CountingReads(tmp_path / "store")
    a = _stored(persistence, "a", "first")
    _stored(persistence, "b", "other")
    corpus = ServiceCorpus(None, persistence, PreparedCache(1))
    memo = TitleMemo()
    for _ in range(3):
        results = read_titles(corpus, ["a", "b"], concurrency=2, memo=memo)
        assert [r.title.title if r.title else None for r in results] == ["first", "other"]
    assert persistence.reads == {"a": 1, "b": 1}
    a.title("renamed")
    with persistence.open_write("a") as handle:
        handle.append(a.events[2:])
    (renamed,) = read_titles(corpus, ["a"], concurrency=1, memo=memo)
    assert renamed.title is not None and renamed.title.title == "renamed"
    assert persistence.reads == {"a": 2, "b": 1}
    (again,) = read_titles(corpus, ["a"], concurrency=1, memo=memo)
    assert again == renamed
    assert persistence.reads == {"a": 2, "b": 1}


def test_a_memo_never_remembers_a_failure_and_forgets_the_least_recent(tmp_path: Path) -> None:
    persistence = _CountingReads(tmp_path / "store")
    for name in ("a", "b", "c"):
        _stored(persistence, name, name.upper())
    log = tmp_path / "store" / "c.jsonl"
    header, *events = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join([header, "{not json\n", *events]), encoding="utf-8")
    corpus = ServiceCorpus(None, persistence, PreparedCache(1))
    memo = TitleMemo(capacity=1)
    for order in (["a", "b", "c"], ["b", "a", "c"]):
        *_, broken = read_titles(corpus, order, concurrency=1, memo=memo)
        assert broken.error is not None
    assert persistence.reads["c"] == 2  # failed twice, read twice
    assert persistence.reads["b"] == 1  # the most recent success, remembered
    assert persistence.reads["a"] == 2  # pushed out by b (capacity 1), read again
