"""Search cost: one huge repetitive event, deadlines, and filtered vs unfiltered searches.

    python benchmarks/search_cost.py                      # long-event rows only
    python benchmarks/search_cost.py --root STORE --index INDEX.db   # + a built corpus

Rows:

* **Long events**: one event of 4 MB repeating the searched word (and 1.5 MB), answered by
  ``search_sessions`` and ``search_events`` (wall clock, index already built); then the same
  1.5 MB search with a 1 s deadline (time until it returns hits or ``ABORTED``).
* **Corpus rows** (with ``--root``/``--index``, as ``run.py`` passes for its largest corpus):
  the two-word phrase and the most common word, unfiltered and workspace-filtered
  (``CwdIn`` of the busiest workspace), p50/p95 of no-change searches, side by side; then
  ``match="relevance"`` for questions of 3-6 ordinary words and for one of the six most
  common words (made from the index's own vocabulary), and FTS5's raw ``bm25()`` top 20
  events for the same ordinary questions (the floor: no sessions, titles or boosts).

Run on its own it replaces its own ``## Search cost`` section of ``RESULTS.md``; ``run.py``
appends the same section to the file it writes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SECTION = "## Search cost"


def _timed(call: Any, reps: int, budget_s: float = 20.0) -> list[float]:
    samples: list[float] = []
    spent = 0.0
    for index in range(reps):
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        samples.append(elapsed * 1000)
        spent += elapsed
        if spent > budget_s and index >= 2:
            break
    return samples


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))],
        "n": len(ordered),
    }


def one_session(store: Any, session_id: str, texts: list[str]) -> None:
    """Record one finished session whose user messages are ``texts``."""
    session = store.create(session_id, cwd="/bench")
    session.append("turn/start", {"turn": 0})
    for number, text in enumerate(texts):
        content = [{"type": "text", "text": text}]
        data = {"id": f"m{number}", "role": "user", "source": {"kind": "user"}}
        session.append("user/message", {**data, "content": content}, surface_op="append")
    session.append("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
    store.close(session_id)


def long_events(reps: int, sizes: tuple[float, float]) -> dict[str, Any]:
    """The huge-event rows (events of ``sizes`` MB; the deadline row on the second), on a
    fresh store and index in a temporary directory."""
    from sessionquery import (
        CancelToken,
        JsonlPersistence,
        SessionQuery,
        SessionQueryError,
        SessionStore,
    )
    from sessionquery.search.sqlite import SqliteSearch

    out: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="sq-search-cost-"))
    try:
        for megabytes in sizes:
            root = work / f"store-{megabytes}"
            persistence = JsonlPersistence(root)
            store = SessionStore(persistence)
            one_session(store, "big", ["a first word", "word " * int(megabytes * 2e5)])
            one_session(store, "small", ["the word once", "no match here"])
            search = SqliteSearch(work / f"index-{megabytes}.db")
            with SessionQuery(persistence=persistence, search=search) as service:
                service.search_sessions("word")  # builds the index
                row: dict[str, Any] = {}
                for query in ("word", "word word"):
                    sessions = _timed(lambda q=query: service.search_sessions(q), reps)
                    events = _timed(lambda q=query: service.search_events("big", q), reps)
                    row[query] = {"sessions": _summary(sessions), "events": _summary(events)}
                if megabytes == sizes[1]:
                    started = time.perf_counter()
                    try:
                        service.search_sessions(
                            "word word", cancel=CancelToken(deadline=time.monotonic() + 1.0)
                        )
                        outcome = "hits"
                    except SessionQueryError as exc:
                        outcome = exc.code.value
                    row["deadline"] = {
                        "ms": (time.perf_counter() - started) * 1000,
                        "outcome": outcome,
                    }
                out[f"{megabytes:g} MB"] = row
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def relevance_questions(index: str, *, seed: int = 23) -> dict[str, list[str]]:
    """Questions made from the index's own vocabulary: five of 3 to 6 ordinary words (held by
    0.1 % to 3 % of the documents) in a question's frame, and one of the six most common
    words."""
    import random

    import apsw

    conn = apsw.Connection(index, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, doc_fts, row)")
        rows = [(str(t), int(d)) for t, d in conn.execute("SELECT term, doc FROM temp.v")]
        total = sum(1 for _ in conn.execute("SELECT 1 FROM main.doc_rows"))
    finally:
        conn.close()
    ordinary = sorted(
        term
        for term, docs in rows
        if total / 1000 <= docs <= total / 33 and term.isalpha() and len(term) > 3
    )
    rng = random.Random(seed)
    frames = ("how did we {}", "{} again?", "where was the {}", "what broke {}", "{}")
    questions = [
        rng.choice(frames).format(" ".join(rng.sample(ordinary, size))) for size in (3, 4, 5, 6, 4)
    ]
    common = [term for term, _docs in sorted(rows, key=lambda row: -row[1])[:6]]
    return {"ordinary": questions, "common": [" ".join(common)]}


def corpus_rows(root: str, index: str, manifest: dict[str, Any], reps: int) -> dict[str, Any]:
    """Phrase and common word, unfiltered and workspace-filtered, on a built index; the
    relevance questions beside them, and a raw FTS5 ``bm25()`` top 20 of the same words."""
    from sessionquery import CwdIn, JsonlPersistence, SessionQuery
    from sessionquery.search.sqlite import SqliteSearch

    search = SqliteSearch(index)
    out: dict[str, Any] = {}
    with SessionQuery(persistence=JsonlPersistence(root), search=search) as service:
        workspace = manifest["workspaces"][0]
        for name, text in (
            ("two-word phrase", manifest["phrase"]),
            ("most common word", manifest["common_word"]),
        ):
            for scope, filters in (("unfiltered", []), ("workspace", [CwdIn((workspace,))])):

                def run(t: str = text, f: list[Any] = filters) -> Any:
                    return service.search_sessions(t, session_filters=f, limit=20)

                run()
                out[f"{name} / {scope}"] = _summary(_timed(run, reps))
        questions = relevance_questions(index)
        out["questions"] = questions
        for kind, texts in questions.items():
            label = (
                "relevance, 3-6 ordinary words"
                if kind == "ordinary"
                else ("relevance, the 6 most common words")
            )
            for scope, filters in (("unfiltered", []), ("workspace", [CwdIn((workspace,))])):
                samples: list[float] = []
                for text in texts:

                    def ask(t: str = text, f: list[Any] = filters) -> Any:
                        return service.search_sessions(
                            t, session_filters=f, limit=20, match="relevance"
                        )

                    ask()
                    samples += _timed(ask, max(3, reps // len(texts)))
                out[f"{label} / {scope}"] = _summary(samples)
        out["raw bm25() OR top 20 events, 3-6 ordinary words"] = _summary(
            _raw_bm25(index, questions["ordinary"], reps)
        )
    out["profile"] = common_word_profile(index, manifest["common_word"])
    return out


def _raw_bm25(index: str, questions: list[str], reps: int) -> list[float]:
    """The floor: FTS5's own ``bm25()`` over an ``OR`` of a question's words, the 20 best
    events (no sessions, titles or boosts), on the same index."""
    import apsw

    conn = apsw.Connection(index, flags=apsw.SQLITE_OPEN_READONLY)
    samples: list[float] = []
    try:
        for question in questions:
            expression = " OR ".join(f'"{word}"' for word in question.split() if word.isalpha())

            def run(e: str = expression) -> Any:
                return conn.execute(
                    "SELECT rowid FROM doc_fts WHERE doc_fts MATCH ? ORDER BY bm25(doc_fts) "
                    "LIMIT 20",
                    (e,),
                ).fetchall()

            run()
            samples += _timed(run, max(3, reps // len(questions)))
    finally:
        conn.close()
    return samples


def common_word_profile(index: str, word: str) -> dict[str, float]:
    """Where the commonest word's time goes: ways of getting every matching document's span
    count, on the index's own SQLite (APSW) and, for the older ways, on ``sqlite3``."""
    import sqlite3

    import apsw

    from sessionquery.search.sqlite import db

    phrase = f'"{word}"'
    native = apsw.Connection(
        f"file:{index}?mode=ro", flags=apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY
    )
    db.install_functions(native)
    old = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    old.execute("CREATE VIRTUAL TABLE temp.bench_vocab USING fts5vocab(main, doc_fts, instance)")
    steps: dict[str, tuple[Any, str, str]] = {
        "enumerate the matching documents (FTS5 MATCH, rowids only)": (
            native,
            "SELECT sum(rowid & 1) FROM doc_fts WHERE doc_fts MATCH ?",
            phrase,
        ),
        "every document's span count from FTS5's instance data (APSW, used)": (
            native,
            f"SELECT sum(c) FROM (SELECT {db.MATCH_SPANS}(doc_fts, 0) AS c FROM doc_fts "
            "WHERE doc_fts MATCH ? LIMIT -1)",
            phrase,
        ),
        "instance vocabulary rows grouped per document (sqlite3, earlier)": (
            old,
            "SELECT count(*) FROM (SELECT doc, count(*) FROM temp.bench_vocab "
            "WHERE term = ? GROUP BY doc)",
            word,
        ),
        "highlight() every matching document (sqlite3, earlier)": (
            old,
            "SELECT sum(h) FROM (SELECT length(highlight(doc_fts, 0, '!', '')) AS h "
            "FROM doc_fts WHERE doc_fts MATCH ? LIMIT -1)",
            phrase,
        ),
    }
    out = {}
    try:
        for label, (conn, sql, argument) in steps.items():
            samples = _timed(lambda c=conn, q=sql, a=argument: c.execute(q, (a,)).fetchall(), 3)
            out[label] = min(samples)
        return out
    finally:
        native.close()
        old.close()


TARGETS = {
    "two-word phrase / unfiltered": 30.0,
    "two-word phrase / workspace": 30.0,
    "most common word / unfiltered": 300.0,
    "most common word / workspace": 300.0,
    "relevance, 3-6 ordinary words / workspace": 50.0,
    "relevance, the 6 most common words / workspace": 300.0,
}
"""Issue targets for the p50 of the corpus rows (milliseconds)."""


def measure(
    *, quick: bool, root: str | None = None, index: str | None = None, manifest: Any = None
) -> dict[str, Any]:
    """Every row this module measures (``root``/``index``/``manifest``: a built corpus)."""
    reps = 3 if quick else 7
    results: dict[str, Any] = {"load_before": os.getloadavg(), "quick": quick}
    results["long"] = long_events(reps, (0.2, 0.1) if quick else (4.0, 1.5))
    if root and index and manifest:
        results["corpus"] = corpus_rows(root, index, manifest, 5 if quick else 30)
    results["load_after"] = os.getloadavg()
    return results


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def render(results: dict[str, Any]) -> str:
    """The ``## Search cost`` section."""
    load = ", ".join(f"{x:.1f}" for x in results["load_before"])
    lines = [
        SECTION,
        "",
        f"Load average before: {load} (2 shared cores; other work ran beside this).",
        "",
        "| event | query | `search_sessions` p50 / p95 | `search_events` p50 / p95 |",
        "|---|---|---:|---:|",
    ]
    deadline = None
    for size, row in results["long"].items():
        for query in ("word", "word word"):
            s, e = row[query]["sessions"], row[query]["events"]
            lines.append(
                f"| one {size} event repeating the word | `{query}` | "
                f"{_ms(s['p50'])} / {_ms(s['p95'])} | {_ms(e['p50'])} / {_ms(e['p95'])} |"
            )
        deadline = row.get("deadline", deadline)
    if deadline:
        lines += [
            "",
            f"{list(results['long'])[-1]} event, `word word`, 1 s deadline: returned after "
            f"{_ms(deadline['ms'])} ({deadline['outcome']}).",
        ]
    if "corpus" in results:
        lines += ["", "| query | p50 | p95 | target (p50) |", "|---|---:|---:|---|"]
        for name, summary in results["corpus"].items():
            if name not in ("profile", "questions"):
                target = TARGETS.get(name)
                verdict = (
                    ""
                    if target is None
                    else f"≤ {_ms(target)}: "
                    + ("met" if summary["p50"] <= target else "**missed**")
                )
                lines.append(
                    f"| {name} | {_ms(summary['p50'])} | {_ms(summary['p95'])} | {verdict} |"
                )
        questions = results["corpus"].get("questions")
        if questions:
            listed = "; ".join(f"`{q}`" for q in questions["ordinary"])
            lines += [
                "",
                f"Relevance questions (made from the index's vocabulary, seeded): {listed}; "
                f"most common: `{questions['common'][0]}`.",
            ]
        lines += [
            "",
            "Span counts of every document matching the most common word (best of 3, same "
            "index, SQL steps alone):",
            "",
            "| step | time |",
            "|---|---:|",
        ]
        for label, value in results["corpus"]["profile"].items():
            lines.append(f"| {label} | {_ms(value)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--root", help="a benchmark corpus store (corpus.py)")
    parser.add_argument("--index", help="its built sessionquery index")
    parser.add_argument("--manifest", help="its manifest JSON (corpus.py output)")
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    manifest = json.loads(Path(args.manifest).read_text()) if args.manifest else None
    results = measure(quick=args.quick, root=args.root, index=args.index, manifest=manifest)
    section = render(results)
    from report import replace_section  # beside this script

    replace_section(Path(args.output), section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main())
