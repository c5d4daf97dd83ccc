"""The RESULTS.md section of the search-quality benchmark (``quality.py``), and ``--explain``.

Everything here works on plain JSON values (``run.py --json`` saves them, ``--from-json``
renders them again): questions are ``{"set", "text", "kind", "home", "why"}`` (``set`` is
``tuned`` or ``held-out``; results saved before the held-out set existed have no ``set``, all
tuned), each run is
``{"backend", "distractors", "sessions", "outcomes": {mode: [outcome, ...]}}`` and an outcome is
``{"rank", "ranked", "snippets", "corrections", "error"}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any

from quality_questions import KINDS

__all__ = [
    "HELD_OUT_COMMIT",
    "HELD_OUT_SECTION",
    "LIMIT",
    "MODES",
    "SECTION",
    "TARGETS",
    "chance",
    "explain",
    "render",
    "scores",
    "subset",
]

SECTION = "## Search quality"
"""The heading of this benchmark's section in RESULTS.md."""

MODES = ("phrase", "words", "relevance")
"""The search modes measured, when the backend accepts them (``SEARCH_MATCHES``)."""

LIMIT = 20
"""Sessions asked for per question; a right session beyond this rank counts 0 in the MRR."""

HELD_OUT_SECTION = "### Held-out questions"
"""The heading of the held-out subsection (inside :data:`SECTION`)."""

HELD_OUT_COMMIT = "2b4fb38"
"""The commit that added the held-out questions, before any engine ranked them."""

RANKING_AT_HELD_OUT: dict[str, object] = {
    "K1": 1.2,
    "B": 0.75,
    "TITLE_WEIGHT": 1.0,
    "PHRASE_FACTOR": 2.0,
    "COVERAGE_BOOST": 1.0,
    "MAX_TERMS": 16,
    "MIN_CORRECTED": 4,
    "STOPWORDS": "125 words, sha256 8c5c7032b21e",
}
"""The ranking parameters of ``sessionquery.search.relevance`` when the held-out questions were
written (as ``quality.ranking_parameters`` reports them). When a run's differ the report says
so: its held-out figures may then be in-sample too."""

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


def _set_of(question: Row) -> str:
    return str(question.get("set", "tuned"))


def subset(results: Row, name: str | None) -> Row:
    """``results`` restricted to the questions of set ``name`` (``None``: every question)."""
    if name is None:
        return results
    keep = [i for i, q in enumerate(results["questions"]) if _set_of(q) == name]
    runs = [
        {**run, "outcomes": {m: [o[i] for i in keep] for m, o in run["outcomes"].items()}}
        for run in results["runs"]
    ]
    return {
        **results,
        "questions": [results["questions"][i] for i in keep],
        "right": [results["right"][i] for i in keep],
        "runs": runs,
    }


def _of_kind(questions: Sequence[Row], outcomes: Sequence[Row], kind: str | None) -> list[Row]:
    pairs = zip(questions, outcomes, strict=True)
    return [o for q, o in pairs if kind is None or q["kind"] == kind]


def _cell(triple: Triple) -> str:
    return " / ".join(f"{x:.2f}" for x in triple)


def _level(distractors: int) -> str:
    return "none" if distractors == 0 else f"+{distractors}"


def _describe(results: Row, held_out: int = 0) -> list[str]:
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
        "only when the code or the corpus does."
        + (
            " The relevance ranking's boosts were chosen while looking at these questions, so "
            f"their `relevance` figures are in-sample; the {held_out} held-out questions of the "
            f"subsection below were not (“{HELD_OUT_SECTION.lstrip('# ')}”)."
            if held_out
            else ""
        ),
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


def _targets(results: Row, runs: Sequence[Row], of: str = "") -> list[str]:
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
        return [f"Targets of issue 23{of} (`relevance`): not measured, no `relevance` mode.", ""]
    return [f"Targets of issue 23{of} (`relevance`, {runs[0]['backend']}):", "", *lines, ""]


def _agreement(results: Row, of: str = "") -> list[str]:
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
    return [f"{first} beside {', '.join(backends)}{of}:", "", *lines, ""]


def _rank(outcome: Row) -> str:
    if outcome["error"] is not None:
        return f"error {outcome['error']}"
    return "—" if outcome["rank"] is None else str(outcome["rank"])


def _per_question(results: Row, runs: Sequence[Row], prefix: str = "") -> list[str]:
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
            f"| {prefix}{number} | {question['kind']} | {text} | {len(right)} | "
            + " | ".join(cells)
            + " |"
        )
    return [*lines, ""]


def _first_runs(results: Row) -> list[Row]:
    first = results["runs"][0]["backend"]
    return [run for run in results["runs"] if run["backend"] == first]


def _ranking_note(results: Row) -> str:
    ranking = results.get("ranking")
    if not ranking:
        return (
            "This run did not record the ranking's parameters, so whether they changed since "
            "the held-out questions were written is not known."
        )
    changed = [
        f"`{name}` {RANKING_AT_HELD_OUT.get(name)!r} → {value!r}"
        for name, value in ranking.items()
        if RANKING_AT_HELD_OUT.get(name) != value
    ]
    if changed:
        return (
            "**The ranking's parameters changed since the held-out questions were written** ("
            + "; ".join(changed)
            + "): if the change looked at these questions, their figures are in-sample too."
        )
    return (
        "No parameter of the ranking was changed after the held-out questions were written: "
        "this run's `sessionquery.search.relevance` has the values of that time ("
        + ", ".join(f"`{name}` {value}" for name, value in ranking.items())
        + ")."
    )


def _held_out(results: Row) -> list[str]:
    held = subset(results, "held-out")
    tuned = len(results["questions"]) - len(held["questions"])
    lines = [
        HELD_OUT_SECTION,
        "",
        f"{len(held['questions'])} questions of `benchmarks/quality_held_out.py`, written after "
        "the relevance ranking's boosts (`PHRASE_FACTOR`, `COVERAGE_BOOST`, `TITLE_WEIGHT`) "
        f"were chosen on the {tuned} questions above, from a second reading of the same "
        "transcripts, in the same manner (right sessions and a one-line why per question, "
        "decided by reading), favouring the sessions and the parts of long sessions the first "
        f"set rarely asks about. They were committed ({HELD_OUT_COMMIT}) before any search "
        "engine ranked them and have not been changed since. " + _ranking_note(results) + " "
        "They are out-of-sample for the boosts, not for the corpus (the same "
        f"{len(results['corpus']['sessions'])} sessions, read by the same author).",
        "",
        "Held-out questions alone:",
        "",
        *_summary(held),
        f"All {len(results['questions'])} questions together (tuned and held-out):",
        "",
        *_summary(results),
    ]
    for run in _first_runs(held):
        lines += _kinds(held, run)
    lines += _targets(held, _first_runs(held), of=" on the held-out questions")
    lines += _targets(results, _first_runs(results), of=" on all questions together")
    lines += _agreement(held, of=" (held-out questions)")
    lines += _misses(held, _first_runs(held), "relevance", prefix="H")
    lines += _per_question(held, _first_runs(held), prefix="H")
    return lines


def _misses(results: Row, runs: Sequence[Row], mode: str, prefix: str = "") -> list[str]:
    """One line per question ``mode`` does not rank first at some distractor level: its ranks
    and what ranked first there (``--explain`` gives the full picture)."""
    if not runs or mode not in runs[0]["outcomes"]:
        return []
    lines = []
    for number, question in enumerate(results["questions"], 1):
        outcomes = [run["outcomes"][mode][number - 1] for run in runs]
        missed = [(run, o) for run, o in zip(runs, outcomes, strict=True) if o["rank"] != 1]
        if not missed:
            continue
        run, outcome = missed[0]
        ranks = " · ".join(_rank(o) for o in outcomes)
        above = ""
        if outcome["ranked"]:
            snippet = " ".join(outcome["snippets"][0].split())[:120].replace("|", "\\|")
            above = (
                f"; first at {_level(run['distractors'])}: `{outcome['ranked'][0]}` (“{snippet}”)"
            )
        text = question["text"].replace("|", "\\|")
        lines.append(f"* {prefix}{number} “{text}”: rank {ranks}{above}")
    if not lines:
        return [f"`{mode}` ranks a right session first for every question at every level.", ""]
    levels = " · ".join(_level(run["distractors"]) for run in runs)
    header = (
        f"Questions `{mode}` does not rank first ({runs[0]['backend']}; rank at distractors "
        f"{levels}; `--explain {mode}` prints more):"
    )
    return [header, "", *lines, ""]


def render(results: Row) -> str:
    """This benchmark's RESULTS.md section (from ``quality.measure``'s results or their JSON):
    the tuned questions, then the held-out subsection when the run asked any."""
    if "error" in results or not results["runs"]:
        why = results.get("error") or "; ".join(
            f"{failed['backend']}: {failed['error']}" for failed in results["run_errors"]
        )
        return f"{SECTION}\n\nnot measured ({why})\n"
    tuned = subset(results, "tuned")
    held_out = len(results["questions"]) - len(tuned["questions"])
    runs = _first_runs(tuned)
    lines = [SECTION, "", *_describe(tuned, held_out)]
    if results["problems"]:
        lines += ["**The instrument is broken:**", ""]
        lines += [f"* {problem}" for problem in results["problems"]] + [""]
    lines += _summary(tuned)
    for run in runs:
        lines += _kinds(tuned, run)
    lines += _targets(tuned, runs)
    lines += _agreement(tuned)
    lines += _per_question(tuned, runs)
    if held_out:
        lines += _held_out(results)
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
            tag = "held-out " if _set_of(question) == "held-out" else ""
            out.append(f"[{tag}{question['kind']}] {question['text']!r}: rank {_rank(outcome)}")
            out.append(f"    right: {', '.join(right)}  ({question['why']})")
            if outcome["corrections"]:
                out.append(f"    corrections: {outcome['corrections']}")
            rank = outcome["rank"]
            above = outcome["ranked"] if rank is None else outcome["ranked"][: rank - 1]
            for n, sid in enumerate(above[:5], 1):
                snippet = " ".join(outcome["snippets"][n - 1].split())[:160]
                out.append(f"    {n}. {sid}: {snippet}")
    return "\n".join(out) + "\n" if out else f"mode {mode!r} was not measured\n"
