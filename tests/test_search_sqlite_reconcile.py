"""Tests for sessionquery.search.sqlite.reconcile: what each search writes, reads and skips."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from search_sqlite_support import FakeCorpus, FakePersistence, assistant, header, log, summary, user
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence.base import PersistedSession
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import SurfaceIn
from sessionquery.search.sqlite import SqliteSearch


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSearch]:
    search = SqliteSearch(tmp_path / "index.db")
    yield search
    search.close()


def two_sessions() -> FakeCorpus:
    store = FakePersistence()
    store.put(header("a"), log("alpha words", "more alpha"))
    store.put(header("b", 2), log("beta words"))
    return FakeCorpus(store)


def test_an_unchanged_corpus_is_neither_listed_nor_read_again(index: SqliteSearch) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    index.search_sessions(corpus, "words")
    assert sorted(corpus.reads) == ["a", "b"]
    lists = corpus.store.list_calls
    for _ in range(3):
        index.search_sessions(corpus, "words")
        index.search_events(corpus, "a", "alpha")
    assert sorted(corpus.reads) == ["a", "b"]
    assert corpus.store.list_calls == lists
    assert index.update(corpus).skipped


def test_without_a_change_token_the_store_is_listed_but_unchanged_logs_are_not_read(
    index: SqliteSearch,
) -> None:
    corpus = two_sessions()
    corpus.with_token = False
    index.search_sessions(corpus, "words")
    index.search_sessions(corpus, "words")
    assert sorted(corpus.reads) == ["a", "b"]


def test_a_changed_revision_rereads_only_that_session(index: SqliteSearch) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    index.search_sessions(corpus, "words")
    corpus.store.append("b", [assistant(1, "gamma appended outside")])
    hits = index.search_sessions(corpus, "gamma appended").items
    assert [hit.record.id for hit in hits] == ["b"]
    assert sorted(corpus.reads) == ["a", "b", "b"]


def test_a_deleted_session_disappears_from_results(index: SqliteSearch) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    index.search_sessions(corpus, "words")
    corpus.store.delete("a")
    update = index.update(corpus)
    assert update.persisted_removed == 1
    assert [hit.record.id for hit in index.search_sessions(corpus, "words").items] == ["b"]


def test_an_appended_persisted_log_rewrites_only_new_documents(index: SqliteSearch) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    index.update(corpus)
    corpus.store.append("a", [user(2, "one more")])
    assert index.update(corpus).documents_written == 1


def test_a_growing_live_session_indexes_only_its_new_events(index: SqliteSearch) -> None:
    corpus = FakeCorpus()
    events = log("first words", "second words")
    corpus.live["L"] = (header("L"), events)
    assert index.update(corpus).documents_written == 2
    events.append(user(2, "third words"))
    update = index.update(corpus)
    assert (update.live_indexed, update.documents_written) == (1, 1)
    assert [h.seq for h in index.search_events(corpus, "L", "third").items] == [2]


def test_a_live_replace_reclassifies_the_documents_it_shadowed(index: SqliteSearch) -> None:
    corpus = FakeCorpus()
    events = log("first topic", "second topic")
    corpus.live["L"] = (header("L"), events)
    index.update(corpus)
    events.append(summary(2, "summary topic", 0, 1))
    index.update(corpus)
    current = index.search_events(corpus, "L", "topic", filters=[SurfaceIn(["current"])])
    shadowed = index.search_events(corpus, "L", "topic", filters=[SurfaceIn(["shadowed"])])
    assert [h.seq for h in current.items] == [2]
    assert sorted(h.seq for h in shadowed.items) == [0, 1]


def test_a_live_session_replaced_by_another_with_the_same_id_is_reindexed(
    index: SqliteSearch,
) -> None:
    corpus = FakeCorpus()
    corpus.live["L"] = (header("L"), log("old content"))
    index.update(corpus)
    corpus.live["L"] = (header("L"), log("new content", "and more"))
    index.update(corpus)
    assert index.search_events(corpus, "L", "old content").items == []
    assert len(index.search_events(corpus, "L", "content").items) == 1


class _ChurningStore(FakePersistence):
    """A store whose listing changes on every call (a writer that never settles)."""

    def list(self) -> list[PersistedSession]:
        self.put(header(f"new{self.token}"), log("churn"))
        return super().list()


def test_a_listing_without_a_token_that_never_stabilizes_is_busy_and_retryable(
    index: SqliteSearch,
) -> None:
    store = _ChurningStore()
    corpus = FakeCorpus(store, with_token=False)
    with pytest.raises(SessionQueryError) as caught:
        index.search_sessions(corpus, "churn", cancel=CancelToken.after(0.5))
    assert caught.value.code is ErrorCode.BUSY
    assert caught.value.retryable
    assert caught.value.context["attempts"] >= 2  # type: ignore[operator]


def test_a_store_with_a_token_that_keeps_changing_is_still_searched(
    index: SqliteSearch,
) -> None:
    # Writers in other processes never make a search fail: the token recorded is the one read
    # before listing, so what changed meanwhile is picked up by the next search.
    store = _ChurningStore()
    corpus = FakeCorpus(store)
    first = {hit.record.id for hit in index.search_sessions(corpus, "churn").items}
    second = {hit.record.id for hit in index.search_sessions(corpus, "churn").items}
    assert first and first < second


class _FlakyStore(FakePersistence):
    """A store whose listing changes exactly once (between the first two listings)."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = False

    def list(self) -> list[PersistedSession]:
        listing = super().list()
        if not self.changed and self.list_calls == 1:
            self.changed = True
            self.put(header("late", 5), log("churn late"))
        return listing


def test_a_listing_without_a_token_that_changes_once_is_retried_and_then_indexed(
    index: SqliteSearch,
) -> None:
    store = _FlakyStore()
    store.put(header("a"), log("churn early"))
    corpus = FakeCorpus(store, with_token=False)
    hits = index.search_sessions(corpus, "churn").items
    assert sorted(hit.record.id for hit in hits) == ["a", "late"]


def test_a_change_during_a_search_with_a_token_is_seen_by_the_next_search(
    index: SqliteSearch,
) -> None:
    store = _FlakyStore()
    store.put(header("a"), log("churn early"))
    corpus = FakeCorpus(store)
    first = sorted(hit.record.id for hit in index.search_sessions(corpus, "churn").items)
    assert first in (["a"], ["a", "late"])
    hits = index.search_sessions(corpus, "churn").items
    assert sorted(hit.record.id for hit in hits) == ["a", "late"]


def test_a_session_deleted_between_listing_and_reading_does_not_fail_the_search(
    index: SqliteSearch,
) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    corpus.store.put(header("doomed", 3), log("words doomed"))
    original = corpus.read_persisted

    def vanishing(session_id: str, cancel: CancelToken | None = None):  # type: ignore[no-untyped-def]
        if (
            session_id == "doomed"
            and corpus.store is not None
            and "doomed" in corpus.store.sessions
        ):
            corpus.store.delete("doomed")  # another process removes it just now
        return original(session_id, cancel)

    corpus.read_persisted = vanishing  # type: ignore[method-assign]
    index.search_sessions(corpus, "words")
    hits = index.search_sessions(corpus, "words").items
    assert "doomed" not in {hit.record.id for hit in hits}


def test_a_failing_read_commits_nothing_and_the_next_search_retries(
    index: SqliteSearch, tmp_path: Path
) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    corpus.store.put(header("broken", 3), log("words too"))
    original = corpus.read_persisted

    def failing(session_id: str, cancel: CancelToken | None = None):  # type: ignore[no-untyped-def]
        if session_id == "broken":
            raise SessionQueryError(ErrorCode.PERSISTENCE_FAILED, "disk on fire")
        return original(session_id, cancel)

    corpus.read_persisted = failing  # type: ignore[method-assign]
    with pytest.raises(SessionQueryError) as caught:
        index.search_sessions(corpus, "words")
    assert caught.value.code is ErrorCode.PERSISTENCE_FAILED
    index.close()
    conn = sqlite3.connect(tmp_path / "index.db")
    assert conn.execute("SELECT count(*) FROM persisted_sessions").fetchone() == (0,)
    conn.close()
    with SqliteSearch(tmp_path / "index.db") as reopened:
        corpus.read_persisted = original  # type: ignore[method-assign]
        hits = reopened.search_sessions(corpus, "words").items
        assert sorted(hit.record.id for hit in hits) == ["a", "b", "broken"]


def test_incompatible_live_and_persisted_headers_are_a_source_conflict(
    index: SqliteSearch,
) -> None:
    corpus = two_sessions()
    corpus.live["a"] = (header("a", created_at=999), log("alpha"))
    with pytest.raises(SessionQueryError) as caught:
        index.search_sessions(corpus, "alpha")
    assert caught.value.code is ErrorCode.SOURCE_CONFLICT


def test_update_reports_progress_while_indexing_persisted_sessions(index: SqliteSearch) -> None:
    calls: list[tuple[int, int]] = []
    index.update(two_sessions(), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 2), (1, 2), (2, 2)]


def test_unmounting_persistence_hides_durable_rows_without_deleting_them(
    index: SqliteSearch,
) -> None:
    corpus = two_sessions()
    index.search_sessions(corpus, "words")
    store = corpus.store
    corpus.store = None
    assert index.search_sessions(corpus, "words").items == []
    corpus.store = store
    assert len(index.search_sessions(corpus, "words").items) == 2
    assert sorted(corpus.reads) == ["a", "b"]
