"""Search quality: how often a natural question finds the right session, phrase vs words.

A seeded generated Claude Code + Codex home (``history.py``) is the background noise; into it
go :data:`FACTS`, one small Claude Code session each, holding one sentence a person later
remembers only roughly. Each question of :data:`QUESTIONS` is asked the way people type
them (other word order, words left out or added, other word forms; a few are exact phrases of
the answer) and has exactly one right session. Reported per match mode: recall@5 (the right
session among the first five results) and how often it is the first result.

    python benchmarks/search_quality.py                # print the table
    python benchmarks/search_quality.py --write        # also update benchmarks/RESULTS.md

It complements ``quality.py`` (filler sessions in the native store): here the history is the
realistic generated Claude Code + Codex home, read through the importers as the CLI reads it
with no options. It runs on its own and is not part of ``run.py`` (2.5 min of generation
and indexing on the two-core machine at load average 12).

The figures depend only on the seed and the code, never on the machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from history import HistorySpec, generate_history  # noqa: E402

from sessionquery.query.backend import SearchMatch  # noqa: E402
from sessionquery.query.service import SessionQuery  # noqa: E402
from sessionquery.search.sqlite import SqliteSearch  # noqa: E402
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource  # noqa: E402

__all__ = ["FACTS", "QUESTIONS", "Outcome", "markdown_section", "measure"]

SECTION = "## Search quality on an imported Claude Code + Codex history (CLI)"
"""The heading of this benchmark's section in RESULTS.md."""

FACTS = (
    "The checkout test is flaky because the payment mock times out after two seconds.",
    "Retrying the webhook delivery fixed the duplicate invoice emails.",
    "The migration failed because the users table had a NOT NULL column without a default.",
    "We pinned the redis client to version 4 to stop connection resets in staging.",
    "The deploy to production rolled back when the health check timed out.",
    "The dark mode toggle now persists in local storage across reloads.",
    "The memory leak came from an unbounded cache of rendered templates.",
    "Login fails for users whose email contains a plus sign because the regex rejects it.",
    "Slow search queries were caused by a missing index on the sessions created_at column.",
    "The CSV export drops rows with unicode names because the writer used latin-1.",
    "Rate limiting returns 429 for the mobile client because the token bucket refills slowly.",
    "The websocket reconnect loop stops after lowering the heartbeat interval to 20 seconds.",
    "Docker build cache misses came from copying the repository before installing packages.",
    "Timezone bug: monthly reports used server local time instead of UTC for the totals.",
    "The refund amount was rounded with float arithmetic instead of Decimal.",
    "Pagination skipped items because the cursor compared timestamps with second precision.",
    "Uploading large files failed at 10 MB because the proxy body size limit was too small.",
    "The feature flag for the new onboarding flow was evaluated before the user loaded.",
)
"""One remembered sentence per planted session (index = answer number)."""

QUESTIONS: tuple[tuple[str, int], ...] = (
    ("flaky checkout test", 0),
    ("duplicate invoice emails webhook", 1),
    ("users table migration failed", 2),
    ("redis connection resets", 3),
    ("production deploy rolled back", 4),
    ("persist dark mode toggle", 5),
    ("template cache memory leak", 6),
    ("login email plus sign", 7),
    ("missing index slow queries", 8),
    ("csv export unicode", 9),
    ("mobile client 429 rate limit", 10),
    ("heartbeat websocket reconnect", 11),
    ("docker cache misses build", 12),
    ("monthly reports utc timezone", 13),
    ("refund rounding decimal", 14),
    ("pagination cursor skipped items", 15),
    ("proxy body size limit uploads", 16),
    ("onboarding feature flag", 17),
    ("health check timed out", 4),
    ("token bucket", 10),
    ("missing index", 8),
    ("heartbeat interval", 11),
)
"""Natural questions and the number of the fact that answers each."""

MODES: tuple[SearchMatch, ...] = ("phrase", "words")


@dataclass(frozen=True, slots=True)
class Outcome:
    """Search quality of one match mode.

    Attributes:
        mode: ``phrase`` or ``words``.
        recall_at_5: fraction of questions whose answer is among the first five sessions.
        first: how many questions have their answer as the first result.
        found: per question, the answer's 1-based rank or ``None``.
    """

    mode: str
    recall_at_5: float
    first: int
    found: tuple[int | None, ...]


def _fact_id(number: int) -> str:
    return f"fact{number:02d}-5e55-4a11-9000-{number:012d}"


def _plant(projects: Path, number: int, sentence: str) -> None:
    session = _fact_id(number)
    cwd = "/home/dev/src/shop"
    lines = [
        {
            "type": "user",
            "uuid": f"u{number}",
            "parentUuid": None,
            "sessionId": session,
            "cwd": cwd,
            "timestamp": f"2025-11-{1 + number % 28:02d}T10:00:00.000Z",
            "message": {"role": "user", "content": "What did we find out about this?"},
        },
        {
            "type": "assistant",
            "uuid": f"a{number}",
            "parentUuid": f"u{number}",
            "sessionId": session,
            "cwd": cwd,
            "timestamp": f"2025-11-{1 + number % 28:02d}T10:00:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": sentence}]},
        },
    ]
    folder = projects / re.sub(r"[^A-Za-z0-9]", "-", cwd)
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / f"{session}.jsonl").write_text(text, encoding="utf-8")


def measure(workdir: Path, *, transcripts: int = 300) -> dict[str, Any]:
    """Generate the history, plant the facts, index once and ask every question both ways."""
    began = time.perf_counter()
    spec = HistorySpec(transcripts=transcripts, target_bytes=transcripts * 40_000)
    manifest = generate_history(workdir / "home", spec)
    projects = Path(manifest.claude_projects)
    for number, sentence in enumerate(FACTS):
        _plant(projects, number, sentence)
    sources = MultiSource(
        [
            ("claude", ClaudeCodeSource(projects)),
            ("codex", CodexSource(manifest.codex_sessions)),
        ]
    )
    outcomes = []
    with SessionQuery(persistence=sources, search=SqliteSearch(workdir / "index.sqlite3")) as q:
        for mode in MODES:
            ranks: list[int | None] = []
            for question, answer in QUESTIONS:
                page = q.search_sessions(question, limit=5, match=mode)
                ids = [hit.record.id for hit in page.items]
                target = _fact_id(answer)
                ranks.append(ids.index(target) + 1 if target in ids else None)
            hits = sum(rank is not None for rank in ranks)
            outcomes.append(
                Outcome(mode, hits / len(QUESTIONS), sum(rank == 1 for rank in ranks), tuple(ranks))
            )
    return {
        "transcripts": manifest.transcripts,
        "bytes": manifest.bytes,
        "questions": len(QUESTIONS),
        "outcomes": outcomes,
        "seconds": time.perf_counter() - began,
    }


def markdown_section(result: dict[str, Any] | None = None) -> str:
    """This benchmark's RESULTS.md section (measured now when ``result`` is not given)."""
    if result is None:
        with tempfile.TemporaryDirectory(prefix="sq-quality-") as work:
            result = measure(Path(work))
    outcomes: list[Outcome] = result["outcomes"]
    lines = [
        SECTION,
        "",
        f"{result['questions']} natural questions, each with one right session among "
        f"{result['transcripts']} generated transcripts ({result['bytes'] / 1e6:.0f} MB, "
        f"`history.py`, seed fixed) plus the {len(FACTS)} planted ones "
        "(`benchmarks/search_quality.py`). Most questions change word order, leave words out, "
        "add words or use other word forms, as people do; four are exact phrases of the "
        "answer. Deterministic: the figures do not depend on the machine.",
        "",
        "| match mode | recall@5 | first result |",
        "|---|---|---|",
    ]
    for outcome in outcomes:
        lines.append(
            f"| `{outcome.mode}` | {outcome.recall_at_5:.2f} "
            f"({round(outcome.recall_at_5 * result['questions'])} of {result['questions']}) | "
            f"{outcome.first} of {result['questions']} |"
        )
    missed = [QUESTIONS[i][0] for i, rank in enumerate(outcomes[-1].found) if rank is None]
    lines += [
        "",
        "`words` (the CLI's default) finds the answer whenever every word of the question is "
        "in it, in any order; `phrase` (the API's and the tools' default) only when the words "
        "are adjacent and in order. Questions `words` still misses, because a word form "
        "differs (no stemming) or a word is not in the answer: "
        + (", ".join(f"`{q}`" for q in missed) or "none")
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the section; ``--write`` also puts it into RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    parser.add_argument("--transcripts", type=int, default=300, help="background transcripts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sq-quality-") as work:
        section = markdown_section(measure(Path(work), transcripts=args.transcripts))
    print(section)
    if args.write:
        results = HERE / "RESULTS.md"
        from report import replace_section  # beside this script

        replace_section(results, section)
        print(f"wrote {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
