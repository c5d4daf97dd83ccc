"""Timing: how long a workspace-scoped search takes for a word only another workspace holds,
beside one no session holds (issue 31 item 8).

    python benchmarks/timing.py            # prints the section and replaces it in RESULTS.md

A seeded store of two workspaces (A and B), 400 sessions each; B's sessions hold words that
no session of A holds. A caller in A searches, as the tools do (``CwdIn([A])``), for a word
only B holds, for a word nobody holds, and for a word A holds, in each match mode; p50 of
many repetitions, all in one run. The tools make no promise of constant time (neither does
the original); this measures how much a search's time tells about the other workspace.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SECTION = "## Timing of words other workspaces hold"

_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))


def build(root: Path) -> dict[str, str]:
    """The two-workspace store; returns the words each probe searches for."""
    from sessionquery import JsonlPersistence, SessionStore
    from sessionquery.model.messages import user_message

    rng = random.Random(31)
    shared = [_word(rng) for _ in range(3000)]
    foreign = [f"zq{_word(rng)}" for _ in range(200)]
    store = SessionStore(JsonlPersistence(root))
    for workspace, extra in (("/ws/a", []), ("/ws/b", foreign)):
        for i in range(400):
            session = store.create(f"{workspace[-1]}{i:03d}", cwd=workspace)
            for m in range(8):
                words = rng.choices(shared, k=40) + rng.choices(extra or shared, k=3)
                session.append(
                    "user/message", user_message(" ".join(words), id=f"m{m}"), surface_op="append"
                )
            store.close(session.id)
    return {"foreign": foreign[0], "absent": "zqnowhereword", "own": shared[0]}


def measure(reps: int) -> dict[str, Any]:
    from sessionquery import CwdIn, JsonlPersistence, SessionQuery
    from sessionquery.search.sqlite import SqliteSearch

    work = Path(tempfile.mkdtemp(prefix="sessionquery-timing-"))
    out: dict[str, Any] = {"load_before": os.getloadavg(), "rows": {}}
    try:
        words = build(work / "store")
        with SessionQuery(
            persistence=JsonlPersistence(work / "store"), search=SqliteSearch(work / "i.db")
        ) as service:
            service.search_sessions(words["own"])
            for mode in ("phrase", "words", "relevance"):
                for probe in ("own", "foreign", "absent"):
                    text = words[probe]
                    if mode != "phrase":
                        text = f"{text} {words['own']}" if probe != "own" else text
                    samples = []
                    for _ in range(reps):
                        started = time.perf_counter()
                        service.search_sessions(
                            text,
                            match=mode,
                            session_filters=[CwdIn(["/ws/a"])],
                        )
                        samples.append((time.perf_counter() - started) * 1000)
                    out["rows"][(mode, probe)] = statistics.median(samples)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["load_after"] = os.getloadavg()
    return out


def render(results: dict[str, Any]) -> str:
    rows = results["rows"]
    load = ", ".join(f"{x:.1f}" for x in results["load_before"])
    lines = [
        SECTION,
        "",
        f"`python benchmarks/timing.py`, load average before: {load}. A caller in workspace A "
        "(`CwdIn`, as the tools search) over 800 sessions in two workspaces; p50 in ms. "
        "`words`/`relevance` ask for the probe word beside a word A holds.",
        "",
        "| mode | a word A holds | a word only B holds | a word nobody holds |",
        "|---|---:|---:|---:|",
    ]
    for mode in ("phrase", "words", "relevance"):
        cells = [f"{rows[(mode, probe)]:.2f}" for probe in ("own", "foreign", "absent")]
        lines.append(f"| `{mode}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    section = render(measure(args.reps))
    if not args.no_write:
        from report import replace_section  # beside this script

        replace_section(Path(args.output), section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main())
