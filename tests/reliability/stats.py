"""Run counters for the reliability suites (examples tried, crashes survived, events verified).

When ``SQ_RELIABILITY_STATS`` names a file, :func:`record` appends one JSON line per call to
it; ``docs/reliability.md`` quotes the totals of a long run, summed with :func:`summarise`.
Without the variable nothing is written, so ordinary test runs leave no trace.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

__all__ = ["profile_examples", "record", "summarise"]

ENV_VAR = "SQ_RELIABILITY_STATS"


def profile_examples() -> int:
    """``max_examples`` of the loaded hypothesis profile (50 for ``ci``, 2000 for ``long``);
    the non-hypothesis loops of the suites scale their iteration counts with it."""
    from hypothesis import settings

    current = settings.default
    assert current is not None
    return current.max_examples


def record(suite: str, **counts: int) -> None:
    """Add ``counts`` to the totals of ``suite`` (no-op unless ``SQ_RELIABILITY_STATS``)."""
    target = os.environ.get(ENV_VAR)
    if not target:
        return
    line = json.dumps({"suite": suite, **counts}, sort_keys=True) + "\n"
    # O_APPEND keeps concurrent writers' lines whole.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def summarise(path: str | Path) -> dict[str, dict[str, int]]:
    """Sum the counters recorded in ``path`` per suite."""
    totals: dict[str, Counter[str]] = {}
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        suite = entry.pop("suite")
        totals.setdefault(suite, Counter()).update(entry)
    return {suite: dict(sorted(counter.items())) for suite, counter in sorted(totals.items())}


if __name__ == "__main__":
    for suite_name, suite_counts in summarise(sys.argv[1]).items():
        print(suite_name, json.dumps(suite_counts))
