"""Several processes record into one PostgreSQL database while others search it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from sessionquery import SessionQuery
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch

WRITERS = 3
SEARCHERS = 2
SESSIONS_PER_WRITER = 4
TURNS = 6
TIMEOUT_SECONDS = 240

WRITER = textwrap.dedent(
    """
    import sys
    from sessionquery import SessionStore
    from sessionquery.persistence.postgres import PostgresPersistence

    dsn, writer, sessions, turns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    persistence = PostgresPersistence(dsn)
    store = SessionStore(persistence)
    live = [store.create(f"{writer}-{i}", cwd="/team") for i in range(sessions)]
    for turn in range(turns):
        for session in live:  # interleave the sessions of this process
            session.append("turn/start", {"turn": turn})
            session.append(
                "user/message",
                {"id": f"u{turn}", "role": "user", "source": {"kind": "user"},
                 "content": [{"type": "text", "text": f"shared marker {session.id} turn {turn}"}]},
                surface_op="append",
            )
            session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    store.close_all()
    persistence.close()
    print("done")
    """
)

SEARCHER = textwrap.dedent(
    """
    import json, sys
    from sessionquery import SessionQuery
    from sessionquery.persistence.postgres import PostgresPersistence
    from sessionquery.search.postgres import PostgresSearch

    dsn, expected = sys.argv[1], int(sys.argv[2])
    persistence = PostgresPersistence(dsn)
    query = SessionQuery(None, persistence, PostgresSearch(dsn))
    searches = 0
    seen = 0
    while seen < expected and searches < 5000:
        page = query.search_sessions("shared marker", limit=100)
        ids = [hit.record.header.id for hit in page.items]
        assert len(ids) == len(set(ids)), ids
        seen = len(ids)
        searches += 1
    print(json.dumps({"searches": searches, "seen": seen}))
    """
)


@pytest.mark.slow
def test_concurrent_writers_and_searchers_lose_and_duplicate_nothing(postgres_dsn: str) -> None:
    PostgresPersistence(postgres_dsn).close()  # migrate once before the race
    expected = WRITERS * SESSIONS_PER_WRITER
    searchers = [
        subprocess.Popen(
            [sys.executable, "-c", SEARCHER, postgres_dsn, str(expected)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(SEARCHERS)
    ]
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                postgres_dsn,
                f"w{n}",
                str(SESSIONS_PER_WRITER),
                str(TURNS),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WRITERS)
    ]
    for process in writers:
        out, err = process.communicate(timeout=TIMEOUT_SECONDS)
        assert process.returncode == 0, err
        assert out.strip() == "done"
    for process in searchers:
        out, err = process.communicate(timeout=TIMEOUT_SECONDS)
        assert process.returncode == 0, err
        assert json.loads(out)["seen"] == expected

    with PostgresPersistence(postgres_dsn) as persistence:
        listing = {entry.header.id: entry for entry in persistence.list()}
        assert len(listing) == expected
        for sid, entry in listing.items():
            with persistence.open_read(sid) as handle:
                events = handle.read()
            assert entry.event_count == TURNS * 3
            assert [event.seq for event in events] == list(range(TURNS * 3))
            texts = [e.data["content"][0]["text"] for e in events if e.type == "user/message"]
            assert texts == [f"shared marker {sid} turn {turn}" for turn in range(TURNS)]
        assert persistence.verify() == []
        with PostgresSearch(postgres_dsn) as search:
            query = SessionQuery(None, persistence, search)
            page = query.search_sessions("shared marker", limit=100)
            assert sorted(hit.record.header.id for hit in page.items) == sorted(listing)
            hits = query.search_events("w0-0", "marker", limit=100).items
            assert len(hits) == TURNS
