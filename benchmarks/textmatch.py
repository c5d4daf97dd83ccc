"""Text matching and tool-argument checks: throughput, side by side with the plain approach.

    python benchmarks/textmatch.py            # full sizes, prints a Markdown section
    python benchmarks/textmatch.py --quick    # small sizes, a few seconds

Measures, in this process:

* ``TextContains.matches`` (the original's whitespace set and simple case folding) against
  the plain Python approach it replaced (``re.IGNORECASE`` with ``\\s+``), on ASCII texts,
  on non-ASCII texts and on Greek texts with capital sigma (the folding's slow path);
* ``parse_arguments`` on a realistic JSON-text argument object, and on hostile texts of
  1 MiB (deep nesting, an unterminated string of escaped quotes, alternating brackets): each
  must be refused in time linear in its length.

Each figure is the median of several runs; the machine may be shared, so read ratios rather
than absolute times.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from sessionquery.errors import SessionQueryError
from sessionquery.query.filters import TextContains
from sessionquery.tools.validation import parse_arguments

_SENTENCE = "The quick brown fox {i} jumps over the lazy dog; pytest failed in test_login.py "
_ARGUMENTS = (
    '{"query": "failing login test", "event_types": ["tool/result", "user/message"], '
    '"event_surfaces": ["current"], "created_at_from": "2025-01-31T09:30:00Z"}'
)


def _median_seconds(work: Callable[[], object], rounds: int) -> float:
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def _texts(count: int, replace: str | None) -> list[str]:
    texts = [_SENTENCE.format(i=i) * 3 for i in range(count)]
    return [text.replace("fox", replace) for text in texts] if replace else texts


def _scan(match: Callable[[str], object], texts: list[str]) -> int:
    return sum(1 for text in texts if match(text))


def measure_matching(count: int, rounds: int) -> list[tuple[str, float, float]]:
    """(corpus, seconds with TextContains, seconds with re.IGNORECASE) per text corpus."""
    needle = "login failing"
    clause = TextContains(needle)
    plain = re.compile(r"\s+".join(map(re.escape, needle.split())), re.IGNORECASE)
    rows = []
    for label, replace in (("ASCII", None), ("non-ASCII", "föx"), ("Greek, capital sigma", "ΣΑΣ")):
        texts = _texts(count, replace)
        ours = _median_seconds(partial(_scan, clause.matches, texts), rounds)
        theirs = _median_seconds(partial(_scan, plain.search, texts), rounds)
        rows.append((label, ours, theirs))
    return rows


def _refused(text: str) -> None:
    try:
        parse_arguments(text)
    except SessionQueryError:
        return
    raise AssertionError("a hostile argument text was accepted")


def measure_arguments(size: int, rounds: int) -> list[tuple[str, float]]:
    """(case, seconds per call) for parse_arguments."""
    half = size // 2
    cases: list[tuple[str, Callable[[], object]]] = [
        ("realistic object (1 call)", lambda: parse_arguments(_ARGUMENTS)),
        (f"nested {half:,} levels", lambda: _refused("[" * half + "]" * half)),
        (
            f"unterminated string of {half:,} escaped quotes",
            lambda: _refused('{"q": "' + '\\"' * half),
        ),
        (f"{half:,} alternating brackets", lambda: _refused("][" * half)),
    ]
    return [(label, _median_seconds(work, rounds)) for label, work in cases]


def section(quick: bool) -> str:
    """The Markdown section of this benchmark."""
    count, size, rounds = (2_000, 1 << 14, 3) if quick else (100_000, 1 << 20, 5)
    lines = [
        "## Text matching and tool arguments",
        "",
        f"`benchmarks/textmatch.py`; medians of {rounds} runs in one process. "
        "The machine may be shared with other work: read the ratios.",
        "",
        f"`TextContains.matches` over {count:,} texts of about 270 characters:",
        "",
        "| texts | TextContains (s) | re.IGNORECASE (s) | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, ours, theirs in measure_matching(count, rounds):
        lines.append(f"| {label} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f} |")
    lines += [
        "",
        f"`parse_arguments` on JSON texts of {size:,} bytes (hostile ones are refused):",
        "",
        "| input | seconds per call |",
        "|---|---:|",
    ]
    for label, seconds in measure_arguments(size, rounds):
        lines.append(f"| {label} | {seconds:.4f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the section."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    args = parser.parse_args(argv)
    print(section(args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
