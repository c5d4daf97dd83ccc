"""One huge event never stalls the index nor grows memory (issue: huge events, SPEC §12).

A JSONL store holds a small session and a session whose one event is a single line of
:data:`LINE_MIB` MiB (a pasted log, escape-heavy). Through the tools with a 500 ms deadline,
``session_search`` for the small session's word must answer it after a bounded number of
calls, no call may outlive its deadline by much, the process's resident memory must stay
bounded (it is measured in a child process, alone) and must not grow from call to call; the
huge event is then searchable by the start of its text (the index keeps the first
``INDEXED_EVENT_TEXT`` bytes of it) and not by its end, and a ``session_search`` hit on it
answers (its title is read without reading the log into events) in the same bounds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_support import clean_env
from locations import TESTS
from reliability.stats import record

LINE_MIB = 400
TIMEOUT_MS = 500
MAX_CALLS = 200
"""Calls before the small session must be searchable: a bound that catches an index that
never moves past the huge line (8 calls on a quiet machine, see docs/reliability.md)."""
CALL_SLACK_SECONDS = 3.0
"""How much longer than its deadline one call may take on a loaded machine (a call that reads
the whole line before checking its deadline takes seconds more)."""
RSS_GROWTH_MIB = 200
"""Resident memory above the child's start-up: parsing the line whole needs over 1 GiB."""
RSS_DRIFT_MIB = 20
"""How much resident memory may move between the first answer and the last call."""


def test_a_huge_single_line_event_leaves_the_history_searchable_in_bounded_memory(
    tmp_path: Path,
) -> None:
    child = TESTS / "reliability" / "huge_event.py"
    done = subprocess.run(
        [sys.executable, str(child), str(tmp_path), str(LINE_MIB), str(TIMEOUT_MS),
         str(MAX_CALLS)],
        env=clean_env(tmp_path), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    calls = figures["calls_until_searchable"]
    assert calls is not None, figures
    assert max(figures["seconds"]) <= TIMEOUT_MS / 1000 + CALL_SLACK_SECONDS, figures
    assert max(figures["rss"]) <= figures["rss_start"] + RSS_GROWTH_MIB, figures
    after = figures["rss"][calls - 1 :]
    assert max(after) - min(after) <= RSS_DRIFT_MIB, figures
    assert figures["head_hits"] == ["huge"] and figures["tail_hits"] == [], figures
    record("huge_events", calls=calls, rss_max=max(figures["rss"]))
    print(json.dumps(figures))
