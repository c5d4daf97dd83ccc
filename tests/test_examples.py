"""Tests for sessionquery.examples: the bundled sample sessions and the sample store."""

from __future__ import annotations

from pathlib import Path

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.examples import (
    BILLING_WORKSPACE,
    DASHBOARD_WORKSPACE,
    EXAMPLE_SESSION_IDS,
    build_examples,
    ensure_example_store,
)
from sessionquery.model import Replace, fold_surface
from sessionquery.persistence import JsonlPersistence


def _files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in root.glob("*.jsonl")}


def test_build_writes_five_sessions_in_two_workspaces(tmp_path: Path) -> None:
    assert build_examples(tmp_path) == list(EXAMPLE_SESSION_IDS)
    headers = {item.header.id: item.header for item in JsonlPersistence(tmp_path).list()}
    assert set(headers) == set(EXAMPLE_SESSION_IDS)
    assert {header.cwd for header in headers.values()} == {BILLING_WORKSPACE, DASHBOARD_WORKSPACE}


def test_examples_contain_a_fork_a_subagent_and_a_compaction(tmp_path: Path) -> None:
    build_examples(tmp_path)
    persistence = JsonlPersistence(tmp_path)
    fork = persistence.stat("billing-rounding-bankers")
    scan = persistence.stat("billing-rounding-scan")
    assert fork is not None and scan is not None
    assert fork.header.parent_session == "billing-rounding"
    assert fork.header.origin == "fork" and fork.header.is_seeded
    assert scan.header.parent_session == "billing-rounding"
    assert scan.header.origin == "subagent" and scan.header.delegation_depth == 1
    with persistence.open_read("billing-rounding") as handle:
        events = handle.read()
    replaces = [event for event in events if isinstance(event.surface_op, Replace)]
    assert len(replaces) == 1
    fold = fold_surface(events)
    assert fold.replaced[replaces[0].seq]
    assert "shadowed" in set(fold.surface_of.values())


def test_every_example_log_folds_and_ends_with_a_closed_turn(tmp_path: Path) -> None:
    build_examples(tmp_path)
    persistence = JsonlPersistence(tmp_path)
    for session_id in EXAMPLE_SESSION_IDS:
        with persistence.open_read(session_id) as handle:
            events = handle.read()
        fold_surface(events)
        assert events[-1].type in ("turn/end", "session/title")


def test_building_twice_gives_byte_identical_files(tmp_path: Path) -> None:
    build_examples(tmp_path / "a")
    build_examples(tmp_path / "b")
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert len(first) == len(EXAMPLE_SESSION_IDS)
    assert first == second


def test_ensure_example_store_creates_missing_parents(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "er" / "sessions"
    assert ensure_example_store(root) == list(EXAMPLE_SESSION_IDS)
    assert len(_files(root)) == len(EXAMPLE_SESSION_IDS)


def test_ensure_example_store_is_idempotent_and_repairs_a_partial_sample(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    ensure_example_store(root)
    before = _files(root)
    next(root.glob("dashboard-*.jsonl")).unlink()
    ensure_example_store(root)
    ensure_example_store(root)
    assert _files(root) == before
    assert not [p for p in tmp_path.iterdir() if p.name != "sessions"]


def test_ensure_example_store_refuses_a_directory_with_other_data(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    (root / "notes.txt").write_text("mine", encoding="utf-8")
    with raises_code(ErrorCode.INVALID_CONFIG, path=str(root.absolute())):
        ensure_example_store(root)
    assert (root / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert [p.name for p in root.iterdir()] == ["notes.txt"]


def test_ensure_example_store_refuses_a_store_with_foreign_sessions(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    ensure_example_store(root)
    text = (root / "dashboard-websocket.jsonl").read_text(encoding="utf-8")
    (root / "someone-else.jsonl").write_text(
        text.replace('"id":"dashboard-websocket"', '"id":"someone-else"', 1), encoding="utf-8"
    )
    with raises_code(ErrorCode.INVALID_CONFIG):
        ensure_example_store(root)
    assert (root / "someone-else.jsonl").exists()


def test_ensure_example_store_refuses_a_file_in_place_of_the_directory(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.write_text("not a directory", encoding="utf-8")
    with raises_code(ErrorCode.INVALID_CONFIG):
        ensure_example_store(root)
    assert root.read_text(encoding="utf-8") == "not a directory"
