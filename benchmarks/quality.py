"""Search quality: do questions asked the way people and agents ask them find the right session?

    python benchmarks/quality.py                     # measure, print, update RESULTS.md
    python benchmarks/quality.py --examples-only     # the bundled examples alone (a few seconds)
    python benchmarks/quality.py --backend postgres  # the PostgreSQL index (a throwaway cluster,
                                                     # or --dsn an existing empty database)
    python benchmarks/quality.py --backend both      # both, and whether they rank alike
    python benchmarks/quality.py --explain words     # what ranked above each miss

The corpus is what a user of the CLI would search: the real Claude Code and Codex transcripts of
``../shared/corpus/real`` (else the copy vendored in ``tests/data/real``; ``--corpus DIR`` names
another), copied byte for byte into a Claude projects tree and a Codex sessions tree (the CLI
follows no link that leaves a source folder; the corpus itself is only read), and the bundled
examples (``sessionquery quickstart``) in a store, opened together through the CLI's composition
root (``sessionquery.app.App`` with ``--root``/``--claude``/``--codex`` as ``SourceOptions``, a
private home), so the importers, the source wrappers and the labels are the CLI's: inline
sidechains and agent files become child sessions. When no real transcripts are found the
benchmark says so and measures the examples alone; that is not an error.

That corpus is small (about 30 sessions), so a second index holds it plus ``--background``
(default :data:`BACKGROUND`) generated Codex rollouts as distractors: ``history.py`` with
``codex_share=1``, word salad over a developer vocabulary ("flaky", "test", "fix", "migration",
"token"...) and made-up words, ``rg`` calls and their made-up output. They share words with the
questions but answer none: read in the generator and in samples (no coherent task, no
``pytest``, no ``.txt`` file, no subagent), and checked on every run (:func:`check_background`:
a violation makes the instrument broken). Claude Code transcripts of ``history.py`` are not
used: their Bash calls run ``pytest``, which answers "which session ran pytest".

The questions and their right sessions, decided by reading the transcripts, come in two sets
(:data:`QUESTION_SETS`): the tuned set :data:`quality_questions.QUESTIONS`, which the relevance
ranking's boosts were chosen on (its figures are in-sample), and the held-out set
:data:`quality_held_out.HELD_OUT`, written afterwards and committed before any engine ranked
it. Both are asked in every run; the report gives the tuned set first and then, in a
subsection, the held-out set alone and all questions together. For every search mode the
backend accepts (``phrase``, ``words``, ``relevance``), each question is searched with
``search_sessions(text, limit=20, match=mode)``. A question is found at k when any of its
right sessions is among the first k sessions; its reciprocal rank is 1/rank of the first right
session among the first 20 (0 beyond). Reported per mode and per kind of question: recall@1,
recall@5 and MRR, beside what a random order would score. A question whose right session is
not listed at all is an error of the instrument (an importer's ids changed), reported and
counted in the exit status, never silently skipped.

The figures depend only on the code and the corpus (no timing; the background is seeded).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from quality_held_out import HELD_OUT  # noqa: E402
from quality_questions import QUESTIONS, Question  # noqa: E402
from quality_report import LIMIT, MODES, SECTION, explain, render  # noqa: E402

__all__ = [
    "BACKGROUND",
    "LIMIT",
    "MODES",
    "QUESTION_SETS",
    "SECTION",
    "Corpus",
    "Outcome",
    "available_modes",
    "check_background",
    "generate_background",
    "locate_corpus",
    "main",
    "measure",
    "ranking_parameters",
]

QUESTION_SETS: tuple[tuple[str, tuple[Question, ...]], ...] = (
    ("tuned", QUESTIONS),
    ("held-out", HELD_OUT),
)
"""Every question set asked, by name: ``tuned`` (:data:`quality_questions.QUESTIONS`, which the
relevance ranking's boosts were chosen on) and ``held-out`` (:data:`quality_held_out.HELD_OUT`,
written afterwards and never used for tuning)."""

BACKGROUND = 300
"""Generated distractor sessions of the second index (0: no second index)."""

BACKGROUND_BYTES_EACH = 40_000
"""Average size of one distractor rollout (``history.py`` spreads sizes log-normally)."""

SHARED_CORPUS = REPO.parent / "shared" / "corpus" / "real"
VENDORED_CORPUS = REPO / "tests" / "data" / "real"

_NOT_READ = "deepseek-harness"
"""Folder name of the DeepSeek-harness files: no importer of this project reads them (the
snapshots lack ``seq``/``time``; a store reads only files named after their session id)."""

_FORBIDDEN = ("pytest", ".txt")
"""Text that would make a distractor answer a question ("which session ran pytest", "listed
the files and found a.txt and b.txt"); the exact text of identifier and error questions is
forbidden too."""


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
    """One question searched in one mode on one index.

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


# ------------------------------------------------------------------------------ corpus


def locate_corpus(explicit: Path | None = None) -> tuple[Path | None, str | None]:
    """The real transcripts to read and, when there are none, why.

    ``explicit`` (``--corpus``) must exist; otherwise ``../shared/corpus/real`` is used, else the
    copy vendored in ``tests/data/real``.
    """
    if explicit is not None:
        if explicit.is_dir():
            return explicit, None
        return None, f"--corpus {explicit} is not a directory; measuring the bundled examples only"
    for candidate in (SHARED_CORPUS, VENDORED_CORPUS):
        if candidate.is_dir() and any(candidate.rglob("*.jsonl")):
            return candidate, None
    return None, (
        f"no real transcripts: neither {SHARED_CORPUS} nor {VENDORED_CORPUS} holds any; "
        "measuring the bundled examples only"
    )


def _is_codex(rel: Path) -> bool:
    return rel.name.startswith("rollout-") or rel.parent.name == "codex"


def _copy_trees(real: Path, work: Path) -> tuple[Path, Path, int, int, list[str]]:
    """A Claude projects tree and a Codex sessions tree holding byte-for-byte copies of the real
    files (copies, since the CLI follows no link that leaves a source folder).

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
            copy = codex / name
            codex_files += 1
        else:
            copy = claude / ("-" + "-".join(rel.parent.parts)) / rel.name
            claude_files += 1
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    return claude, codex, claude_files, codex_files, not_read


Sources = tuple[tuple[str, Path], ...]
"""``(kind, folder)`` pairs, as ``--root`` / ``--claude`` / ``--codex`` name them on the CLI."""


def _app(work: Path, sources: Sources) -> Any:
    """The CLI's composition root over ``sources`` (a private sessionquery home under ``work``,
    so no default location and no config file of the user is read)."""
    from sessionquery.app import App, SourceOptions
    from sessionquery.config import Config

    config = Config.for_home(work / "home", user_home=work / "user")
    return App(config, SourceOptions(sources=sources, index=work / "unused-index.sqlite3"))


def _sources(real: Path | None, why: str | None, work: Path) -> tuple[Sources, Corpus]:
    """The sources to index and what they hold."""
    from sessionquery.examples import build_examples

    (work / "home").mkdir()
    examples_root = work / "examples"
    example_ids = build_examples(examples_root)
    sources: Sources = (("root", examples_root),)
    if real is None:
        return sources, Corpus(None, why, 0, 0, (), dict.fromkeys(example_ids, "examples"))
    claude, codex, n_claude, n_codex, not_read = _copy_trees(real, work)
    sources += (("claude", claude), ("codex", codex))
    sessions = {
        entry.header.id: "examples" if entry.header.id in example_ids else "real"
        for entry in _app(work, sources).persistence().list()
    }
    return sources, Corpus(real, None, n_claude, n_codex, tuple(not_read), sessions)


def generate_background(work: Path, transcripts: int) -> tuple[Path, dict[str, Any]]:
    """``transcripts`` generated Codex rollouts (seeded); their sessions folder and size."""
    from history import HistorySpec, generate_history

    spec = HistorySpec(
        transcripts=transcripts,
        target_bytes=transcripts * BACKGROUND_BYTES_EACH,
        codex_share=1.0,
    )
    manifest = generate_history(work / "background", spec)
    return Path(manifest.codex_sessions), {
        "transcripts": manifest.transcripts,
        "bytes": manifest.bytes,
    }


def check_background(folder: Path, questions: Sequence[Question]) -> list[str]:
    """Why a distractor of the Codex sessions ``folder`` could answer a question (empty: none
    can)."""
    from sessionquery import SessionQuery
    from sessionquery.model import extract_event_text
    from sessionquery.sources import CodexSource

    exact = [q.text.lower() for q in questions if q.kind in ("identifier", "error")]
    problems: list[str] = []
    query = SessionQuery(persistence=CodexSource(folder))
    for record in query.list_sessions():
        if record.header.parent_session is not None:
            problems.append(f"distractor {record.id} is a child session")
        text = "\n".join(extract_event_text(e) for e in query.read_session(record.id).events)
        lowered = text.lower()
        for marker in (*_FORBIDDEN, *exact):
            if marker in lowered:
                problems.append(f"distractor {record.id} holds {marker!r}")
    return problems


def _home_of(session_id: str) -> str:
    from sessionquery.examples import EXAMPLE_SESSION_IDS

    return "examples" if session_id in EXAMPLE_SESSION_IDS else "real"


Asked = list[tuple[str, Question, set[str]]]
"""``(question set, question, its right sessions that are listed)`` per question asked."""


def _asked(corpus: Corpus) -> tuple[Asked, list[str]]:
    """The questions of every set whose home corpus is loaded, with their listed right
    sessions; problems."""
    loaded = set(corpus.sessions.values())
    asked: Asked = []
    problems: list[str] = []
    for name, question in ((name, q) for name, questions in QUESTION_SETS for q in questions):
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
        right = {sid for sid in question.answers if sid in corpus.sessions}
        asked.append((name, question, right))
    return asked, problems


# ------------------------------------------------------------------------------ searching


@contextmanager
def _indexes(kind: str, work: Path, dsn: str | None) -> Iterator[Callable[[str], Any]]:
    """A factory of fresh, empty indexes of backend ``kind`` (one per corpus variant)."""
    if kind == "sqlite":
        from sessionquery.search.sqlite import SqliteSearch

        yield lambda name: SqliteSearch(work / f"sqlite-{name}.db")
        return
    from sessionquery.search.postgres import PostgresSearch

    if dsn is not None:  # one database: each variant reconciles the index to its own corpus
        yield lambda name: PostgresSearch(dsn)
        return
    sys.path.insert(0, str(REPO / "tests"))
    from postgres_support import running_server

    with running_server() as server:
        yield lambda name: PostgresSearch(server.new_database())


def ranking_parameters() -> dict[str, object]:
    """The relevance ranking's parameters, as :data:`quality_report.RANKING_AT_HELD_OUT` records
    them (empty when the installed sessionquery has no relevance ranking)."""
    import hashlib

    try:
        from sessionquery.search import relevance
    except ImportError:
        return {}
    names = ("K1", "B", "TITLE_WEIGHT", "PHRASE_FACTOR", "COVERAGE_BOOST", "MAX_TERMS")
    found: dict[str, object] = {name: getattr(relevance, name, None) for name in names}
    found["MIN_CORRECTED"] = getattr(relevance, "MIN_CORRECTED", None)
    words = sorted(getattr(relevance, "STOPWORDS", ()))
    digest = hashlib.sha256(" ".join(words).encode()).hexdigest()[:12]
    found["STOPWORDS"] = f"{len(words)} words, sha256 {digest}"
    return found


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


def _run(search: Any, app: Any, asked: Asked, modes: list[str]) -> dict[str, Any]:
    with app.service(search) as query:
        sessions = len(query.list_sessions())
        outcomes = {
            mode: [asdict(_search(query, q, mode, right)) for _, q, right in asked]
            for mode in modes
        }
    return {"sessions": sessions, "outcomes": outcomes}


def measure(
    *,
    examples_only: bool = False,
    corpus_dir: Path | None = None,
    backends: Sequence[str] = ("sqlite",),
    dsn: str | None = None,
    modes: Sequence[str] = MODES,
    background: int = BACKGROUND,
) -> dict[str, Any]:
    """Index the corpus (and the corpus plus the background) per backend; ask every question."""
    real: Path | None = None
    why: str | None = "--examples-only: the bundled examples alone"
    if not examples_only:
        real, why = locate_corpus(corpus_dir)
    work = Path(tempfile.mkdtemp(prefix="sq-quality-"))
    try:
        sources, corpus = _sources(real, why, work)
        asked, problems = _asked(corpus)
        measured = available_modes(modes)
        variants: list[tuple[int, Sources]] = [(0, sources)]
        background_info = None
        if background > 0:
            folder, background_info = generate_background(work, background)
            problems += check_background(folder, [q for _, q, _ in asked])
            variants.append((background_info["transcripts"], (*sources, ("codex", folder))))
        results: dict[str, Any] = {
            "corpus": _corpus_json(corpus),
            "questions": [_question_json(name, q) for name, q, _ in asked],
            "right": [sorted(right) for _, _, right in asked],
            "modes": measured,
            "not_available": [mode for mode in modes if mode not in measured],
            "background": background_info,
            "ranking": ranking_parameters(),
            "runs": [],
            "run_errors": [],
            "problems": problems,
        }
        for kind in backends:
            try:
                with _indexes(kind, work, dsn) as new_index:
                    for distractors, variant in variants:
                        index = new_index(str(distractors))
                        run = _run(index, _app(work, variant), asked, measured)
                        results["runs"].append({"backend": kind, "distractors": distractors, **run})
            except Exception as exc:  # one backend that cannot run is reported, not fatal
                results["run_errors"].append(
                    {"backend": kind, "error": f"{type(exc).__name__}: {exc}"}
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def _corpus_json(corpus: Corpus) -> dict[str, Any]:
    data = asdict(corpus)
    data["real"] = None if corpus.real is None else _shown(corpus.real)
    return data


def _question_json(name: str, question: Question) -> dict[str, Any]:
    return {
        "set": name,
        "text": question.text,
        "kind": question.kind,
        "home": question.home,
        "why": question.why,
    }


def _shown(path: Path) -> str:
    for base, name in ((REPO, ""), (REPO.parent, "../")):
        try:
            return name + path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return str(path)


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
    parser.add_argument(
        "--background",
        type=int,
        default=BACKGROUND,
        help=f"generated distractor sessions of the second index (default {BACKGROUND}; 0: none)",
    )
    parser.add_argument("--explain", choices=MODES, help="print what ranked above the misses")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md", help="file to update")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    results = measure(
        examples_only=args.examples_only,
        corpus_dir=args.corpus,
        backends=("sqlite", "postgres") if args.backend == "both" else (args.backend,),
        dsn=args.dsn,
        modes=args.mode or MODES,
        background=max(0, args.background),
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
    return 1 if results["problems"] or results["run_errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
