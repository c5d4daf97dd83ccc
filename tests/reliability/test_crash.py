"""Crashes: writers and index owners killed with SIGKILL at random points.

Child programs (``tests/reliability/crash_*.py``) print a progress line after each fact they
establish (``flushed <n>``: the first ``n`` events are durable); the parent reads a random
number of lines, kills the child, drains what it printed before dying and checks:

* every event whose flush returned is stored and readable, and the stored prefix is exactly
  the child's deterministic stream (nothing outside the torn tail is lost or altered);
* reads never modify the file, even with a torn tail; the next write open repairs it;
* an index reconciled over the crashed store, and an index whose owner was killed in the
  middle of a reconciliation, give exactly the results of a fresh index.

The number of kills follows the hypothesis profile (``HYPOTHESIS_PROFILE=long`` for more).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from reliability.child import Child
from reliability.corpus import QUERIES, event_at, events, header
from reliability.stats import profile_examples, record
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch

KILLS = max(4, profile_examples() // 8)
"""Kills per test: 6 under the ``ci`` profile, 250 under ``long``."""


def _last(lines: list[str], word: str) -> int:
    counts = [int(line.split()[1]) for line in lines if line.startswith(word + " ")]
    return max(counts, default=0)


def _search_results(query: SessionQuery, session_ids: list[str]) -> list[tuple[str, object]]:
    results: list[tuple[str, object]] = []
    for text in QUERIES:
        page = query.search_sessions(text, limit=100)
        results.append((text, list(page.items)))
        for session_id in session_ids:
            events_page = query.search_events(session_id, text, limit=100)
            results.append((f"{session_id}:{text}", list(events_page.items)))
    return results


def _fresh_results(root: Path, session_ids: list[str]) -> list[tuple[str, object]]:
    with SessionQuery(persistence=JsonlPersistence(root), search=SqliteSearch(":memory:")) as fresh:
        return _search_results(fresh, session_ids)


def _tear(path: Path, session_id: str, rng: random.Random) -> None:
    """Leave part of the next line behind, as a crash in the middle of a write would."""
    data = path.read_bytes()
    stored = data.count(b"\n") - 1
    text = json.dumps(event_at(session_id, stored).to_json(), separators=(",", ":"))
    line = (text + "\n").encode()
    path.write_bytes(data + line[: rng.randint(1, len(line) - 1)])


@pytest.mark.slow
def test_killed_writers_lose_nothing_flushed_and_the_index_catches_up(tmp_path: Path) -> None:
    rng = random.Random(1234)
    root = tmp_path / "store"
    store = JsonlPersistence(root)
    ids = ["crash-a", "crash/b", "../crash-c"]
    verified = 0
    with SessionQuery(persistence=store, search=SqliteSearch(tmp_path / "index.sqlite")) as kept:
        for kill in range(KILLS):
            session_id = ids[kill % len(ids)]
            child = Child("crash_writer.py", str(root), session_id, str(rng.randrange(2**32)))
            for _ in range(rng.randint(1, 30)):
                if child.read_line() is None:
                    break
            child.kill()
            flushed, queued = _last(child.seen, "flushed"), _last(child.seen, "queued")
            path = Path(store.path_of(session_id))
            if rng.random() < 0.4:
                _tear(path, session_id, rng)
            before = path.read_bytes()
            with store.open_read(session_id) as handle:
                stored = handle.read()
                assert handle.header == header(session_id)
            assert flushed <= len(stored) <= max(queued, _last(child.seen, "open"))
            assert stored == events(session_id, 0, len(stored))
            log = kept.read_session(session_id)  # closers are added in memory only
            assert list(log.events[: len(stored)]) == stored
            assert path.read_bytes() == before, "a read modified the session file"
            assert _search_results(kept, ids[: kill + 1]) == _fresh_results(root, ids[: kill + 1])
            verified += len(stored)
    record("crash-writer", kills=KILLS, events_verified=verified)


def test_reopening_after_a_kill_repairs_the_tail_and_appends_after_the_last_whole_line(
    tmp_path: Path,
) -> None:
    rng = random.Random(99)
    root = tmp_path / "store"
    store = JsonlPersistence(root)
    child = Child("crash_writer.py", str(root), "s", "7")
    for _ in range(10):
        child.read_line()
    child.kill()
    path = Path(store.path_of("s"))
    _tear(path, "s", rng)
    whole = path.read_bytes()[: path.read_bytes().rfind(b"\n") + 1]
    with store.open_write("s") as handle:
        count = handle.event_count
        assert path.read_bytes() == whole  # the torn bytes are gone, nothing else
        handle.append(events("s", count, count + 3))
    with store.open_read("s") as reader:
        assert reader.read() == events("s", 0, count + 3)


def _write_corpus(store: JsonlPersistence, count: int, length: int) -> list[str]:
    ids = [f"idx-{number}" for number in range(count)]
    for session_id in ids:
        with store.create(header(session_id)) as handle:
            handle.append(events(session_id, 0, length))
    return ids


def _grow(store: JsonlPersistence, session_id: str, more: int) -> None:
    with store.open_write(session_id) as handle:
        count = handle.event_count
        handle.append(events(session_id, count, count + more))


@pytest.mark.slow
def test_an_index_owner_killed_mid_reconciliation_leaves_an_index_that_recovers(
    tmp_path: Path,
) -> None:
    rng = random.Random(5)
    root = tmp_path / "store"
    index = tmp_path / "index.sqlite"
    store = JsonlPersistence(root)
    ids = _write_corpus(store, 30, 36)
    survived = 0
    for kill in range(KILLS):
        child = Child("crash_indexer.py", str(root), str(index))
        assert child.read_line() == "open"
        for _ in range(rng.randint(0, 30)):
            if child.read_line() in (None, "done"):
                break
        child.kill()
        survived += 1
        # The corpus moves on while nobody owns the index: grow some, add one.
        for session_id in rng.sample(ids, 3):
            _grow(store, session_id, rng.choice([1, 6, 13]))
        new_id = f"late-{kill}"
        with store.create(header(new_id)) as handle:
            handle.append(events(new_id, 0, 12))
        ids.append(new_id)
        sample = rng.sample(ids, 4)
        with SessionQuery(persistence=store, search=SqliteSearch(index)) as reopened:
            assert _search_results(reopened, sample) == _fresh_results(root, sample)
    record("crash-indexer", kills=survived)


def test_a_completed_reconciliation_in_a_child_is_reused_without_reindexing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    index = tmp_path / "index.sqlite"
    store = JsonlPersistence(root)
    ids = _write_corpus(store, 5, 18)
    child = Child("crash_indexer.py", str(root), str(index))
    while child.read_line() not in ("done", None):
        pass
    child.finish()
    search = SqliteSearch(index)
    with SessionQuery(persistence=store, search=search) as reopened:
        assert search.update(reopened.corpus).persisted_indexed == 0
        assert _search_results(reopened, ids) == _fresh_results(root, ids)


def test_an_index_that_reconciled_during_a_killed_flush_still_sees_the_written_events(
    tmp_path: Path,
) -> None:
    """Regression: a flush announces itself (moves the change token) before it writes and again
    after. An index owner that reconciled in between remembered the announced token; if the
    writer then wrote its lines and was killed before the second announcement, the token never
    moved again and every later search skipped the new events."""
    root = tmp_path / "store"
    store = JsonlPersistence(root)
    with store.create(header("s")) as handle:
        handle.append(events("s", 0, 6))
    with SessionQuery(persistence=store, search=SqliteSearch(":memory:")) as query:
        assert len(query.search_events("s", "reply", limit=100).items) == 1
        child = Child("paused_writer.py", str(root), "s")
        assert child.read_line() == "announced"
        assert len(query.search_events("s", "reply", limit=100).items) == 1
        assert child.proc.stdin is not None
        child.proc.stdin.write(b"go\n")
        child.proc.stdin.flush()
        assert child.read_line() == "written"
        child.kill()
        with store.open_read("s") as reader:
            assert reader.read() == events("s", 0, 12)
        assert len(query.search_events("s", "reply", limit=100).items) == 2
