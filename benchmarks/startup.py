"""What a ``sessionquery`` command costs before it starts its work, before and after a change.

    python benchmarks/startup.py                         # against the round's starting point
    python benchmarks/startup.py --baseline REV --reps 21 --write

Both versions run side by side in one run, with this interpreter and its installed
dependencies: the working tree's ``src/`` and ``REV``'s ``src/`` (extracted with ``git
archive``), each put first on ``PYTHONPATH``. The runs alternate (before, after, before, ...)
so that load changes hit both alike; each figure is the median wall time of ``--reps``
processes. Measured, per version:

Every figure is CPU time (user + system of the process), which other work on a shared
machine moves far less than wall time:

* ``python -c pass``: the interpreter's own start-up, the floor of any command;
* ``sessionquery --help``;
* ``sessionquery list --limit 5`` over the bundled sample store (a small store, so the
  figure is almost all start-up), and the same command's **own work**: the CPU time of a
  second ``main([...])`` call in one process that already ran it once (imports done, files
  cached);
* the command's **start-up cost**: its CPU time minus its own work; halving it is the goal;
* the modules each command imports (``python -X importtime``: their count and summed
  self time).

``--write`` puts the table into ``benchmarks/RESULTS.md`` (section "Start-up cost").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from report import replace_section, source_tree  # noqa: E402

__all__ = ["main"]

BASELINE = "c1888dc"
"""The commit this round started from (main before the composition root and the lazy imports)."""

_WORK = """
import sys, time
from sessionquery.cli import main
args = sys.argv[1:]
main(args)
began = time.process_time()
main(args)
sys.stderr.write(f"WORK {time.process_time() - began:.6f}\\n")
"""


@dataclass(frozen=True, slots=True)
class Version:
    """One version of the package under measurement."""

    name: str
    src: Path

    def env(self, home: Path) -> dict[str, str]:
        """The environment its commands run in: its ``src`` first, a private home."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SESSIONQUERY_", "XDG_"))}
        env.update(
            PYTHONPATH=str(self.src), HOME=str(home), SESSIONQUERY_HOME=str(home / "sq"),
            NO_COLOR="1", PYTHONDONTWRITEBYTECODE="",
        )  # fmt: skip
        return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one process running ``argv``: unlike wall time, hardly
    moved by other work on a shared machine."""
    began = _children_cpu()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = _children_cpu() - began
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed: {done.stderr[-2000:]}")
    return seconds


def _work(list_args: list[str], env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _WORK, *list_args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"^WORK ([0-9.]+)$", done.stderr, re.MULTILINE)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"in-process list failed: {done.stderr[-2000:]}")
    return float(found.group(1))


def _imports(args: list[str], env: dict[str, str]) -> tuple[int, float]:
    code = "import sys; from sessionquery.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = re.findall(r"^import time:\s+(\d+) \|\s+\d+ \|", done.stderr, re.MULTILINE)
    return len(rows), sum(int(us) for us in rows) / 1e6


def measure(versions: list[Version], home: Path, reps: int) -> dict[str, dict[str, Any]]:
    """Every figure of every version (see the module docstring)."""
    from sessionquery.examples import build_examples

    store = home / "store"
    build_examples(store)
    list_args = ["list", "--limit", "5", "--root", str(store), "--index", str(home / "i.sqlite3")]
    runs: dict[str, dict[str, list[float]]] = {
        v.name: {"python": [], "help": [], "list": [], "work": []} for v in versions
    }
    cli = [sys.executable, "-m", "sessionquery.cli"]
    for version in versions:  # warm the file cache and the importer cache once
        _cpu([*cli, *list_args], version.env(home))
    for _ in range(reps):
        for version in versions:
            env = version.env(home)
            runs[version.name]["python"].append(_cpu([sys.executable, "-c", "pass"], env))
            runs[version.name]["help"].append(_cpu([*cli, "--help"], env))
            runs[version.name]["list"].append(_cpu([*cli, *list_args], env))
            runs[version.name]["work"].append(_work(list_args, env))
    figures: dict[str, dict[str, Any]] = {}
    for version in versions:
        env = version.env(home)
        medians = {key: statistics.median(values) for key, values in runs[version.name].items()}
        medians["list_startup"] = medians["list"] - medians["work"]
        medians["help_imports"], medians["help_import_s"] = _imports(["--help"], env)
        medians["list_imports"], medians["list_import_s"] = _imports(list_args, env)
        figures[version.name] = medians
    return figures


def render(figures: dict[str, dict[str, Any]], baseline: str, reps: int, load: str) -> str:
    """The RESULTS.md section."""
    before, after = figures["before"], figures["after"]

    def ms(value: float) -> str:
        return f"{value * 1000:.0f} ms"

    def ratio(key: str) -> str:
        return f"{before[key] / after[key]:.1f}x less" if after[key] else "-"

    rows = [
        ("`python -c pass` (the floor)", "python", False),
        ("`sessionquery --help`", "help", True),
        ("`sessionquery list --limit 5` (sample store)", "list", True),
        ("  its own work (second call in one process)", "work", False),
        ("  its start-up cost (CPU - own work)", "list_startup", True),
    ]
    lines = [
        "## Start-up cost",
        "",
        f"`benchmarks/startup.py`: the same commands with the source of {baseline} (before) and "
        f"of this tree (after), alternating, median CPU time (user + system) of {reps} "
        f"processes each, this interpreter and dependencies; load average {load}.",
        "",
        "| command | before | after | |",
        "|---|---:|---:|---|",
    ]
    for label, key, compare in rows:
        lines.append(f"| {label} | {ms(before[key])} | {ms(after[key])} | "
                     f"{ratio(key) if compare else ''} |")  # fmt: skip
    lines += [
        f"| modules imported by `--help` | {before['help_imports']} "
        f"({ms(before['help_import_s'])}) | {after['help_imports']} "
        f"({ms(after['help_import_s'])}) | |",
        f"| modules imported by `list --limit 5` | {before['list_imports']} "
        f"({ms(before['list_import_s'])}) | {after['list_imports']} "
        f"({ms(after['list_import_s'])}) | |",
        "",
        "Module counts and their summed self time (wall) come from `python -X importtime`.",
        "",
        "`--help` imports the parser and the composition root only (no command, service, "
        "model or backend; a test checks it). `list` imports what it runs: the JSONL store, "
        "the query service with its filters and result types (about 50 frozen dataclasses, "
        "whose creation is most of the rest), the renderer and the title cache; no search "
        "index, tools, MCP SDK, archive or viewer (also checked by a test).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: measure both versions side by side, print (and with --write, record)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="the revision to compare with")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="sq-startup-") as scratch:
        work = Path(scratch)
        old = source_tree(args.baseline, work / "before")
        versions = [Version("before", old), Version("after", ROOT / "src")]
        figures = measure(versions, work / "home", args.reps)
    section = render(figures, args.baseline, args.reps, load)
    print(section)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    if args.write:
        replace_section(HERE / "RESULTS.md", section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
