"""Search quality: do natural questions find the session that answers them?

    python benchmarks/quality.py            # prints the table, replaces its RESULTS.md section

A seeded generated history (``SESSIONS`` sessions of agent-like filler over a few
workspaces) holds one *answer session* per question: its events state a fact in the words
an agent would write ("the flaky test in checkout was caused by a shared fixture"). Each
question asks for it in the words a user would type ("checkout test flaky"): another order,
some words left out, words in between. A question is answered when its answer session is
among the first five sessions of ``search_sessions`` (recall@5), measured with
``match="phrase"`` and with ``match="words"``. The questions mix what each mode can and cannot
do: exact sub-phrases, reordered words, a word the fact lacks ("for", "size"), and other word
forms (plural, "caching" for "cached"), which neither mode matches. The history and the
questions are fixed, so the figures change only when search does.
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SECTION = "## Search quality"
SESSIONS = 300
SEED = 16

FILLER = (
    "let me look at the repository layout first",
    "running the unit tests now",
    "all tests passed in the api package",
    "I updated the configuration and restarted the service",
    "the build finished without warnings",
    "reading the error output from the last command",
    "the test suite takes about two minutes",
    "here is the diff for the change",
    "the linter reported two style issues which I fixed",
    "the deployment script needs an environment variable",
    "the database migration ran on the staging copy",
    "I will refactor the handler to reduce duplication",
    "the login page renders correctly now",
    "checking the logs of the worker process",
    "the cache was cleared before the benchmark",
)

# (fact stated in the answer session, the question a user types)
CASES = (
    ("the flaky test in checkout was caused by a shared fixture", "flaky checkout tests"),
    (
        "the login redirect was failing because the cookie domain was wrong",
        "login redirect was failing",
    ),
    ("we fixed the memory leak in the image resizer", "memory leak image resizer"),
    (
        "the payment webhook retries three times with exponential backoff",
        "backoff for webhook retries",
    ),
    ("the search index is rebuilt nightly by a cron job", "index rebuilt by cron"),
    ("timeouts in the billing export came from a missing database index", "billing export timeout"),
    ("the docker image grew because the build cache was copied", "docker image grew"),
    ("rate limiting for the public api uses a token bucket", "token bucket rate limiting"),
    (
        "the websocket disconnects were traced to the load balancer idle timeout",
        "websocket idle timeout",
    ),
    ("dark mode colors are defined in the theme tokens file", "dark mode theme"),
    ("the csv importer rejects rows with a trailing delimiter", "csv trailing delimiter"),
    (
        "the deadlock happened when two workers locked accounts in opposite order",
        "deadlock in workers",
    ),
    (
        "the password reset email was sent twice due to a retry in the queue",
        "password reset sent twice",
    ),
    ("we pinned the orm version after the upgrade broke lazy loading", "orm lazy loading"),
    ("the slow dashboard query was fixed with a covering index", "covering index for slow query"),
    ("feature flags are read once at startup and cached", "feature flag caching"),
    ("the translation files were missing the german plural forms", "german plurals"),
    ("uploads over ten megabytes fail because of the proxy body limit", "proxy upload size limit"),
)


def _session(store: Any, session_id: str, cwd: str, texts: list[str], created: int) -> None:
    session = store.create(session_id, cwd=cwd, created_at=created)
    session.append("turn/start", {"turn": 0})
    for number, text in enumerate(texts):
        if number % 2 == 0:
            data: dict[str, Any] = {
                "id": f"m{number}",
                "role": "user",
                "source": {"kind": "user"},
                "content": [{"type": "text", "text": text}],
            }
            session.append("user/message", data, surface_op="append")
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
            session.append("step/start", {"turn": 0, "step": number})
            session.append(
                "assistant/message",
                {"turn": 0, "step": number, "message": message},
                surface_op="append",
            )
            session.append("step/end", {"turn": 0, "step": number})
    session.append("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
    store.close(session_id)


def generate(root: Path) -> dict[str, str]:
    """Write the history under ``root``; return question → answer session id."""
    from sessionquery import JsonlPersistence, SessionStore

    rng = random.Random(SEED)
    store = SessionStore(JsonlPersistence(root))
    workspaces = [f"/home/dev/src/{name}" for name in ("shop", "api", "web", "infra")]
    answers: dict[str, str] = {}
    answer_at = {rng.randrange(SESSIONS): case for case in CASES}
    while len(answer_at) < len(CASES):  # distinct slots
        answer_at = {rng.randrange(SESSIONS): case for case in CASES}
    for number in range(SESSIONS):
        texts = [rng.choice(FILLER) for _ in range(rng.randint(4, 12))]
        case = answer_at.get(number)
        session_id = f"s{number:04d}"
        if case is not None:
            fact, question = case
            texts.insert(rng.randrange(len(texts) + 1), fact)
            answers[question] = session_id
        _session(store, session_id, rng.choice(workspaces), texts, 1_700_000_000_000 + number)
    return answers


def measure() -> dict[str, Any]:
    from sessionquery import JsonlPersistence, SessionQuery
    from sessionquery.query import SearchMatch
    from sessionquery.search.sqlite import SqliteSearch

    work = Path(tempfile.mkdtemp(prefix="sq-quality-"))
    try:
        answers = generate(work / "store")
        rows: list[dict[str, Any]] = []
        search = SqliteSearch(work / "index.db")
        with SessionQuery(persistence=JsonlPersistence(work / "store"), search=search) as query:
            for question, answer in answers.items():
                row: dict[str, Any] = {"question": question}
                modes: tuple[SearchMatch, ...] = ("phrase", "words")
                for mode in modes:
                    page = query.search_sessions(question, limit=5, match=mode)
                    ids = [hit.record.id for hit in page.items]
                    row[mode] = ids.index(answer) + 1 if answer in ids else None
                rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"rows": rows}


def render(results: dict[str, Any]) -> str:
    rows = results["rows"]

    def recall(mode: str) -> float:
        return sum(row[mode] is not None for row in rows) / len(rows)

    lines = [
        SECTION,
        "",
        f"`benchmarks/quality.py`: {len(rows)} natural questions over a seeded history of "
        f"{SESSIONS} sessions, each with one known answer session.",
        "",
        "| mode | recall@5 | first place |",
        "|---|---:|---:|",
    ]
    for mode in ("phrase", "words"):
        first = sum(row[mode] == 1 for row in rows)
        lines.append(f"| `{mode}` | {recall(mode):.2f} | {first} of {len(rows)} |")
    lines += ["", "| question | rank (phrase) | rank (words) |", "|---|---:|---:|"]
    for row in rows:
        cells = [str(row[mode]) if row[mode] else "—" for mode in ("phrase", "words")]
        lines.append(f"| {row['question']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.path.insert(0, str(HERE))
    from report import replace_section

    section = render(measure())
    replace_section(HERE / "RESULTS.md", section)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
