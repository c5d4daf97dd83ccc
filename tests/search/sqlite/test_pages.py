"""One page read by ``Pages`` inside a search's snapshot: every mode, stored and live, with
the same records and snippets the search hands out."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import log
from conftest import raises_code
from search_sqlite_support import FakeCorpus, FakePersistence, header
from sessionquery.errors import ErrorCode
from sessionquery.match_modes import SEARCH_MATCHES
from sessionquery.search.sqlite import SqliteSearch


def _corpus() -> FakeCorpus:
    store = FakePersistence()
    store.put(header("a", 1, cwd="/w"), log("the flaky login test failed", "fixed the test"))
    store.put(header("b", 2, cwd="/w"), log("a login page"))
    corpus = FakeCorpus(store)
    corpus.live["L"] = (header("L", 3, cwd="/w"), log("live login test notes"))
    return corpus


@pytest.mark.parametrize("match", SEARCH_MATCHES)
def test_every_mode_reads_stored_and_live_hits_with_their_records(
    tmp_path: Path, match: str
) -> None:
    with SqliteSearch(tmp_path / "index.db") as index:
        page = index.search_sessions(_corpus(), "login test", match=match)  # type: ignore[arg-type]
        found = {hit.record.id: hit.record.live for hit in page.items}
        assert found["a"] is False and found["L"] is True
        assert all("login" in hit.best_match.snippet.lower() for hit in page.items)


def test_an_event_search_of_an_unknown_session_is_session_not_found(tmp_path: Path) -> None:
    with SqliteSearch(tmp_path / "index.db") as index:
        for match in ("phrase", "relevance"):
            with raises_code(ErrorCode.SESSION_NOT_FOUND):
                index.search_events(_corpus(), "nope", "login", match=match)
