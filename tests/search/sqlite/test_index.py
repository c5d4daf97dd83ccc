"""Tests for sessionquery.search.sqlite.index: SqliteSearch end to end over real SQLite files.

Most tests use the small in-test corpus fakes of ``search_sqlite_support`` (our own seams);
the integration tests at the end run through ``SessionQuery`` with a real ``SessionStore``
and ``JsonlPersistence`` under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import assistant, log, summary, user
from conftest import raises_code
from search_sqlite_support import (
    FakeCorpus,
    FakePersistence,
    corpus_of,
    header,
    index_file,
    indexed_rows,
)
from sessionquery import SessionQuery
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence import JsonlPersistence
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import (
    AvailabilityIn,
    CreatedBetween,
    CwdIn,
    IdIn,
    ParentIn,
    SeqBetween,
    SurfaceIn,
    TimeBetween,
    TypeIn,
)
from sessionquery.search.sqlite import SqliteSearch


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSearch]:
    search = SqliteSearch(tmp_path / "index.db")
    yield search
    search.close()


def test_more_match_spans_rank_before_shorter_documents(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["deploy", "deploy then deploy again and deploy"]))
    page = index.search_events(corpus, "a", "deploy")
    assert [hit.seq for hit in page.items] == [1, 0]


def test_ties_on_spans_and_length_order_by_time_then_id(index: SqliteSearch) -> None:
    store = FakePersistence()
    store.put(header("b"), [user(0, "same words", time=5)])
    store.put(header("a"), [user(0, "same words", time=5)])
    store.put(header("c"), [user(0, "same words", time=9)])
    page = index.search_sessions(FakeCorpus(store), "same words")
    assert [hit.record.id for hit in page.items] == ["c", "a", "b"]


def test_phrase_words_must_be_adjacent_and_in_order(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["test failed", "failed  the test"]), ("b", ["the failed test"]))
    page = index.search_sessions(corpus, "failed   test")
    assert [hit.record.id for hit in page.items] == ["b"]


def test_tokens_are_matched_whole_not_as_substrings(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["BRAID pattern"]), ("b", ["the ai model"]))
    assert [hit.record.id for hit in index.search_sessions(corpus, "AI").items] == ["b"]


@pytest.mark.parametrize(
    ("session_filters", "event_filters", "expected"),
    [
        ([IdIn(["b"])], [], ["b"]),
        ([IdIn([])], [], []),
        ([CwdIn([None])], [], ["c"]),
        ([CwdIn(["/w"])], [], ["a", "b"]),
        ([ParentIn([None])], [], ["a", "c"]),
        ([ParentIn(["a"])], [], ["b"]),
        ([CreatedBetween(2, 3)], [], ["b", "c"]),
        ([AvailabilityIn(["live"])], [], ["c"]),
        ([AvailabilityIn(["persisted"])], [], ["a", "b"]),
        ([AvailabilityIn(["live", "persisted"])], [], ["a", "b", "c"]),
        ([], [SeqBetween(1, 1)], ["b"]),
        ([], [TimeBetween(None, 1000)], ["a", "c"]),
        ([], [TypeIn(["assistant/message"])], ["b"]),
        ([], [SurfaceIn(["shadowed"])], ["c"]),
        ([IdIn(["a", "b"]), IdIn(["b", "c"])], [], ["b"]),
    ],
)
def test_filters_restrict_sessions_and_best_events(
    index: SqliteSearch,
    session_filters: list[object],
    event_filters: list[object],
    expected: list[str],
) -> None:
    store = FakePersistence()
    store.put(header("a", 1, cwd="/w"), [user(0, "needle")])
    store.put(header("b", 2, cwd="/w", parent_session="a"), [user(0, "x"), assistant(1, "needle")])
    corpus = FakeCorpus(store)
    corpus.live["c"] = (header("c", 3), [user(0, "needle"), summary(1, "summary", 0, 0)])
    page = index.search_sessions(
        corpus,
        "needle",
        session_filters=session_filters,  # type: ignore[arg-type]
        event_filters=event_filters,  # type: ignore[arg-type]
    )
    assert sorted(hit.record.id for hit in page.items) == expected


HOSTILE = ['"', '""', "OR", "a OR b", "NEAR(a b)", "*", "a*", "-x", "a:b", "((", ")", "^x", "'"]


@pytest.mark.parametrize("query", HOSTILE)
def test_fts5_syntax_in_queries_is_plain_data(index: SqliteSearch, query: str) -> None:
    corpus = corpus_of(("a", ["a OR b and NEAR(a b) with -x a:b"]))
    sessions = index.search_sessions(corpus, query).items
    events = index.search_events(corpus, "a", query).items
    assert {hit.record.id for hit in sessions} <= {"a"}
    assert bool(sessions) == bool(events)  # one literal phrase, whichever way it is asked


def test_operators_match_as_literal_words(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["cats OR dogs"]), ("b", ["cats dogs"]))
    assert [h.record.id for h in index.search_sessions(corpus, "cats OR dogs").items] == ["a"]


def test_long_and_unusual_queries_search_without_error(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["café naïve 😀 e\u0301 text"]))
    assert index.search_sessions(corpus, "word " * 20_000).items == []
    assert [h.record.id for h in index.search_sessions(corpus, "café naïve").items] == ["a"]
    index.search_sessions(corpus, "😀 e\u0301")


@given(st.text(max_size=200))
def test_arbitrary_query_text_never_raises_anything_but_invalid_query(text: str) -> None:
    with SqliteSearch(":memory:") as search:
        corpus = corpus_of(("a", ["some indexed text"]))
        try:
            search.search_sessions(corpus, text)
        except SessionQueryError as exc:
            assert exc.code is ErrorCode.INVALID_QUERY


def test_open_at_never_disables_search_before_validating_the_request(tmp_path: Path) -> None:
    search = SqliteSearch(tmp_path / "never.db", open_at="never")
    with raises_code(ErrorCode.SEARCH_DISABLED):
        search.search_sessions(FakeCorpus(), "", limit=-5)
    with raises_code(ErrorCode.SEARCH_DISABLED):
        search.search_events(FakeCorpus(), "x", "")
    assert not (tmp_path / "never.db").exists()
    search.close()


def test_first_search_opens_lazily_and_concurrent_first_searches_share_one_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lazy.db"
    search = SqliteSearch(path, open_at="first-search")
    assert not path.exists()
    corpus = corpus_of(("a", ["shared words"]))
    results: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(len(search.search_sessions(corpus, "shared").items))
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()
    assert results == [1, 1, 1, 1]
    search.close()


def test_first_search_on_a_foreign_database_fails_that_search(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    path.write_bytes(b"not sqlite at all" * 100)
    search = SqliteSearch(path, open_at="first-search")
    with raises_code(ErrorCode.INDEX_FAILED):
        search.search_sessions(FakeCorpus(), "x")
    search.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"path": ""},
        {"path": "   "},
        {"path": 5},
        {"open_at": "later"},
        {"journal_mode": "wal2"},
        {"default_limit": 0},
        {"default_limit": 101},
        {"max_limit": 0},
        {"max_limit": 2**53},
        {"snippet_chars": 0},
        {"snippet_chars": True},
    ],
)
def test_invalid_configuration_is_invalid_config(kwargs: dict[str, object]) -> None:
    arguments: dict[str, object] = {"path": ":memory:", **kwargs}
    with raises_code(ErrorCode.INVALID_CONFIG):
        SqliteSearch(**arguments)  # type: ignore[arg-type]


def test_tampered_cursors_are_invalid_cursor(index: SqliteSearch) -> None:
    corpus = corpus_of(*[(f"s{n}", ["word"]) for n in range(3)])
    page = index.search_sessions(corpus, "word", limit=1)
    assert page.next_cursor is not None
    for cursor, limit, query in (
        (page.next_cursor[:-3] + "AAA", 1, "word"),
        (page.next_cursor, 2, "word"),
        (page.next_cursor, 1, "other"),
    ):
        with raises_code(ErrorCode.INVALID_CURSOR):
            index.search_sessions(corpus, query, limit=limit, cursor=cursor)
    with raises_code(ErrorCode.INVALID_CURSOR):
        index.search_events(corpus, "s0", "word", cursor=page.next_cursor)


BIG_SESSIONS, BIG_EVENTS = 200, 1000


@pytest.fixture(scope="module")
def big_index(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SqliteSearch, FakeCorpus]]:
    """A 200k-event index, built once (short documents keep the build fast)."""
    store = FakePersistence()
    events = [  # events are immutable, so every session can share one log
        (user if seq % 2 == 0 else assistant)(seq, f"common token {seq % 97} n{seq % 13}")
        for seq in range(BIG_EVENTS)
    ]
    for number in range(BIG_SESSIONS):
        store.put(header(f"s{number}", number + 1), events)
    corpus = FakeCorpus(store)
    search = SqliteSearch(tmp_path_factory.mktemp("big") / "index.db")
    search.update(corpus)
    yield search, corpus
    search.close()


@pytest.mark.slow
def test_an_expired_deadline_aborts_within_fifty_milliseconds(
    big_index: tuple[SqliteSearch, FakeCorpus],
) -> None:
    search, corpus = big_index
    token = CancelToken(deadline=time.monotonic() - 1)
    started, cpu_started = time.perf_counter(), time.thread_time()
    with raises_code(ErrorCode.ABORTED):
        search.search_sessions(corpus, "common token", cancel=token)
    # The work done is counted in this thread's CPU time, which load does not stretch; the
    # wall clock only guards against a hang.
    assert time.thread_time() - cpu_started < 0.05
    assert time.perf_counter() - started < 30


def test_a_deadline_expiring_mid_statement_interrupts_it(
    big_index: tuple[SqliteSearch, FakeCorpus],
) -> None:
    search, corpus = big_index
    # Ranking 200k matching documents takes seconds; the token expires long before.
    token = CancelToken.after(0.1)
    started, cpu_started = time.perf_counter(), time.thread_time()
    with raises_code(ErrorCode.ABORTED):
        search.search_sessions(corpus, "common token", cancel=token)
    # Only "not the full run" (seconds of CPU): in this thread's CPU time, so that it holds
    # on a loaded machine; the wall clock only guards against a hang.
    assert time.thread_time() - cpu_started < 1.0
    assert time.perf_counter() - started < 30
    assert len(search.search_events(corpus, "s3", "token 5 n5", limit=3).items) == 1


def test_cancelling_a_reconciliation_rolls_it_back(tmp_path: Path) -> None:
    corpus = corpus_of(*[(f"s{n}", ["words"]) for n in range(5)])
    token = CancelToken()
    original = corpus.read_persisted

    def cancel_after_two(session_id: str, cancel: CancelToken | None = None):  # type: ignore[no-untyped-def]
        if len(corpus.reads) == 2:
            token.cancel()
        return original(session_id, cancel)

    corpus.read_persisted = cancel_after_two  # type: ignore[method-assign]
    with SqliteSearch(tmp_path / "i.db") as search:
        with raises_code(ErrorCode.ABORTED):
            search.search_sessions(corpus, "words", cancel=token)
        assert len(search.search_sessions(corpus, "words").items) == 5


def _say(session: object, text: str) -> None:
    session.append(  # type: ignore[attr-defined]
        "user/message",
        {
            "id": text,
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        },
        surface_op="append",
    )


def test_search_through_the_query_service_over_real_jsonl_files(tmp_path: Path) -> None:
    from sessionquery.live import SessionStore
    from sessionquery.persistence.jsonl import JsonlPersistence
    from sessionquery.query.service import SessionQuery

    root = tmp_path / "store"
    writer_store = SessionStore(JsonlPersistence(root))
    old = writer_store.create("old-session", cwd="/w")
    _say(old, "the flaky parser test")
    writer_store.close("old-session")

    live_store = SessionStore(JsonlPersistence(root))
    query = SessionQuery(
        store=live_store,
        persistence=JsonlPersistence(root),
        search=SqliteSearch(tmp_path / "index.db"),
    )
    try:
        hits = query.search_sessions("parser test").items
        assert [(h.record.id, h.record.live, h.record.persisted) for h in hits] == [
            ("old-session", False, True)
        ]
        current = live_store.create("current", cwd="/w")
        _say(current, "unflushed parser test notes")
        hits = query.search_sessions("parser test notes").items
        assert [(h.record.id, h.record.live) for h in hits] == [("current", True)]

        # Another writer appends to the stored log: picked up by revision.
        other = SessionStore(JsonlPersistence(root))
        reopened = other.create("third", cwd="/w")
        _say(reopened, "external parser test addition")
        other.close("third")
        hits = query.search_sessions("external parser").items
        assert [h.record.id for h in hits] == ["third"]

        live_store.close("current")
        hits = query.search_sessions("parser test notes").items
        assert [(h.record.id, h.record.live, h.record.persisted) for h in hits] == [
            ("current", False, True)
        ]
        page = query.search_events("old-session", "flaky")
        assert [hit.seq for hit in page.items] == [0]
    finally:
        query.close()


# --------------------------------------------------------------------------- interrupted builds


def _write_store(root: Path, sessions: int, turns: int) -> None:
    """A JSONL store written line by line in the documented format (fast to create)."""
    root.mkdir(mode=0o700)
    for number in range(sessions):
        sid = f"s{number:05}"
        lines = [
            json.dumps(
                {
                    "type": "session",
                    "version": 3,
                    "id": sid,
                    "createdAt": number,
                    "isSeeded": False,
                    "delegationDepth": 0,
                }
            )
        ]
        for seq, event in enumerate(
            event for turn in range(turns) for event in log(f"turn {turn} of {sid} words")
        ):
            record = {**event.to_json(), "seq": seq}
            lines.append(json.dumps(record))
        (root / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")


def _progress_of(path: Path) -> tuple[int, int] | None:
    try:
        conn = index_file(path, read_only=True)
    except apsw.Error:
        return None
    try:
        row = conn.execute("SELECT build_done, build_total FROM search_state").fetchone()
    except apsw.Error:
        return None
    finally:
        conn.close()
    return None if row is None else (int(row[0]), int(row[1]))


def _index_command(root: Path, index: Path, home: Path) -> list[str]:
    # Ctrl-C raises KeyboardInterrupt, as in a terminal, even when this suite was started in
    # the background: a shell starts background jobs with SIGINT ignored, and Python keeps
    # an ignored SIGINT ignored (the build then ran on to its end: all 1500 sessions kept).
    program = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from sessionquery.cli import main; sys.exit(main())"
    )
    return [sys.executable, "-c", program, "index", "--root", str(root), "--index", str(index)]


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGINT])
def test_an_index_command_interrupted_halfway_keeps_its_batches_and_the_next_run_finishes(
    tmp_path: Path, signal_number: int
) -> None:
    root, index, home = tmp_path / "store", tmp_path / "index.db", tmp_path / "home"
    _write_store(root, sessions=1500, turns=8)
    env = {**os.environ, "HOME": str(home), "SESSIONQUERY_HOME": str(home)}
    command = _index_command(root, index, home)
    quiet = subprocess.DEVNULL
    child = subprocess.Popen(command, env=env, stdout=quiet, stderr=quiet)
    try:
        give_up = time.monotonic() + 120
        while True:
            progress = _progress_of(index)
            if progress is not None and 0 < progress[0] < progress[1]:
                break
            assert child.poll() is None, "the build finished before it could be interrupted"
            assert time.monotonic() < give_up, "the build never committed a batch"
            time.sleep(0.002)  # polling the database, not synchronising on time
        child.send_signal(signal_number)
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    kept = len({row[0] for row in indexed_rows(index)})
    assert 0 < kept < 1500
    finished = subprocess.run(command, env=env, capture_output=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr
    assert _progress_of(index) == (1500, 1500)
    fresh = tmp_path / "fresh.db"
    rebuilt = subprocess.run(
        _index_command(root, fresh, home), env=env, capture_output=True, timeout=300, check=False
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert indexed_rows(index) == indexed_rows(fresh)


@pytest.mark.slow
def test_a_deadline_interrupts_a_build_promptly_and_keeps_its_committed_batches(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    _write_store(root, sessions=1500, turns=6)
    persistence = JsonlPersistence(root)
    with (
        SqliteSearch(tmp_path / "index.db") as index,
        SessionQuery(persistence=persistence, search=index) as service,
    ):
        token = CancelToken()
        cpu_at_deadline: list[float] = []

        def start_the_clock(done: int, total: int) -> None:
            if done == total // 3 and token.deadline is None:  # the deadline comes mid-build
                token.deadline = time.monotonic()
                cpu_at_deadline.append(time.thread_time())

        with raises_code(ErrorCode.ABORTED):
            index.update(service.corpus, cancel=token, progress=start_the_clock)
        late = time.monotonic() - (token.deadline or 0)
        # Catches a build that ignores its deadline (the rest of it is seconds of CPU); in
        # this thread's CPU time so that a loaded machine does not count, plus a hang guard.
        assert time.thread_time() - cpu_at_deadline[0] < 1.0
        assert late < 30
        kept = len({row[0] for row in indexed_rows(tmp_path / "index.db")})
        assert 0 < kept < 1500
        with pytest.raises(SessionQueryError) as searched:
            service.search_sessions("words", cancel=CancelToken.after(0.05))
        assert searched.value.code in (ErrorCode.INDEX_BUILDING, ErrorCode.ABORTED)
        kept = len({row[0] for row in indexed_rows(tmp_path / "index.db")})  # the search resumed
        assert index.update(service.corpus).persisted_indexed == 1500 - kept


_SEARCH_LOOP = """
import sys
from sessionquery import JsonlPersistence, SessionQuery
from sessionquery.errors import SessionQueryError
from sessionquery.search.sqlite import SqliteSearch
root, index, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
search = SqliteSearch(index)
codes = []
with SessionQuery(persistence=JsonlPersistence(root), search=search) as service:
    for _ in range(rounds):
        try:
            service.search_sessions("words", limit=100)
            codes.append("ok")
        except SessionQueryError as exc:
            codes.append(exc.code.value)
            print(exc.message, file=sys.stderr)
search.close()
print(" ".join(codes))
"""


@pytest.mark.slow
def test_processes_sharing_one_index_all_answer_while_a_writer_appends(tmp_path: Path) -> None:
    root, index = tmp_path / "store", tmp_path / "index.db"
    store = JsonlPersistence(root)
    for number in range(20):
        with store.create(header(f"s{number:02}", number + 1)) as writer:
            writer.append(log(f"entry {number} words"))
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _SEARCH_LOOP, str(root), str(index), "25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        with store.open_write("s05") as writer:
            seq = writer.event_count
            while any(child.poll() is None for child in children) and seq < 400:
                writer.append(log(f"appended {seq} words", start=seq))
                writer.flush()
                seq += 1
        outputs = [child.communicate(timeout=120) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    for stdout, stderr in outputs:
        assert stdout.split() == ["ok"] * 25, stderr
    with (
        SqliteSearch(index) as shared,
        SessionQuery(persistence=store, search=shared) as service,
    ):
        shared_hits = service.search_sessions("appended", limit=100).items
        shared_events = service.search_events("s05", "appended", limit=100).items
    with (
        SqliteSearch(tmp_path / "fresh.db") as fresh,
        SessionQuery(persistence=store, search=fresh) as service,
    ):
        assert service.search_sessions("appended", limit=100).items == shared_hits
        assert service.search_events("s05", "appended", limit=100).items == shared_events
