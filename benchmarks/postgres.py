"""The PostgreSQL backend beside the SQLite one, on the same generated corpus.

    python benchmarks/postgres.py                 # 1k sessions / 100k events
    python benchmarks/postgres.py --quick         # 60 sessions / 4k events
    python benchmarks/postgres.py --dsn postgresql://...   # use an existing, empty database

Without ``--dsn`` a throwaway cluster is started (as the tests do: ``initdb`` + ``pg_ctl`` into a
temporary directory, unix socket only; ``fsync=off``, so commit latency is not measured). One
corpus is generated into a JSONL store and copied into a ``PostgresPersistence``; then, side by
side: the full index build (``SqliteSearch`` over the JSONL store, ``PostgresSearch`` over the
PostgreSQL store), no-change ``search_sessions`` latency per query class, and the reconcile
after ten events were appended to one session. Every query class is paged to the end on both
backends and the hits (session, best event, surface, snippet, order) are compared.

The section is printed; with ``--output FILE`` it also replaces the ``## PostgreSQL backend``
section of that Markdown file (e.g. ``benchmarks/RESULTS.md``). ``run.py`` runs this module as
one of its topics and appends what it prints.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus import CorpusManifest, CorpusSpec, generate  # noqa: E402

from sessionquery import CwdIn, JsonlPersistence, SessionEvent, SessionQuery, TypeIn  # noqa: E402

SECTION = "## PostgreSQL backend"
TIMES = "\u00d7"
FULL = CorpusSpec(sessions=1000, events=100_000)
QUICK = CorpusSpec(sessions=60, events=4000)


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{_fmt(p50)} / {_fmt(p95)}"


def _fmt(ms: float) -> str:
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.0f} ms"


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def backend_cpu(dsn: str) -> float:
    """CPU seconds the server's processes serving ``dsn``'s database have used so far (from
    ``/proc``: the server runs on this machine), client backends only: this monitor's own
    backend and the server's workers (autovacuum after a bulk load) are left out."""
    import psycopg

    tick = os.sysconf("SC_CLK_TCK")
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchall()
    total = 0.0
    for (pid,) in rows:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _cpu(fn: Callable[[], Any], reps: int, dsn: str | None = None) -> float:
    """Mean CPU milliseconds of one call: this process's, plus the database server's for
    ``dsn`` (load inflates it far less than wall time)."""
    server = backend_cpu(dsn) if dsn else 0.0
    started = time.process_time()
    for _ in range(reps):
        fn()
    used = time.process_time() - started
    if dsn:
        used += backend_cpu(dsn) - server
    return used * 1000 / reps


def _timed(fn: Callable[[], Any], reps: int) -> list[float]:
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


@contextmanager
def _server(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    from postgres_support import running_server

    with running_server() as server:
        yield server.new_database()


def queries(manifest: CorpusManifest) -> list[dict[str, Any]]:
    """The query classes of the SQLite benchmark, from words known to be in the corpus."""
    return [
        {"name": "rare word", "text": manifest.rare_word},
        {"name": "common word", "text": manifest.common_word},
        {"name": "two-word phrase", "text": manifest.phrase},
        {
            "name": "filtered",
            "text": manifest.filter_word,
            "session_filters": [CwdIn((manifest.workspaces[0],))],
            "event_filters": [TypeIn(("assistant/message", "tool/result"))],
        },
    ]


def _search(service: SessionQuery, query: dict[str, Any], **extra: Any) -> Any:
    return service.search_sessions(
        query["text"],
        session_filters=query.get("session_filters", ()),
        event_filters=query.get("event_filters", ()),
        **extra,
    )


def _all_hits(service: SessionQuery, query: dict[str, Any], **extra: Any) -> list[tuple[Any, ...]]:
    hits: list[tuple[Any, ...]] = []
    cursor = None
    while True:
        page = _search(service, query, limit=100, cursor=cursor, **extra)
        hits += [
            (h.record.header.id, h.best_match.seq, h.best_match.surface, h.best_match.snippet)
            for h in page.items
        ]
        cursor = page.next_cursor
        if cursor is None:
            return hits


def _copy(jsonl: JsonlPersistence, target: Any) -> tuple[float, int]:
    started = time.perf_counter()
    events = 0
    for entry in jsonl.list():
        with jsonl.open_read(entry.header.id) as reader:
            inherited, log = reader.inherited_event_count, reader.read()
        with target.create(entry.header, inherited_event_count=inherited) as writer:
            writer.append(log)
        events += len(log)
    return time.perf_counter() - started, events


def _append_turn(store: Any, session_id: str) -> None:
    with store.open_read(session_id) as reader:
        log = reader.read()
    seq, at = len(log), log[-1].time
    turn = 1 + max((e.data["turn"] for e in log if e.type == "turn/end"), default=0)
    text = {"type": "text", "text": "please rerun the flaky benchmark zyxwvut"}
    batch = []
    for i in range(3):
        batch += [
            SessionEvent("turn/start", seq, at, {"turn": turn + i}),
            SessionEvent(
                "user/message",
                seq + 1,
                at,
                {"id": f"b{seq}", "role": "user", "content": [text], "source": {"kind": "user"}},
                "append",
            ),
            SessionEvent(
                "turn/end", seq + 2, at, {"turn": turn + i, "reason": {"kind": "completed"}}
            ),
        ]
        seq += 3
    batch.append(SessionEvent("custom/marker", seq, at, {}))
    with store.open_write(session_id) as writer:
        writer.append(batch)


def measure(spec: CorpusSpec, dsn: str, reps: int) -> dict[str, Any]:
    """Every figure of the section, for one corpus."""
    from sessionquery.persistence.postgres import PostgresPersistence
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch

    work = Path(tempfile.mkdtemp(prefix="sessionquery-pgbench-"))
    out: dict[str, Any] = {"load_before": os.getloadavg()}
    try:
        manifest = generate(work / "store", spec)
        out["manifest"] = manifest
        jsonl = JsonlPersistence(work / "store")
        pg_store = PostgresPersistence(dsn)
        out["copy_s"], out["events"] = _copy(jsonl, pg_store)
        lite_index = SqliteSearch(work / "index.sqlite")
        pg_index = PostgresSearch(dsn)
        lite = SessionQuery(persistence=jsonl, search=lite_index)
        pg = SessionQuery(persistence=pg_store, search=pg_index)
        for name, index, service in (("sqlite", lite_index, lite), ("postgres", pg_index, pg)):
            started = time.perf_counter()
            update = index.update(service.corpus)
            out[f"build_{name}"] = (time.perf_counter() - started, update.documents_written)
        out["classes"] = []
        for query in queries(manifest):
            row: dict[str, Any] = {"name": query["name"], "text": query["text"]}
            a, b = _all_hits(lite, query), _all_hits(pg, query)
            row["hits"] = len(a)
            row["same"] = a == b
            row["differences"] = [
                (i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y
            ][:3]
            row["sqlite"] = _timed(partial(_search, lite, query, limit=20), reps)
            row["postgres"] = _timed(partial(_search, pg, query, limit=20), reps)
            out["classes"].append(row)
        from search_cost import relevance_questions

        out["relevance"] = []
        for kind, texts in relevance_questions(str(work / "index.sqlite")).items():
            for text in texts:
                query = {"name": f"relevance, {kind}", "text": text}
                a = _all_hits(lite, query, match="relevance")
                b = _all_hits(pg, query, match="relevance")
                out["relevance"].append(
                    {
                        "name": query["name"],
                        "text": text,
                        "hits": len(a),
                        "same": a == b,
                        "sqlite": _timed(
                            partial(_search, lite, query, limit=20, match="relevance"), reps
                        ),
                        "postgres": _timed(
                            partial(_search, pg, query, limit=20, match="relevance"), reps
                        ),
                        "sqlite_cpu": _cpu(
                            partial(_search, lite, query, limit=20, match="relevance"), reps
                        ),
                        "postgres_cpu": _cpu(
                            partial(_search, pg, query, limit=20, match="relevance"), reps, dsn
                        ),
                    }
                )
        phrase = queries(manifest)[2]
        out["words_sqlite"] = _timed(partial(_search, lite, phrase, limit=20, match="words"), reps)
        out["words_postgres"] = _timed(partial(_search, pg, phrase, limit=20, match="words"), reps)
        a = _all_hits(lite, phrase, match="words")
        out["words_same"] = (len(a), a == _all_hits(pg, phrase, match="words"))
        session = manifest.small_session
        for name, store, index, service in (
            ("sqlite", jsonl, lite_index, lite),
            ("postgres", pg_store, pg_index, pg),
        ):
            index.update(service.corpus)
            samples, nochange = [], []
            for _ in range(max(3, reps // 3)):
                _append_turn(store, session)
                started = time.perf_counter()
                update = index.update(service.corpus)
                samples.append((time.perf_counter() - started) * 1000)
                assert update.persisted_indexed == 1, update
                nochange += _timed(partial(index.update, service.corpus), 3)
            out[f"reconcile_{name}"] = samples
            out[f"nochange_{name}"] = nochange
        found_lite = [h.record.header.id for h in lite.search_sessions("zyxwvut").items]
        found_pg = [h.record.header.id for h in pg.search_sessions("zyxwvut").items]
        out["reconcile_same"] = found_lite == found_pg == [session]
        for closable in (lite, pg, lite_index, pg_index, pg_store):
            closable.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["load_after"] = os.getloadavg()
    return out


def render(spec: CorpusSpec, r: dict[str, Any]) -> str:
    """The Markdown section for the results ``r``."""
    m: CorpusManifest = r["manifest"]
    events = r["events"]
    lines = [
        SECTION,
        "",
        f"Generated by `python benchmarks/postgres.py` on {_now()}: "
        f"{m.sessions:,} sessions / {m.events:,} events ({m.documents:,} documents), the SQLite "
        "benchmark's generator. PostgreSQL 15 in a throwaway cluster on the same machine "
        "(unix socket, `fsync=off`). Load average before/after: "
        f"{', '.join(f'{x:.1f}' for x in r['load_before'])} / "
        f"{', '.join(f'{x:.1f}' for x in r['load_after'])}; **measured while other work "
        "shared the two cores**, so the absolute figures are noisy; the ratios are side by side.",
        "",
        "| step | SQLite backend | PostgreSQL backend | PostgreSQL ÷ SQLite |",
        "|---|---:|---:|---:|",
        f"| copy the store into PostgreSQL (`create`/`append`/`flush`) | — | {r['copy_s']:.1f} s "
        f"({events / r['copy_s']:,.0f} events/s) | — |",
    ]
    (ls, ld), (ps, pd) = r["build_sqlite"], r["build_postgres"]
    lines.append(
        f"| full index build | {ls:.1f} s ({events / ls:,.0f} events/s, {ld:,} docs) | "
        f"{ps:.1f} s ({events / ps:,.0f} events/s, {pd:,} docs) | {ps / ls:.2f}{TIMES} time |"
    )
    for row in r["classes"]:
        a, b = statistics.median(row["sqlite"]), statistics.median(row["postgres"])
        lines.append(
            f"| search: {row['name']} (`{row['text']}`), p50 / p95 | {_ms(row['sqlite'])} | "
            f"{_ms(row['postgres'])} | {b / a:.2f}{TIMES} |"
        )
    a, b = statistics.median(r["words_sqlite"]), statistics.median(r["words_postgres"])
    lines.append(
        f'| search: two-word phrase as `match="words"`, p50 / p95 | {_ms(r["words_sqlite"])} | '
        f"{_ms(r['words_postgres'])} | {b / a:.2f}{TIMES} |"
    )
    for row in r.get("relevance", []):
        a, b = statistics.median(row["sqlite"]), statistics.median(row["postgres"])
        lines.append(
            f"| search: {row['name']} (`{row['text']}`), p50 / p95 | {_ms(row['sqlite'])} | "
            f"{_ms(row['postgres'])} | {b / a:.2f}{TIMES} |"
        )
    for label, key in (
        ("reconcile after 10 events appended to 1 session", "reconcile"),
        ("no-change reconcile", "nochange"),
    ):
        a, b = statistics.median(r[f"{key}_sqlite"]), statistics.median(r[f"{key}_postgres"])
        lines.append(
            f"| {label}, p50 / p95 | {_ms(r[f'{key}_sqlite'])} | {_ms(r[f'{key}_postgres'])} | "
            f"{b / a:.2f}{TIMES} |"
        )
    if r.get("relevance"):
        lines += [
            "",
            "The relevance searches again as CPU time (mean of the same repetitions; "
            "PostgreSQL's is this process's plus the server processes' of the database, read "
            "from `/proc`), which the machine's load inflates far less than wall time:",
            "",
            "| relevance question | SQLite CPU | PostgreSQL CPU | PostgreSQL ÷ SQLite |",
            "|---|---:|---:|---:|",
        ]
        for row in r["relevance"]:
            a, b = row["sqlite_cpu"], row["postgres_cpu"]
            lines.append(
                f"| {row['name']} (`{row['text']}`) | {_fmt(a)} | {_fmt(b)} | {b / a:.2f}{TIMES} |"
            )
        lines.append("")
    lines += [
        "",
        "Identical results (every page of each class, limit 100: session, best event, "
        "surface, snippet, order):",
        "",
    ]
    for row in r["classes"]:
        verdict = "identical" if row["same"] else f"**differs**: {row['differences']}"
        lines.append(f"* {row['name']}: {row['hits']:,} sessions, {verdict}")
    count, same = r["words_same"]
    verdict = "identical" if same else "**differs**"
    lines.append(f'* two-word phrase as `match="words"`: {count:,} sessions, {verdict}')
    for row in r.get("relevance", []):
        verdict = "identical" if row["same"] else "**differs**"
        lines.append(f"* {row['name']} (`{row['text']}`): {row['hits']:,} sessions, {verdict}")
    verdict = "identical" if r["reconcile_same"] else "**differs**"
    lines += [f"* the appended events, searched after the reconcile: {verdict}", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny corpus")
    parser.add_argument("--dsn", help="an existing, empty PostgreSQL database to use")
    parser.add_argument("--output", help="Markdown file whose section to replace")
    args = parser.parse_args(argv)
    spec = QUICK if args.quick else FULL
    reps = 3 if args.quick else 15
    with _server(args.dsn) as dsn:
        results = measure(spec, dsn, reps)
    section = render(spec, results)
    if args.output:
        from report import replace_section  # beside this script

        replace_section(Path(args.output), section)
    print(section, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
