"""The paged listing of a team database at size: ``list_page`` against ``list_sessions()``.

    python benchmarks/team_listing.py                        # 100,000 sessions
    python benchmarks/team_listing.py --sessions 20000 --output benchmarks/RESULTS.md

A throwaway PostgreSQL 15 cluster gets a team database (``init_team``) whose ``sq_sessions``
holds ``--sessions`` rows spread over 50 machines and 8 repositories, written by one
``INSERT … SELECT`` (the listing reads only that table and its listing index; pushing
100,000 real sessions would take most of an hour on this machine, ``team_bench.py`` does that
at a smaller size). Then, for a role granted every workspace (``*``) and one granted 2 of the
8 repositories, each on its own connection through ``SessionQuery``: the newest page of 50
(``list_page``), the page after it (its cursor), the newest 50 of one repository (a ``CwdIn``
clause), and ``list_sessions()`` (every visible session). Medians of 5, with the CPU of this
process and of the database server (``/proc``), and the load average. Then the command line
as a person runs it, a new process each time (start-up included): ``list``, ``list --cwd``
and ``show ID --json``, medians of 3.

The section is printed; ``--output FILE`` also replaces the ``## Team listing`` section.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Run as a script, this folder is on the path; team_bench puts ../tests there too.
from postgres import backend_cpu
from team_bench import publish, team_database, with_role

SECTION = "## Team listing"
ROUNDS = 5
CLI_ROUNDS = 3
REPOSITORIES = 8
MACHINES = 50


def _timed(call: Callable[[], object], dsn: str) -> tuple[float, float]:
    """Median wall milliseconds of ROUNDS calls, and their mean CPU milliseconds (this
    process's and the server backend's serving ``dsn``)."""
    call()  # warm: connection, parsed headers
    server, cpu = backend_cpu(dsn), time.process_time()
    walls = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        call()
        walls.append((time.perf_counter() - started) * 1000)
    used = time.process_time() - cpu + backend_cpu(dsn) - server
    return statistics.median(walls), used * 1000 / ROUNDS


def _fill(conn: object, sessions: int) -> None:
    execute = conn.execute  # type: ignore[attr-defined]
    for m in range(MACHINES):
        execute("INSERT INTO sq_machines (name, owner) VALUES (%s, current_user)", (f"m{m:02d}",))
    for r in range(REPOSITORIES):
        execute("SELECT sq_workspace_id(%s)", (f"github.com/bench/p{r}",))
    sid = "'m' || lpad(mod(n, %(m)s)::text, 2, '0') || '-' || lpad(n::text, 7, '0')"
    repo = "mod(n, %(r)s)"
    execute(
        "INSERT INTO sq_sessions (id, header_json, revision, created_at, cwd, ws, mid) "
        f"SELECT {sid}, json_build_object('version', 3, 'id', {sid}, 'createdAt', "
        "1700000000000 + n * 1000, 'isSeeded', false, 'delegationDepth', 0, 'cwd', "
        f"'/home/dev/p' || {repo})::text, n, 1700000000000 + n * 1000, '/home/dev/p' || {repo}, "
        f"(SELECT id FROM sq_workspaces WHERE name = 'github.com/bench/p' || {repo}), "
        "(SELECT id FROM sq_machines WHERE name = 'm' || lpad(mod(n, %(m)s)::text, 2, '0')) "
        "FROM generate_series(1, %(n)s) AS n",
        {"m": MACHINES, "r": REPOSITORIES, "n": sessions},
    )
    execute("VACUUM ANALYZE sq_sessions")


def _steps(query: Any, clause: Any) -> list[tuple[str, Callable[[], object]]]:
    """The listing calls measured, each with its row's name."""
    cursor = query.list_page(limit=50).next_cursor
    return [
        ("`list_page(limit=50)`, the newest page", lambda: query.list_page(limit=50)),
        (
            "`list_page` of the next 50 (its cursor)",
            lambda: query.list_page(limit=50, cursor=cursor),
        ),
        ("`list_page` of one repository (`CwdIn`)", lambda: query.list_page([clause])),
        ("`list_sessions()` (every visible session)", query.list_sessions),
    ]


def _cli(dsn: str, args: Sequence[str], home: str) -> float:
    """Median wall milliseconds of CLI_ROUNDS runs of the command line (a new process each, as a
    person runs it), with an empty home so that only the team database is listed."""
    import subprocess
    import sys

    env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config"}
    command = [sys.executable, "-m", "sessionquery.cli", "--postgres", dsn, *args]
    walls = []
    for _ in range(CLI_ROUNDS):
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        walls.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return statistics.median(walls)


def run(sessions: int) -> str:
    import psycopg

    from postgres_support import running_server
    from sessionquery import SessionQuery
    from sessionquery.persistence.postgres import PostgresPersistence
    from sessionquery.query import CwdIn
    from sessionquery.team import grant

    rows: list[str] = []
    with running_server() as server:
        dsn = server.new_database()
        team_database(dsn, ("bench_all", "bench_two"))
        started = time.perf_counter()
        with psycopg.connect(dsn, autocommit=True) as conn:
            grant(conn, "bench_all", "*")
            for r in range(2):
                grant(conn, "bench_two", f"github.com/bench/p{r}")
            _fill(conn, sessions)
        filled = time.perf_counter() - started
        for role, label in (("bench_all", "`*`"), ("bench_two", "2 of 8 repositories")):
            load = f"{os.getloadavg()[0]:.1f}"
            with SessionQuery(persistence=PostgresPersistence(with_role(dsn, role))) as query:
                visible = len(query.list_sessions())
                steps = _steps(query, CwdIn(["/home/dev/p1"]))
                for step, call in steps:
                    wall, cpu = _timed(call, dsn)
                    rows.append(
                        f"| {step}, role granted {label} ({visible:,} visible, load {load}) "
                        f"| {wall:.1f} ms | {cpu:.1f} ms |"
                    )
                newest = query.list_page(limit=1).items[0].id
            home = tempfile.mkdtemp(prefix="sq-team-listing-")
            for command, args in (
                ("`sessionquery list` (50 newest, titles)", ["list"]),
                ("`sessionquery list --cwd DIR`", ["list", "--cwd", "/home/dev/p1"]),
                ("`sessionquery show ID --json`", ["show", newest, "--json"]),
            ):
                wall = _cli(with_role(dsn, role), args, home)
                rows.append(
                    f"| {command}, a new process, role granted {label} (load "
                    f"{os.getloadavg()[0]:.1f}) | {wall:.0f} ms | — |"
                )
    return "\n".join(
        [
            SECTION,
            "",
            f"Measured by `python benchmarks/team_listing.py --sessions {sessions}` on "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: a team database of "
            f"{sessions:,} sessions over {MACHINES} machines and {REPOSITORIES} repositories "
            f"(rows written in {filled:.0f} s by one `INSERT … SELECT`), PostgreSQL 15 "
            "(throwaway cluster, `fsync=off`), each role on its own connection through "
            f"`SessionQuery`; medians of {ROUNDS}. The command line: `python -m sessionquery.cli "
            f"--postgres DSN …` as the role, a new process each run (start-up and imports "
            f"included; `--version` alone takes about 0.1 s), an empty home, medians of "
            f"{CLI_ROUNDS}. Two cores shared with other work: the load average is given beside "
            "each role.",
            "",
            "| step | wall | CPU (client + server) |",
            "|---|---:|---:|",
            *rows,
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    publish(run(args.sessions), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
