"""The JSONL store under change: token, journal, listing, hostile lines, a concurrent writer.

    python benchmarks/store.py            # 10k sessions; prints a Markdown section
    python benchmarks/store.py --quick    # 500 sessions, a few seconds

Measures what a long-running search process pays to notice changes: ``change_token()`` on a
quiet store and just after a change (the "racy" second, when it also reads the directory),
``changed_since()`` with one session changed, a flush (append + fsync, announced to the token
and journal), ``list()`` warm and cold, a 64 MB header line, and searches in one process while
another process appends turns and creates sessions (counting every failed call).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sessionquery import JsonlPersistence, SessionQuery, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence import _changes, _format
from sessionquery.search.sqlite import SqliteSearch

_WRITER = """
import sys, time
from sessionquery import JsonlPersistence, SessionStore
store = SessionStore(JsonlPersistence(sys.argv[1]))
until = time.monotonic() + float(sys.argv[2])
long = store.create("long", cwd="/w")
turn = 0
while time.monotonic() < until:
    long.append("turn/start", {"turn": turn})
    long.append("user/message", {"id": f"m{turn}", "role": "user", "source": {"kind": "user"},
                "content": [{"type": "text", "text": f"needle turn {turn}"}]}, surface_op="append")
    long.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    if turn % 5 == 0:
        side = store.create(f"side{turn}", cwd="/w")
        side.append("user/message", {"id": "m", "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": "needle side"}]}, surface_op="append")
        store.close(side.id)
    turn += 1
store.close("long")
print(turn, flush=True)
"""


def _timed(call: Callable[[], object], reps: int) -> float:
    """Median seconds of ``reps`` calls."""
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _seed(root: Path, sessions: int) -> JsonlPersistence:
    """A store of ``sessions`` small sessions, written directly (no fsync per file)."""
    store = JsonlPersistence(root)
    for number in range(sessions):
        sid = f"s{number:06d}"
        header = _format.encode_header(SessionHeader(id=sid, created_at=number, cwd="/w"), 0)
        event = _format.dumps_line(SessionEvent("note", 0, 1, {"text": "hello"}).to_json())
        Path(store.path_of(sid)).write_bytes(header + event)
    with store.open_write("s000000") as writer:  # creates the token, journal and lock files
        writer.append([SessionEvent("note", 1, 2, {"text": "more"})])
    past = time.time_ns() - 10 * _changes.RACY_NS
    os.utime(root, ns=(past, past))
    return store


def _store_figures(work: Path, sessions: int, reps: int, huge_mb: int) -> list[tuple[str, str]]:
    store = _seed(work / "store", sessions)
    rows: list[tuple[str, str]] = []
    rows.append(
        ("`change_token()`, quiet store", f"{_timed(store.change_token, reps) * 1e6:.0f} µs")
    )
    token = store.change_token()
    with store.open_write("s000001") as writer:
        writer.append([SessionEvent("note", 1, 2, {"text": "more"})])
    rows.append(
        (
            "`changed_since(token)`, one session appended",
            f"{_timed(lambda: store.changed_since(token), reps) * 1e6:.0f} µs",
        )
    )
    assert store.changed_since(token) == frozenset({"s000001"})
    with store.create(SessionHeader(id="fresh", created_at=1)):
        pass  # the root just changed: the next second of tokens also reads the directory
    racy = _timed(store.change_token, 1)  # one call: it must fall inside the racy 200 ms
    rows.append(
        (f"`change_token()` within 200 ms of a create ({sessions} files)", f"{racy * 1e3:.2f} ms")
    )
    with store.open_write("fresh") as writer:
        seq = [0]

        def flush() -> None:
            writer.append([SessionEvent("note", seq[0], 2, {"text": "x"})])
            writer.flush()
            seq[0] += 1

        rows.append(
            (
                "append + `flush()` of one event (fsync, token, journal)",
                f"{_timed(flush, reps) * 1e3:.2f} ms",
            )
        )
    store.list()
    rows.append(
        (
            f"`list()` of {sessions} sessions, headers cached",
            f"{_timed(store.list, max(3, reps // 10)) * 1e3:.1f} ms",
        )
    )
    rows.append(
        (
            f"`list()` of {sessions} sessions, cold (new instance)",
            f"{_timed(lambda: JsonlPersistence(store.root).list(), 3) * 1e3:.1f} ms",
        )
    )
    huge = Path(store.path_of("huge"))
    huge.write_bytes(b'{"type":"session","cwd":"' + b"x" * (huge_mb << 20) + b'"\n')
    started = time.perf_counter()
    problems = store.problems()  # every other header is cached: this reads the huge one
    rows.append(
        (
            f"{huge_mb} MB header line listed (reported as a problem)",
            f"{time.perf_counter() - started:.2f} s",
        )
    )
    assert any(problem.path == str(huge) for problem in problems)
    return rows


def _concurrent(work: Path, seconds: float) -> list[tuple[str, str]]:
    root = work / "shared"
    store = JsonlPersistence(root)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(root), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    calls = failures = 0
    codes: dict[str, int] = {}
    started = time.perf_counter()
    with SessionQuery(None, store, search=SqliteSearch(work / "index.db")) as query:
        while writer.poll() is None:
            for call in (
                lambda: query.search_sessions("needle"),
                query.list_sessions,
                lambda: [query.read_session(r.id) for r in query.list_sessions()[:3]],
            ):
                calls += 1
                try:
                    call()
                except SessionQueryError as exc:
                    failures += 1
                    codes[exc.code.value] = codes.get(exc.code.value, 0) + 1
    elapsed = time.perf_counter() - started
    turns = int(writer.communicate(timeout=120)[0])
    detail = ", ".join(f"{code} {count}" for code, count in sorted(codes.items())) or "none"
    return [
        (
            "searches/lists/reads while another process appends",
            f"{calls} calls in {elapsed:.1f} s, {turns} turns and {len(range(0, turns, 5))} "
            f"sessions written meanwhile; failed calls: {failures} ({detail})",
        )
    ]


def main(argv: list[str] | None = None) -> int:
    """Measure and print the Markdown section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 sessions, a few seconds")
    args = parser.parse_args(argv)
    sessions, reps, seconds, huge_mb = (500, 20, 1.0, 8) if args.quick else (10_000, 200, 10.0, 64)
    with tempfile.TemporaryDirectory(prefix="sq-store-bench-") as tmp:
        rows = _store_figures(Path(tmp), sessions, reps, huge_mb)
        rows += _concurrent(Path(tmp), seconds)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"## JSONL store under change ({sessions} sessions; load average {load})\n")
    print("| what | median |\n|---|---|")
    for what, figure in rows:
        print(f"| {what} | {figure} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
