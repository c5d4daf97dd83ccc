"""Relevance (or phrase) session search on PostgreSQL for the search-quality benchmark's
questions, with an earlier revision's source and this tree's side by side.

    python benchmarks/pg_questions.py --dsn 'host=/run/pg dbname=real user=reader' \\
        --before 4a4885b --output benchmarks/RESULTS.md

``--dsn`` names a team database already filled. For the figures in RESULTS.md: ``sessionquery
push`` of the real-size history of ``benchmarks/history.py HOME --transcripts 2000
--target-bytes 1.4e9``, then ``VACUUM ANALYZE`` and an open by the owner (as for
``impact_bench.py``), read as a member granted every workspace (``sessionquery team grant ROLE
'*'``: row-level security is in the way, as for a team). Every question of
``quality_questions.QUESTIONS`` is asked the way a tool asks it:
``SessionQuery.search_sessions(text, match="relevance", limit=20)`` (``--match phrase``:
``match="phrase"``, each question as one phrase; ``--common``: the few short questions of
common words of :data:`COMMON` in both modes instead) over ``PostgresPersistence`` and
``PostgresSearch`` of that database. The questions were written
for other transcripts; here they stand for what people type (their words, their length), and
what is measured is the cost of answering them at this size, not whether the right session
comes first.

Two worker processes answer them, one importing the ``--before`` revision's source
(``report.source_tree``) and one this tree's; each question is asked of both, in
alternating order (the first to ask warms the page cache for the second), once each; the
wall time of each answer is kept, and whether both gave the same sessions in the same order
with the same best events. The section is printed; ``--output FILE`` also replaces its
``## Relevance on PostgreSQL for the quality questions`` section (``## Phrase search on
PostgreSQL for the quality questions`` with ``--match phrase``, ``## PostgreSQL search of
common words at real size`` with ``--common``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SECTION = "## Relevance on PostgreSQL for the quality questions"
SECTIONS = {
    "relevance": SECTION,
    "phrase": "## Phrase search on PostgreSQL for the quality questions",
}
COMMON_SECTION = "## PostgreSQL search of common words at real size"

COMMON = (
    "the",
    "error",
    "function",
    "permission",
    "git commit",
    "permission denied",
    "run the tests",
    "fix the failing test",
    "where is the config",
    "update the readme",
)
"""Short questions of words that long tool outputs repeat (``--common``): the searches that
walk the bounded candidates (relevance's impact key, phrase's ``maxtf``) or rank every match."""

WORKER = r"""
import json, sys, time
from sessionquery import SessionQuery
from sessionquery.persistence.postgres import PostgresPersistence
from sessionquery.search.postgres import PostgresSearch

dsn, match = sys.argv[1], sys.argv[2]
with SessionQuery(persistence=PostgresPersistence(dsn), search=PostgresSearch(dsn)) as query:
    query.search_sessions("warm the connection", match=match, limit=20)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        text = json.loads(line)
        started = time.perf_counter()
        page = query.search_sessions(text, match=match, limit=20)
        ms = (time.perf_counter() - started) * 1000
        hits = [[hit.record.id, hit.best_match.seq] for hit in page.items]
        print(json.dumps({"ms": ms, "hits": hits}), flush=True)
"""


class _Worker:
    """A process answering questions with the source at ``src``."""

    def __init__(self, src: Path, dsn: str, match: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        self._process = subprocess.Popen(
            [sys.executable, "-c", WORKER, dsn, match],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._reply()

    def _reply(self) -> dict[str, Any]:
        out: IO[str] | None = self._process.stdout
        assert out is not None
        line = out.readline()
        if not line:
            raise RuntimeError(f"a worker ended ({self._process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def ask(self, text: str) -> dict[str, Any]:
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(json.dumps(text) + "\n")
        stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(samples: Sequence[float]) -> str:
    if not samples:
        return "—"
    over = sum(ms > 1000 for ms in samples)
    return (
        f"p50 {_pct(samples, 0.5):,.0f} ms, p90 {_pct(samples, 0.9):,.0f} ms, "
        f"max {max(samples):,.0f} ms; {over} of {len(samples)} over 1 s"
    )


def run(dsn: str, before: str, match: str = "relevance") -> str:
    from quality_questions import KINDS, QUESTIONS
    from report import source_tree

    repo = HERE.parent
    with tempfile.TemporaryDirectory(prefix="sq-before-") as into:
        workers = (
            _Worker(source_tree(before, Path(into)), dsn, match),
            _Worker(repo / "src", dsn, match),
        )
        times: list[dict[str, list[float]]] = [{}, {}]
        same = differ = 0
        for n, question in enumerate(QUESTIONS):
            order = (0, 1) if n % 2 == 0 else (1, 0)
            replies: dict[int, dict[str, Any]] = {}
            for side in order:
                replies[side] = workers[side].ask(question.text)
                times[side].setdefault(question.kind, []).append(replies[side]["ms"])
            if replies[0]["hits"] == replies[1]["hits"]:
                same += 1
            else:
                differ += 1
            print(
                f"{replies[0]['ms']:8.0f} {replies[1]['ms']:8.0f} ms  {question.text[:60]}",
                file=sys.stderr,
                flush=True,
            )
        for worker in workers:
            worker.close()
    rows = []
    for kind in KINDS:
        if kind in times[0]:
            rows.append(f"| {kind} | {_summary(times[0][kind])} | {_summary(times[1][kind])} |")
    every = [[ms for kind in side.values() for ms in kind] for side in times]
    rows.append(f"| **every question** | {_summary(every[0])} | **{_summary(every[1])}** |")
    (documents,) = _documents(dsn)
    return (
        f"{SECTIONS[match]}\n\n"
        f"`python benchmarks/pg_questions.py --before {before}"
        f"{'' if match == 'relevance' else ' --match ' + match}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} (the module docstring says how "
        f"the database was filled: {documents:,} index documents), PostgreSQL 15 on the same "
        f"2-core machine, load average {os.getloadavg()[0]:.1f}: the {len(QUESTIONS)} questions "
        "of the search-quality benchmark, each asked once of each source as a tool asks "
        f'(`search_sessions(text, match="{match}", limit=20)`), wall time.\n\n'
        f"| kind | source of {before} | this tree |\n|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nBoth gave the same sessions, in the same order with the same best events, for "
        f"{same} of {same + differ} questions.\n"
    )


def run_common(dsn: str, before: str) -> str:
    """:data:`COMMON`, each asked twice of each source in both match modes (alternating which
    source asks first); the best of the two wall times."""
    from report import source_tree

    repo = HERE.parent
    best: dict[tuple[str, str, int], float] = {}
    same = differ = 0
    with tempfile.TemporaryDirectory(prefix="sq-before-") as into:
        old = source_tree(before, Path(into))
        for match in ("relevance", "phrase"):
            workers = (_Worker(old, dsn, match), _Worker(repo / "src", dsn, match))
            for n, text in enumerate(COMMON * 2):
                replies: dict[int, dict[str, Any]] = {}
                for side in (0, 1) if n % 2 == 0 else (1, 0):
                    replies[side] = workers[side].ask(text)
                    key = (match, text, side)
                    best[key] = min(best.get(key, float("inf")), replies[side]["ms"])
                if replies[0]["hits"] == replies[1]["hits"]:
                    same += 1
                else:
                    differ += 1
            for worker in workers:
                worker.close()
    rows = [
        f"| `{text}` | {best['relevance', text, 0]:,.0f} ms | **{best['relevance', text, 1]:,.0f} "
        f"ms** | {best['phrase', text, 0]:,.0f} ms | **{best['phrase', text, 1]:,.0f} ms** |"
        for text in COMMON
    ]
    (documents,) = _documents(dsn)
    return (
        f"{COMMON_SECTION}\n\n"
        f"`python benchmarks/pg_questions.py --common --before {before}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} (the module docstring says how "
        f"the database was filled: {documents:,} index documents), PostgreSQL 15 on the same "
        f"2-core machine, load average {os.getloadavg()[0]:.1f}: short questions of common "
        "words, each asked twice of each source as a tool asks "
        "(`search_sessions(text, match=..., limit=20)`), the better wall time of the two.\n\n"
        f"| question | relevance, {before} | relevance, this tree | phrase, {before} "
        "| phrase, this tree |\n|---|---:|---:|---:|---:|\n"
        + "\n".join(rows)
        + "\n\nBoth gave the same sessions, in the same order with the same best events, for "
        f"{same} of {same + differ} searches.\n"
    )


def _documents(dsn: str) -> tuple[int]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM sqi_docs").fetchone()
    return (int(row[0]) if row else 0,)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="a filled team database")
    parser.add_argument("--before", required=True, help="the earlier revision to compare")
    parser.add_argument(
        "--match", choices=sorted(SECTIONS), default="relevance", help="how the questions match"
    )
    parser.add_argument(
        "--common",
        action="store_true",
        help="short questions of common words instead, in both match modes",
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    from team_bench import publish

    if args.common:
        publish(run_common(args.dsn, args.before), args.output)
    else:
        publish(run(args.dsn, args.before, args.match), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
