"""``read_documents``: the searchable text of an imported session, equal to the full read."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from locations import BENCHMARKS, CORPUS
from sessionquery.errors import PersistenceNotFound
from sessionquery.model import (
    TitleSnapshot,
    extract_event_text,
    fold_surface,
    fold_title,
    interrupted_turn_closers,
)
from sessionquery.persistence.base import DocumentSource, TextDocument
from sessionquery.sources import ClaudeCodeSource, CodexSource
from sessionquery.sources._catalog import Catalog

sys.path.insert(0, str(BENCHMARKS))

from history import HistorySpec, generate_history


def _expected_title(source: Catalog, session_id: str) -> TitleSnapshot | None:
    with source.open_read(session_id) as handle:
        return fold_title(handle.read())


def _expected(source: Catalog, session_id: str) -> tuple[int, list[TextDocument]]:
    with source.open_read(session_id) as handle:
        events = handle.read()
    events = events + interrupted_turn_closers(events)
    fold = fold_surface(events)
    documents = []
    for event in events:
        text = extract_event_text(event)
        if text:
            surface = fold.surface_of[event.seq]
            documents.append(TextDocument(event.seq, event.type, event.time, surface, text))
    return len(events), documents


def _check_every_session(source: Catalog) -> int:
    checked = 0
    for entry in source.list():
        log = source.read_documents(entry.header.id)
        count, documents = _expected(source, entry.header.id)
        assert log.header == entry.header
        assert log.revision == entry.revision
        assert log.event_count == count, entry.header.id
        assert list(log.documents) == documents, entry.header.id
        assert log.title_read and log.title == _expected_title(source, entry.header.id)
        checked += 1
    return checked


def _copy_tree(destination: Path, names: list[Path]) -> Path:
    for index, path in enumerate(names):
        target = destination / f"p{index}" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return destination


def test_both_importers_offer_the_document_source_capability(tmp_path: Path) -> None:
    assert isinstance(ClaudeCodeSource(tmp_path), DocumentSource)
    assert isinstance(CodexSource(tmp_path), DocumentSource)


def test_documents_equal_the_full_read_for_every_vendored_claude_transcript(
    tmp_path: Path,
) -> None:
    files = [
        p
        for p in sorted(CORPUS.rglob("*.jsonl"))
        if not p.name.startswith("rollout-") and "codex" not in p.parts
    ]
    checked = _check_every_session(ClaudeCodeSource(_copy_tree(tmp_path, files)))
    assert checked >= 20


def test_documents_equal_the_full_read_for_every_vendored_codex_rollout(tmp_path: Path) -> None:
    files = sorted(CORPUS.rglob("rollout-*.jsonl"))
    small = tmp_path / "small" / "rollout-small.jsonl"
    small.parent.mkdir()
    shutil.copyfile(CORPUS / "agent-sessions" / "codex" / "small.jsonl", small)
    checked = _check_every_session(CodexSource(_copy_tree(tmp_path / "t", [*files, small])))
    assert checked == len(files) + 1


def test_documents_equal_the_full_read_over_a_generated_history(tmp_path: Path) -> None:
    spec = HistorySpec(
        transcripts=12,
        target_bytes=1_500_000,
        codex_share=0.4,
        subagent_share=0.6,
        inline_sidechain_share=0.5,
        compaction_bytes=40_000,
        seed=3,
    )
    manifest = generate_history(tmp_path, spec)
    assert _check_every_session(ClaudeCodeSource(manifest.claude_projects)) > 7
    assert _check_every_session(CodexSource(manifest.codex_sessions)) >= 1


def test_an_unknown_id_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(PersistenceNotFound):
        ClaudeCodeSource(tmp_path).read_documents("nope")


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


def _claude_line(kind: int, index: int, text: str) -> dict[str, object]:
    base: dict[str, object] = {
        "sessionId": "s-1",
        "cwd": "/work",
        "uuid": f"u{index}",
        "timestamp": f"2025-01-01T00:00:{index % 60:02d}Z",
    }
    if kind == 0:
        return {**base, "type": "user", "message": {"role": "user", "content": text}}
    if kind == 1:
        content = [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": f"t{index}", "name": "Bash", "input": {"command": text}},
        ]
        return {**base, "type": "assistant", "message": {"id": f"m{index}", "content": content}}
    if kind == 2:
        result = {"type": "tool_result", "tool_use_id": f"t{index - 1}", "content": text}
        return {**base, "type": "user", "message": {"role": "user", "content": [result]}}
    if kind == 3:
        return {**base, "type": "system", "subtype": "compact_boundary", "content": text}
    if kind == 4:
        return {**base, "type": "user", "isCompactSummary": True, "message": {"content": text}}
    if kind == 5:
        return {**base, "type": "summary", "summary": text}
    return {
        **base,
        "type": "user",
        "isSidechain": True,
        "parentUuid": None,
        "message": {"role": "user", "content": text},
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(0, 6), _TEXT), max_size=14))
def test_documents_equal_the_full_read_for_any_mix_of_claude_lines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[int, str]]
) -> None:
    root = tmp_path_factory.mktemp("claude")
    path = root / "-work" / "s-1.jsonl"
    path.parent.mkdir()
    records = [_claude_line(kind, index, text) for index, (kind, text) in enumerate(lines)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _check_every_session(ClaudeCodeSource(root))


def test_multisource_documents_come_from_the_owning_source_under_the_public_id(
    tmp_path: Path,
) -> None:
    from sessionquery import JsonlPersistence
    from sessionquery.examples import build_examples
    from sessionquery.sources import MultiSource

    claude_root = _copy_tree(
        tmp_path / "claude", sorted((CORPUS / "claude-code-viewer").glob("*.jsonl"))
    )
    build_examples(tmp_path / "store")
    store = JsonlPersistence(tmp_path / "store")  # may lack a fast path: then read in full
    multi = MultiSource([ClaudeCodeSource(claude_root), store])
    listed = multi.list()
    stored = {entry.header.id for entry in store.list()}
    assert stored and stored < {entry.header.id for entry in listed}
    for entry in listed:
        log = multi.read_documents(entry.header.id)
        assert log.header == entry.header
        with multi.open_read(entry.header.id) as handle:
            events = handle.read()
        events = events + interrupted_turn_closers(events)
        assert log.event_count == len(events)
        texts = [extract_event_text(e) for e in events]
        assert [d.text for d in log.documents] == [t for t in texts if t]
