"""Relevance search on the SQLite index: questions as people ask them, titles, typos,
statistics read from the index itself, scores equal to the kernel's, stable paging."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search_sqlite_support import FakeCorpus, FakePersistence, header, log
from sessionquery.model import SessionEvent, extract_event_text
from sessionquery.query.filters import CwdIn, TypeIn
from sessionquery.search.relevance import TITLE_WEIGHT, CorpusStats, event_score, plan_relevance
from sessionquery.search.sqlite import SqliteSearch, db
from sessionquery.search.sqlite import relevance as sqlite_relevance
from sessionquery.search.sqlite.query import query_tokens


def _holds(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return bool(n) and any(tuple(tokens[i : i + n]) == phrase for i in range(len(tokens)))


def title(seq: int, text: str) -> SessionEvent:
    return SessionEvent(
        type="session/title",
        seq=seq,
        time=9_000 + seq,
        data={"title": text, "messageSeqs": [0], "source": {"kind": "summary"}},
    )


def _corpus() -> FakeCorpus:
    store = FakePersistence()
    store.put(
        header("fix", created_at=1, cwd="/w"),
        log("the login test kept failing on CI", "I fixed the failing login test: a stale cookie"),
    )
    store.put(header("cargo", created_at=2, cwd="/w"), log("ran cargo test in the api crate"))
    store.put(header("noise", created_at=3, cwd="/w"), log("updated the readme", "done"))
    store.put(
        header("titled", created_at=4, cwd="/v"),
        [*log("moved the data layer", "all queries compile"), title(2, "Prisma migration")],
    )
    return FakeCorpus(store)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSearch]:
    search = SqliteSearch(tmp_path / "index.db")
    yield search
    search.close()


def _ids(index: SqliteSearch, corpus: FakeCorpus, query: str, **kw: object) -> list[str]:
    page = index.search_sessions(corpus, query, match="relevance", **kw)  # type: ignore[arg-type]
    return [hit.record.id for hit in page.items]


def test_a_full_sentence_question_finds_the_session_that_answers_it(index: SqliteSearch) -> None:
    corpus = _corpus()
    assert index.search_sessions(corpus, "where did we fix the failing test").items == []
    assert _ids(index, corpus, "where did we fix the failing test")[0] == "fix"
    assert _ids(index, corpus, "which session ran cargo test")[0] == "cargo"


def test_a_word_only_a_title_holds_finds_its_session_with_the_title_event(
    index: SqliteSearch,
) -> None:
    corpus = _corpus()
    assert index.search_sessions(corpus, "prisma", match="phrase").items == []
    page = index.search_sessions(corpus, "prisma", match="relevance")
    (hit,) = page.items
    assert (hit.record.id, hit.best_match.seq, hit.best_match.type) == (
        "titled",
        2,
        "session/title",
    )
    assert hit.best_match.surface == "log-only"
    assert hit.best_match.snippet == "Prisma migration"


def test_a_title_adds_to_a_session_whose_events_also_match(index: SqliteSearch) -> None:
    store = FakePersistence()
    store.put(header("a", created_at=1), log("the data layer moved to postgres"))
    store.put(
        header("b", created_at=2), [*log("the data layer moved to postgres"), title(1, "data")]
    )
    page = index.search_sessions(FakeCorpus(store), "data layer", match="relevance")
    assert [hit.record.id for hit in page.items] == ["b", "a"]
    assert page.items[0].best_match.type == "user/message"  # the event stays the best match


def test_a_typo_is_searched_as_the_closest_indexed_word_and_the_page_says_so(
    index: SqliteSearch,
) -> None:
    corpus = _corpus()
    page = index.search_sessions(corpus, "prisma migraton", match="relevance")
    assert page.corrections == {"migraton": "migration"}
    assert [hit.record.id for hit in page.items] == ["titled"]
    assert index.search_sessions(corpus, "prisma migration", match="relevance").corrections == {}
    events = index.search_events(corpus, "titled", "migraton", match="relevance")
    assert events.corrections == {"migraton": "migration"}
    assert [hit.seq for hit in events.items] == [2]


def test_event_filters_apply_to_titles_too(index: SqliteSearch) -> None:
    corpus = _corpus()
    assert _ids(index, corpus, "prisma", event_filters=[TypeIn(["user/message"])]) == []
    assert _ids(index, corpus, "prisma", session_filters=[CwdIn(["/w"])]) == []
    assert _ids(index, corpus, "prisma", event_filters=[TypeIn(["session/title"])]) == ["titled"]


def test_a_question_no_document_answers_matches_nothing(index: SqliteSearch) -> None:
    corpus = _corpus()
    for query in ("zzzqqq", "***", "qq", "x y"):
        assert index.search_sessions(corpus, query, match="relevance").items == []


def test_live_sessions_and_their_titles_are_searched_and_shadow_their_stored_copy(
    index: SqliteSearch,
) -> None:
    corpus = _corpus()
    corpus.live["titled"] = (
        header("titled", created_at=4, cwd="/v"),
        [*log("moved the data layer"), title(1, "Drizzle migration")],
    )
    page = index.search_sessions(corpus, "drizzle", match="relevance")
    assert [(h.record.id, h.record.live, h.best_match.seq) for h in page.items] == [
        ("titled", True, 1)
    ]
    assert _ids(index, corpus, "prisma") == []


def test_corpus_statistics_come_from_the_index_itself(index: SqliteSearch) -> None:
    corpus = _corpus()
    index.update(corpus)
    conn = index._conn
    assert conn is not None
    stats = sqlite_relevance.corpus_stats(conn)
    texts = [text for (text,) in conn.execute("SELECT text FROM main.doc_rows")]
    texts += [text for (text,) in conn.execute("SELECT text FROM main.title_rows")]
    tokens = [query_tokens(conn, text) for text in texts]
    assert stats == CorpusStats(len(texts), sum(len(t) for t in tokens))
    held = Counter(word for t in tokens for word in set(t))
    counts = sqlite_relevance.document_counts(conn, ["test", "prisma", "absent"])
    assert counts == {"test": held["test"], "prisma": held["prisma"], "absent": 0}


_WORDS = ["alpha", "beta", "gamma", "delta", "alpha_beta", "Beta", "epsilon", "zeta"]


@st.composite
def _documents(draw: st.DrawFn) -> list[list[str]]:
    word = st.sampled_from(_WORDS)
    doc = st.lists(word, min_size=1, max_size=30).map(" ".join)
    return draw(st.lists(st.lists(doc, min_size=1, max_size=4), min_size=1, max_size=6))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sessions=_documents(),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join),
)
def test_every_page_follows_the_kernel_scores_and_the_tie_breaks(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[list[str]], query: str
) -> None:
    store = FakePersistence()
    for i, docs in enumerate(sessions):
        store.put(header(f"s{i}", created_at=i), log(*docs))
    corpus = FakeCorpus(store)
    with SqliteSearch(tmp_path_factory.mktemp("rel") / "i.db") as index:
        pages = []
        cursor = None
        while True:
            page = index.search_sessions(corpus, query, match="relevance", limit=2, cursor=cursor)
            pages += [(h.record.id, h.best_match.seq) for h in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        conn = index._conn
        assert conn is not None
        plan = plan_relevance(
            query_tokens(conn, query),
            sqlite_relevance.corpus_stats(conn),
            lambda words: sqlite_relevance.document_counts(conn, words),
        )
    expected = []
    if plan is not None:
        for i, docs in enumerate(sessions):
            scored = []
            for seq, text in enumerate(docs):
                with db.connect(":memory:") as scratch:
                    tokens = query_tokens(scratch, text)
                counts = Counter(tokens)
                tfs = [counts[term] for term in plan.terms]
                if any(tfs):
                    score = event_score(plan, tfs, len(tokens), _holds(tokens, plan.phrase))
                    scored.append((-score, len(text), -(1_000 + seq), -seq, seq))
            if scored:
                best = min(scored)
                expected.append((best[0], best[1], best[2], f"s{i}", best[3], best[4]))
    expected.sort()
    assert pages == [(sid, seq) for *_key, sid, _neg, seq in expected]


def test_scores_are_bit_identical_to_the_kernel_on_the_index_tokens(index: SqliteSearch) -> None:
    store = FakePersistence()
    texts = ["alpha beta beta", "gamma " * 40 + "alpha", "beta.alpha-beta_alpha"]
    store.put(header("a"), log(*texts))
    corpus = FakeCorpus(store)
    index.update(corpus)
    conn = index._conn
    assert conn is not None
    plan = plan_relevance(
        ["alpha", "beta"],
        sqlite_relevance.corpus_stats(conn),
        lambda words: sqlite_relevance.document_counts(conn, words),
    )
    assert plan is not None
    with sqlite_relevance.installed_plan(plan) as installed:
        rows = conn.execute(
            "SELECT rowid, sq_rank(doc_fts, ?) FROM main.doc_fts WHERE doc_fts MATCH ? "
            "ORDER BY rowid",
            (installed.plan_id, sqlite_relevance.or_expression(plan)),
        ).fetchall()
    for (rowid, score), text in zip(rows, texts, strict=True):
        tokens = query_tokens(conn, text)
        tfs = [tokens.count(term) for term in plan.terms]
        expected = event_score(plan, tfs, len(tokens), _holds(tokens, plan.phrase))
        assert score == expected, rowid
        assert not math.isnan(score)


def test_a_question_of_a_hundred_thousand_distinct_words_answers_in_bounded_time(
    index: SqliteSearch,
) -> None:
    corpus = _corpus()
    words = " ".join(f"w{i}x" for i in range(100_000)) + " cargo"
    page = index.search_sessions(corpus, words, match="relevance")
    # the first MAX_LOOKUP distinct words are looked up: "cargo" is beyond them
    assert page.items == []
    short = " ".join(itertools.islice((f"w{i}x" for i in range(10)), 10)) + " cargo"
    assert [h.record.id for h in index.search_sessions(corpus, short, match="relevance").items]


def _brute_force(
    sessions: dict[str, list[SessionEvent]], query: str, conn: db.Connection
) -> list[tuple[str, int]]:
    """Every session's rank by the kernel's definition, computed from the texts alone."""
    plan = plan_relevance(
        query_tokens(conn, query),
        sqlite_relevance.corpus_stats(conn),
        lambda words: sqlite_relevance.document_counts(conn, words),
    )
    if plan is None:
        return []
    ranked = []
    for sid, events in sessions.items():
        best_event: tuple[float, int, int, int] | None = None
        best_title: tuple[float, int, int, int] | None = None
        for event in events:
            is_title = event.type == "session/title"
            text = str(event.data["title"]) if is_title else extract_event_text(event)
            tokens = query_tokens(conn, text)
            counts = Counter(tokens)
            tfs = [counts[term] for term in plan.terms]
            if not any(tfs):
                continue
            score = event_score(plan, tfs, len(tokens), _holds(tokens, plan.phrase))
            if is_title:
                score = TITLE_WEIGHT * score
            key = (-score, len(text), -event.time, -event.seq)
            if is_title:
                best_title = key if best_title is None else min(best_title, key)
            else:
                best_event = key if best_event is None else min(best_event, key)
        if best_event is None and best_title is None:
            continue
        total = (0.0 if best_event is None else -best_event[0]) + (
            0.0 if best_title is None else -best_title[0]
        )
        chosen = best_event if best_event is not None else best_title
        assert chosen is not None
        ranked.append(((-total, chosen[1], chosen[2], sid, chosen[3]), (sid, -chosen[3])))
    ranked.sort()
    return [item for _key, item in ranked]


def test_pruned_pages_equal_a_brute_force_ranking_on_a_zipf_corpus(tmp_path: Path) -> None:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(60)]
    weights = [1 / (i + 1) for i in range(60)]
    sessions: dict[str, list[SessionEvent]] = {}
    store = FakePersistence()
    for i in range(90):
        texts = [
            " ".join(rng.choices(vocabulary, weights, k=rng.randint(1, 25)))
            for _ in range(rng.randint(1, 6))
        ]
        events = log(*texts)
        if i % 3 == 0:  # titles: some lift their session onto the page on their own
            events.append(title(len(events), " ".join(rng.choices(vocabulary[:20], k=3))))
        sessions[f"s{i:02d}"] = events
        store.put(header(f"s{i:02d}", created_at=i), events)
    corpus = FakeCorpus(store)
    with SqliteSearch(tmp_path / "i.db") as index:
        index.update(corpus)
        conn = index._conn
        assert conn is not None
        texts = [
            str(e.data["title"]) if e.type == "session/title" else extract_event_text(e)
            for events in sessions.values()
            for e in events
        ]
        for attempt in range(30):
            if attempt % 3 == 0:  # a run of a real document's words: the phrase boost applies
                words = rng.choice(texts).split()
                start = rng.randrange(len(words))
                query = " ".join(words[start : start + rng.randint(2, 4)])
            else:
                query = " ".join(rng.sample(vocabulary[:30], rng.randint(1, 5)))
            expected = _brute_force(sessions, query, conn)
            got: list[tuple[str, int]] = []
            cursor = None
            while True:
                page = index.search_sessions(
                    corpus, query, match="relevance", limit=4, cursor=cursor
                )
                got += [(h.record.id, h.best_match.seq) for h in page.items]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert got == expected, query
            first = index.search_sessions(corpus, query, match="relevance", limit=3)
            assert [(h.record.id, h.best_match.seq) for h in first.items] == expected[:3]
