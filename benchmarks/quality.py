"""Search quality: do questions asked the way people and agents ask them find the right session?

    python benchmarks/quality.py                     # measure, print, update RESULTS.md
    python benchmarks/quality.py --examples-only     # the bundled examples alone (a few seconds)
    python benchmarks/quality.py --backend postgres  # the PostgreSQL index (a throwaway cluster,
                                                     # or --dsn an existing empty database)
    python benchmarks/quality.py --backend both      # both, and whether they rank alike
    python benchmarks/quality.py --explain words     # what ranked above each miss

The corpus is what a user of the CLI would search: the real Claude Code and Codex transcripts of
``../shared/corpus/real`` (else the copy vendored in ``tests/data/real``; ``--corpus DIR`` names
another), read in place through the project's importers (``ClaudeCodeSource``, ``CodexSource``:
inline sidechains and agent files become child sessions), beside the bundled examples
(``sessionquery quickstart``) in a ``JsonlPersistence`` store, all in one ``MultiSource`` labelled
as the CLI labels them, indexed once into a fresh index. When no real transcripts are found the
benchmark says so and measures the examples alone; it is not an error.

The questions and their right sessions are :data:`quality_questions.QUESTIONS`, decided by
reading the transcripts. For every search mode the backend accepts (``phrase``, ``words`` and,
once it exists, ``relevance``), each question is searched with ``search_sessions(text,
limit=20, match=mode)``. A question is found at k when any of its right sessions is among the
first k sessions; its reciprocal rank is 1/rank of the first right session among the first 20
(0 beyond). Reported per mode and per kind of question: recall@1, recall@5 and MRR. A question
whose right session is not listed at all is an error of the instrument (an importer's ids
changed), reported and counted in the exit status, never silently skipped.

The figures depend only on the code and the corpus (no timing, no randomness).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from quality_questions import KINDS, QUESTIONS, Question  # noqa: E402

__all__ = [
    "LIMIT",
    "MODES",
    "SECTION",
    "Corpus",
    "Outcome",
    "available_modes",
    "explain",
    "locate_corpus",
    "main",
    "measure",
    "render",
    "scores",
]

SECTION = "## Search quality"
"""The heading of this benchmark's section in RESULTS.md."""

MODES = ("phrase", "words", "relevance")
"""The search modes measured, when the backend accepts them (``SEARCH_MATCHES``)."""

LIMIT = 20
"""Sessions asked for per question; a right session beyond this rank counts 0 in the MRR."""

SHARED_CORPUS = REPO.parent / "shared" / "corpus" / "real"
VENDORED_CORPUS = REPO / "tests" / "data" / "real"

_NOT_READ = "deepseek-harness"
"""Folder name of the DeepSeek-harness files: no importer of this project reads them (the
snapshots lack ``seq``/``time``; a store reads only files named after their session id)."""


@dataclass(frozen=True, slots=True)
class Corpus:
    """What was indexed.

    Attributes:
        real: the folder of real transcripts read, or ``None`` (examples only).
        why_no_real: why no real transcripts were read (``None`` when they were).
        claude_files / codex_files: transcript files given to each importer.
        not_read: files of the real corpus no importer reads (DeepSeek harness).
        sessions: session id -> the corpus it came from (``real`` or ``examples``).
    """

    real: Path | None
    why_no_real: str | None
    claude_files: int
    codex_files: int
    not_read: tuple[str, ...]
    sessions: dict[str, str]


@dataclass(slots=True)
class Outcome:
    """One question searched in one mode on one backend.

    Attributes:
        rank: 1-based rank of the first right session among the first :data:`LIMIT`, or None.
        ranked: the session ids returned, in order.
        snippets: the best event's snippet of each returned session.
        corrections: what the backend says it searched instead of typed words.
        error: the error code when the search failed.
    """

    rank: int | None = None
    ranked: list[str] = field(default_factory=list)
    snippets: list[str] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def locate_corpus(explicit: Path | None = None) -> tuple[Path | None, str | None]:
    """The real transcripts to read and, when there are none, why.

    ``explicit`` (``--corpus``) must exist; otherwise ``../shared/corpus/real`` is used, else the
    copy vendored in ``tests/data/real``.
    """
    if explicit is not None:
        if explicit.is_dir():
            return explicit, None
        return None, f"--corpus {explicit} is not a directory"
    for candidate in (SHARED_CORPUS, VENDORED_CORPUS):
        if candidate.is_dir() and any(candidate.rglob("*.jsonl")):
            return candidate, None
    return None, (
        f"no real transcripts: neither {SHARED_CORPUS} nor {VENDORED_CORPUS} holds any; "
        "measuring the bundled examples only"
    )


def _is_codex(rel: Path) -> bool:
    return rel.name.startswith("rollout-") or rel.parent.name == "codex"


def _link_trees(real: Path, work: Path) -> tuple[Path, Path, int, int, list[str]]:
    """A Claude projects tree and a Codex sessions tree of symlinks to the real files.

    Each corpus folder becomes one Claude project folder (so sessions that shared a project
    directory still do); Codex files keep their ``rollout-`` names (others get one).
    """
    claude, codex = work / "claude", work / "codex"
    claude.mkdir()
    codex.mkdir()
    claude_files = codex_files = 0
    not_read: list[str] = []
    for path in sorted(real.rglob("*.jsonl")):
        rel = path.relative_to(real)
        if _NOT_READ in rel.parts:
            not_read.append(rel.as_posix())
            continue
        if _is_codex(rel):
            name = rel.name if rel.name.startswith("rollout-") else "rollout-" + "-".join(rel.parts)
            link = codex / name
            codex_files += 1
        else:
            link = claude / ("-" + "-".join(rel.parent.parts)) / rel.name
            claude_files += 1
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(path.resolve())
    return claude, codex, claude_files, codex_files, not_read


def _open_sources(real: Path | None, why: str | None, work: Path) -> tuple[Any, Corpus]:
    """The persistence to index (labelled as the CLI labels its sources) and what it holds."""
    from sessionquery import JsonlPersistence
    from sessionquery.examples import build_examples

    examples_root = work / "examples"
    example_ids = build_examples(examples_root)
    store = JsonlPersistence(examples_root)
    if real is None:
        sessions = dict.fromkeys(example_ids, "examples")
        return store, Corpus(None, why, 0, 0, (), sessions)
    from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource

    claude, codex, n_claude, n_codex, not_read = _link_trees(real, work)
    persistence = MultiSource(
        [
            ("store", store),
            ("claude", ClaudeCodeSource(claude, follow_outside_links=True)),
            ("codex", CodexSource(codex, follow_outside_links=True)),
        ]
    )
    sessions = {
        entry.header.id: "examples" if entry.header.id in example_ids else "real"
        for entry in persistence.list()
    }
    return persistence, Corpus(real, None, n_claude, n_codex, tuple(not_read), sessions)


@contextmanager
def _backend(kind: str, work: Path, dsn: str | None) -> Iterator[Any]:
    if kind == "sqlite":
        from sessionquery.search.sqlite import SqliteSearch

        yield SqliteSearch(work / "index.sqlite3")
        return
    from sessionquery.search.postgres import PostgresSearch

    if dsn is not None:
        yield PostgresSearch(dsn)
        return
    sys.path.insert(0, str(REPO / "tests"))
    from postgres_support import running_server

    with running_server() as server:
        yield PostgresSearch(server.new_database())


def available_modes(requested: Sequence[str] = MODES) -> list[str]:
    """The requested modes the installed backend accepts, in :data:`MODES` order."""
    from sessionquery.query.backend import SEARCH_MATCHES

    return [mode for mode in MODES if mode in requested and mode in SEARCH_MATCHES]


def _search(query: Any, question: Question, mode: str, right: set[str]) -> Outcome:
    from sessionquery.errors import SessionQueryError

    try:
        page = query.search_sessions(question.text, limit=LIMIT, match=mode)
    except SessionQueryError as exc:
        return Outcome(error=str(exc.code))
    ranked = [hit.record.id for hit in page.items]
    rank = next((n for n, sid in enumerate(ranked, 1) if sid in right), None)
    return Outcome(
        rank=rank,
        ranked=ranked,
        snippets=[hit.best_match.snippet for hit in page.items],
        corrections=dict(getattr(page, "corrections", {}) or {}),
    )


def _asked(corpus: Corpus) -> tuple[list[tuple[Question, set[str]]], list[str]]:
    """The questions whose home corpus is loaded, with their listed right sessions; problems."""
    loaded = set(corpus.sessions.values())
    asked: list[tuple[Question, set[str]]] = []
    problems: list[str] = []
    for question in QUESTIONS:
        if question.home not in loaded:
            continue
        missing = [
            sid
            for sid in question.answers
            if sid not in corpus.sessions and _home_of(sid) in loaded
        ]
        if missing:
            problems.append(f"{question.text!r}: right session(s) not listed: {', '.join(missing)}")
            continue
        asked.append((question, {sid for sid in question.answers if sid in corpus.sessions}))
    return asked, problems


def _home_of(session_id: str) -> str:
    from sessionquery.examples import EXAMPLE_SESSION_IDS

    return "examples" if session_id in EXAMPLE_SESSION_IDS else "real"


def _corpus_json(corpus: Corpus) -> dict[str, Any]:
    data = asdict(corpus)
    data["real"] = None if corpus.real is None else _shown(corpus.real)
    return data


def _question_json(question: Question) -> dict[str, Any]:
    return {
        "text": question.text,
        "kind": question.kind,
        "home": question.home,
        "why": question.why,
    }


def measure(
    *,
    examples_only: bool = False,
    corpus_dir: Path | None = None,
    backends: Sequence[str] = ("sqlite",),
    dsn: str | None = None,
    modes: Sequence[str] = MODES,
) -> dict[str, Any]:
    """Index the corpus once per backend and search every question in every available mode."""
    from sessionquery import SessionQuery

    real: Path | None = None
    why: str | None = "--examples-only: the bundled examples alone"
    if not examples_only:
        real, why = locate_corpus(corpus_dir)
    work = Path(tempfile.mkdtemp(prefix="sq-quality-"))
    try:
        persistence, corpus = _open_sources(real, why, work)
        asked, problems = _asked(corpus)
        measured_modes = available_modes(modes)
        results: dict[str, Any] = {
            "corpus": _corpus_json(corpus),
            "questions": [_question_json(question) for question, _ in asked],
            "right": [sorted(right) for _, right in asked],
            "modes": measured_modes,
            "not_available": [mode for mode in modes if mode not in measured_modes],
            "backends": {},
            "backend_errors": {},
            "problems": problems,
        }
        for kind in backends:
            (work / kind).mkdir()
            try:
                with ExitStack() as stack:
                    search = stack.enter_context(_backend(kind, work / kind, dsn))
                    query = stack.enter_context(
                        SessionQuery(persistence=persistence, search=search)
                    )
                    results["backends"][kind] = {
                        mode: [asdict(_search(query, q, mode, right)) for q, right in asked]
                        for mode in measured_modes
                    }
            except Exception as exc:  # one backend that cannot run is reported, not fatal
                results["backend_errors"][kind] = f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


# ------------------------------------------------------------------------------ figures
# Results are plain JSON values (run.py --json saves them and --from-json renders them again):
# questions are {"text", "kind", "home", "why"}, outcomes are asdict(Outcome).

Row = dict[str, Any]

TARGETS = (
    ("recall@5, all questions", None, 1, 0.90),
    ("MRR, all questions", None, 2, 0.80),
    ("recall@5, exact identifiers", "identifier", 1, 0.95),
)
"""Issue 23's targets for ``relevance``: (label, kind or all, score index, threshold)."""


def scores(outcomes: Sequence[Row]) -> tuple[float, float, float]:
    """recall@1, recall@5 and MRR of ``outcomes`` (zeros when empty)."""
    if not outcomes:
        return 0.0, 0.0, 0.0
    ranks = [o["rank"] for o in outcomes]
    n = len(ranks)
    at1 = sum(rank == 1 for rank in ranks) / n
    at5 = sum(rank is not None and rank <= 5 for rank in ranks) / n
    mrr = sum(1 / rank for rank in ranks if rank is not None) / n
    return at1, at5, mrr


def _of_kind(questions: Sequence[Row], outcomes: Sequence[Row], kind: str | None) -> list[Row]:
    pairs = zip(questions, outcomes, strict=True)
    return [o for q, o in pairs if kind is None or q["kind"] == kind]


def _cell(triple: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in triple)


def _describe(corpus: Row, asked: int) -> list[str]:
    sessions: dict[str, str] = corpus["sessions"]
    examples = sum(origin == "examples" for origin in sessions.values())
    if corpus["real"] is None:
        where = f"the {examples} bundled example sessions only ({corpus['why_no_real']})"
    else:
        where = (
            f"{len(sessions) - examples} sessions imported from the real transcripts in "
            f"`{corpus['real']}` ({corpus['claude_files']} Claude Code files, "
            f"{corpus['codex_files']} Codex rollouts; inline sidechains and agent files are "
            f"child sessions) and the {examples} bundled example sessions, in one index"
        )
        if corpus["not_read"]:
            where += (
                f"; {len(corpus['not_read'])} DeepSeek-harness files are not read (no importer "
                "reads that format)"
            )
    return [
        f"`benchmarks/quality.py`: {asked} questions asked the way people and agents ask "
        f"(`benchmarks/quality_questions.py`) of {where}. Each question's right sessions were "
        "decided by reading the transcripts (one line per question says why); a question "
        "may have several. Found at k: a right session is among the first k sessions of "
        f"`search_sessions(question, limit={LIMIT}, match=mode)`; MRR: 1/rank of the first "
        f"right session (0 beyond rank {LIMIT}). No timing and no randomness: the figures "
        "change only when the code or the corpus does.",
        "",
    ]


def _shown(path: Path) -> str:
    for base, name in ((REPO, ""), (REPO.parent, "../")):
        try:
            return name + path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return str(path)


def _summary(results: Row) -> list[str]:
    lines = ["| backend | mode | recall@1 | recall@5 | MRR |", "|---|---|---:|---:|---:|"]
    for backend, per_mode in results["backends"].items():
        for mode, outcomes in per_mode.items():
            at1, at5, mrr = scores(outcomes)
            lines.append(f"| {backend} | `{mode}` | {at1:.2f} | {at5:.2f} | {mrr:.2f} |")
    for mode in results["not_available"]:
        lines.append(f"| | `{mode}` | not measured: the backend does not accept it yet | | |")
    for backend, error in results["backend_errors"].items():
        lines.append(f"| {backend} | | not measured ({error}) | | |")
    return [*lines, ""]


def _kinds(results: Row, backend: str) -> list[str]:
    questions: list[Row] = results["questions"]
    modes: list[str] = results["modes"]
    per_mode = results["backends"][backend]
    lines = [
        f"Per kind of question ({backend}; recall@1 / recall@5 / MRR):",
        "",
        "| kind | questions | " + " | ".join(f"`{m}`" for m in modes) + " |",
        "|---|---:|" + "---|" * len(modes),
    ]
    for kind in KINDS:
        count = sum(q["kind"] == kind for q in questions)
        if count:
            cells = [_cell(scores(_of_kind(questions, per_mode[m], kind))) for m in modes]
            lines.append(f"| {kind} | {count} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _targets(results: Row, backend: str) -> list[str]:
    outcomes = results["backends"][backend].get("relevance")
    if outcomes is None:
        return [
            "Targets of issue 23 (`relevance`): not measured, the backend has no `relevance` "
            "mode yet.",
            "",
        ]
    lines = [f"Targets of issue 23 (`relevance`, {backend}):", ""]
    for label, kind, index, threshold in TARGETS:
        value = scores(_of_kind(results["questions"], outcomes, kind))[index]
        verdict = "met" if value >= threshold else "**not met**"
        lines.append(f"* {label} ≥ {threshold:.2f}: {value:.2f}, {verdict}")
    return [*lines, ""]


def _agreement(results: Row) -> list[str]:
    first, *others = list(results["backends"])
    lines = []
    for other in others:
        for mode in results["modes"]:
            a, b = results["backends"][first][mode], results["backends"][other][mode]
            differ = [
                q["text"]
                for q, x, y in zip(results["questions"], a, b, strict=True)
                if x["ranked"] != y["ranked"]
            ]
            text = (
                f"* `{mode}`: {len(a) - len(differ)} of {len(a)} questions give the same first "
                f"{LIMIT} sessions in the same order"
            )
            if differ:
                text += "; they differ for " + ", ".join(f"“{t}”" for t in differ)
            lines.append(text)
    if not lines:
        return []
    return [f"{first} beside {', '.join(others)}:", "", *lines, ""]


def _rank(outcome: Row) -> str:
    if outcome["error"] is not None:
        return f"error {outcome['error']}"
    return "—" if outcome["rank"] is None else str(outcome["rank"])


def _per_question(results: Row, backend: str) -> list[str]:
    modes: list[str] = results["modes"]
    per_mode = results["backends"][backend]
    lines = [
        f"Rank of the first right session, per question ({backend}; — = not among the first "
        f"{LIMIT}; right = how many sessions are right):",
        "",
        "| # | kind | question | right | " + " | ".join(f"`{m}`" for m in modes) + " |",
        "|---:|---|---|---:|" + "---:|" * len(modes),
    ]
    rows = zip(results["questions"], results["right"], strict=True)
    for number, (question, right) in enumerate(rows, 1):
        text = question["text"].replace("|", "\\|")
        ranks = " | ".join(_rank(per_mode[m][number - 1]) for m in modes)
        lines.append(f"| {number} | {question['kind']} | {text} | {len(right)} | {ranks} |")
    return [*lines, ""]


def render(results: Row) -> str:
    """This benchmark's RESULTS.md section (from :func:`measure`'s results, or their JSON)."""
    if "error" in results or not results["backends"]:
        why = results.get("error") or "; ".join(
            f"{kind}: {error}" for kind, error in results["backend_errors"].items()
        )
        return f"{SECTION}\n\nnot measured ({why})\n"
    backend = next(iter(results["backends"]))
    lines = [SECTION, "", *_describe(results["corpus"], len(results["questions"]))]
    if results["problems"]:
        lines += ["**The instrument is broken** (these questions were not asked):", ""]
        lines += [f"* {problem}" for problem in results["problems"]] + [""]
    lines += _summary(results)
    lines += _kinds(results, backend)
    lines += _targets(results, backend)
    lines += _agreement(results)
    lines += _per_question(results, backend)
    return "\n".join(lines)


def explain(results: Row, mode: str, backend: str | None = None) -> str:
    """Per question whose first right session is not first in ``mode``: what ranked above it."""
    backend = backend or next(iter(results["backends"]))
    outcomes = results["backends"][backend].get(mode)
    if outcomes is None:
        return f"mode {mode!r} was not measured\n"
    out = []
    for question, right, outcome in zip(
        results["questions"], results["right"], outcomes, strict=True
    ):
        if outcome["rank"] == 1:
            continue
        out.append(f"[{question['kind']}] {question['text']!r}: rank {_rank(outcome)}")
        out.append(f"    right: {', '.join(right)}  ({question['why']})")
        if outcome["corrections"]:
            out.append(f"    corrections: {outcome['corrections']}")
        rank = outcome["rank"]
        above = outcome["ranked"] if rank is None else outcome["ranked"][: rank - 1]
        for n, sid in enumerate(above[:5], 1):
            snippet = " ".join(outcome["snippets"][n - 1].split())[:160]
            out.append(f"    {n}. {sid}: {snippet}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure, print the section and (unless ``--no-write``) replace it in RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples-only", action="store_true", help="the bundled examples alone")
    parser.add_argument("--corpus", type=Path, help="folder of real transcripts to read")
    parser.add_argument(
        "--backend", choices=("sqlite", "postgres", "both"), default="sqlite", help="index backend"
    )
    parser.add_argument("--dsn", help="an existing, empty PostgreSQL database (else throwaway)")
    parser.add_argument("--mode", action="append", choices=MODES, help="measure only this mode")
    parser.add_argument("--explain", choices=MODES, help="print what ranked above the misses")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md", help="file to update")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    results = measure(
        examples_only=args.examples_only,
        corpus_dir=args.corpus,
        backends=backends,
        dsn=args.dsn,
        modes=args.mode or MODES,
    )
    why = results["corpus"]["why_no_real"]
    if why:
        print(f"quality.py: {why}", file=sys.stderr)
    section = render(results)
    print(section)
    if args.explain:
        print(explain(results, args.explain))
    if not args.no_write:
        from report import replace_section

        replace_section(args.output, section)
    return 1 if results["problems"] or results["backend_errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
