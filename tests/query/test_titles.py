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
from sessionquery.query.titles import read_titles, unique_ids
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
