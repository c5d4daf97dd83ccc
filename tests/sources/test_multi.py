"""MultiSource: one corpus from several persistences with collision-free, stable ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from locations import CORPUS
from sessionquery.errors import PersistenceNotFound
from sessionquery.persistence import JsonlPersistence
from sessionquery.persistence.base import ProblemSource
from sessionquery.query.service import SessionQuery
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource, Problem


def _claude(root: Path, name: str, session_id: str, text: str, **extra: object) -> None:
    record = {
        "type": "user",
        "sessionId": session_id,
        "cwd": "/work",
        "timestamp": "2025-01-01T00:00:00Z",
        "uuid": f"u-{text}",
        "message": {"role": "user", "content": text},
        **extra,
    }
    path = root / "proj" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def _codex(root: Path, session_id: str, text: str) -> None:
    meta = {"id": session_id, "timestamp": "2025-01-02T00:00:00Z", "cwd": "/work"}
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    lines = [
        {"timestamp": "2025-01-02T00:00:00Z", "type": "session_meta", "payload": meta},
        {"timestamp": "2025-01-02T00:00:01Z", "type": "response_item", "payload": item},
    ]
    (root / f"rollout-{session_id}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_colliding_ids_are_prefixed_in_every_source_and_unique_ids_are_kept(
    tmp_path: Path,
) -> None:
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    codex.mkdir()
    _claude(claude, "same.jsonl", "same", "from claude")
    _claude(claude, "only.jsonl", "only-claude", "hello")
    _codex(codex, "same", "from codex")
    multi = MultiSource([ClaudeCodeSource(claude), CodexSource(codex)])
    ids = sorted(entry.header.id for entry in multi.list())
    assert ids == ["claude:same", "codex:same", "only-claude"]
    assert sorted(e.header.id for e in multi.list()) == ids  # stable across calls
    with multi.open_read("codex:same") as handle:
        assert handle.header.id == "codex:same"
        assert any(e.type == "user/message" for e in handle.read())
    with pytest.raises(PersistenceNotFound):
        multi.open_read("same")


def test_parent_links_follow_a_renamed_parent(tmp_path: Path) -> None:
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    codex.mkdir()
    _claude(claude, "p.jsonl", "p", "parent")
    _claude(claude, "agent-x.jsonl", "p", "child", isSidechain=True, agentId="x")
    _codex(codex, "p", "other")
    multi = MultiSource([("cc", ClaudeCodeSource(claude)), ("cx", CodexSource(codex))])
    headers = {entry.header.id: entry.header for entry in multi.list()}
    assert headers["p/agent-x"].parent_session == "cc:p"
    assert multi.stat("cc:p") is not None


def test_problems_concatenate_in_source_order(tmp_path: Path) -> None:
    (tmp_path / "claude").mkdir()
    (tmp_path / "claude" / "bad.jsonl").write_text("nope\n")
    multi = MultiSource([ClaudeCodeSource(tmp_path / "claude"), CodexSource(tmp_path / "none")])
    paths = [Path(p.path).name for p in multi.problems()]
    assert paths == ["bad.jsonl", "none"]


def test_problems_of_a_jsonl_store_come_through_as_importer_problems(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "broken.jsonl").write_text("not a header\n", encoding="utf-8")
    jsonl = JsonlPersistence(store)
    multi = MultiSource([jsonl])
    assert isinstance(jsonl, ProblemSource) and isinstance(multi, ProblemSource)
    problems = multi.problems()
    assert [(type(p), Path(p.path).name) for p in problems] == [(Problem, "broken.jsonl")]
    assert problems[0].line == 1


def test_duplicate_labels_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unique"):
        MultiSource([ClaudeCodeSource(tmp_path), ClaudeCodeSource(tmp_path)])


def test_query_service_reads_and_traces_the_real_corpus_through_the_importers(
    tmp_path: Path,
) -> None:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    claude = tmp_path / "claude" / "-demo"
    claude.mkdir(parents=True)
    for path in (CORPUS / "claude-code-viewer").glob("*.jsonl"):
        shutil.copyfile(path, claude / path.name)
    multi = MultiSource([ClaudeCodeSource(tmp_path / "claude"), CodexSource(CORPUS / "agentcmd")])
    query = SessionQuery(persistence=multi)
    records = query.list_sessions()
    assert len(records) == 11 + 5  # 3 transcripts + 1 agent file + 7 sidechains; 5 rollouts
    parent = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    trace = query.trace_session(f"{parent}/agent-test-hash-123")
    assert trace.complete and trace.root is not None and trace.root.header.id == parent
    log = query.read_session("fe5e1c67-53e7-4862-81ae-d0e013e3270b")
    assert log.events and log.events[-1].type == "turn/end"
