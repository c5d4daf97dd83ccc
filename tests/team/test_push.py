"""``push_sessions``: two fixture machines push into one team database (a real server)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import psycopg
import pytest

from conftest import raises_code
from sessionquery import SessionQuery
from sessionquery.errors import ErrorCode
from sessionquery.persistence.base import PersistedSession, SessionPersistence
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource, CodexSource
from sessionquery.sources.multi import MultiSource
from sessionquery.team import push as push_module
from sessionquery.team import push_sessions
from team.conftest import TeamDb
from team_support import APP, TOOLS, Machine, write_claude


def sources_of(*machines: Machine) -> SessionPersistence:
    pairs: list[tuple[str, SessionPersistence]] = []
    for m in machines:
        pairs.append((f"{m.name}-claude", ClaudeCodeSource(m.claude)))
        pairs.append((f"{m.name}-codex", CodexSource(m.codex)))
    return MultiSource(pairs)


@pytest.fixture
def pushers(team_db: TeamDb) -> TeamDb:
    for short in ("alice", "bob"):
        team_db.role(short)
        team_db.grant(short, APP, push=True)
    return team_db


def _sessions(db: TeamDb) -> dict[str, tuple[object, ...]]:
    rows = db.rows(
        "SELECT s.id, m.name, s.pushed_by, w.name, s.header_json::json->>'cwd', s.event_count "
        "FROM sq_sessions s JOIN sq_machines m ON m.id = s.mid "
        "LEFT JOIN sq_workspaces w ON w.id = s.ws"
    )
    return {str(row[0]): row[1:] for row in rows}


def test_two_machines_push_both_repositories_tagged_with_machine_user_and_workspace(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    alpha, beta = machines
    first = push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    second = push_sessions(sources_of(beta), pushers.dsn("bob"), machine="beta")
    assert (first.new, first.sessions, second.new) == (2, 2, 2)
    stored = _sessions(pushers)
    alice, bob = pushers.roles["alice"], pushers.roles["bob"]
    for session in alpha.sessions:
        assert stored[session.id][:4] == ("alpha", alice, session.workspace, session.cwd)
    for session in beta.sessions:
        assert stored[session.id][:4] == ("beta", bob, session.workspace, session.cwd)
    assert {row[2] for row in stored.values()} == {APP, TOOLS, f"{APP}#api"}


_GIN_PENDING = (
    "SELECT c.relname, gin_clean_pending_list(c.oid) FROM pg_index AS i "
    "JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_am AS a ON a.oid = c.relam "
    "WHERE i.indrelid = 'sqi_docs'::regclass AND a.amname = 'gin' ORDER BY 1"
)
"""Each full-text index of the documents with the pending-list pages the owner's clean-up
finds (and deletes)."""


def test_a_push_leaves_no_pending_full_text_entries_for_searches_to_read_through(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    report = push_sessions(sources_of(machines[0]), pushers.dsn("alice"), machine="alpha")
    assert report.events > 0
    assert pushers.rows(_GIN_PENDING) == [("sqi_docs_titles", 0), ("sqi_docs_tsv", 0)]


def test_a_second_push_of_an_unchanged_history_reads_and_writes_nothing(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    alpha = machines[0]
    push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    counter = pushers.rows("SELECT change_counter FROM sq_store")
    again = push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    assert (again.new, again.grown, again.replaced, again.unchanged, again.events) == (
        0,
        0,
        0,
        2,
        0,
    )
    assert pushers.rows("SELECT change_counter FROM sq_store") == counter


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_grown_session_costs_one_row_per_new_event_and_keeps_every_earlier_row(
    pushers: TeamDb, machines: tuple[Machine, Machine], jobs: int
) -> None:
    alpha = machines[0]
    session = alpha.sessions[0]
    push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    rows = f"SELECT seq, xmin::text FROM sq_events WHERE session_id = '{session.id}'"
    before = {int(str(seq)): str(xmin) for seq, xmin in pushers.rows(rows)}
    write_claude(
        alpha.claude,
        session.id,
        session.cwd,
        [session.text, "looking at the login test", "and a third line"],
    )
    grown = push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha", jobs=jobs)
    after = {int(str(seq)): str(xmin) for seq, xmin in pushers.rows(rows)}
    assert (grown.grown, grown.new, grown.replaced) == (1, 0, 0)
    # The appended lines' events, plus the importer's closing events at the old tail that it
    # rewrites (the end of the last step and turn); every row before them is untouched.
    rewritten = [seq for seq in before if after[seq] != before[seq]]
    assert 1 <= len(rewritten) <= 2
    assert rewritten == list(range(len(before) - len(rewritten), len(before)))
    assert grown.events == len(after) - len(before) + len(rewritten)
    with SessionQuery(
        persistence=PostgresPersistence(pushers.dsn()), search=PostgresSearch(pushers.dsn())
    ) as query:
        hits = query.search_sessions("third line", match="phrase").items
    assert [hit.record.id for hit in hits] == [session.id]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_session_rewritten_in_place_is_replaced_whole(
    pushers: TeamDb, machines: tuple[Machine, Machine], jobs: int
) -> None:
    alpha = machines[0]
    session = alpha.sessions[0]
    push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    write_claude(alpha.claude, session.id, session.cwd, ["an entirely different question"])
    replaced = push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha", jobs=jobs)
    assert replaced.replaced == 1
    with SessionQuery(
        persistence=PostgresPersistence(pushers.dsn()), search=PostgresSearch(pushers.dsn())
    ) as query:
        assert query.search_sessions("login flaky", match="words").items == []
        found = query.search_sessions("entirely different", match="relevance").items
    assert [hit.record.id for hit in found] == [session.id]
    (count,) = pushers.rows(f"SELECT count(*) FROM sq_events WHERE session_id = '{session.id}'")[0]
    with ClaudeCodeSource(alpha.claude).open_read(session.id) as handle:
        assert count == len(handle.read())


def test_a_session_already_pushed_by_another_machine_is_left_alone(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    alpha, beta = machines
    push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    copied = next(alpha.claude.rglob("*.jsonl"))
    target = beta.claude / copied.parent.name / copied.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(copied, target)
    report = push_sessions(sources_of(beta), pushers.dsn("bob"), machine="beta")
    assert (report.new, report.elsewhere) == (2, 1)
    assert _sessions(pushers)[alpha.sessions[0].id][0] == "alpha"


def test_a_machine_belongs_to_the_role_that_pushed_it_first(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    push_sessions(sources_of(machines[0]), pushers.dsn("alice"), machine="alpha")
    with raises_code(ErrorCode.INVALID_CONFIG):
        push_sessions(sources_of(machines[1]), pushers.dsn("bob"), machine="alpha")


def test_a_read_only_role_cannot_push(team_db: TeamDb, machines: tuple[Machine, Machine]) -> None:
    team_db.role("rita")
    team_db.grant("rita", APP)
    with raises_code(ErrorCode.INVALID_CONFIG) as refused:
        push_sessions(sources_of(machines[0]), team_db.dsn("rita"), machine="alpha")
    assert "--push" in str(refused.value)
    assert team_db.rows("SELECT count(*) FROM sq_sessions") == [(0,)]


def test_an_invalid_machine_name_is_refused_before_connecting(
    machines: tuple[Machine, Machine],
) -> None:
    with pytest.raises(ValueError):
        push_sessions(sources_of(machines[0]), "host=/nonexistent", machine="a:b")


def test_two_machines_pushing_at_once_both_complete(
    pushers: TeamDb, machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    alpha, beta = machines
    for n in range(40):  # enough sessions for several statements each
        write_claude(
            alpha.claude,
            f"a{n:07d}-0000-4000-8000-000000000000",
            alpha.sessions[0].cwd,
            [f"alpha bulk {n}", "reply"],
        )
        write_claude(
            beta.claude,
            f"b{n:07d}-0000-4000-8000-000000000000",
            beta.sessions[0].cwd,
            [f"beta bulk {n}", "reply"],
        )
    reports: dict[str, object] = {}
    errors: list[BaseException] = []

    def run(machine: Machine, role: str) -> None:
        try:
            reports[machine.name] = push_sessions(
                sources_of(machine), pushers.dsn(role), machine=machine.name
            )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(alpha, "alice")),
        threading.Thread(target=run, args=(beta, "bob")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors
    assert len(_sessions(pushers)) == 84
    (terms,) = pushers.rows("SELECT count(DISTINCT mid) FROM sqi_team_counts")[0]
    assert terms == 2


QUERIES = [
    ("appwork", "phrase"),
    ("appwork", "relevance"),
    ("login test", "words"),
    ("the linter config", "relevance"),
    ("deploy retry", "relevance"),
    ("api route", "phrase"),
]


def _page(query: SessionQuery, text: str, mode: str) -> list[tuple[object, ...]]:
    page = query.search_sessions(text, match=mode)  # type: ignore[arg-type]
    return [
        (h.record.id, h.best_match.seq, h.best_match.surface, h.best_match.snippet)
        for h in page.items
    ]


def test_the_team_index_answers_as_the_sqlite_index_over_the_same_sessions(
    pushers: TeamDb, machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    alpha, beta = machines
    push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    push_sessions(sources_of(beta), pushers.dsn("bob"), machine="beta")
    local = sources_of(alpha, beta)
    with (
        SessionQuery(persistence=local, search=SqliteSearch(tmp_path / "i.sqlite3")) as sqlite,
        SessionQuery(
            persistence=PostgresPersistence(pushers.dsn()), search=PostgresSearch(pushers.dsn())
        ) as team,
    ):
        for text, mode in QUERIES:
            assert _page(team, text, mode) == _page(sqlite, text, mode), (text, mode)
            assert _page(team, text, mode)


def test_every_pushed_row_names_its_workspace_and_machine(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    push_sessions(sources_of(machines[0]), pushers.dsn("alice"), machine="alpha")
    for table in ("sq_sessions", "sq_events", "sq_changes", "sqi_sessions", "sqi_docs"):
        assert pushers.rows(f"SELECT count(*) FROM {table} WHERE ws IS NULL OR mid IS NULL") == [
            (0,)
        ], table
    header = json.loads(str(pushers.rows("SELECT header_json FROM sq_sessions LIMIT 1")[0][0]))
    assert "machine" not in header  # the header stays the session's own


def test_the_change_journal_keeps_only_the_newest_changes(
    pushers: TeamDb, machines: tuple[Machine, Machine], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sessionquery.team.push as push_module

    monkeypatch.setattr(push_module, "JOURNAL_KEEP", 1)
    alpha = machines[0]
    push_sessions(sources_of(alpha), pushers.dsn("alice"), machine="alpha")
    assert pushers.rows("SELECT count(*) FROM sq_changes") == [(1,)]
    with psycopg.connect(pushers.dsn(), autocommit=True):
        store = PostgresPersistence(pushers.dsn())
        assert store.changed_since(f"{store.store_id}:0") is None  # older than the journal
        store.close()


class _Unfolding:
    """``inner``'s sessions, the log of ``broken`` with its last event out of order."""

    def __init__(self, inner: SessionPersistence, broken: str) -> None:
        self._inner, self._broken = inner, broken

    def list(self) -> list[PersistedSession]:
        return list(self._inner.list())

    def stat(self, session_id: str) -> PersistedSession | None:
        return self._inner.stat(session_id)

    @contextmanager
    def open_read(self, session_id: str) -> Iterator[Any]:
        with self._inner.open_read(session_id) as handle:
            if session_id != self._broken:
                yield handle
                return
            events = handle.read()
            last = dataclasses.replace(events[-1], seq=events[-1].seq + 5)
            yield SimpleNamespace(
                header=handle.header,
                inherited_event_count=handle.inherited_event_count,
                read=lambda offset=0, length=None: [*events[:-1], last][offset:],
            )


def test_a_session_that_does_not_fold_stops_the_push_after_the_batches_written_before_it(
    pushers: TeamDb, machines: tuple[Machine, Machine], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(push_module, "BATCH_SESSIONS", 1)
    source = sources_of(machines[0])
    first, second = sorted(entry.header.id for entry in source.list())
    seen: list[tuple[int, int]] = []
    with raises_code(ErrorCode.PERSISTENCE_FAILED) as info:
        push_sessions(
            cast(SessionPersistence, _Unfolding(source, second)),
            pushers.dsn("alice"),
            machine="alpha",
            progress=lambda done, total: seen.append((done, total)),
        )
    assert "does not fold" in str(info.value)
    assert set(_sessions(pushers)) == {first}
    assert seen == [(0, 2), (1, 2)]
    again = push_sessions(source, pushers.dsn("alice"), machine="alpha")
    assert (again.new, again.unchanged) == (1, 1)


def test_no_batch_queued_after_one_that_failed_is_written(
    pushers: TeamDb, machines: tuple[Machine, Machine], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(push_module, "BATCH_SESSIONS", 1)
    source = sources_of(*machines)
    ids = sorted(entry.header.id for entry in source.list())
    assert len(ids) >= 3
    seen: list[tuple[int, int]] = []
    with raises_code(ErrorCode.PERSISTENCE_FAILED):
        push_sessions(
            cast(SessionPersistence, _Unfolding(source, ids[0])),
            pushers.dsn("alice"),
            machine="alpha",
            progress=lambda done, total: seen.append((done, total)),
        )
    assert _sessions(pushers) == {}
    assert seen == [(0, len(ids))]
    again = push_sessions(source, pushers.dsn("alice"), machine="alpha")
    assert again.new == len(ids)


def test_a_push_lets_go_of_its_machine_before_it_returns(
    pushers: TeamDb, machines: tuple[Machine, Machine]
) -> None:
    # Closing the connection alone releases the lock only once the server's backend has
    # exited, which may be after the next push asked for it (seen as a spurious BUSY).
    source = sources_of(machines[0])
    with psycopg.connect(pushers.dsn(), autocommit=True) as watch:
        for _ in range(30):
            push_sessions(source, pushers.dsn("alice"), machine="alpha")
            held = watch.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
            assert held == (0,)
