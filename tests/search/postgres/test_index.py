"""PostgresSearch against a real server: the same answers as SqliteSearch, and its own
lifecycle, sync, cursor and deadline behaviour."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import log, user
from conftest import raises_code
from postgres_support import PostgresServer
from search_sqlite_support import (
    FakeCorpus,
    FakePersistence,
    all_session_pages,
    build_corpus,
    header,
    titled,
)
from sessionquery import SessionQuery, SessionStore
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.match_modes import SEARCH_MATCHES, SEARCH_MODES, search_mode
from sessionquery.model import SessionHeader
from sessionquery.persistence import JsonlPersistence
from sessionquery.persistence.base import DocumentLog, PersistedSession
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import CwdIn, TypeIn
from sessionquery.query.types import EventSearchPage, SessionSearchPage
from sessionquery.search.postgres import PostgresSearch, schema
from sessionquery.search.postgres import _unicode61_table as shipped
from sessionquery.search.postgres.tokens import (
    first_match,
    match_plan,
    span_count,
    token_spans,
    tokens,
)
from sessionquery.search.postgres.unicode61 import derive
from sessionquery.search.sqlite import SqliteSearch


@pytest.fixture
def pg(postgres_dsn: str) -> Iterator[PostgresSearch]:
    search = PostgresSearch(postgres_dsn)
    yield search
    search.close()


def shape_sessions(page: SessionSearchPage) -> list[tuple[object, ...]]:
    return [
        (
            h.record.header.id,
            h.record.live,
            h.record.persisted,
            h.best_match.seq,
            h.best_match.surface,
            h.best_match.snippet,
        )
        for h in page.items
    ]


def shape_events(page: EventSearchPage) -> list[tuple[object, ...]]:
    return [(h.seq, h.type, h.surface, h.snippet) for h in page.items]


# --- tokenizer -----------------------------------------------------------------------------


def test_the_shipped_token_table_matches_this_sqlite_on_the_first_code_planes() -> None:
    limit = 0x3400
    local = derive(limit)
    assert local.separators == tuple(
        (lo, min(hi, limit - 1)) for lo, hi in shipped.SEPARATORS if lo < limit
    )
    assert local.silent == tuple(c for c in shipped.SILENT if c < limit)
    assert local.folded == tuple(pair for pair in shipped.FOLDED if pair[0] < limit)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("src/foo.py failed", ["src", "foo", "py", "failed"]),
        ("https://x.org/a?b=c", ["https", "x", "org", "a", "b", "c"]),
        ("me@example.com v1.2.3", ["me", "example", "com", "v1", "2", "3"]),
        ("<div>py</div>", ["div", "py", "div"]),
        ("Café NAÏVE Straße", ["cafe", "naive", "straße"]),
        ("snake_case", ["snake", "case"]),
        ("a\u0300b", ["ab"]),
    ],
)
def test_text_is_tokenized_like_unicode61(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text())
def test_tokens_of_any_text_are_the_runs_between_separators_folded(text: str) -> None:
    assert tokens(text) == [token for token, _start in token_spans(text)]


@pytest.mark.parametrize(
    ("doc", "query", "match", "spans"),
    [
        ("a a a", "a a", "phrase", 1),
        ("a a a a", "a a", "phrase", 1),
        ("a b a b a", "a b a", "phrase", 1),
        ("x a y a", "a", "phrase", 2),
        ("b a c", "a b", "words", 2),
        ("a b", "a b a", "words", 2),
        ("b", "a b", "words", 0),
    ],
)
def test_match_spans_merge_overlapping_instances_like_highlight(
    doc: str, query: str, match: str, spans: int
) -> None:
    plan = match_plan(query, search_mode(match).plan.words)
    assert plan is not None
    assert span_count(tokens(doc), plan) == spans


# --- agreement with SQLite -------------------------------------------------------------------

WORDS = ["foo", "Foo", "bar", "BAR", "café", "cafe", "py", "a", "b", "x_y", "naïve", "test"]
SEPARATORS = [" ", " ", " ", ".", "/", "-", "\n", ", "]


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
    out = parts[0]
    for part in parts[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + part
    return out


@st.composite
def corpora(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    persisted = draw(
        st.dictionaries(
            st.sampled_from("pqrstu"), st.lists(texts(), min_size=1, max_size=5), max_size=5
        )
    )
    live = draw(
        st.dictionaries(
            st.sampled_from("LMN"), st.lists(texts(), min_size=1, max_size=4), max_size=2
        )
    )
    return persisted, live


def all_pages(
    search: object, corpus: FakeCorpus, query: str, **kw: object
) -> list[tuple[object, ...]]:
    return all_session_pages(search, corpus, query, shape_sessions, **kw)


@pytest.mark.slow
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    corpus_spec=corpora(),
    query=st.lists(
        st.sampled_from([*WORDS, "*", "foo.py", "a a", '"bar', "tset", "barr", "the"]),
        min_size=1,
        max_size=3,
    ).map(" ".join),
    match=st.sampled_from(SEARCH_MATCHES),
)
def test_session_and_event_search_answer_exactly_as_sqlite(
    postgres_server: PostgresServer,
    corpus_spec: tuple[dict[str, list[str]], dict[str, list[str]]],
    query: str,
    match: str,
) -> None:
    corpus = build_corpus(*corpus_spec)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            assert all_pages(pg, corpus, query, match=match) == all_pages(
                lite, corpus, query, match=match
            )
            filters = {
                "session_filters": [CwdIn(["/w"])],
                "event_filters": [TypeIn(["user/message"])],
                "match": match,
            }
            assert all_pages(pg, corpus, query, **filters) == all_pages(
                lite, corpus, query, **filters
            )
            for sid in sorted({*corpus_spec[0], *corpus_spec[1]}):
                pg_page = pg.search_events(corpus, sid, query, match=match)  # type: ignore[arg-type]
                lite_page = lite.search_events(corpus, sid, query, match=match)  # type: ignore[arg-type]
                assert shape_events(pg_page) == shape_events(lite_page)
    finally:
        postgres_server.drop_schema(dsn)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=st.lists(texts(), min_size=1, max_size=6),
    query=st.lists(
        st.sampled_from([*WORDS, "a a", "a.b.a", "foo.bar"]), min_size=1, max_size=3
    ).map(" ".join),
    match=st.sampled_from([m.name for m in SEARCH_MODES if not m.plan.ranked]),
)
@pytest.mark.slow
def test_database_counts_equal_the_live_overlay_counts_in_both_match_modes(
    postgres_server: PostgresServer, docs: list[str], query: str, match: str
) -> None:
    persisted = build_corpus({"s": docs}, {})
    live = build_corpus({}, {"s": docs})
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg:
            db = pg.search_events(persisted, "s", query, match=match)  # type: ignore[arg-type]
            mem = pg.search_events(live, "s", query, match=match)  # type: ignore[arg-type]
            assert shape_events(db) == shape_events(mem)
            plan = match_plan(" ".join(query.split()), search_mode(match).plan.words)
            expected = sum(1 for text in docs if plan and span_count(tokens(text), plan))
            assert len(db.items) == min(expected, 20)
    finally:
        postgres_server.drop_schema(dsn)


@pytest.mark.slow
def test_an_oversized_document_is_still_found(pg: PostgresSearch) -> None:
    text = " ".join(f"w{i:07d}" for i in range(120_000)) + " needle"
    corpus = build_corpus({"big": [text], "small": ["needle"]}, {})
    hits = pg.search_sessions(corpus, "needle").items
    assert [h.record.header.id for h in hits] == ["small", "big"]
    assert hits[1].best_match.snippet.endswith("needle")


@pytest.mark.slow
def test_an_oversized_document_is_ranked_by_relevance_as_sqlite_ranks_it(
    pg: PostgresSearch,
) -> None:
    # the oversized document has no tsvector: only the candidates' second branch finds it
    text = " ".join(f"w{i:07d}" for i in range(120_000)) + " needle needle thread"
    corpus = build_corpus(
        {"big": [text], "small": ["needle in the hay"], "pair": ["needle thread", "w0000001"]},
        {},
    )
    with SqliteSearch(":memory:") as lite:
        for query in ("needle", "needle thread", "thread w0000001"):
            got = pg.search_sessions(corpus, query, match="relevance").items
            want = lite.search_sessions(corpus, query, match="relevance").items
            assert [(h.record.header.id, h.best_match.seq) for h in got] == [
                (h.record.header.id, h.best_match.seq) for h in want
            ]
            assert "big" in {h.record.header.id for h in got}


# --- sync, cursors, lifecycle ------------------------------------------------------------------


def test_a_postgres_store_is_synced_through_its_change_journal(postgres_dsn: str) -> None:
    persistence = PostgresPersistence(postgres_dsn)
    store = SessionStore(persistence)
    for sid in ("a", "b", "c"):
        session = store.create(sid, cwd="/w")
        session.append(
            "user/message",
            {
                "id": "u",
                "role": "user",
                "content": [{"type": "text", "text": f"hello {sid}"}],
                "source": {"kind": "user"},
            },
            surface_op="append",
        )
        store.close(sid)
    with PostgresSearch(postgres_dsn) as pg:
        query = SessionQuery(None, persistence, pg)
        assert pg.update(query.corpus).persisted_indexed == 3
        assert pg.update(query.corpus).skipped
        writer = persistence.open_write("b")
        writer.append([user(1, "hello again")])
        writer.close()
        update = pg.update(query.corpus)
        assert (update.persisted_indexed, update.persisted_removed) == (1, 0)
        persistence.delete("c")
        assert pg.update(query.corpus).persisted_removed == 1
        assert sorted(h.record.header.id for h in query.search_sessions("hello").items) == [
            "a",
            "b",
        ]
    persistence.close()


def test_a_second_index_instance_reuses_the_shared_tables(postgres_dsn: str) -> None:
    corpus = build_corpus({"s": ["shared words"]}, {})
    with PostgresSearch(postgres_dsn) as first:
        assert first.update(corpus).persisted_indexed == 1
    with PostgresSearch(postgres_dsn) as second:
        update = second.update(corpus)
        assert update.persisted_indexed == 0
        assert [h.record.header.id for h in second.search_sessions(corpus, "shared").items] == ["s"]


def test_another_corpus_rebuilds_the_shared_index(postgres_dsn: str, tmp_path: object) -> None:
    with PostgresSearch(postgres_dsn) as pg:
        pg.update(build_corpus({"s": ["one"]}, {}))
        other = PostgresPersistence(postgres_dsn)
        query = SessionQuery(None, other, pg)
        assert query.search_sessions("one").items == []
        other.close()


def test_a_cursor_for_another_request_or_instance_is_invalid(
    pg: PostgresSearch, postgres_dsn: str
) -> None:
    corpus = build_corpus({"s": ["word"], "t": ["word"]}, {})
    page = pg.search_sessions(corpus, "word", limit=1)
    assert page.next_cursor is not None
    with raises_code(ErrorCode.INVALID_CURSOR):
        pg.search_sessions(corpus, "word", limit=1, cursor=page.next_cursor, match="words")
    with PostgresSearch(postgres_dsn) as other, raises_code(ErrorCode.INVALID_CURSOR):
        other.search_sessions(corpus, "word", limit=1, cursor=page.next_cursor)


@pytest.mark.parametrize(
    "options", [{"max_limit": 0}, {"open_at": "later"}, {"default_limit": 5, "max_limit": 2}]
)
def test_invalid_configuration_is_invalid_config(
    postgres_dsn: str, options: dict[str, object]
) -> None:
    with raises_code(ErrorCode.INVALID_CONFIG):
        PostgresSearch(postgres_dsn, **options)  # type: ignore[arg-type]


def test_disabled_closed_and_unreachable_indexes_fail_with_their_codes(postgres_dsn: str) -> None:
    with raises_code(ErrorCode.SEARCH_DISABLED):
        PostgresSearch(postgres_dsn, open_at="never").search_sessions(FakeCorpus(), "x")
    closed = PostgresSearch(postgres_dsn)
    closed.close()
    closed.close()
    with raises_code(ErrorCode.INDEX_FAILED):
        closed.search_sessions(FakeCorpus(), "x")
    with raises_code(ErrorCode.INDEX_FAILED):
        PostgresSearch("host=/nonexistent-socket-dir dbname=x", connect_timeout=1)


def test_a_deadline_interrupts_a_search_waiting_for_the_first_build(
    pg: PostgresSearch, postgres_dsn: str
) -> None:
    corpus = build_corpus({"s": ["word"]}, {})
    blocker = psycopg.connect(postgres_dsn)
    try:
        blocker.execute("SELECT pg_advisory_xact_lock(%s)", (schema.INDEX_LOCK,))
        started = time.monotonic()
        with raises_code(ErrorCode.ABORTED):
            pg.search_sessions(corpus, "word", cancel=CancelToken.after(0.2))
        assert time.monotonic() - started < 5
    finally:
        blocker.rollback()
        blocker.close()
    assert [h.record.header.id for h in pg.search_sessions(corpus, "word").items] == ["s"]


def test_a_search_during_another_process_update_answers_from_the_index_as_it_is(
    pg: PostgresSearch, postgres_dsn: str
) -> None:
    corpus = build_corpus({"s": ["word"]}, {})
    pg.update(corpus)
    assert corpus.store is not None
    corpus.store.append("s", [user(1, "again")])
    blocker = psycopg.connect(postgres_dsn)
    try:
        blocker.execute("SELECT pg_advisory_xact_lock(%s)", (schema.INDEX_LOCK,))
        started = time.monotonic()
        page = pg.search_sessions(corpus, "again", cancel=CancelToken.after(10))
        assert page.items == []  # not yet indexed: the update is someone else's to finish
        assert time.monotonic() - started < 5
    finally:
        blocker.rollback()
        blocker.close()
    assert [h.record.header.id for h in pg.search_sessions(corpus, "again").items] == ["s"]


def test_an_explicit_cancel_from_another_thread_interrupts_the_search(
    pg: PostgresSearch, postgres_dsn: str
) -> None:
    corpus = build_corpus({"s": ["word"]}, {})
    blocker = psycopg.connect(postgres_dsn)
    token = CancelToken()
    try:
        blocker.execute("SELECT pg_advisory_xact_lock(%s)", (schema.INDEX_LOCK,))
        timer = threading.Timer(0.2, token.cancel)
        timer.start()
        with raises_code(ErrorCode.ABORTED):
            pg.search_sessions(corpus, "word", cancel=token)
        timer.join()
    finally:
        blocker.rollback()
        blocker.close()


def test_headers_survive_the_index_round_trip(pg: PostgresSearch) -> None:
    store = FakePersistence()
    full = SessionHeader(
        id="h/ü",
        created_at=7,
        cwd="/w x",
        parent_session="p",
        origin="fork",
        agent_preset="z",
        delegation_depth=2,
    )
    store.put(full, log("hello"))
    (hit,) = pg.search_sessions(FakeCorpus(store=store), "hello").items
    assert hit.record.header == full


@given(
    text=st.lists(
        st.sampled_from([*WORDS, "a\u0300", "İ", " ", ".", "\u00e9t\u00e9", "x"]), max_size=15
    ).map(" ".join),
    query=st.lists(
        st.sampled_from(["a", "b", "foo", "x y", "cafe", "i"]), min_size=1, max_size=3
    ).map(" ".join),
    match=st.sampled_from([m.name for m in SEARCH_MODES if not m.plan.ranked]),
)
def test_the_first_match_is_where_the_first_highlighted_span_starts(
    text: str, query: str, match: str
) -> None:
    plan = match_plan(query, search_mode(match).plan.words)
    assert plan is not None
    spans = token_spans(text)
    words = [token for token, _start in spans]
    starts = [
        spans[i][1]
        for phrase in plan.phrases
        for i in range(len(words))
        if tuple(words[i : i + len(phrase)]) == phrase
    ]
    assert first_match(text, plan) == min(starts, default=None)


def test_an_interrupted_build_keeps_its_committed_batches_and_the_next_update_continues(
    pg: PostgresSearch, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionquery.search.postgres import sync

    monkeypatch.setattr(sync, "BATCH_SESSIONS", 4)
    corpus = build_corpus({f"s{i:02d}": ["batched words"] for i in range(10)}, {})
    token = CancelToken()

    def progress(done: int, total: int) -> None:
        if done == 6:
            token.cancel()

    with raises_code(ErrorCode.ABORTED):
        pg.update(corpus, cancel=token, progress=progress)
    with psycopg.connect(postgres_dsn) as conn:
        row = conn.execute("SELECT count(*), (SELECT token FROM sqi_state) FROM sqi_sessions")
        assert row.fetchone() == (4, None)  # the first batch, and no token: unfinished
    update = pg.update(corpus)
    assert update.persisted_indexed == 6
    assert len(pg.search_sessions(corpus, "batched", limit=100).items) == 10


def test_a_deadline_interrupts_a_long_index_build_promptly(pg: PostgresSearch) -> None:
    corpus = build_corpus({f"s{i:04d}": ["some words " * 200] * 3 for i in range(1200)}, {})
    token = CancelToken.after(0.1)
    with raises_code(ErrorCode.ABORTED):
        pg.update(corpus, cancel=token)
    assert token.deadline is not None
    assert time.monotonic() - token.deadline < 2.0  # generous: catches a build that ran on


_MEGABYTE_OF_WORDS = " ".join(f"w{i % 7919}x{i % 13}" for i in range(120_000))


@pytest.mark.slow
def test_a_deadline_passing_inside_a_big_log_stops_the_sync_promptly_and_the_next_one_ends_it(
    pg: PostgresSearch, postgres_dsn: str, tmp_path: Path
) -> None:
    token = CancelToken()
    stopped: list[str] = []

    class Store(JsonlPersistence):
        def read_documents(self, session_id: str) -> DocumentLog:
            if session_id != "big":
                return super().read_documents(session_id)
            token.deadline = time.monotonic()  # the deadline passes as the 8 MB log is read
            try:
                return super().read_documents(session_id)
            except SessionQueryError as exc:
                stopped.append(exc.code.value)
                raise

    store = Store(tmp_path / "store")
    with store.create(header("small", 1)) as writer:
        writer.append(log("small words"))
    with store.create(header("big", 2)) as writer:
        writer.append([user(i, f"{_MEGABYTE_OF_WORDS} tail{i}") for i in range(8)])
    corpus = SessionQuery(persistence=store).corpus
    with raises_code(ErrorCode.ABORTED):
        pg.update(corpus, cancel=token)
    assert token.deadline is not None
    # Generous bound against a hang (the check that matters is the next one): without the
    # checks inside the log, the whole of it was read and tokenised first, 0.7 s on the
    # development machine; with them, about 15 ms.
    assert time.monotonic() - token.deadline < 2.0
    assert stopped == ["SESSION_QUERY_ABORTED"]  # by a check inside the read
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM sqi_sessions WHERE id = 'big'").fetchone() == (0,)
    assert pg.update(corpus).persisted_indexed >= 1
    assert [h.seq for h in pg.search_events(corpus, "big", "tail7").items] == [7]


def test_a_sync_batch_ends_at_its_byte_budget_but_always_holds_one_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sessionquery.search.postgres import sync

    monkeypatch.setattr(sync, "BATCH_BYTES", 100)
    entries = [
        PersistedSession(header(f"s{i}"), "r", size_bytes=size)
        for i, size in enumerate([60, 30, 20, 500, None, 5])
    ]
    batches = []
    rest = entries
    while rest:
        batch, rest = sync._take(rest)  # pyright: ignore[reportPrivateUsage]
        batches.append([entry.header.id for entry in batch])
    assert batches == [["s0", "s1"], ["s2"], ["s3"], ["s4", "s5"]]  # no size: counts 0


# --- relevance -------------------------------------------------------------------------------

RELEVANCE_QUERIES = [
    "where did we fix the failing test",
    "foo bar",
    "prisma migraton",
    "café naïve",
    "tset",
    "the",
    "x_y py",
]


def _relevance_corpus() -> FakeCorpus:
    corpus = build_corpus(
        {
            "p": ["we fixed the failing test", "foo bar foo", "Prisma migration"],
            "q": ["foo", "bar bar bar", "test failing again"],
            "r": ["café naïve cafe", "nothing here"],
            "s": ["x_y py py", "a test of the migration", "foo"],
            "t": ["the the the", "unrelated"],
        },
        {"L": ["foo bar", "live test", "migration"], "M": ["naïve"]},
    )
    return corpus


def test_relevance_pages_and_statistics_equal_sqlite_on_a_corpus_with_titles_and_live(
    postgres_server: PostgresServer,
) -> None:
    corpus = _relevance_corpus()
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            compared = 0
            for query in RELEVANCE_QUERIES:
                pages = all_pages(pg, corpus, query, match="relevance")
                assert pages == all_pages(lite, corpus, query, match="relevance"), query
                compared += len(pages)
                pg_first = pg.search_sessions(corpus, query, match="relevance")
                lite_first = lite.search_sessions(corpus, query, match="relevance")
                assert pg_first.corrections == lite_first.corrections
                for sid in ("p", "q", "L"):
                    pg_events = pg.search_events(corpus, sid, query, match="relevance")
                    lite_events = lite.search_events(corpus, sid, query, match="relevance")
                    assert shape_events(pg_events) == shape_events(lite_events), (query, sid)
            assert compared > 10
            assert pg.search_sessions(corpus, "prisma migraton", match="relevance").corrections
    finally:
        postgres_server.drop_schema(dsn)


def test_sessions_of_equal_relevance_are_paged_across_the_tie_as_sqlite_pages_them(
    postgres_server: PostgresServer,
) -> None:
    # seven sessions score the same (the same event), so every page boundary falls inside
    # the tie: the best document's length, time and the session id order them
    same = {f"tie{i}": ["fix the build", "unrelated words"] for i in range(7)}
    corpus = build_corpus({**same, "top": ["fix fix the build"], "low": ["fix it " * 30]}, {})
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            pages = all_pages(pg, corpus, "fix build", match="relevance")
            assert pages == all_pages(lite, corpus, "fix build", match="relevance")
            assert [row[0] for row in pages][:1] == ["top"] and len(pages) == 9
    finally:
        postgres_server.drop_schema(dsn)


def test_relevance_statistics_follow_deletes_and_rewrites(
    postgres_server: PostgresServer,
) -> None:
    corpus = _relevance_corpus()
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            for step in range(3):
                if step == 1:
                    corpus.store.delete("q")  # type: ignore[union-attr]
                if step == 2:
                    corpus.store.put(header("q", created_at=7), titled(["foo foo", "new title"]))  # type: ignore[union-attr]
                for query in ("foo", "test failing", "title"):
                    assert all_pages(pg, corpus, query, match="relevance") == all_pages(
                        lite, corpus, query, match="relevance"
                    ), (step, query)
    finally:
        postgres_server.drop_schema(dsn)


# --- over-long phrase and words queries ------------------------------------------------------


@pytest.mark.slow
def test_long_phrase_and_words_queries_answer_exactly_as_sqlite(
    postgres_server: PostgresServer,
) -> None:
    rng = random.Random(11)
    vocabulary = [f"word{i}" for i in range(300)]
    persisted = {
        f"s{i}": [" ".join(rng.choices(vocabulary, k=rng.randint(200, 260))) for _ in range(2)]
        for i in range(12)
    }
    live = {"L": [" ".join(rng.choices(vocabulary, k=220))]}
    corpus = build_corpus(persisted, live)
    queries = []
    for docs in [*persisted.values(), *live.values()]:
        words = docs[0].split()
        queries.append(("phrase", " ".join(words[10:130])))
        queries.append(("words", " ".join(sorted(set(words[:150])))))
    queries.append(("words", " ".join(vocabulary)))
    queries.append(("phrase", " ".join([*vocabulary[:70], "absentword"])))
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            found = 0
            for match, query in queries:
                pages = all_pages(pg, corpus, query, match=match)
                assert pages == all_pages(lite, corpus, query, match=match), match
                found += len(pages)
                for sid in ("s0", "L"):
                    pg_events = pg.search_events(corpus, sid, query, match=match)  # type: ignore[arg-type]
                    lite_events = lite.search_events(corpus, sid, query, match=match)  # type: ignore[arg-type]
                    assert shape_events(pg_events) == shape_events(lite_events)
            assert found >= len(persisted)
            started = time.monotonic()
            try:
                pg.search_sessions(
                    corpus,
                    " ".join(f"zq{i}" for i in range(100_000)),
                    match="words",
                    cancel=CancelToken.after(0.5),
                )
            except SessionQueryError as exc:
                assert exc.code is ErrorCode.ABORTED
            assert time.monotonic() - started < 0.5 + 4.0
    finally:
        postgres_server.drop_schema(dsn)


def test_a_partial_search_during_a_build_answers_from_the_indexed_part(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionquery.search.postgres import sync as sync_module

    monkeypatch.setattr(sync_module, "BATCH_SESSIONS", 1)
    store = FakePersistence()
    for number in range(6):
        store.put(header(f"s{number}", number + 1), log(f"entry {number} words"))
    corpus = FakeCorpus(store)
    original = corpus.read_persisted

    def read(session_id: str, cancel: CancelToken | None = None) -> object:
        if len(corpus.reads) >= 2:
            assert cancel is not None
            while not cancel.expired:  # a big transcript: the reconciliation runs out of time
                time.sleep(0.005)
            cancel.check()
        return original(session_id, cancel)

    corpus.read_persisted = read  # type: ignore[assignment]
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg:
            page = pg.search_sessions(
                corpus, "words", cancel=CancelToken.after(1.5), allow_partial=True
            )
            assert page.partial is not None
            assert 0 < page.partial.sessions_indexed < 6
            assert len(page.items) == page.partial.sessions_indexed
            corpus.read_persisted = original  # type: ignore[method-assign]
            whole = pg.search_sessions(corpus, "words", allow_partial=True)
            assert whole.partial is None and len(whole.items) == 6
    finally:
        postgres_server.drop_schema(dsn)


def test_the_count_after_a_cut_short_build_recovers_a_connection_left_in_a_failed_transaction(
    postgres_server: PostgresServer,
) -> None:
    # The cut-short build's own cancel request can land on the ROLLBACK that ends its
    # transaction; psycopg only logs that, and the connection stays in a failed transaction.
    from psycopg.pq import TransactionStatus

    from sessionquery.search.postgres.index import _indexed_sessions

    store = FakePersistence()
    for number in range(3):
        store.put(header(f"s{number}", number + 1), log(f"entry {number} words"))
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg:
            pg.update(FakeCorpus(store))
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("BEGIN")
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute("SELECT 1 / 0")
            assert conn.info.transaction_status is TransactionStatus.INERROR
            assert _indexed_sessions(conn) == 3
            assert conn.execute("SELECT 1").fetchone() == (1,)  # usable again
    finally:
        postgres_server.drop_schema(dsn)


def test_a_correction_never_names_a_word_only_another_workspace_holds(
    postgres_server: PostgresServer,
) -> None:
    store = FakePersistence()
    store.put(header("a1", 1, cwd="/a"), log("the migration of the billing tables"))
    store.put(header("b1", 2, cwd="/b"), log("project nightingale launch plan"))
    corpus = FakeCorpus(store)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            for search in (pg, lite):
                scoped = {"session_filters": [CwdIn(["/a"])], "match": "relevance"}
                page = search.search_sessions(corpus, "nightingaIe", **scoped)  # type: ignore[arg-type]
                assert page.corrections == {} and page.items == []
                page = search.search_sessions(corpus, "migraton", **scoped)  # type: ignore[arg-type]
                assert page.corrections == {"migraton": "migration"}
                anywhere = search.search_sessions(corpus, "nightingaIe", match="relevance")
                assert anywhere.corrections == {"nightingaie": "nightingale"}
                one = search.search_events(corpus, "a1", "nightingaIe", match="relevance")
                assert one.corrections == {} and one.items == []
    finally:
        postgres_server.drop_schema(dsn)
