"""Queries of 100,000 words under a deadline, in every mode, on both backends and through the tools.

    python benchmarks/long_queries.py                       # SQLite and a throwaway PostgreSQL
    python benchmarks/long_queries.py --no-postgres --output benchmarks/RESULTS.md

SPEC §13.3: a search answers or is ``ABORTED`` within its deadline + 100 ms, whatever the
query. A query of many distinct words used to become one search expression, which SQLite
prepares in time quadratic in its terms before any deadline can interrupt it (a 100,000-word
``words`` query took 193 s). Over a generated corpus (``corpus.py``, JSONL store), indexed
once per backend without a deadline, each query below is sent ``--reps`` times with a 500 ms
deadline, in each mode (``phrase``, ``words``, ``relevance``), to
``SessionQuery.search_sessions`` and through ``SessionQueryTools`` (``session_search``,
``search_timeout_ms=500``, relevance and phrase, whose fallback is ``words``):

* **absent**: 100,000 distinct words no document holds;
* **pasted**: 100,000 words of the corpus's own vocabulary, in order (a pasted log);
* **mixed**: 100,000 distinct words whose first 500 the corpus holds.

The figure is the worst wall time of a call (request to answer or ``ABORTED``) and, for
SQLite, where the whole search runs in the calling thread, its CPU time (``thread_time``),
which a loaded machine does not stretch. Through the tools, reading the 800 kB of JSON
arguments happens before the deadline starts and is timed apart.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus import CorpusSpec, generate  # noqa: E402

__all__ = ["main", "measure"]

SECTION = "## Queries of 100,000 words under a deadline"
DEADLINE_S = 0.5
SLACK_S = 0.1
WORDS = 100_000
MODES = ("phrase", "words", "relevance")
TOOL_MATCHES = ("relevance", "phrase")


def _queries(vocabulary: Sequence[str]) -> dict[str, str]:
    absent = [f"zq{n:x}q" for n in range(WORDS)]
    pasted = [vocabulary[n % len(vocabulary)] for n in range(WORDS)]
    mixed = [*vocabulary[:500], *absent[: WORDS - 500]]
    return {"absent": " ".join(absent), "pasted": " ".join(pasted), "mixed": " ".join(mixed)}


def _vocabulary(root: Path) -> list[str]:
    """Distinct words of the corpus's indexed texts (as the index tokenises ASCII text), in the
    order they first appear: every one of them is held by some document."""
    from sessionquery import JsonlPersistence

    store = JsonlPersistence(root)
    seen: dict[str, None] = {}
    for entry in store.list()[:100]:
        for document in store.read_documents(entry.header.id).documents:
            for word in re.findall(r"[a-z0-9]+", document.text.lower()):
                seen.setdefault(word, None)
    return list(seen)


@contextmanager
def _postgres(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    from postgres_support import running_server

    with running_server() as server:
        yield server.new_database()


def _timed(call: Callable[[], str]) -> tuple[float, float, str]:
    wall, cpu = time.perf_counter(), time.thread_time()
    outcome = call()
    return time.perf_counter() - wall, time.thread_time() - cpu, outcome


def _measure_backend(name: str, search: Any, root: Path, queries: dict[str, str], reps: int) -> Any:
    from sessionquery import JsonlPersistence, SessionQuery, SessionQueryError, SessionQueryTools
    from sessionquery.query.cancel import CancelToken
    from sessionquery.tools import ToolCaller

    rows: dict[str, Any] = {}
    with SessionQuery(persistence=JsonlPersistence(root), search=search) as query:
        search.update(query.corpus)  # built once, without a deadline
        for mode in MODES:
            for label, text in queries.items():

                def call(text: str = text, mode: str = mode) -> str:
                    try:
                        page = query.search_sessions(
                            text,
                            match=mode,  # type: ignore[arg-type]
                            cancel=CancelToken.after(DEADLINE_S),
                        )
                    except SessionQueryError as error:
                        return error.code.value
                    return f"{len(page.items)} hits"

                rows[f"{mode} / {label}"] = [_timed(call) for _ in range(reps)]
        tools = SessionQueryTools(query, search_timeout_ms=int(DEADLINE_S * 1000))
        caller = ToolCaller(cwd="/home/dev/src/billing-api")
        for match in TOOL_MATCHES:
            for label, text in queries.items():
                arguments = json.dumps({"query": text, "match": match})
                began = time.perf_counter()
                json.loads(arguments)
                parse_s = time.perf_counter() - began

                def tool(arguments: str = arguments) -> str:
                    result = tools.call("session_search", arguments, caller)
                    return result.code or "answered"

                runs = [_timed(tool) for _ in range(reps)]
                rows[f"tools `{match}` / {label}"] = [
                    (wall - 2 * parse_s, cpu - 2 * parse_s, outcome) for wall, cpu, outcome in runs
                ]
    return {"backend": name, "rows": rows}


def measure(work: Path, reps: int, postgres: bool, dsn: str | None) -> dict[str, Any]:
    """Every figure; the corpus is generated into ``work`` when missing."""
    from sessionquery.search.sqlite import SqliteSearch

    root = work / "store"
    if not root.exists():
        generate(root, CorpusSpec(sessions=300, events=30_000))
    queries = _queries(_vocabulary(root))
    result: dict[str, Any] = {"load": os.getloadavg(), "reps": reps, "backends": []}
    index = work / "index.sqlite3"
    for stale in work.glob("index.sqlite3*"):
        stale.unlink()
    with SqliteSearch(index) as search:
        result["backends"].append(_measure_backend("SQLite", search, root, queries, reps))
    if postgres:
        from sessionquery.search.postgres import PostgresSearch

        with _postgres(dsn) as database, PostgresSearch(database) as search:
            result["backends"].append(_measure_backend("PostgreSQL", search, root, queries, reps))
    result["load_after"] = os.getloadavg()
    return result


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _cells(backend: str, runs: Sequence[Sequence[Any]]) -> tuple[str, str, str, str]:
    """Outcome, worst wall, worst CPU and the verdict of one row's runs."""
    outcomes = sorted({str(outcome) for _wall, _cpu, outcome in runs})
    wall = max(float(w) for w, _c, _o in runs)
    cpu = max(float(c) for _w, c, _o in runs)
    local = backend == "SQLite"
    verdict = "✓" if (cpu if local else wall) <= DEADLINE_S + SLACK_S else "✗"
    shown_cpu = _ms(cpu) if local else f"{_ms(cpu)} (client only)"
    outcome = ", ".join(o.removeprefix("SESSION_QUERY_") for o in outcomes)
    return outcome, _ms(wall), shown_cpu, verdict


def render(result: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    """The Markdown section of one run (with ``before``: an older version's run beside it)."""
    load = ", ".join(f"{value:.1f}" for value in result["load"])
    after = ", ".join(f"{value:.1f}" for value in result["load_after"])
    head = "| backend | mode / query | outcome | worst wall | worst CPU (this thread) | |"
    rule = "|---|---|---|---:|---:|---|"
    if before is not None:
        head += " before: outcome | before: worst wall | before: worst CPU |"
        rule += "---|---:|---:|"
    lines = [
        SECTION,
        "",
        f"`benchmarks/long_queries.py`: a generated corpus of 300 sessions / 30,000 events "
        f"(JSONL store), indexed once; each query {result['reps']} times with a "
        f"{_ms(DEADLINE_S)} deadline (target: answered or `ABORTED` within "
        f"{_ms(DEADLINE_S + SLACK_S)}). Load average {load} before, {after} after (2 cores).",
        "",
        head,
        rule,
    ]
    earlier = {b["backend"]: b["rows"] for b in (before or {}).get("backends", [])}
    for backend in result["backends"]:
        for name, runs in backend["rows"].items():
            outcome, wall, cpu, verdict = _cells(backend["backend"], runs)
            row = f"| {backend['backend']} | {name} | {outcome} | {wall} | {cpu} | {verdict} |"
            old = earlier.get(backend["backend"], {}).get(name)
            if before is not None:
                if old is None:
                    row += " not measured | | |"
                else:
                    b_outcome, b_wall, b_cpu, _verdict = _cells(backend["backend"], old)
                    row += f" {b_outcome} | {b_wall} | {b_cpu} |"
            lines.append(row)
    lines += [
        "",
        "The verdict compares SQLite's CPU time (the whole search runs in the calling thread) "
        "and PostgreSQL's wall time (its CPU column is the client's part only; the server's "
        "runs in its own process) with the target. Tool rows exclude reading the JSON "
        "arguments, which happens before the deadline starts.",
    ]
    if before is not None:
        b_load = ", ".join(f"{value:.1f}" for value in before["load"])
        lines.append(
            f"The *before* columns are a run of {before.get('label', 'an older version')} "
            f"on the same corpus just before (load average {b_load})."
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workdir", help="where the corpus and indexes go (default: a temp dir)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--dsn", help="a PostgreSQL database to use instead of a throwaway one")
    parser.add_argument("--output", help="a Markdown file whose section is replaced")
    parser.add_argument("--json", help="also write the raw figures to this file")
    parser.add_argument("--before-json", help="the --json of an older version's run, shown beside")
    parser.add_argument("--before-label", default="the previous version")
    args = parser.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="sq-long-queries-"))
    work.mkdir(parents=True, exist_ok=True)
    result = measure(work, args.reps, not args.no_postgres, args.dsn)
    before = None
    if args.before_json:
        before = {**json.loads(Path(args.before_json).read_text()), "label": args.before_label}
    section = render(result, before)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.output:
        from report import replace_section  # beside this script

        replace_section(Path(args.output), section)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
