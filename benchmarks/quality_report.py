"""The RESULTS.md section of the search-quality benchmark (``quality.py``), and ``--explain``.

Everything here works on plain JSON values (``run.py --json`` saves them, ``--from-json``
renders them again): questions are ``{"text", "kind", "home", "why"}``, each run is
``{"backend", "distractors", "sessions", "outcomes": {mode: [outcome, ...]}}`` and an outcome is
``{"rank", "ranked", "snippets", "corrections", "error"}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any

from quality_questions import KINDS

__all__ = ["LIMIT", "MODES", "SECTION", "TARGETS", "chance", "explain", "render", "scores"]

SECTION = "## Search quality"
"""The heading of this benchmark's section in RESULTS.md."""

MODES = ("phrase", "words", "relevance")
"""The search modes measured, when the backend accepts them (``SEARCH_MATCHES``)."""

LIMIT = 20
"""Sessions asked for per question; a right session beyond this rank counts 0 in the MRR."""

TARGETS = (
    ("recall@5, all questions", None, 1, 0.90),
    ("MRR, all questions", None, 2, 0.80),
    ("recall@5, exact identifiers", "identifier", 1, 0.95),
)
"""Issue 23's targets for ``relevance``: (label, kind or all, score index, threshold)."""

Row = dict[str, Any]
Triple = tuple[float, float, float]


def scores(outcomes: Sequence[Row]) -> Triple:
    """recall@1, recall@5 and MRR of ``outcomes`` (zeros when empty)."""
    if not outcomes:
        return 0.0, 0.0, 0.0
    ranks = [o["rank"] for o in outcomes]
    n = len(ranks)
    at1 = sum(rank == 1 for rank in ranks) / n
    at5 = sum(rank is not None and rank <= 5 for rank in ranks) / n
    mrr = sum(1 / rank for rank in ranks if rank is not None) / n
    return at1, at5, mrr


def chance(rights: Sequence[int], sessions: int) -> Triple:
    """What a uniformly random order of ``sessions`` sessions scores on average, for questions
    with ``rights[i]`` right sessions each (the first right session is at rank i with
    probability C(n - i, r - 1) / C(n, r))."""
    if not rights:
        return 0.0, 0.0, 0.0
    totals = [0.0, 0.0, 0.0]
    for r in rights:
        ranks = range(1, min(LIMIT, sessions) + 1)
        first = [comb(sessions - i, r - 1) / comb(sessions, r) for i in ranks]
        totals[0] += first[0]
        totals[1] += sum(first[:5])
        totals[2] += sum(p / i for i, p in enumerate(first, 1))
    n = len(rights)
    return totals[0] / n, totals[1] / n, totals[2] / n


def _of_kind(questions: Sequence[Row], outcomes: Sequence[Row], kind: str | None) -> list[Row]:
    pairs = zip(questions, outcomes, strict=True)
    return [o for q, o in pairs if kind is None or q["kind"] == kind]


def _cell(triple: Triple) -> str:
    return " / ".join(f"{x:.2f}" for x in triple)


def _level(distractors: int) -> str:
    return "none" if distractors == 0 else f"+{distractors}"


def _describe(results: Row) -> list[str]:
    corpus = results["corpus"]
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
                f" ({len(corpus['not_read'])} DeepSeek-harness files are not read: no importer "
                "reads that format)"
            )
    background = results["background"]
    if background:
        where += (
            f"; a second index adds {background['transcripts']} generated Codex rollouts "
            f"({background['bytes'] / 1e6:.0f} MB, `history.py`, seeded) as distractors that "
            "share words with the questions but answer none (checked on every run)"
        )
    return [
        f"`benchmarks/quality.py`: {len(results['questions'])} questions asked the way people "
        f"and agents ask (`benchmarks/quality_questions.py`) of {where}. Each question's right "
        "sessions were decided by reading the transcripts (one line per question says why); a "
        "question may have several. Found at k: a right session is among the first k sessions "
        f"of `search_sessions(question, limit={LIMIT}, match=mode)`; MRR: 1/rank of the first "
        f'right session (0 beyond rank {LIMIT}); "random order" is what shuffling the '
        "sessions would score on average. No timing, seeded background: the figures change "
        "only when the code or the corpus does.",
        "",
    ]


def _summary(results: Row) -> list[str]:
    lines = [
        "| backend | distractors | mode | recall@1 | recall@5 | MRR |",
        "|---|---|---|---:|---:|---:|",
    ]
    rights = [len(right) for right in results["right"]]
    seen: set[int] = set()
    for run in results["runs"]:
        level = _level(run["distractors"])
        if run["distractors"] not in seen:
            seen.add(run["distractors"])
            at1, at5, mrr = chance(rights, run["sessions"])
            lines.append(f"| | {level} | random order | {at1:.2f} | {at5:.2f} | {mrr:.2f} |")
        for mode, outcomes in run["outcomes"].items():
            at1, at5, mrr = scores(outcomes)
            lines.append(
                f"| {run['backend']} | {level} | `{mode}` | {at1:.2f} | {at5:.2f} | {mrr:.2f} |"
            )
    for mode in results["not_available"]:
        lines.append(f"| | | `{mode}` | not measured: the backend does not accept it yet | | |")
    for failed in results["run_errors"]:
        lines.append(f"| {failed['backend']} | | | not measured ({failed['error']}) | | |")
    return [*lines, ""]


def _kinds(results: Row, run: Row) -> list[str]:
    questions: list[Row] = results["questions"]
    modes: list[str] = results["modes"]
    lines = [
        f"Per kind of question ({run['backend']}, distractors {_level(run['distractors'])}; "
        "recall@1 / recall@5 / MRR):",
        "",
        "| kind | questions | " + " | ".join(f"`{m}`" for m in modes) + " |",
        "|---|---:|" + "---|" * len(modes),
    ]
    for kind in KINDS:
        count = sum(q["kind"] == kind for q in questions)
        if count:
            cells = [_cell(scores(_of_kind(questions, run["outcomes"][m], kind))) for m in modes]
            lines.append(f"| {kind} | {count} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _targets(results: Row, runs: Sequence[Row]) -> list[str]:
    lines = []
    for run in runs:
        outcomes = run["outcomes"].get("relevance")
        if outcomes is None:
            continue
        checks = []
        for label, kind, index, threshold in TARGETS:
            value = scores(_of_kind(results["questions"], outcomes, kind))[index]
            verdict = "met" if value >= threshold else "**not met**"
            checks.append(f"{label} ≥ {threshold:.2f}: {value:.2f}, {verdict}")
        lines.append(f"* distractors {_level(run['distractors'])}: " + "; ".join(checks))
    if not lines:
        return ["Targets of issue 23 (`relevance`): not measured, no `relevance` mode yet.", ""]
    return [f"Targets of issue 23 (`relevance`, {runs[0]['backend']}):", "", *lines, ""]


def _agreement(results: Row) -> list[str]:
    first = results["runs"][0]["backend"]
    lines = []
    for other in results["runs"]:
        if other["backend"] == first:
            continue
        mine = next(
            r
            for r in results["runs"]
            if r["backend"] == first and r["distractors"] == other["distractors"]
        )
        for mode in results["modes"]:
            a, b = mine["outcomes"][mode], other["outcomes"][mode]
            differ = [
                q["text"]
                for q, x, y in zip(results["questions"], a, b, strict=True)
                if x["ranked"] != y["ranked"]
            ]
            text = (
                f"* distractors {_level(other['distractors'])}, `{mode}`: {len(a) - len(differ)} "
                f"of {len(a)} questions give the same first {LIMIT} sessions in the same order"
            )
            if differ:
                text += "; they differ for " + ", ".join(f"“{t}”" for t in differ)
            lines.append(text)
    if not lines:
        return []
    backends = sorted({r["backend"] for r in results["runs"]} - {first})
    return [f"{first} beside {', '.join(backends)}:", "", *lines, ""]


def _rank(outcome: Row) -> str:
    if outcome["error"] is not None:
        return f"error {outcome['error']}"
    return "—" if outcome["rank"] is None else str(outcome["rank"])


def _per_question(results: Row, runs: Sequence[Row]) -> list[str]:
    modes: list[str] = results["modes"]
    levels = " · ".join(_level(run["distractors"]) for run in runs)
    lines = [
        f"Rank of the first right session, per question ({runs[0]['backend']}; distractors "
        f"{levels}; — = not among the first {LIMIT}; right = how many sessions are right):",
        "",
        "| # | kind | question | right | " + " | ".join(f"`{m}`" for m in modes) + " |",
        "|---:|---|---|---:|" + "---:|" * len(modes),
    ]
    rows = zip(results["questions"], results["right"], strict=True)
    for number, (question, right) in enumerate(rows, 1):
        text = question["text"].replace("|", "\\|")
        cells = [" · ".join(_rank(run["outcomes"][m][number - 1]) for run in runs) for m in modes]
        lines.append(
            f"| {number} | {question['kind']} | {text} | {len(right)} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def render(results: Row) -> str:
    """This benchmark's RESULTS.md section (from ``quality.measure``'s results or their JSON)."""
    if "error" in results or not results["runs"]:
        why = results.get("error") or "; ".join(
            f"{failed['backend']}: {failed['error']}" for failed in results["run_errors"]
        )
        return f"{SECTION}\n\nnot measured ({why})\n"
    first = results["runs"][0]["backend"]
    runs = [run for run in results["runs"] if run["backend"] == first]
    lines = [SECTION, "", *_describe(results)]
    if results["problems"]:
        lines += ["**The instrument is broken:**", ""]
        lines += [f"* {problem}" for problem in results["problems"]] + [""]
    lines += _summary(results)
    for run in runs:
        lines += _kinds(results, run)
    lines += _targets(results, runs)
    lines += _agreement(results)
    lines += _per_question(results, runs)
    return "\n".join(lines)


def explain(results: Row, mode: str) -> str:
    """Per question whose first right session is not first in ``mode`` (each index of the first
    backend): what ranked above it, with its snippet."""
    out = []
    first = results["runs"][0]["backend"] if results["runs"] else None
    for run in results["runs"]:
        outcomes = run["outcomes"].get(mode)
        if run["backend"] != first or outcomes is None:
            continue
        out.append(f"== {run['backend']}, distractors {_level(run['distractors'])}, `{mode}`")
        rows = zip(results["questions"], results["right"], outcomes, strict=True)
        for question, right, outcome in rows:
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
    return "\n".join(out) + "\n" if out else f"mode {mode!r} was not measured\n"
