"""Index lifecycle benchmark: full build beside the raw FTS5 floor, incremental reconciles.

Measures, on one JSONL store (``python benchmarks/corpus.py`` writes one):

* **full build**: a new ``SqliteSearch`` reconciles the whole store (batched commits, text
  documents read by the fast JSONL reader), beside the raw FTS5 floor of ``workers.build_fts``
  (the same files decoded with ``json.loads``, the same documents inserted into one plain FTS5
  table), each in its own process (peak RSS is the process's own);
* **one changed session**: 10 events appended to one session, then one reconciliation, and the
  re-read of that session alone (``read_documents``) for comparison;
* **no-change reconcile** and a **second process's first reconcile** of a complete index (it
  trusts the token the index recorded instead of listing the store).

Run on its own: ``python benchmarks/index_build.py ROOT [--output RESULTS.md]``; the section
``## Index lifecycle`` of the output file is replaced (or appended). The store is modified
(appends); use a copy you can spare. ``run.py`` calls :func:`measure` and :func:`write_section`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SECTION = "## Index lifecycle"
TIMES = "\u00d7"


def _events_in(root: str) -> int:
    total = 0
    for name in os.listdir(root):
        if name.endswith(".jsonl") and not name.startswith("."):
            with open(os.path.join(root, name), "rb") as file:
                total += file.read().count(b"\n") - 1
    return total


def _build(args: dict[str, Any]) -> dict[str, Any]:
    from sessionquery import JsonlPersistence, SessionQuery
    from sessionquery.search.sqlite import SqliteSearch

    search = SqliteSearch(args["index"])
    service = SessionQuery(persistence=JsonlPersistence(args["root"]), search=search)
    started = time.perf_counter()
    first: list[float] = []

    def progress(done: int, total: int) -> None:
        if not first:
            first.append(time.perf_counter() - started)

    update = search.update(service.corpus, progress=progress)
    seconds = time.perf_counter() - started
    service.close()
    search.close()
    return {
        "seconds": seconds,
        "first_progress_s": first[0] if first else None,
        "documents": update.documents_written,
        "sessions": update.persisted_indexed,
    }


def _floor(args: dict[str, Any]) -> dict[str, Any]:
    import workers

    return workers.build_fts(args)


def _reconciles(args: dict[str, Any]) -> dict[str, Any]:
    from sessionquery import JsonlPersistence, SessionEvent, SessionQuery
    from sessionquery.search.sqlite import SqliteSearch

    store = JsonlPersistence(args["root"])
    names = sorted(entry.header.id for entry in store.list())
    search = SqliteSearch(args["index"])
    service = SessionQuery(persistence=store, search=search)
    search.update(service.corpus)
    changed, reread, nochange = [], [], []
    for round_, sid in enumerate(names[:: max(1, len(names) // 7)][:7]):
        with store.open_write(sid) as writer:
            seq, at = writer.event_count, 2_000_000_000_000 + round_
            writer.append(
                [SessionEvent("todo/write", seq + i, at, {"todos": []}) for i in range(10)]
            )
        started = time.perf_counter()
        update = search.update(service.corpus)
        changed.append((time.perf_counter() - started) * 1000)
        assert update.persisted_indexed == 1, update
        started = time.perf_counter()
        store.read_documents(sid)
        reread.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        search.update(service.corpus)
        nochange.append((time.perf_counter() - started) * 1000)
    service.close()
    search.close()
    other = SqliteSearch(args["index"])
    other_service = SessionQuery(persistence=JsonlPersistence(args["root"]), search=other)
    started = time.perf_counter()
    other.update(other_service.corpus)
    second_process_ms = (time.perf_counter() - started) * 1000
    other_service.close()
    other.close()
    return {
        "sessions": len(names),
        "journal": hasattr(store, "changed_since"),
        "changed_ms": statistics.median(changed),
        "changed_p95_ms": max(changed),
        "reread_ms": statistics.median(reread),
        "reread_max_ms": max(reread),
        "nochange_ms": statistics.median(nochange),
        "second_process_ms": second_process_ms,
    }


_WORKERS = {"build": _build, "floor": _floor, "reconciles": _reconciles}


def _run(name: str, args: dict[str, Any]) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", name, json.dumps(args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} worker failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(root: str, workdir: str, repeat: int = 2) -> dict[str, Any]:
    """Every figure of the section, measured on ``root`` (which gets appended to); the two
    builds run ``repeat`` times, alternated, and the fastest of each counts."""
    events = _events_in(root)
    size = sum(
        os.path.getsize(os.path.join(root, n)) for n in os.listdir(root) if n.endswith(".jsonl")
    )
    builds: list[dict[str, Any]] = []
    floors: list[dict[str, Any]] = []
    for round_ in range(repeat):  # alternated, best of each: the machine's load drifts
        for name, runs in (("build", builds), ("floor", floors)):
            index = os.path.join(workdir, f"{name}-{round_}.db")
            for suffix in ("", "-wal", "-shm", ".lock"):  # left by an earlier run (--keep)
                Path(index + suffix).unlink(missing_ok=True)
            runs.append(_run(name, {"root": root, "index": index}))
    build = min(builds, key=lambda run: float(run["seconds"]))
    floor = min(floors, key=lambda run: float(run["seconds"]))
    build["all_s"] = [run["seconds"] for run in builds]
    floor["all_s"] = [run["seconds"] for run in floors]
    reconciles = _run("reconciles", {"root": root, "index": os.path.join(workdir, "build-0.db")})
    return {
        "events": events,
        "bytes": size,
        "build": build,
        "floor": floor,
        "reconciles": reconciles,
        "repeat": repeat,
        "load": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def _load_note(load: Sequence[float], cpus: int) -> str:
    """How far the machine's load may have bent the absolute times (the ratio less so)."""
    if max(load) >= cpus:
        return "the machine was busy with other work: absolute times are pessimistic"
    return "other work on the machine was light"


def render(results: dict[str, Any]) -> str:
    """The Markdown section for ``results``."""
    build, floor, rec = results["build"], results["floor"], results["reconciles"]
    events = results["events"]
    sq_rate, floor_rate = events / build["seconds"], events / floor["seconds"]
    load = ", ".join(f"{value:.1f}" for value in results["load"])
    runs = " / ".join(f"{', '.join(f'{s:.1f}' for s in run['all_s'])} s" for run in (build, floor))
    journal = "change journal" if rec["journal"] else "full listing (no change journal yet)"
    lines = [
        SECTION,
        "",
        f"Measured by `python benchmarks/index_build.py` on {rec['sessions']:,} sessions / "
        f"{events:,} events ({results['bytes'] / 1e6:.1f} MB of JSONL), {results['cpus']} CPUs, "
        f"load average {load} at the end ({_load_note(results['load'], results['cpus'])}). "
        f"The builds are measured side by side, alternated, the fastest of {results['repeat']} "
        f"runs each (all runs: sessionquery / floor {runs}).",
        "",
        "| measurement | result |",
        "|---|---:|",
        f"| full build, sessionquery | {build['seconds']:.1f} s, {sq_rate:,.0f} events/s, "
        f"peak RSS {build['maxrss_kb'] / 1024:.0f} MB |",
        f"| full build, raw FTS5 floor | {floor['seconds']:.1f} s, {floor_rate:,.0f} events/s, "
        f"peak RSS {floor['maxrss_kb'] / 1024:.0f} MB |",
        f"| **build ÷ floor (events/s)** | **{sq_rate / floor_rate:.2f}{TIMES}** "
        f"(target ≥ 0.7{TIMES}) |",
        f"| first progress report after the build started | {build['first_progress_s']:.2f} s |",
        f"| one changed session (10 events appended) reconciled, median / max of 7 "
        f"({journal}) | {rec['changed_ms']:.1f} ms / {rec['changed_p95_ms']:.1f} ms |",
        f"| … of which re-reading that session alone, median / max | {rec['reread_ms']:.1f} ms / "
        f"{rec['reread_max_ms']:.1f} ms |",
        f"| no-change reconcile | {rec['nochange_ms']:.2f} ms |",
        f"| a second process's first reconcile of the complete index | "
        f"{rec['second_process_ms']:.1f} ms |",
        "",
    ]
    return "\n".join(lines)


def write_section(output: Path, results: dict[str, Any]) -> None:
    """Replace (or append) the ``## Index lifecycle`` section of ``output``."""
    from report import replace_section  # beside this script

    replace_section(output, render(results))


def main(argv: list[str] | None = None) -> int:
    """Command line: measure a store and write the section."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        result = _WORKERS[argv[1]](json.loads(argv[2]))
        result["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps(result))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", help="a JSONL store (it gets appended to)")
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--repeat", type=int, default=2, help="runs of each build (best counts)")
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="sq-index-bench-")
    try:
        results = measure(args.root, workdir, args.repeat)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_section(Path(args.output), results)
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
