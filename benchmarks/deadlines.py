"""Deadlines during reconciliation: how long after its deadline a reconcile returns.

    python benchmarks/deadlines.py                       # prints a Markdown section
    python benchmarks/deadlines.py --quick               # small stores, a few seconds
    python benchmarks/deadlines.py --before OLD/src --before-label "before (94be145)"
    python benchmarks/deadlines.py --output RESULTS.md   # and replace its section there

Each row is one store, indexed from scratch by ``SqliteSearch.update(corpus, cancel=token)``
under deadlines from 5 ms to 1 s (a fresh index and a fresh source per run, so a deadline may
also fall into the first listing). The figure is how long after the deadline the call
returned (``ABORTED``), the worst over every deadline and run; beside it the uninterrupted
build time. Stores:

* **big events**: three JSONL sessions of eight 1 MB events each (about 26 MB);
* **one document**: one JSONL session whose only event is 4 MB of distinct words;
* **corpus**: ``corpus.py`` with 2,000 sessions / 200,000 events (about 60 MB of JSONL);
* **imported**: two Claude Code transcripts of twenty 1 MB lines each (about 40 MB).

``--before DIR`` runs the same measurement in a subprocess with ``DIR`` (the ``src`` folder of
an older checkout, e.g. from ``git worktree add``) first on ``PYTHONPATH``, so the figures of
two versions are measured side by side on the same stores. ``run.py`` runs this module with
``--quick`` after its main suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SECTION = "## Deadlines during reconciliation"
DEADLINES = (0.005, 0.05, 0.2, 0.5, 1.0)
_WORDS = " ".join(f"w{i % 7919}x{i % 13}" for i in range(120_000))
"""About 1 MB of varied words."""


def _big_events(root: Path, sessions: int, events: int) -> None:
    from sessionquery import JsonlPersistence
    from sessionquery.model import SessionEvent, SessionHeader, messages

    store = JsonlPersistence(root)
    for number in range(sessions):
        with store.create(SessionHeader(id=f"big{number}", created_at=number + 1)) as writer:
            writer.append(
                [
                    SessionEvent(
                        "user/message",
                        seq,
                        1_000 + seq,
                        messages.user_message(f"{_WORDS} tail{seq}", id=f"u{seq}"),
                        surface_op="append",
                    )
                    for seq in range(events)
                ]
            )


def _one_document(root: Path, megabytes: int) -> None:
    """One session whose only event is ``megabytes`` MB of distinct words: one document that
    FTS5 tokenises in a single step (about 120 ms per MB here)."""
    from sessionquery import JsonlPersistence
    from sessionquery.model import SessionEvent, SessionHeader, messages

    text = " ".join(f"w{i}" for i in range(megabytes * 150_000))
    with JsonlPersistence(root).create(SessionHeader(id="huge", created_at=1)) as writer:
        writer.append(
            [
                SessionEvent(
                    "user/message",
                    0,
                    1_000,
                    messages.user_message(text, id="u0"),
                    surface_op="append",
                )
            ]
        )


def _corpus(root: Path, sessions: int, events: int) -> None:
    sys.path.insert(0, str(HERE))
    from corpus import CorpusSpec, generate

    generate(root, CorpusSpec(sessions=sessions, events=events))


def _transcripts(root: Path, files: int, lines: int) -> None:
    for number in range(files):
        sid = f"0199aaaa-0000-7000-8000-{number:012d}"
        path = root / "-work" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as out:
            for line in range(lines):
                record = {
                    "type": "user",
                    "sessionId": sid,
                    "cwd": "/work",
                    "timestamp": "2025-10-01T12:00:00.000Z",
                    "uuid": f"{sid}-{line}",
                    "message": {"role": "user", "content": f"{_WORDS} tail{line}"},
                }
                out.write(json.dumps(record) + "\n")


def _stores(quick: bool) -> list[tuple[str, Callable[[Path], None], str]]:
    """``(label, writer, kind)`` per store; ``kind`` is ``jsonl`` or ``claude``."""
    if quick:
        return [
            ("big events: 1 session, four 1 MB events", lambda r: _big_events(r, 1, 4), "jsonl"),
            ("corpus: 100 sessions / 5,000 events", lambda r: _corpus(r, 100, 5000), "jsonl"),
            ("imported: 1 transcript, four 1 MB lines", lambda r: _transcripts(r, 1, 4), "claude"),
        ]
    return [
        ("big events: 3 sessions, eight 1 MB events each", lambda r: _big_events(r, 3, 8), "jsonl"),
        ("one document: 4 MB of distinct words", lambda r: _one_document(r, 4), "jsonl"),
        ("corpus: 2,000 sessions / 200,000 events", lambda r: _corpus(r, 2000, 200_000), "jsonl"),
        (
            "imported: 2 transcripts, twenty 1 MB lines each",
            lambda r: _transcripts(r, 2, 20),
            "claude",
        ),
    ]


def _one(kind: str, root: Path, index: Path, deadline: float | None) -> tuple[float, str]:
    """One reconcile of a fresh index: (seconds after the deadline, or the whole build time
    without one; the outcome)."""
    from sessionquery import CancelToken, JsonlPersistence, SessionQuery, SessionQueryError
    from sessionquery.search.sqlite import SqliteSearch
    from sessionquery.sources import ClaudeCodeSource

    for stale in index.parent.glob(index.name + "*"):
        stale.unlink()
    persistence = JsonlPersistence(root) if kind == "jsonl" else ClaudeCodeSource(root)
    corpus = SessionQuery(persistence=persistence).corpus
    with SqliteSearch(index) as search:
        started = time.monotonic()
        token = None if deadline is None else CancelToken(deadline=started + deadline)
        try:
            search.update(corpus, cancel=token)
            outcome = "done"
        except SessionQueryError as exc:
            outcome = exc.code.value
        ended = time.monotonic()
    if token is None or token.deadline is None:
        return ended - started, outcome
    return ended - token.deadline, outcome


_STOPPED = ("SESSION_QUERY_ABORTED", "SESSION_QUERY_INDEX_BUILDING")
"""The outcomes of a build its deadline stopped."""


def measure(stores_dir: Path, quick: bool) -> dict[str, Any]:
    """Every row, measured by the code importable here; the stores are made if missing."""
    runs = 1 if quick else 3
    deadlines = DEADLINES[:3] if quick else DEADLINES
    rows: dict[str, Any] = {}
    for number, (label, write, kind) in enumerate(_stores(quick)):
        root = stores_dir / f"store{number}"
        if not root.exists():
            write(root)
        index = stores_dir / f"index{number}.db"
        build, outcome = _one(kind, root, index, None)
        if outcome != "done":  # a store the index refuses would measure nothing
            raise RuntimeError(f"{label}: the build without a deadline ended with {outcome}")
        overruns: list[float] = []
        finished = 0
        for _ in range(runs):
            for deadline in deadlines:
                after, outcome = _one(kind, root, index, deadline)
                if outcome == "done":
                    finished += 1
                elif outcome in _STOPPED:
                    overruns.append(after)
                else:
                    raise RuntimeError(f"{label}: a build under a deadline ended with {outcome}")
        rows[label] = {
            "build_s": build,
            "worst_ms": max(overruns, default=0.0) * 1000,
            "aborted": len(overruns),
            "finished": finished,
        }
    return {"rows": rows, "load": os.getloadavg(), "runs": runs, "deadlines": deadlines}


def _before(src: str, stores_dir: Path, quick: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, __file__, "--json-only", "--stores", str(stores_dir)]
    done = subprocess.run(
        [*command, *(["--quick"] if quick else [])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


NOTE = """\
Where the time after the deadline goes: reading checks the deadline every 2,048 lines or
megabyte of a log (importers too), and a batch write runs under SQLite's progress handler,
which may let a write under way commit for 30 ms past the deadline before it is interrupted
and rolled back; one document's FTS5 insert cannot be cut, so a document too big to write
before the deadline (by a pessimistic estimate, 250 ms per MiB) is not started.
Before these checks, a whole log was read and a whole batch (every session read so far, up
to half a second of reading) was written after the deadline. Target (SPEC §13.3): within
100 ms."""


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def render(
    after: dict[str, Any], before: dict[str, Any] | None, before_label: str = "before"
) -> str:
    """The ``## Deadlines during reconciliation`` section."""
    load = ", ".join(f"{x:.1f}" for x in after["load"])
    deadlines = ", ".join(_ms(d * 1000) for d in after["deadlines"])
    head = "| store | uninterrupted build | worst return after the deadline |"
    rule = "|---|---:|---:|"
    if before is not None:
        head = f"| store | uninterrupted build | worst after the deadline, {before_label} | … now |"
        rule = "|---|---:|---:|---:|"
    lines = [
        SECTION,
        "",
        f"Measured by `python benchmarks/deadlines.py` (load average {load} at the end; 2 shared "
        f"cores). A fresh index is built under deadlines of {deadlines}, {after['runs']} run(s) "
        "each; the figure is the worst time between the deadline and `update()` returning "
        "`ABORTED` (runs that finished before their deadline do not count).",
        "",
        head,
        rule,
    ]
    for label, row in after["rows"].items():
        cells = [label, f"{row['build_s']:.2f} s"]
        if before is not None:
            cells.append(_ms(before["rows"][label]["worst_ms"]))
        cells.append(_ms(row["worst_ms"]))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", NOTE]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", help="the src folder of the version to compare with")
    parser.add_argument("--before-label", default="before", help="its column's name")
    parser.add_argument("--stores", help="where the stores are kept (default: a temporary one)")
    parser.add_argument("--output", help="a Markdown file whose section is replaced")
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    stores_dir = Path(args.stores or tempfile.mkdtemp(prefix="sq-deadlines-"))
    try:
        stores_dir.mkdir(parents=True, exist_ok=True)
        if args.json_only:
            print(json.dumps(measure(stores_dir, args.quick)))
            return 0
        before = None if args.before is None else _before(args.before, stores_dir, args.quick)
        section = render(measure(stores_dir, args.quick), before, args.before_label)
    finally:
        if args.stores is None:
            shutil.rmtree(stores_dir, ignore_errors=True)
    if args.output:
        from report import replace_section  # beside this script

        replace_section(Path(args.output), section)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
