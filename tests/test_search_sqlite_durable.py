"""Tests for sessionquery.search.sqlite.durable: batched, resumable durable passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from search_sqlite_support import FakeCorpus, FakePersistence, header, index_file, log
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.cancel import CancelToken
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.search.sqlite import durable as durable_module
from sessionquery.search.sqlite.durable import keyed_token, same_listing


def _rows(path: Path) -> list[tuple[object, ...]]:
    conn = index_file(path)
    try:
        return conn.execute(
            "SELECT p.id, p.header_json, d.id & 4294967295, d.text, d.type, d.time, d.surface, "
            "d.length FROM doc_rows d JOIN persisted_sessions p ON p.key = d.id >> 32 "
            "ORDER BY p.id, d.id"
        ).fetchall()
    finally:
        conn.close()


def test_a_cancelled_build_keeps_committed_batches_and_the_next_one_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "BATCH_DOCUMENTS", 4)
    store = FakePersistence()
    for number in range(20):
        store.put(header(f"s{number:02}", number + 1), log(f"entry {number}", "more words"))
    corpus = FakeCorpus(store)
    token = CancelToken()

    def stop_halfway(done: int, total: int) -> None:
        if done == 10:
            token.cancel()

    with SqliteSearch(tmp_path / "index.db") as index:
        with pytest.raises(SessionQueryError) as caught:
            index.update(corpus, cancel=token, progress=stop_halfway)
        assert caught.value.code is ErrorCode.ABORTED
        kept = len({row[0] for row in _rows(tmp_path / "index.db")})
        assert kept >= 8  # every batch committed before the interrupt, and the one read since
        corpus.reads.clear()
        update = index.update(corpus)
        assert update.persisted_indexed == 20 - kept
        assert len(corpus.reads) == 20 - kept
    with SqliteSearch(tmp_path / "fresh.db") as fresh:
        fresh.update(FakeCorpus(store))
    assert _rows(tmp_path / "index.db") == _rows(tmp_path / "fresh.db")


def test_tokens_stored_in_the_shared_index_are_keyed_by_the_store_they_came_from(
    tmp_path: Path,
) -> None:
    first, second = FakePersistence(), FakePersistence()
    assert keyed_token(first, "7") == keyed_token(second, "7")  # same class, no root: same key
    assert keyed_token(first, None) is None
    assert keyed_token(first, "7") != keyed_token(first, "8")
    assert str(keyed_token(first, "7")).endswith("\n7")


def test_listings_compare_equal_only_with_the_same_ids_revisions_and_headers() -> None:
    store = FakePersistence()
    store.put(header("a"), log("x"))
    store.put(header("b", 2), log("y"))
    before = {p.header.id: p for p in store.list()}
    assert same_listing(before, dict(before), frozenset())
    store.append("b", log("z", start=1))
    after = {p.header.id: p for p in store.list()}
    assert not same_listing(before, after, frozenset())
    assert same_listing(before, after, frozenset({"b"}))  # ignored ids (live) do not count
