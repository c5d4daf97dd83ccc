"""Smoke tests of the benchmark suite: the generator's corpora and ``run.py --quick``.

No timing is asserted: the point is that the one command keeps working, produces a
well-formed table, refuses unsafe work directories and reports failures as "not measured".
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from locations import BENCHMARKS
from sessionquery import JsonlPersistence, SessionQuery

sys.path.insert(0, str(BENCHMARKS))

from corpus import CorpusSpec, generate
from report import NOT_MEASURED, render

pytestmark = pytest.mark.slow  # each test runs a benchmark script on a small corpus


def _digest(root: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.glob("*.jsonl"))
    }


def test_generated_corpus_has_exact_counts_and_every_session_replays(tmp_path: Path) -> None:
    spec = CorpusSpec(sessions=30, events=2500, big_session_events=600)
    manifest = generate(tmp_path / "store", spec)
    assert manifest.sessions == 30
    assert manifest.events == 2500
    service = SessionQuery(persistence=JsonlPersistence(tmp_path / "store"))
    total = 0
    kinds: set[str] = set()
    origins: set[str | None] = set()
    for record in service.list_sessions():
        log = service.read_session(record.id)  # replay-validated: the surface folds
        total += len(log.events)
        kinds.update(event.type for event in log.events)
        origins.add(record.header.origin)
    big = service.read_session(manifest.big_session or "")
    service.close()
    assert total == 2500
    assert {"user/message", "assistant/message", "tool/call", "tool/result"} <= kinds
    assert "subagent" in origins
    assert manifest.compactions > 0
    assert len(big.events) == 600


def test_same_spec_generates_byte_identical_corpora(tmp_path: Path) -> None:
    spec = CorpusSpec(sessions=12, events=600)
    first = generate(tmp_path / "a", spec)
    second = generate(tmp_path / "b", spec)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert first.rare_word == second.rare_word


def test_generator_refuses_a_store_that_already_holds_sessions(tmp_path: Path) -> None:
    spec = CorpusSpec(sessions=12, events=600)
    generate(tmp_path / "store", spec)
    before = _digest(tmp_path / "store")
    with pytest.raises(ValueError, match="already holds sessions"):
        generate(tmp_path / "store", spec)
    assert _digest(tmp_path / "store") == before


def test_quick_run_writes_a_well_formed_results_table(tmp_path: Path) -> None:
    work = tmp_path / "work"
    output = tmp_path / "out.md"
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "run.py"),
            "--quick",
            "--workdir",
            str(work),
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=900,  # a hang catcher: the quick run takes 60-170 s on a loaded 2-core machine
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    for heading in (
        "## Machine",
        "## Corpora",
        "### Full index build",
        "## Targets",
        "## Index lifecycle",
    ):
        assert heading in text
    assert "## SPEC §11 rule" in text
    for query in ("rare word", "common word", "two-word phrase", "filtered"):
        assert f"| {query} |" in text
    # sessionquery and the floor themselves must always be measured
    build_rows = [line for line in text.splitlines() if line.startswith("| sessionquery |")]
    assert build_rows and all(NOT_MEASURED not in line for line in build_rows)
    assert "| raw FTS5 | not measured" not in text
    assert not work.exists()  # cleaned up after itself


def test_run_refuses_a_non_empty_directory_it_did_not_create(tmp_path: Path) -> None:
    work = tmp_path / "precious"
    work.mkdir()
    (work / "notes.txt").write_text("keep me")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--workdir", str(work)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "refused" in done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]
    assert (work / "notes.txt").read_text() == "keep me"


def test_failed_comparator_is_reported_as_not_measured_never_zero() -> None:
    manifest = {
        "sessions": 2,
        "events": 100,
        "documents": 50,
        "bytes": 1000,
        "forks": 0,
        "subagents": 0,
        "compactions": 0,
        "big_session": None,
        "big_session_events": 0,
        "seconds": 0.1,
    }
    ours = {"ok": True, "maxrss_kb": 1024, "result": {"seconds": 1.0, "documents": 50}}
    failed = {"ok": False, "error": "RuntimeError: tantivy exploded"}
    classes = {
        name: {"p50": 1.0, "p95": 2.0, "min": 1.0, "n": 3, "top": ["a"]}
        for name in ("rare word", "common word", "two-word phrase", "filtered")
    }
    search_ok = {"ok": True, "maxrss_kb": 1024, "result": {"classes": classes, "first_ms": 3}}
    corpus = {
        "label": "tiny",
        "manifest": manifest,
        "build": {"sessionquery": ours, "raw FTS5": ours, "Tantivy": failed},
        "search": {"sessionquery": search_ok, "raw FTS5": search_ok, "Tantivy": failed},
    }
    results = {
        "quick": True,
        "machine": {
            "date": "today",
            "platform": "p",
            "cpu": "c",
            "cores": 2,
            "memory": "1 GiB",
            "python": "3",
            "sqlite": "3",
            "tantivy": "x",
            "rg": "not installed",
            "load_before": (0.0, 0.0, 0.0),
        },
        "corpora": [corpus],
        "rule": corpus,
    }
    text = render(results, "")
    tantivy_rows = [line for line in text.splitlines() if line.startswith("| Tantivy |")]
    assert tantivy_rows and "not measured (RuntimeError: tantivy exploded)" in tantivy_rows[0]
    search_rows = [line for line in text.splitlines() if line.startswith("| rare word |")]
    assert "not measured" in search_rows[0]
    assert "0.00 ms" not in text


def test_the_startup_benchmark_compares_two_versions_side_by_side(tmp_path: Path) -> None:
    from startup import main as startup_main

    figures = tmp_path / "figures.json"
    assert startup_main(["--baseline", "HEAD", "--reps", "1", "--json", str(figures)]) == 0
    import json

    measured = json.loads(figures.read_text())
    assert set(measured) == {"before", "after"}
    for version in measured.values():
        assert version["help"] > 0 and version["list"] >= version["work"] > 0
        assert version["help_imports"] > 0


def test_the_viewer_benchmark_measures_a_small_history(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "viewer.py"),
            "--transcripts",
            "6",
            "--target-bytes",
            "2e6",
            "--big-events",
            "600",
            "--reps",
            "1",
            "--before",
            "HEAD",
            "--rounds",
            "1",
            "--output",
            str(output),
            "--workdir",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    section = output.read_text(encoding="utf-8")
    assert "## Web viewer" in section
    assert "600-event session, first screen, cold" in section
    assert "| request | before: wall / CPU | after: wall / CPU | target | |" in section
    for label in ("session list `/`", "search, a word in one session", "the next window"):
        assert label in section
