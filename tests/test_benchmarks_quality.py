"""The search-quality benchmark (``benchmarks/quality.py``): it runs, writes a well-formed section
of its own, says when there are no real transcripts, and its answer key matches the corpus.

No figure is asserted: the benchmark measures the search engine, these tests check the
instrument.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from locations import BENCHMARKS, CORPUS
from sessionquery.examples import EXAMPLE_SESSION_IDS

sys.path.insert(0, str(BENCHMARKS))

from quality import (
    BACKGROUND,
    LIMIT,
    SECTION,
    check_background,
    generate_background,
    locate_corpus,
    measure,
    ranking_parameters,
)
from quality_held_out import HELD_OUT
from quality_questions import KINDS, QUESTIONS
from quality_report import HELD_OUT_SECTION, RANKING_AT_HELD_OUT, render, subset

pytestmark = pytest.mark.slow  # the quality benchmark over its vendored corpus

_NUMBER = re.compile(r"^(0|1)\.\d\d$")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / "quality.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _rows(section: str, header_start: str, after: str = "") -> list[list[str]]:
    """The body rows of the first Markdown table whose header line starts with
    ``header_start`` (after the first line holding ``after``)."""
    lines = section.splitlines()
    begin = next(i for i, line in enumerate(lines) if after in line)
    start = next(i for i, line in enumerate(lines) if i > begin and line.startswith(header_start))
    assert set(lines[start + 1]) <= set("|-: ")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def _section(path: Path) -> str:
    text = path.read_text()
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_examples_only_run_replaces_its_section_with_well_formed_tables(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text(f"# results\n\n## Other\n\nkept\n\n{SECTION}\n\nold figures\n")
    done = _run("--examples-only", "--background", "10", "--output", str(output))
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    assert "## Other\n\nkept" in text
    assert "old figures" not in text
    assert text.count(SECTION + "\n") == 1
    section = _section(output)
    asked = [q for q in QUESTIONS if q.home == "examples"]
    summary = _rows(section, "| backend | distractors | mode |")
    for level in ("none", "+10"):
        rows = [row for row in summary if row[1] == level]
        assert rows[0][:3] == ["", level, "random order"]
        assert [row[2] for row in rows[1:3]] == ["`phrase`", "`words`"]
        assert all(row[0] == "sqlite" for row in rows[1:])
        for row in rows:
            assert all(_NUMBER.match(cell) for cell in row[3:6]), row
    modes = len([row for row in summary if row[0] == "sqlite"]) // 2
    for level in ("none", "+10"):
        kinds = _rows(section, "| kind | questions |", after=f"distractors {level};")
        assert [row[0] for row in kinds] == [k for k in KINDS if any(q.kind == k for q in asked)]
        assert sum(int(row[1]) for row in kinds) == len(asked)
        for row in kinds:
            assert len(row) == 2 + modes
            for cell in row[2:]:
                assert all(_NUMBER.match(x) for x in cell.split(" / ")), row
    questions = _rows(section, "| # | kind | question |")
    assert [row[2] for row in questions] == [q.text.replace("|", "\\|") for q in asked]
    held = [q for q in HELD_OUT if q.home == "examples"]
    held_rows = _rows(section, "| # | kind | question |", after=HELD_OUT_SECTION)
    assert [row[0] for row in held_rows] == [f"H{n}" for n in range(1, len(held) + 1)]
    assert [row[2] for row in held_rows] == [q.text.replace("|", "\\|") for q in held]
    for row in questions + held_rows:
        for cell in row[4:]:
            for rank in cell.split(" · "):
                assert rank == "—" or 1 <= int(rank) <= LIMIT, row
    for after in ("Held-out questions alone:", "questions together (tuned and held-out):"):
        rows = _rows(section, "| backend | distractors | mode |", after=after)
        assert {row[1] for row in rows} == {"none", "+10"}
        for row in rows:
            assert all(_NUMBER.match(cell) for cell in row[3:6]), row
    assert "No parameter of the ranking was changed after the held-out questions" in section


def test_run_without_real_transcripts_says_so_and_measures_the_examples(tmp_path: Path) -> None:
    missing = tmp_path / "no-corpus"
    done = _run("--corpus", str(missing), "--background", "0", "--no-write")
    assert done.returncode == 0, done.stderr
    assert str(missing) in done.stderr
    assert "bundled example sessions only" in done.stdout
    assert f"{sum(q.home == 'examples' for q in QUESTIONS)} questions asked" in done.stdout


def test_locate_corpus_names_the_missing_folder(tmp_path: Path) -> None:
    found, why = locate_corpus(tmp_path / "absent")
    assert found is None
    assert why is not None and str(tmp_path / "absent") in why
    assert locate_corpus(CORPUS) == (CORPUS, None)


def test_every_question_is_well_formed_and_distinct() -> None:
    assert len(QUESTIONS) >= 50
    assert len({q.text for q in QUESTIONS}) == len(QUESTIONS)
    for question in QUESTIONS:
        assert question.text.strip() and question.why.strip()
        assert question.kind in KINDS
        assert question.answers and len(set(question.answers)) == len(question.answers)
        if question.home == "examples":
            assert set(question.answers) & set(EXAMPLE_SESSION_IDS), question.text


def test_held_out_questions_are_well_formed_and_new() -> None:
    assert len(HELD_OUT) >= 40
    texts = {q.text for q in HELD_OUT}
    assert len(texts) == len(HELD_OUT)
    assert not texts & {q.text for q in QUESTIONS}
    for question in HELD_OUT:
        assert question.text.strip() and question.why.strip()
        assert question.kind in KINDS
        assert question.answers and len(set(question.answers)) == len(question.answers)
        if question.home == "examples":
            assert set(question.answers) <= set(EXAMPLE_SESSION_IDS), question.text


def test_every_right_session_is_listed_from_the_vendored_corpus() -> None:
    results = measure(corpus_dir=CORPUS, modes=("phrase",), background=0)
    assert results["problems"] == []
    sets = [q["set"] for q in results["questions"]]
    assert sets == ["tuned"] * len(QUESTIONS) + ["held-out"] * len(HELD_OUT)
    listed = set(results["corpus"]["sessions"])
    for question in HELD_OUT:
        assert set(question.answers) <= listed, question.text
    assert results["corpus"]["not_read"]  # the DeepSeek-harness files are named, not hidden


def test_the_report_says_when_the_ranking_changed_since_the_held_out_set() -> None:
    assert ranking_parameters() == RANKING_AT_HELD_OUT
    results = measure(examples_only=True, modes=("phrase",), background=0)
    assert len(subset(results, "held-out")["questions"]) == sum(
        q.home == "examples" for q in HELD_OUT
    )
    assert "No parameter of the ranking was changed" in render(results)
    changed = {**results, "ranking": {**results["ranking"], "PHRASE_FACTOR": 3.0}}
    text = render(changed)
    assert "The ranking's parameters changed since the held-out questions" in text
    assert "`PHRASE_FACTOR` 2.0 → 3.0" in text
    old = {key: value for key, value in results.items() if key != "ranking"}
    old["questions"] = [{k: v for k, v in q.items() if k != "set"} for q in results["questions"]]
    assert HELD_OUT_SECTION not in render(old)  # results saved before the held-out set


def test_the_default_background_answers_no_question(tmp_path: Path) -> None:
    folder, info = generate_background(tmp_path, BACKGROUND)
    assert info["transcripts"] == BACKGROUND
    assert check_background(folder, QUESTIONS + HELD_OUT) == []


def test_a_distractor_that_could_answer_a_question_is_reported(tmp_path: Path) -> None:
    folder, _info = generate_background(tmp_path, 3)
    rollout = sorted(folder.rglob("rollout-*.jsonl"))[0]
    rollout.write_text(rollout.read_text().replace("rg -n ", "pytest -q ", 1))
    problems = check_background(folder, QUESTIONS)
    assert len(problems) == 1
    assert "'pytest'" in problems[0]
