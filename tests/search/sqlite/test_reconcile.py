"""Tests for sessionquery.search.sqlite.reconcile: what each search writes, reads and skips."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from search_sqlite_support import (
    FakeCorpus,
    FakePersistence,
    assistant,
    header,
    index_file,
    indexed_rows,
    log,
    summary,
    user,
)
from sessionquery import SessionQuery
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence import JsonlPersistence
from sessionquery.persistence.base import DocumentLog, PersistedSession
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import SurfaceIn
from sessionquery.query.types import SessionLog
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.search.sqlite import durable as durable_module
from sessionquery.search.sqlite.schema import WriteLock


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


def test_a_store_that_never_stops_changing_is_caught_up_with_a_bounded_number_of_times(
    index: SqliteSearch,
) -> None:
    store = _ChurningStore()
    corpus = FakeCorpus(store)
    hits = index.search_sessions(corpus, "churn").items  # a steady writer fails no search
    assert store.list_calls == 3  # one pass, then two catching up; the rest is left for later
    assert sorted(hit.record.id for hit in hits) == ["new0", "new1", "new2"]


def test_a_listing_without_a_token_that_never_stabilizes_is_busy_and_retryable(
    index: SqliteSearch,
) -> None:
    store = _ChurningStore()
    corpus = FakeCorpus(store, with_token=False)
    # The deadline only bounds the test: the retries stop at the settle budget (2 s), long
    # before it, however slowly a loaded machine lists (a deadline near the budget turned
    # into INDEX_BUILDING at load 9).
    with pytest.raises(SessionQueryError) as caught:
        index.search_sessions(corpus, "churn", cancel=CancelToken.after(60))
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
    conn = index_file(tmp_path / "index.db")
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


# --------------------------------------------------------------------------- journal, batches


class _JournalStore(FakePersistence):
    """A fake store with a change journal (``changed_since``) that counts its lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: list[tuple[int, str]] = []
        self.stat_calls: list[str] = []

    def put(self, session_header: SessionHeader, events: Sequence[SessionEvent]) -> None:
        super().put(session_header, events)
        self.changes.append((self.token, session_header.id))

    def append(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        super().append(session_id, events)
        self.changes.append((self.token, session_id))

    def delete(self, session_id: str) -> None:
        super().delete(session_id)
        self.changes.append((self.token, session_id))

    def stat(self, session_id: str) -> PersistedSession | None:
        self.stat_calls.append(session_id)
        return super().stat(session_id)

    def change_token(self) -> str:
        return str(self.token)

    def changed_since(self, token: str) -> frozenset[str] | None:
        return frozenset(sid for at, sid in self.changes if at > int(token))


def test_a_change_journal_limits_reconciliation_to_the_changed_sessions(tmp_path: Path) -> None:
    store = _JournalStore()
    for number in range(30):
        store.put(header(f"s{number:02}", number + 1), log(f"entry {number} words"))
    with (
        SqliteSearch(tmp_path / "index.db") as index,
        SessionQuery(persistence=store, search=index) as service,
    ):
        assert len(service.search_sessions("words", limit=50).items) == 30
        lists = store.list_calls
        store.stat_calls.clear()
        store.append("s07", log("fresh journal entry", start=1))
        store.delete("s08")
        hits = service.search_sessions("journal").items
        assert [hit.record.id for hit in hits] == ["s07"]
        assert store.list_calls == lists  # no listing: the journal named the changes
        assert sorted(set(store.stat_calls)) == ["s07", "s08"]
        assert len(service.search_sessions("words", limit=50).items) == 29


def test_a_journal_that_cannot_answer_falls_back_to_a_full_listing(tmp_path: Path) -> None:
    store = _JournalStore()
    store.put(header("a"), log("alpha words"))
    store.changed_since = lambda token: None  # type: ignore[method-assign]
    with (
        SqliteSearch(tmp_path / "index.db") as index,
        SessionQuery(persistence=store, search=index) as service,
    ):
        service.search_sessions("words")
        lists = store.list_calls
        store.put(header("b", 2), log("beta words"))
        assert len(service.search_sessions("words").items) == 2
        assert store.list_calls == lists + 1


def test_progress_is_reported_before_the_first_session_is_read(index: SqliteSearch) -> None:
    corpus = two_sessions()
    seen: list[tuple[int, int, int]] = []
    index.update(corpus, progress=lambda done, total: seen.append((done, total, len(corpus.reads))))
    assert seen[0] == (0, 2, 0)


def test_a_deadline_during_a_build_is_index_building_with_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "BATCH_DOCUMENTS", 1)
    store = FakePersistence()
    for number in range(6):
        store.put(header(f"s{number}", number + 1), log(f"entry {number} words"))
    corpus = FakeCorpus(store)
    token = CancelToken(deadline=time.monotonic() + 60)
    original = corpus.read_persisted

    def read(session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        if len(corpus.reads) == 3:
            token.deadline = time.monotonic() - 1  # the deadline passes mid-build
        return original(session_id, cancel)

    corpus.read_persisted = read  # type: ignore[method-assign]
    with SqliteSearch(tmp_path / "index.db") as index:
        with pytest.raises(SessionQueryError) as caught:
            index.search_sessions(corpus, "words", cancel=token)
        error = caught.value
        assert error.code is ErrorCode.INDEX_BUILDING
        assert error.retryable
        assert error.context == {"sessions_indexed": 3, "sessions_total": 6}
        assert "still being built: 3 of 6 sessions" in error.message
        assert len(index.search_sessions(corpus, "words").items) == 6


def test_a_search_during_a_background_build_answers_index_building_not_queueing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "BATCH_DOCUMENTS", 1)
    store = FakePersistence()
    for number in range(4):
        store.put(header(f"s{number}", number + 1), log(f"entry {number} words"))
    corpus = FakeCorpus(store)
    reached, release = threading.Event(), threading.Event()
    original = corpus.read_persisted

    def read(session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        if len(corpus.reads) == 2:
            reached.set()
            assert release.wait(10)
        return original(session_id, cancel)

    corpus.read_persisted = read  # type: ignore[method-assign]
    with SqliteSearch(tmp_path / "index.db") as index:
        builder = threading.Thread(target=index.update, args=(corpus,))
        builder.start()
        try:
            assert reached.wait(10)
            started = time.monotonic()
            with pytest.raises(SessionQueryError) as caught:
                index.search_sessions(corpus, "words", cancel=CancelToken.after(0.2))
            assert time.monotonic() - started < 2
            assert caught.value.code is ErrorCode.INDEX_BUILDING
            assert caught.value.context["sessions_total"] == 4
        finally:
            release.set()
            builder.join(10)
        assert len(index.search_sessions(corpus, "words").items) == 4


@pytest.mark.parametrize("match", ["phrase", "relevance"])
def test_a_partial_search_during_a_build_answers_from_the_indexed_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, match: str
) -> None:
    monkeypatch.setattr(durable_module, "BATCH_DOCUMENTS", 1)
    store = FakePersistence()
    for number in range(8):
        store.put(header(f"s{number}", number + 1), log(f"entry {number} words"))
    corpus = FakeCorpus(store)
    original = corpus.read_persisted
    slow = threading.Event()

    def read(session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        if len(corpus.reads) >= 3:
            slow.set()
            assert cancel is not None
            while not cancel.expired:  # a big transcript: the reconciliation runs out of time
                time.sleep(0.005)
            cancel.check()
        return original(session_id, cancel)

    corpus.read_persisted = read  # type: ignore[method-assign]
    with SqliteSearch(tmp_path / "index.db") as index:
        started = time.monotonic()
        page = index.search_sessions(
            corpus,
            "words",
            cancel=CancelToken.after(1.5),
            allow_partial=True,
            match=match,  # type: ignore[arg-type]
        )
        assert time.monotonic() - started < 1.5 + 2.0
        assert slow.is_set()
        assert page.partial is not None
        assert page.partial.sessions_total == 8
        assert 0 < page.partial.sessions_indexed < 8
        assert len(page.items) == page.partial.sessions_indexed
        events = index.search_events(
            corpus,
            "s0",
            "words",
            cancel=CancelToken.after(1.5),
            allow_partial=True,
        )
        assert events.partial is not None and len(events.items) == 1
        corpus.read_persisted = original  # type: ignore[method-assign]
        whole = index.search_sessions(corpus, "words", allow_partial=True, match=match)  # type: ignore[arg-type]
        assert whole.partial is None and len(whole.items) == 8


def test_a_partial_search_past_its_own_deadline_is_still_aborted(tmp_path: Path) -> None:
    store = FakePersistence()
    store.put(header("s0", 1), log("entry words"))
    with SqliteSearch(tmp_path / "index.db") as index:
        expired = CancelToken(deadline=time.monotonic() - 1)
        with pytest.raises(SessionQueryError) as caught:
            index.search_sessions(FakeCorpus(store), "words", cancel=expired, allow_partial=True)
        assert caught.value.code is ErrorCode.ABORTED


def test_a_partial_search_during_a_background_build_reads_what_it_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "BATCH_DOCUMENTS", 1)
    store = FakePersistence()
    for number in range(4):
        store.put(header(f"s{number}", number + 1), log(f"entry {number} words"))
    corpus = FakeCorpus(store)
    reached, release = threading.Event(), threading.Event()
    original = corpus.read_persisted

    def read(session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        if len(corpus.reads) == 2:
            reached.set()
            assert release.wait(10)
        return original(session_id, cancel)

    corpus.read_persisted = read  # type: ignore[method-assign]
    with SqliteSearch(tmp_path / "index.db") as index:
        builder = threading.Thread(target=index.update, args=(corpus,))
        builder.start()
        try:
            assert reached.wait(10)
            page = index.search_sessions(
                corpus, "words", cancel=CancelToken.after(0.6), allow_partial=True
            )
            assert page.partial is not None and page.partial.sessions_total == 4
            assert 0 < len(page.items) == page.partial.sessions_indexed < 4
        finally:
            release.set()
            builder.join(10)


def test_the_index_built_from_jsonl_documents_equals_the_one_built_from_folded_reads(
    tmp_path: Path,
) -> None:
    store = JsonlPersistence(tmp_path / "store")
    with store.create(header("a", 1, cwd="/w")) as writer:
        writer.append(log("first words", "second words", "third"))
        writer.append([summary(3, "a compaction summary", 0, 1)])
    with store.create(header("b", 2)) as writer:
        writer.append([SessionEvent("turn/start", 0, 1, {"turn": 0}), user(1, "open turn")])
    fast_corpus = SessionQuery(persistence=store).corpus
    with SqliteSearch(tmp_path / "fast.db") as fast:
        fast.update(fast_corpus)
    slow_corpus = FakeCorpus()
    slow_corpus.read_persisted = fast_corpus.read_persisted  # type: ignore[method-assign]
    slow_corpus.list_persisted = fast_corpus.list_persisted  # type: ignore[method-assign]
    slow_corpus.store = store  # type: ignore[assignment]
    slow_corpus.with_token = False
    with SqliteSearch(tmp_path / "slow.db") as slow:
        slow.update(slow_corpus)
    rows = indexed_rows(tmp_path / "fast.db")
    assert rows == indexed_rows(tmp_path / "slow.db")
    assert ("b", rows[-1][1], 2, "interrupted", "turn/end", 1001, "log-only", 11) in rows


def test_a_search_waits_for_another_writer_within_its_deadline_then_sees_its_change(
    tmp_path: Path,
) -> None:
    corpus = two_sessions()
    assert corpus.store is not None
    with SqliteSearch(tmp_path / "index.db") as index:
        index.search_sessions(corpus, "words")
        corpus.store.put(header("c", 3), log("gamma words"))
        other_process = WriteLock(tmp_path / "index.db")  # as another process reconciling
        assert other_process.try_acquire()
        try:
            started = time.monotonic()
            with pytest.raises(SessionQueryError) as caught:
                index.search_sessions(corpus, "gamma", cancel=CancelToken.after(0.2))
            assert caught.value.code is ErrorCode.ABORTED  # the index is complete: no build
            assert time.monotonic() - started < 2
        finally:
            other_process.release()
        assert [hit.record.id for hit in index.search_sessions(corpus, "gamma").items] == ["c"]


def test_a_deadline_during_the_first_listing_is_index_building_too(index: SqliteSearch) -> None:
    corpus = two_sessions()
    token = CancelToken(deadline=time.monotonic() + 60)
    original = corpus.list_persisted

    def slow_listing(cancel: CancelToken | None = None) -> list[PersistedSession]:
        token.deadline = time.monotonic() - 1  # listing a big history outlasts the deadline
        return original(cancel)

    corpus.list_persisted = slow_listing  # type: ignore[method-assign]
    with pytest.raises(SessionQueryError) as caught:
        index.search_sessions(corpus, "words", cancel=token)
    assert caught.value.code is ErrorCode.INDEX_BUILDING
    assert caught.value.context == {}  # no count is known before the listing ends
    corpus.list_persisted = original  # type: ignore[method-assign]
    assert len(index.search_sessions(corpus, "words").items) == 2
    with pytest.raises(SessionQueryError) as later:  # built once: a deadline is a deadline
        index.search_sessions(corpus, "words", cancel=CancelToken(deadline=0))
    assert later.value.code is ErrorCode.ABORTED


class _CountingStore(JsonlPersistence):
    """The real JSONL store, counting full listings and document reads."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.lists = 0
        self.documents_read: list[str] = []

    def list(self) -> list[PersistedSession]:
        self.lists += 1
        return super().list()

    def read_documents(self, session_id: str) -> DocumentLog:
        self.documents_read.append(session_id)
        return super().read_documents(session_id)


def _jsonl_store(root: Path, sessions: int) -> _CountingStore:
    store = _CountingStore(root)
    for number in range(sessions):
        with store.create(header(f"s{number:02}", number + 1)) as writer:
            writer.append(log(f"entry {number} words"))
    return store


def test_one_append_to_a_real_store_rereads_that_session_without_listing(tmp_path: Path) -> None:
    store = _jsonl_store(tmp_path / "store", 40)
    with (
        SqliteSearch(tmp_path / "index.db") as index,
        SessionQuery(persistence=store, search=index) as service,
    ):
        assert len(service.search_sessions("words", limit=50).items) == 40
        lists, store.documents_read = store.lists, []
        with store.open_write("s17") as writer:
            writer.append(log("appended journal text", start=1))
        hits = service.search_sessions("journal").items
        assert [hit.record.id for hit in hits] == ["s17"]
        assert store.documents_read == ["s17"]
        assert store.lists == lists


def test_session_files_deleted_or_replaced_by_hand_are_noticed_by_a_long_running_index(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    store = _jsonl_store(root, 5)
    spare = _jsonl_store(tmp_path / "spare", 0)
    with spare.create(header("s03", 4)) as writer:
        writer.append(log("replacement text"))
    with (
        SqliteSearch(tmp_path / "index.db") as index,
        SessionQuery(persistence=store, search=index) as service,
    ):
        assert len(service.search_sessions("words").items) == 5
        os.unlink(store.path_of("s01"))  # rm by hand
        os.replace(spare.path_of("s03"), store.path_of("s03"))  # mv by hand
        ids = sorted(hit.record.id for hit in service.search_sessions("words").items)
        assert ids == ["s00", "s02", "s04"]
        replaced = service.search_sessions("replacement").items
        assert [hit.record.id for hit in replaced] == ["s03"]
