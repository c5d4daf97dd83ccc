"""Span counts read back from ``bm25()`` rank exactly as ``highlight()``'s markers do."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search_sqlite_support import FakeCorpus, FakePersistence, header, log
from sessionquery.query.filters import CwdIn, SessionFilter
from sessionquery.search.sqlite import SqliteSearch

_WORDS = ["deploy", "fix", "Deploy", "déploy", "x", "fix-deploy", "the", "a.b"]


def _pages(index: SqliteSearch, corpus: FakeCorpus, query: str, **options: Any) -> list[Any]:
    pages, cursor = [], None
    while True:
        page = index.search_sessions(corpus, query, limit=2, cursor=cursor, **options)
        pages.append(page.items)
        if (cursor := page.next_cursor) is None:
            return pages


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions=st.dictionaries(
        st.sampled_from("abcdef"),
        st.lists(
            st.lists(st.sampled_from(_WORDS), min_size=1, max_size=30).map(" ".join),
            min_size=1,
            max_size=4,
        ),
        max_size=6,
    ),
    live=st.dictionaries(
        st.sampled_from("gh"),
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join),
        max_size=2,
    ),
    query=st.sampled_from(["deploy", "deploy fix", "fix deploy x", "the", "a b", "deploy deploy"]),
    filters=st.sampled_from([[], [CwdIn(["/w"])]]),
)
def test_bm25_counts_and_highlight_counts_give_the_same_pages(
    sessions: dict[str, list[str]],
    live: dict[str, str],
    query: str,
    filters: list[SessionFilter],
) -> None:
    store = FakePersistence()
    for number, (sid, texts) in enumerate(sorted(sessions.items())):
        store.put(header(sid, created_at=number + 1, cwd="/w" if number % 2 else None), log(*texts))
    corpus = FakeCorpus(store)
    with SqliteSearch(":memory:") as index:
        index._single_token_fast_path = "off"
        _pages(index, corpus, query)  # index the stored copies, then add live sessions
        for sid, text in sorted(live.items()):
            corpus.live[sid] = (header(sid, created_at=9), log(text))
        index._bm25_counts = True
        from_bm25 = _pages(index, corpus, query, session_filters=filters)
        index._bm25_counts = False
        from_highlight = _pages(index, corpus, query, session_filters=filters)
    assert from_bm25 == from_highlight
