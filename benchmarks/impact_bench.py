"""Relevance session search of common words on PostgreSQL: ranking every match against
reading through the impact key (``sessionquery.search.postgres.impact``), side by side.

    python benchmarks/impact_bench.py --database 'real=host=/run/pg dbname=real user=reader' \\
        --database 'generated=host=/run/pg dbname=team user=reader' --output benchmarks/RESULTS.md

Each ``--database LABEL=DSN`` names a team database already filled (a role that reads it
all): for the figures in RESULTS.md, ``sessionquery push`` of the real-size history that
``benchmarks/history.py HOME --transcripts 2000 --target-bytes 1.4e9`` writes (3,781 Claude
Code and Codex sessions), and the 50 generated machines of ``benchmarks/team_bench.py
--machines 50 --sessions 2000``, each followed by ``VACUUM ANALYZE`` and an open by the
owner (which keys the impact index for the pushed documents' average length). For every
question, both ways answer the first page (21 rows, as a tool's search of 20 asks) three
times; the best wall time and the CPU time (this process plus the database backend serving
it, from ``/proc``) of that run are given, with the depth that answered (0: every match
ranked) and whether both gave the same rows (they must).

The section is printed; ``--output FILE`` also replaces its ``## Relevance through the
impact key`` section.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SECTION = "## Relevance through the impact key"
ROUNDS = 3
QUESTIONS = {
    "real": [
        "the",
        "error",
        "test",
        "file",
        "function",
        "where is the config",
        "git commit",
        "update the readme",
        "permission denied",
        "run the tests",
        "fix the failing test",
        "how did we configure the database connection",
    ],
    "generated": [
        "the",
        "path",
        "error",
        "the file",
        "file path",
        "test fail",
        "connection refused error",
        "where did we fix the failing test",
    ],
}


def _backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _best(conn: Any, run: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best wall milliseconds of ROUNDS runs, that run's CPU milliseconds, its result."""
    pid = conn.info.backend_pid
    best: tuple[float, float, Any] | None = None
    for _ in range(ROUNDS):
        cpu, server = time.process_time(), _backend_cpu(pid)
        started = time.perf_counter()
        result = run()
        wall = (time.perf_counter() - started) * 1000
        used = (time.process_time() - cpu + _backend_cpu(pid) - server) * 1000
        if best is None or wall < best[0]:
            best = (wall, used, result)
    assert best is not None
    return best


def _fetch(conn: Any, sql: str, params: dict[str, Any]) -> list[Any]:
    return list(conn.execute(sql, params).fetchall())


def measure(label: str, dsn: str, questions: Sequence[str]) -> list[str]:
    import psycopg

    from sessionquery.search.postgres import impact
    from sessionquery.search.postgres import relevance as pg_relevance
    from sessionquery.search.postgres.overlay import LiveOverlay
    from sessionquery.search.postgres.sql import compile_filters
    from sessionquery.search.postgres.tokens import tokens
    from sessionquery.search.relevance import plan_relevance

    rows = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        (documents,) = conn.execute("SELECT count(*) FROM sqi_docs").fetchone() or (0,)
        overlay = LiveOverlay()
        compiled = compile_filters([], [], predicate_limit=14)
        for question in questions:
            plan = plan_relevance(
                tokens(question),
                pg_relevance.corpus_stats(conn, overlay, include_persisted=True),
                lambda words: pg_relevance.document_counts(
                    conn, overlay, words, include_persisted=True
                ),
            )
            if plan is None:
                continue
            params = {**pg_relevance.relevance_params(plan), "live": [], "lim": 21, "off": 0}
            sql = pg_relevance.session_relevance_sql(plan, compiled)
            full_wall, full_cpu, full = _best(conn, partial(_fetch, conn, sql, params))
            walk_wall, walk_cpu, (walked, depth) = _best(
                conn, partial(impact.ranked, conn, plan, compiled, params)
            )
            held = pg_relevance.stored_counts(conn, plan.terms)
            rows.append(
                f"| {label} ({documents:,} documents) | `{question}` | "
                f"{', '.join(f'{t} {held.get(t, 0):,}' for t in plan.terms)} | "
                f"{full_wall:,.0f} ms ({full_cpu:,.0f} ms CPU) | "
                f"**{walk_wall:,.0f} ms** ({walk_cpu:,.0f} ms CPU) | "
                f"{depth or 'every match'} | {'yes' if walked == full else '**NO**'} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database",
        action="append",
        required=True,
        help="LABEL=DSN of a filled team database (LABEL 'real' or 'generated' picks the "
        "questions)",
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    rows: list[str] = []
    for spec in args.database:
        label, _, dsn = spec.partition("=")
        rows += measure(label, dsn, QUESTIONS.get(label, QUESTIONS["real"]))
    section = (
        f"{SECTION}\n\n"
        "`python benchmarks/impact_bench.py` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        " (the module docstring says how the databases were filled), PostgreSQL 15 on the same "
        f"2-core machine, one client, load average {os.getloadavg()[0]:.1f}: the first page of "
        "a relevance session search (21 rows), every match ranked against the impact walk "
        "(`search.postgres.impact`), best of 3.\n\n"
        "| database | question | visible documents per searched word | every match ranked "
        "| impact walk | depth that answered | same rows |\n"
        "|---|---|---|---:|---:|---|---|\n" + "\n".join(rows) + "\n"
    )
    print(section)
    if args.output is not None:
        from report import replace_section

        replace_section(args.output, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
