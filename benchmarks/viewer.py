"""How fast ``sessionquery serve`` answers on a real-size history, before and after a change.

    python benchmarks/viewer.py            # 2,000 transcripts (~1.4 GB) + a 50k-event session
    python benchmarks/viewer.py --home DIR --workdir W --keep --before REV --rounds 3
    python benchmarks/viewer.py --transcripts 60 --target-bytes 3e7 --big-events 5000  # quick

Generates (or reuses) a Claude Code + Codex history with ``history.py`` and a JSONL store
holding one session of ``--big-events`` events (``corpus.py``), builds the index once with
``sessionquery index``, then runs the real ``sessionquery serve`` on all three and times
requests to it from the same process (a *probe*: the server's own threads answer, the probe
waits on the socket), so that besides the wall time from sending a request to the last byte of
its answer, the process's CPU time for it (``time.process_time``: the server's threads, its
background listing and the client) is known; CPU time is what other work on a shared machine
moves least. Measured:

* the session list (``/``; each repetition after the listing has aged past its 2 s, so each
  one also starts a new listing in the background), its 10th page, and a workspace filter;
* a search for a word in exactly one session, and for a common word;
* the big session's first screen at a seq in its middle: **cold** (the first request for it
  after the server started: its outline is read and folded) and **warm** (later requests,
  other seqs), and one window of events loaded while scrolling.

With ``--before REV`` the same probe runs with ``REV``'s ``src/`` (extracted with ``git
archive``, first on ``PYTHONPATH``) and with this tree's, alternating for ``--rounds`` rounds
(one cold first screen per round and version), so both versions meet the same load; each
figure is the median over the rounds.

Writes the "Web viewer" section of RESULTS.md (``--output``) through
``report.replace_section``, with the load average beside the figures.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

if TYPE_CHECKING:
    from sessionquery import SessionQuery
    from sessionquery.persistence.base import PersistedSession

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from corpus import CorpusSpec, generate  # noqa: E402
from history import HistorySpec, generate_history, needle  # noqa: E402
from report import replace_section, source_tree  # noqa: E402

__all__ = ["main", "measure"]

TARGETS_MS = {"list": 200.0, "search": 500.0, "first_screen": 300.0}
"""The issue's bars (2,000 transcripts, a 50,000-event session, this 2-core machine)."""

_LISTING_TTL_S = 2.0


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("sessionquery")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sessionquery.cli"]


def _sources(home: Path, big: Path, index: Path) -> list[str]:
    return [
        "--claude",
        str(home / ".claude" / "projects"),
        "--codex",
        str(home / ".codex" / "sessions"),
        "--root",
        str(big),
        "--index",
        str(index),
    ]


def _get(url: str, path: str) -> tuple[float, float, int, bytes]:
    """``(wall ms, process CPU ms, status, body)`` of one request."""
    parts = urlsplit(url)
    began, cpu = time.perf_counter(), time.process_time()
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=600)
    connection.request("GET", path)
    answer = connection.getresponse()
    body = answer.read()
    elapsed = (time.perf_counter() - began) * 1000
    spent = (time.process_time() - cpu) * 1000
    connection.close()
    return elapsed, spent, answer.status, body


def _timed(url: str, path: str, reps: int, pause: float = 0.0) -> dict[str, Any]:
    walls, cpus = [], []
    for _ in range(reps):
        if pause:
            time.sleep(pause)
        elapsed, spent, status, _body = _get(url, path)
        if status != 200:
            raise RuntimeError(f"GET {path} answered {status}")
        walls.append(elapsed)
        cpus.append(spent)
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "n": reps}


def _one(url: str, path: str, check: bytes | None = None) -> dict[str, Any]:
    elapsed, spent, status, body = _get(url, path)
    if status != 200 or (check is not None and check not in body):
        raise RuntimeError(f"GET {path} answered {status} without {check!r}")
    return {"wall": elapsed, "cpu": spent, "bytes": len(body)}


def _wait_for_index(url: str, word: str, limit_s: float = 1800.0) -> float:
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        _elapsed, _spent, status, body = _get(url, f"/search?q={word}")
        if status == 200 and b"still being built" not in body:
            return time.monotonic() - began
        time.sleep(2)
    raise RuntimeError("the index did not finish building")


class _Lines(io.TextIOBase):
    """A stdout that hands each written line to a queue (the server prints its URL)."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str] = queue.Queue()

    def write(self, text: str) -> int:
        for line in text.splitlines():
            self.lines.put(line)
        return len(text)


def _settle(url: str, limit_s: float = 600.0) -> None:
    """Wait (bounded) for the server's background work to end (the index build after its
    start), then have the listing taken anew and wait for that too.

    A listing that falls due is taken after the answer that found it stale has been sent: a
    browser has its answer by then, but a client in the server's own process would wait for
    its turn with that listing, so what follows is timed with a fresh one.
    """
    deadline = time.monotonic() + limit_s

    def join() -> None:
        for thread in threading.enumerate():
            if thread.name in ("sessionquery-index", "sessionquery-listing"):
                thread.join(max(deadline - time.monotonic(), 0.0))

    join()
    _get(url, "/api/stamp")  # a listing older than 2 s is taken behind this answer
    join()


def probe(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``sessionquery serve`` in this process (the package first on ``sys.path``) and time
    every request of one round; the server's threads end with the process."""
    from sessionquery.cli import main as cli_main

    out = _Lines()
    sys.stdout = out
    server = threading.Thread(
        target=cli_main, args=(["serve", "--port", "0", *spec["sources"]],), daemon=True
    )
    server.start()
    url = out.lines.get(timeout=600).strip()
    reps, big_events, word = spec["reps"], spec["big_events"], spec["word"]
    figures: dict[str, Any] = {"index_wait_s": _wait_for_index(url, word)}
    middle = big_events // 2
    session = f"/s/{quote(spec['big_id'], safe='')}"
    _settle(url)  # the first open of a session is timed alone, as a person's click would be
    figures["first_screen_cold"] = _one(url, f"{session}/{middle}", f'id="seq-{middle}"'.encode())
    _settle(url)
    warm = [_one(url, f"{session}/{(middle + 500 * k) % big_events}") for k in range(1, reps + 1)]
    figures["first_screen_warm"] = {
        "wall": statistics.median(w["wall"] for w in warm),
        "cpu": statistics.median(w["cpu"] for w in warm),
    }
    figures["window"] = _timed(
        url, f"/api{session}/window?start={middle + 150}&end={middle + 300}", reps
    )
    figures["list_first"] = _one(url, "/")
    figures["list"] = _timed(url, "/", reps, pause=_LISTING_TTL_S + 0.1)
    figures["list_page10"] = _timed(url, "/?page=10", reps)
    figures["list_filtered"] = _timed(url, "/?cwd=/home/dev/src/billing-api", reps)
    figures["search_rare"] = _timed(url, f"/search?q={word}", reps)
    figures["search_common"] = _timed(url, "/search?q=error", reps)
    listing = _get(url, "/")[3]
    figures["sessions"] = int(listing.split(b'class="count">')[1].split(b" ")[0].replace(b",", b""))
    return figures


def _run_probe(src: Path, spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--probe", json.dumps(spec)],
        env={**env, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed: {done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _median_figures(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds (a nested ``{"wall", "cpu"}`` per request)."""
    out: dict[str, Any] = {}
    for key, value in rounds[0].items():
        if isinstance(value, dict):
            out[key] = {
                part: statistics.median(r[key][part] for r in rounds)
                for part in value
                if isinstance(value[part], int | float)
            }
        else:
            out[key] = statistics.median(r[key] for r in rounds)
    return out


def measure(
    home: Path,
    big: Path,
    big_id: str,
    big_events: int,
    work: Path,
    *,
    reps: int,
    before: str | None = None,
    rounds: int = 1,
) -> dict[str, Any]:
    """Every figure of one run: this tree's (``after``) and, with ``before``, that revision's,
    alternating round by round."""
    index = work / "index.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")},
        "SESSIONQUERY_HOME": str(work / "sqhome"),
        "SESSIONQUERY_CONFIG": str(work / "no-config.toml"),
        "NO_COLOR": "1",
    }
    figures: dict[str, Any] = {}
    if not index.exists():
        began = time.monotonic()
        subprocess.run(
            [*_cli(), "index", *_sources(home, big, index)],
            env=env,
            check=True,
            capture_output=True,
        )
        figures["index_s"] = time.monotonic() - began
    versions = {"after": ROOT / "src"}
    if before is not None:
        versions = {"before": source_tree(before, work / f"before-{before}"), **versions}
    spec = {
        "sources": _sources(home, big, index),
        "big_id": big_id,
        "big_events": big_events,
        "word": needle(7),
        "reps": reps,
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
    for _ in range(rounds):
        for name, src in versions.items():
            runs[name].append(_run_probe(src, spec, env))
    figures["versions"] = {name: _median_figures(found) for name, found in runs.items()}
    figures["rounds"] = rounds
    figures["before"] = before
    figures["cold_reads"] = cold_reads(big, big_id, work)
    figures["load"] = os.getloadavg()
    return figures


def _claude_big(work: Path) -> Path:
    """A Claude Code projects folder holding one transcript of about 16 MB."""
    import random

    from history import _claude_transcript, _Text

    root = work / "claude-big"
    if not root.exists():
        rng = random.Random(7)
        spec = HistorySpec(transcripts=1, target_bytes=16_000_000)
        session_id, folder, lines, _agents = _claude_transcript(
            rng, _Text(rng), spec, budget=16_000_000, index=0, start=1_735_689_783_990
        )
        (root / folder).mkdir(parents=True)
        (root / folder / f"{session_id}.jsonl").write_text("".join(lines))
    return root


def _timed_read(
    open_query: Callable[[], SessionQuery], session_id: str, mode: str
) -> dict[str, float]:
    """One cold read by a fresh service: ``before`` = what the viewer did before outlines
    (``read_session`` and its fold), ``after`` = ``read_outline`` + a 150-event window."""
    from sessionquery.model import fold_surface

    query = open_query()
    began, cpu = time.perf_counter(), time.process_time()
    if mode == "before":
        fold_surface(query.read_session(session_id).events)
    else:
        outline = query.read_outline(session_id)
        middle = outline.event_count // 2
        query.read_window(session_id, range(middle, min(outline.event_count, middle + 150)))
    return {
        "wall_ms": (time.perf_counter() - began) * 1000,
        "cpu_ms": (time.process_time() - cpu) * 1000,
    }


def cold_reads(big: Path, big_id: str, work: Path, reps: int = 3) -> dict[str, Any]:
    """Before and after, side by side in one run (alternating, best of ``reps`` by CPU): the
    big JSONL session, and a Claude Code transcript of similar size through the importer."""
    from sessionquery import JsonlPersistence, SessionQuery
    from sessionquery.sources import ClaudeCodeSource

    claude = _claude_big(work)
    listing = ClaudeCodeSource(claude).list()
    claude_id = max(listing, key=lambda s: s.size_bytes or 0)
    subjects: dict[str, tuple[Callable[[], SessionQuery], str, PersistedSession | None]] = {
        "jsonl": (lambda: SessionQuery(persistence=JsonlPersistence(big)), big_id, None),
        "claude": (
            lambda: SessionQuery(persistence=ClaudeCodeSource(claude)),
            claude_id.header.id,
            claude_id,
        ),
    }
    out: dict[str, Any] = {}
    for name, (open_query, session_id, entry) in subjects.items():
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for _ in range(reps):
            for mode in ("before", "after"):
                runs[mode].append(_timed_read(open_query, session_id, mode))
        out[name] = {mode: min(r, key=lambda x: x["cpu_ms"]) for mode, r in runs.items()}
        log = open_query().read_outline(session_id)
        out[name]["events"] = log.event_count
        out[name]["bytes"] = (
            entry.size_bytes if entry is not None else (big / "s000001.jsonl").stat().st_size
        )
    return out


_ROWS = (
    ("list", "session list `/`, its listing older than 2 s (a new one is taken behind)", "list"),
    ("list_page10", "session list, 10th page", "list"),
    ("list_filtered", "session list, one workspace", "list"),
    ("search_rare", "search, a word in one session", "search"),
    ("search_common", "search, a common word (`error`)", "search"),
    ("first_screen_warm", "{events}-event session, first screen, warm", "first_screen"),
    (
        "first_screen_cold",
        "{events}-event session, first screen, cold (first open: outline read and folded)",
        "first_screen",
    ),
    ("window", "the next window of 150 events (scrolling)", None),
    ("list_first", "the very first session list after start", None),
)


def _verdict(figure: dict[str, float], target: float | None) -> str:
    if target is None:
        return ""
    if figure["wall"] <= target:
        return "met"
    if figure["cpu"] <= target:
        return "**missed** by wall time, met by CPU time"
    return "**missed**"


def render(figures: dict[str, Any], big_events: int, transcripts: int) -> str:
    """The RESULTS.md section of one run."""
    from sessionquery.web.session_page import FIRST_WINDOW, WINDOW

    load = ", ".join(f"{x:.1f}" for x in figures["load"])
    versions: dict[str, Any] = figures["versions"]
    after = versions["after"]
    before = versions.get("before")
    rounds = figures.get("rounds", 1)

    def cell(figure: dict[str, float]) -> str:
        return f"{figure['wall']:.0f} / {figure['cpu']:.0f} ms"

    if before is not None:
        compared = (
            f"*before* is {figures['before']}'s `src/`, *after* this tree's, in {rounds} "
            "alternating rounds (each figure the median over the rounds; a cold first screen "
            "is one request per round)"
        )
        header = ["| request | before: wall / CPU | after: wall / CPU | target | |"]
        header.append("|---|---:|---:|---|---|")
    else:
        compared = "this tree only"
        header = ["| request | wall / CPU | target | |", "|---|---:|---|---|"]
    lines = [
        "## Web viewer",
        "",
        f"`sessionquery serve` over the real-size generated history ({after['sessions']:,} "
        f"sessions: {transcripts:,} Claude Code + Codex transcripts with their subagents, plus a "
        f"JSONL store with one {big_events:,}-event session), timed in the server's own "
        "process: wall time from sending the request to the last byte of the answer, and the "
        "process's CPU time meanwhile (its threads, a background listing, the client), which "
        f"load inflates less; load average after the run: {load}. `benchmarks/viewer.py`; "
        f"{compared}.",
        "",
        *header,
    ]
    for key, label, bar in _ROWS:
        target = TARGETS_MS[bar] if bar else None
        shown = label.format(events=f"{big_events:,}")
        goal = f"≤ {target:.0f} ms" if target else ""
        verdict = _verdict(after[key], target)
        if before is not None:
            lines.append(
                f"| {shown} | {cell(before[key])} | {cell(after[key])} | {goal} | {verdict} |"
            )
        else:
            lines.append(f"| {shown} | {cell(after[key])} | {goal} | {verdict} |")
    cold = after["first_screen_cold"]
    lines += [
        "",
        *_cold_rows(figures.get("cold_reads")),
        f"First screen (this tree): {cold['bytes'] / 1024:.0f} KB of HTML "
        f"({FIRST_WINDOW} events; before 2f2bd91 a first screen was {WINDOW}).",
        "",
        f"A session page renders a window of events ({FIRST_WINDOW} on the first screen, "
        f"{WINDOW} for each window loaded while scrolling), never the whole log. Its cold first "
        "screen is the session's outline (every line's envelope validated and folded, the "
        "events' data parsed only for the window), read once per revision; the common-word "
        "search is the index's ranking of every matching event, and every search first "
        "lists the sources (they keep no change token) to reconcile the index. Load "
        "above 4 on this 2-core machine inflates the wall times (the CPU times less).",
        "",
    ]
    return "\n".join(lines)


def _cold_rows(cold: dict[str, Any] | None) -> list[str]:
    """The before/after table of the cold reads (in-process, fresh service each time)."""
    if not cold:
        return []
    names = {
        "jsonl": "JSONL store",
        "claude": "Claude Code transcript, through the importer",
    }
    lines = [
        "Cold open of a huge session by this tree, in-process, a fresh service each time, "
        "best of 3 by CPU, alternating: the *whole read* (`read_session`, then its fold: what "
        "the viewer did before outlines) and the *outline* (`read_outline`, then `read_window` "
        "of 150 events: what it does now).",
        "",
        "| session | events | size | whole read: wall / CPU | outline: wall / CPU | CPU ratio |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in names.items():
        row = cold.get(key)
        if not row:
            continue
        before, after = row["before"], row["after"]
        lines.append(
            f"| {label} | {row['events']:,} | {row['bytes'] / 1e6:.1f} MB "
            f"| {before['wall_ms']:.0f} / {before['cpu_ms']:.0f} ms "
            f"| {after['wall_ms']:.0f} / {after['cpu_ms']:.0f} ms "
            f"| {before['cpu_ms'] / max(after['cpu_ms'], 1e-9):.1f}x |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    """Command line: generate or reuse, measure, print and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=2000)
    parser.add_argument("--target-bytes", type=float, default=1.4e9)
    parser.add_argument("--big-events", type=int, default=50_000)
    parser.add_argument("--home", help="reuse a history generated earlier into this folder")
    parser.add_argument("--workdir", help="where the big store, index and caches go")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--before", help="also measure this git revision's src/, alternately")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3 with --before)")
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--json", help="also write the raw figures to this file")
    parser.add_argument(
        "--render", help="only render the section from the figures JSON of an earlier run"
    )
    parser.add_argument("--probe", help=argparse.SUPPRESS)  # one round, in this process
    args = parser.parse_args(argv)
    if args.probe:
        real = sys.stdout
        found = probe(json.loads(args.probe))
        real.write(json.dumps(found) + "\n")
        real.flush()
        os._exit(0)  # the server's threads end with the process
    if args.render:
        section = render(
            json.loads(Path(args.render).read_text()), args.big_events, args.transcripts
        )
        print(section)
        replace_section(Path(args.output), section)
        return 0
    rounds = args.rounds if args.rounds is not None else (3 if args.before else 1)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="sq-viewer-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        home = Path(args.home) if args.home else work / "home"
        if not args.home:
            spec = HistorySpec(transcripts=args.transcripts, target_bytes=int(args.target_bytes))
            generate_history(home, spec, progress=True)
        big = work / "big"
        if not big.exists():
            generate(
                big,
                CorpusSpec(
                    sessions=3, events=args.big_events + 60, big_session_events=args.big_events
                ),
            )
        from sessionquery import JsonlPersistence

        big_id = max(JsonlPersistence(big).list(), key=lambda s: s.size_bytes or 0).header.id
        figures = measure(
            home,
            big,
            big_id,
            args.big_events,
            work,
            reps=args.reps,
            before=args.before,
            rounds=rounds,
        )
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    section = render(figures, args.big_events, args.transcripts)
    print(section)
    replace_section(Path(args.output), section)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
