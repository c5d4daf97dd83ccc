"""One command for every sessionquery benchmark, side by side with the floor and alternatives.

    python benchmarks/run.py            # full run (1k/100k and 10k/1M corpora), writes RESULTS.md
    python benchmarks/run.py --quick    # tiny corpora, well under a minute (the CI smoke test)

Each measurement runs in its own subprocess (``workers.py``) so that its peak RSS is its own
``ru_maxrss`` and no cache leaks between systems. Comparators: a plain SQLite FTS5 table of
the same documents ranked the same way (the floor), Tantivy over the same documents, and
``rg`` over the same JSONL files. A comparator that fails or is missing is reported as
"not measured", never as zero.

Safety: the work directory is either a new temporary directory or one marked by an earlier
run (marker file ``.sessionquery-bench``); a non-empty directory without the marker is refused.
It is removed at the end unless ``--keep`` is given (then its corpora are reused next time).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import apsw

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import index_build  # noqa: E402
import quality  # noqa: E402
import quality_report  # noqa: E402
import search_cost  # noqa: E402
from corpus import CorpusManifest, CorpusSpec  # noqa: E402
from report import render  # noqa: E402

MARKER = ".sessionquery-bench"
"""Marker file of a work directory this benchmark created."""

FULL: dict[str, Any] = {
    "corpora": [
        ("1k sessions / 100k events", CorpusSpec(sessions=1000, events=100_000)),
        (
            "10k sessions / 1M events",
            CorpusSpec(sessions=10_000, events=1_000_000, big_session_events=100_000),
        ),
    ],
    "rule": CorpusSpec(sessions=1000, events=60_000),
    "reps": 30,
    "rg_reps": 7,
    "read_reps": 50,
    "rounds": 5,
    "timeout": 1500,
}

QUICK: dict[str, Any] = {
    "corpora": [
        (
            "quick: 60 sessions / 4k events",
            CorpusSpec(sessions=60, events=4000, big_session_events=1000),
        ),
    ],
    "rule": CorpusSpec(sessions=40, events=2400),
    "reps": 5,
    "rg_reps": 3,
    "read_reps": 5,
    "rounds": 2,
    "timeout": 120,
}


TOPICS = ["store.py", "textmatch.py", "postgres.py", "deadlines.py"]
"""Topic benchmarks (``benchmarks/<topic>.py``, each runnable on its own), run after the main
suite with ``--quick`` passed through; each prints its own section, appended to the output."""


class Refused(Exception):
    """The work directory is not safe to use."""


def prepare_workdir(path: str | None) -> Path:
    """A new temporary work directory, or ``path`` if it is new, empty or ours.

    Raises:
        Refused: ``path`` is a non-empty directory without our marker, or not a directory.
    """
    if path is None:
        workdir = Path(tempfile.mkdtemp(prefix="sessionquery-bench-"))
    else:
        workdir = Path(path).resolve()
        if workdir.exists() and not workdir.is_dir():
            raise Refused(f"{workdir} exists and is not a directory")
        if workdir.is_dir() and any(workdir.iterdir()) and not (workdir / MARKER).exists():
            raise Refused(
                f"{workdir} is not empty and was not created by this benchmark "
                f"(no {MARKER} marker); choose an empty or new directory"
            )
        workdir.mkdir(parents=True, exist_ok=True)
    (workdir / MARKER).write_text("created by benchmarks/run.py; safe to delete\n")
    return workdir


def run_worker(name: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one worker in a subprocess; ``{"ok": False, "error": ...}`` on any failure."""
    command = [sys.executable, str(HERE / "workers.py"), name, json.dumps(args)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    try:
        outcome: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return {"ok": False, "error": f"worker crashed: {tail[0]}"}
    if not outcome.get("ok"):
        sys.stderr.write(done.stderr)
    outcome["wall_s"] = time.perf_counter() - started
    print(f"  {name}: {'ok' if outcome.get('ok') else outcome.get('error')}", flush=True)
    return outcome


def ensure_corpus(workdir: Path, spec: CorpusSpec, timeout: float) -> tuple[str, CorpusManifest]:
    """Generate (or reuse, when kept from an earlier run) the corpus of ``spec``."""
    name = f"corpus-{spec.sessions}-{spec.events}-{spec.big_session_events}-{spec.seed}"
    base = workdir / name
    store = base / "store"
    manifest_path = base / "manifest.json"
    if manifest_path.exists():
        manifest = CorpusManifest.from_json(json.loads(manifest_path.read_text()))
        if manifest.spec == asdict(spec):
            return str(store), manifest
    if base.exists():
        shutil.rmtree(base)
    base.mkdir()
    command = [
        sys.executable,
        str(HERE / "corpus.py"),
        str(store),
        f"--sessions={spec.sessions}",
        f"--events={spec.events}",
        f"--big-session-events={spec.big_session_events}",
        f"--seed={spec.seed}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    manifest = CorpusManifest.from_json(json.loads(done.stdout))
    manifest_path.write_text(json.dumps(manifest.to_json()))
    return str(store), manifest


def queries(manifest: CorpusManifest) -> list[dict[str, Any]]:
    """The four query classes of the issue, from words known to be in the corpus."""
    return [
        {"name": "rare word", "text": manifest.rare_word},
        {"name": "common word", "text": manifest.common_word},
        {"name": "two-word phrase", "text": manifest.phrase},
        {
            "name": "filtered",
            "text": manifest.filter_word,
            "cwd": manifest.workspaces[0],
            "types": ["assistant/message", "tool/result"],
        },
    ]


def _fresh(path: Path) -> str:
    if path.is_dir():
        shutil.rmtree(path)
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return str(path)


def measure_corpus(
    workdir: Path, label: str, spec: CorpusSpec, plan: dict[str, Any], *, full_suite: bool
) -> dict[str, Any]:
    """Every measurement for one corpus size."""
    timeout = plan["timeout"]
    print(f"{label}: generating", flush=True)
    started = time.perf_counter()
    root, manifest = ensure_corpus(workdir, spec, timeout)
    print(f"  corpus ready in {time.perf_counter() - started:.1f} s", flush=True)
    slug = f"{spec.sessions}-{spec.events}"
    sq = _fresh(workdir / f"sq-{slug}.db")
    fts = _fresh(workdir / f"fts-{slug}.db")
    tan = _fresh(workdir / f"tantivy-{slug}")
    qs = queries(manifest)
    out: dict[str, Any] = {"label": label, "manifest": manifest.to_json(), "root": root}
    out["build"] = {
        "sessionquery": run_worker("build_sq", {"root": root, "index": sq}, timeout),
        "raw FTS5": run_worker("build_fts", {"root": root, "index": fts}, timeout),
    }
    if full_suite:
        out["build"]["Tantivy"] = run_worker("build_tantivy", {"root": root, "index": tan}, timeout)
    search_args = {"root": root, "queries": qs, "reps": plan["reps"]}
    out["search"] = {
        "sessionquery": run_worker("search_sq", {**search_args, "index": sq}, timeout),
        "raw FTS5": run_worker("search_fts", {**search_args, "index": fts}, timeout),
    }
    if full_suite:
        out["search"]["Tantivy"] = run_worker(
            "search_tantivy", {**search_args, "index": tan}, timeout
        )
        out["search"]["rg"] = run_worker(
            "search_rg", {**search_args, "reps": plan["rg_reps"]}, timeout
        )
        out["queries"] = qs
        out["listing"] = run_worker("listing", {"root": root, "reps": plan["read_reps"]}, timeout)
        if manifest.big_session:
            out["reads"] = run_worker(
                "reads",
                {
                    "root": root,
                    "session": manifest.big_session,
                    "seq": manifest.big_session_events // 2,
                    "reps": plan["read_reps"],
                },
                timeout,
            )
        out["incremental"] = run_worker(
            "incremental",
            {
                "root": root,
                "index": sq,
                "session": manifest.small_session,
                "rounds": plan["rounds"],
            },
            timeout,
        )
    return out


def machine() -> dict[str, Any]:
    """Where and with what the benchmark ran."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.1f} GiB"
    except (ValueError, OSError):
        pass
    try:
        import tantivy

        tantivy_version = str(getattr(tantivy, "__version__", "installed"))
    except ImportError:
        tantivy_version = "not installed"
    rg = shutil.which("rg")
    rg_version = "not installed"
    if rg:
        rg_version = subprocess.run(
            [rg, "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "python": platform.python_version(),
        "sqlite": f"{apsw.sqlite_lib_version()} (APSW {apsw.apsw_version()}; index and floor)",
        "tantivy": tantivy_version,
        "rg": rg_version,
        "load_before": os.getloadavg(),
    }


def _extra_sections(results: dict[str, Any]) -> str:
    """The sections of the benchmarks that render themselves (search cost, quality)."""
    parts = []
    if "search_cost" in results:
        parts.append(search_cost.render(results["search_cost"]))
    if "quality" in results:
        parts.append(quality_report.render(results["quality"]))
    return "".join("\n" + part for part in parts)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and write the results table."""
    parser = argparse.ArgumentParser(description="sessionquery benchmarks (SPEC §11)")
    parser.add_argument("--quick", action="store_true", help="tiny corpora; under a minute")
    parser.add_argument("--workdir", help="work directory (new, empty, or from an earlier run)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--output", help="Markdown file to write (default: see README)")
    parser.add_argument("--json", help="also write the raw results as JSON here")
    parser.add_argument(
        "--from-json", help="measure nothing: render the results saved by --json again"
    )
    parser.add_argument(
        "--history", action="store_true", help="run history_bench.py (real-size history) instead"
    )
    args = parser.parse_args(argv)
    if args.history:
        from history_bench import main as history_main

        return history_main([])
    plan = QUICK if args.quick else FULL
    default_name = "RESULTS-quick.md" if args.quick else "RESULTS.md"
    output = Path(args.output) if args.output else HERE / default_name
    notes = HERE / "NOTES.md"
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        use_notes = notes.exists() and not saved["quick"]
        output.write_text(
            render(saved, notes.read_text() if use_notes else "") + _extra_sections(saved)
        )
        print(f"wrote {output}")
        return 0
    try:
        workdir = prepare_workdir(args.workdir)
    except Refused as exc:
        print(f"run.py: refused: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine(), "quick": args.quick, "corpora": []}
    try:
        for label, spec in plan["corpora"]:
            results["corpora"].append(measure_corpus(workdir, label, spec, plan, full_suite=True))
        rule = measure_corpus(workdir, "SPEC §11 rule corpus", plan["rule"], plan, full_suite=False)
        rule["queries"] = queries(CorpusManifest.from_json(rule["manifest"]))
        results["rule"] = rule
        first = results["corpora"][0]
        print("profiling", flush=True)
        results["profile"] = run_worker(
            "profile",
            {
                "root": first["root"],
                "index": _fresh(workdir / "profile.db"),
                "queries": first["queries"],
            },
            plan["timeout"],
        )
        _label, last_spec = plan["corpora"][-1]
        results["search_cost"] = search_cost.measure(
            quick=args.quick,
            root=results["corpora"][-1]["root"],
            index=str(workdir / f"sq-{last_spec.sessions}-{last_spec.events}.db"),
            manifest=results["corpora"][-1]["manifest"],
        )
        print("search quality", flush=True)
        try:
            results["quality"] = quality.measure(  # quick: a smoke run, one backend
                backends=("sqlite",) if args.quick else ("sqlite", "postgres"),
                background=30 if args.quick else quality.BACKGROUND,
            )
        except Exception as exc:  # reported as "not measured", never fatal to the run
            results["quality"] = {"error": f"{type(exc).__name__}: {exc}"}
        print("index lifecycle", flush=True)
        # The lifecycle benchmark appends to the store it measures: give it a copy, so a
        # kept work directory's corpus stays the one its manifest describes.
        lifecycle_root = workdir / "lifecycle-store"
        shutil.rmtree(lifecycle_root, ignore_errors=True)
        shutil.copytree(first["root"], lifecycle_root)
        lifecycle = index_build.measure(str(lifecycle_root), str(workdir))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    results["machine"]["load_after"] = os.getloadavg()
    results["machine"]["total_s"] = time.perf_counter() - started
    text = render(results, notes.read_text() if notes.exists() and not args.quick else "")
    text += _extra_sections(results)
    output.write_text(text)
    index_build.write_section(output, lifecycle)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote {output} in {results['machine']['total_s']:.0f} s")
    for topic in TOPICS:
        quick = ["--quick"] if args.quick else []
        done = subprocess.run(
            [sys.executable, str(HERE / topic), *quick], check=False, capture_output=True, text=True
        )
        with output.open("a") as results_file:
            results_file.write("\n" + (done.stdout or f"## {topic}\n\nnot measured\n"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
