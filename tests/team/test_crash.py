"""A push killed with SIGKILL at random points, then run again, leaves the database equal to
one clean push (a real server, a real subprocess)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from postgres_support import PostgresServer
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch
from sessionquery.team import init_team
from team_support import write_claude

_PUSH = """
import sys
import sessionquery.team.push as push
from sessionquery.sources import ClaudeCodeSource
push.BATCH_SESSIONS = 7
print("started", flush=True)
report = push.push_sessions(
    ClaudeCodeSource(sys.argv[1]), sys.argv[2], machine="alpha", jobs=int(sys.argv[3])
)
print(report.summary(), flush=True)
"""

_DUMP = {
    "sessions": "SELECT s.id, s.header_json, s.inherited_event_count, s.event_count, "
    "s.size_bytes, s.source_revision, s.digest, s.anchor, w.name, m.name, s.pushed_by "
    "FROM sq_sessions s LEFT JOIN sq_workspaces w ON w.id = s.ws "
    "JOIN sq_machines m ON m.id = s.mid ORDER BY s.id",
    "events": "SELECT e.session_id, e.seq, e.event_json, w.name FROM sq_events e "
    "LEFT JOIN sq_workspaces w ON w.id = e.ws ORDER BY 1, 2",
    "index sessions": "SELECT s.id, s.created_at, s.cwd, s.parent_session, s.header_json, w.name "
    "FROM sqi_sessions s LEFT JOIN sq_workspaces w ON w.id = s.ws ORDER BY 1",
    "documents": "SELECT d.session_id, d.seq, d.type, d.time, d.surface, d.length, d.text, "
    "d.norm, d.tsv::text, d.ntokens, d.title, w.name FROM sqi_docs d "
    "LEFT JOIN sq_workspaces w ON w.id = d.ws ORDER BY 1, 2",
    "terms": "SELECT t.term, w.name, t.docs FROM sqi_team_terms t "
    "LEFT JOIN sq_workspaces w ON w.id = t.ws ORDER BY 1, 2",
    "counts": "SELECT w.name, c.documents, c.tokens FROM sqi_team_counts c "
    "LEFT JOIN sq_workspaces w ON w.id = c.ws ORDER BY 1",
    "journal": "SELECT count(DISTINCT session_id) FROM sq_changes",
}


def _dump(dsn: str) -> dict[str, list[tuple[object, ...]]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {name: conn.execute(sql).fetchall() for name, sql in _DUMP.items()}


def _team(dsn: str) -> str:
    PostgresPersistence(dsn).close()
    PostgresSearch(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        init_team(conn)
    return dsn


def _history(projects: Path, checkout: Path) -> None:
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/app.git\n', encoding="utf-8"
    )
    words = ["deploy", "retry", "cache", "login", "schema", "flaky", "timeout", "index"]
    rng = random.Random(29)
    for n in range(60):
        cwd = checkout if n % 3 else checkout / f"pkg{n % 4}"
        texts = [" ".join(rng.choices(words, k=12)) + f" note{n}" for _ in range(2 + n % 9)]
        write_claude(projects, f"s{n:04d}-0000-4000-8000-000000000000", str(cwd), texts)


def _run(projects: Path, dsn: str, env: dict[str, str], jobs: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _PUSH, str(projects), dsn, str(jobs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_push_killed_at_random_points_and_run_again_equals_one_clean_push(
    postgres_server: PostgresServer, postgres_dsn: str, tmp_path: Path
) -> None:
    projects = tmp_path / "projects"
    _history(projects, tmp_path / "src" / "app")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    crashed = _team(postgres_dsn)
    clean = _team(postgres_server.new_schema())
    try:
        whole = _run(projects, clean, env)
        assert whole.stdout is not None
        assert whole.stdout.readline().strip() == "started"
        started = time.monotonic()
        _out, err = whole.communicate(timeout=600)
        assert whole.returncode == 0, err
        # The push itself, without the interpreter's start (which the kills below wait out
        # before they start counting): a sleep shorter than this kills the push under way.
        duration = time.monotonic() - started
        rng = random.Random(os.getpid())
        kills = 0
        for _ in range(5):
            process = _run(projects, crashed, env, jobs=2)  # a push with reader processes
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "started"
            time.sleep(rng.uniform(0, duration * 0.6))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            process.communicate(timeout=600)
        assert kills >= 1
        final = _run(projects, crashed, env)
        _out, err = final.communicate(timeout=600)
        assert final.returncode == 0, err
        expected, got = _dump(clean), _dump(crashed)
        assert len(expected["sessions"]) == 60
        for name in _DUMP:
            assert got[name] == expected[name], name
    finally:
        postgres_server.drop_schema(clean)
