"""``sessionquery push`` of a real-size history into a team database, as a real process.

    python benchmarks/history.py /tmp/home --transcripts 2000 --target-bytes 1.4e9
    python benchmarks/push_bench.py --home /tmp/home --jobs 1,2 --output benchmarks/RESULTS.md

For each ``--jobs`` value, into a fresh database of a throwaway PostgreSQL 15 cluster
(``fsync=off``; the push's own session commits without waiting for the WAL anyway):

1. ``sessionquery list`` once (this fills the importers' metadata cache, as any earlier
   command on the machine has; its time is given, not counted in the push);
2. the first push of the whole history (``--claude``/``--codex`` of ``--home``): wall time,
   MB/s of transcript (the bytes of every ``.jsonl`` under the home), the CPU of the pushing
   process and its reader processes, and the server's;
3. a push of the unchanged history;
4. a push after one line is appended to one transcript.

Every figure is one run on this machine, with the load average beside it. The section is
printed; ``--output FILE`` also replaces its ``## Real-size push`` section.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from team_bench import _cluster_cpu, _load, publish, team_database  # noqa: E402

SECTION = "## Real-size push"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sessionquery(args: Sequence[str], sq_home: Path) -> tuple[float, float, str]:
    """Run the real command line; (wall seconds, CPU seconds of it and its children, stdout)."""
    env = {**os.environ, "SESSIONQUERY_HOME": str(sq_home), "NO_COLOR": "1"}
    command = [str(Path(sys.executable).with_name("sessionquery")), *args]
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({done.returncode}): {done.stderr}")
    return wall, _children_cpu() - cpu, done.stdout


def _append_line(home: Path) -> None:
    """One user line appended to the newest Claude Code transcript."""
    newest = max((home / ".claude" / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime)
    last = json.loads(newest.read_text(encoding="utf-8").splitlines()[-1])
    line = {
        "type": "user",
        "uuid": "00000000-0000-4000-8000-00000000beef",
        "parentUuid": last.get("uuid"),
        "sessionId": last.get("sessionId"),
        "cwd": last.get("cwd"),
        "timestamp": "2026-12-02T00:00:00.000Z",
        "message": {"role": "user", "content": "one more question appended for the benchmark"},
    }
    with newest.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def run(home: Path, jobs: Sequence[int]) -> str:
    from postgres_support import running_server

    size = sum(path.stat().st_size for path in home.rglob("*.jsonl"))
    sources = ["--claude", str(home / ".claude" / "projects")]
    sources += ["--codex", str(home / ".codex" / "sessions")]
    rows = []
    with running_server() as server:
        for count in jobs:
            sq_home = Path(tempfile.mkdtemp(prefix="sq-push-bench-"))
            dsn = server.new_database()
            team_database(dsn, ())
            push = ["push", *sources, "--postgres", dsn, "--machine", "m01", "--jobs", str(count)]
            listed, _cpu, _out = _sessionquery(["list", *sources, "--limit", "1"], sq_home)
            load = _load()
            server_cpu = _cluster_cpu(dsn)
            wall, cpu, out = _sessionquery([*push, "--json"], sq_home)
            time.sleep(1.5)  # the push's backend has hung up; the postmaster reaps it
            server_cpu = _cluster_cpu(dsn) - server_cpu
            report = json.loads(out)
            again, _c, _o = _sessionquery(push, sq_home)
            rows.append(
                f"| {count} | {load} | {listed:.1f} s | **{wall:.0f} s** "
                f"(**{size / 1e6 / wall:.1f} MB/s**) | {report['sessions']:,} sessions, "
                f"{report['events']:,} events, {report['bytes'] / 1e6:,.0f} MB of event JSON "
                f"| {cpu:.0f} s | {server_cpu:.0f} s | "
                f"{size / 1e6 / (cpu + server_cpu):.1f} MB | {again:.1f} s |"
            )
            server.drop_database(dsn)
        _append_line(home)
        dsn = server.new_database()
        team_database(dsn, ())
        sq_home = Path(tempfile.mkdtemp(prefix="sq-push-bench-"))
        push = ["push", *sources, "--postgres", dsn, "--machine", "m01", "--jobs", str(jobs[-1])]
        _sessionquery(push, sq_home)
        _append_line(home)
        grown, _cpu, out = _sessionquery(push, sq_home)
    header = (
        f"{SECTION}\n\n"
        f"`python benchmarks/push_bench.py --home HOME --jobs {','.join(map(str, jobs))}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: the real `sessionquery push` "
        f"of the history written by `benchmarks/history.py HOME --transcripts 2000 "
        f"--target-bytes 1.4e9` ({size / 1e6:,.0f} MB of transcripts) into a fresh team "
        "database of a throwaway PostgreSQL 15 cluster on the same 2-core machine, redacted "
        "(the default). `--jobs` is the reader processes; CPU *push* is the pushing process "
        "and its readers, *server* every PostgreSQL process; *per CPU s* is MB of transcript "
        "per CPU second of both. The listing before each push fills the importers' metadata "
        "cache, as any earlier command does.\n\n"
        "| jobs | load | `list` before | first push | written | CPU push | CPU server "
        "| per CPU s | unchanged push |\n"
        "|---:|---|---:|---:|---|---:|---:|---:|---:|\n"
    )
    footer = (
        f"\nA push after one line was appended to one transcript: {grown:.1f} s ({out.strip()}).\n"
    )
    return header + "\n".join(rows) + "\n" + footer


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="a history.py home")
    parser.add_argument("--jobs", default="1,2", help="reader processes to compare, e.g. 1,2")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    publish(run(args.home, [int(n) for n in args.jobs.split(",")]), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
