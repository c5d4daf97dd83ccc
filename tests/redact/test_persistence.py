"""The redacting persistence: what reads through it sees masked, what it wraps stays as it was,
and its revisions and change token carry the ruleset's fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

from secret_history import CLAUDE_SESSION, KNOWN_ENV, PLANTED, forbidden, make_secret_history
from sessionquery import JsonlPersistence, SessionStore
from sessionquery.model.messages import turn_end, turn_start, user_message
from sessionquery.persistence import PersistedSession, SessionPersistence
from sessionquery.persistence.base import (
    ArchiveAware,
    ChangeJournal,
    ChangeTokenSource,
    DocumentSource,
    ProblemSource,
    ReadHandle,
)
from sessionquery.persistence.documents import stored_documents
from sessionquery.redact import RedactingPersistence, default_redactor
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource

REDACTOR = default_redactor(KNOWN_ENV)
(_GITHUB,) = (p for p in PLANTED if p.rule == "github-token")


def _history(home: Path) -> MultiSource:
    make_secret_history(home)
    return MultiSource(
        [
            ("claude", ClaudeCodeSource(home / ".claude" / "projects")),
            ("codex", CodexSource(home / ".codex" / "sessions")),
        ]
    )


def _everything(persistence: SessionPersistence) -> str:
    parts: list[str] = []
    for entry in persistence.list():
        with persistence.open_read(entry.header.id) as handle:
            parts += [json.dumps(event.to_json(), ensure_ascii=False) for event in handle.read()]
    return "\n".join(parts)


def _store_with_secret(root: Path) -> JsonlPersistence:
    persistence = JsonlPersistence(root)
    store = SessionStore(persistence)
    session = store.create("s1", cwd="/home/dev/app")
    session.append("turn/start", turn_start(0))
    session.append("user/message", user_message(_GITHUB.context, id="m0"), surface_op="append")
    session.append("turn/end", turn_end(0))
    store.close("s1")
    return persistence


def test_events_read_through_it_are_masked_and_the_files_stay_byte_identical(
    tmp_path: Path,
) -> None:
    history = _history(tmp_path)
    files = {path: path.read_bytes() for path in tmp_path.rglob("*.jsonl")}
    assert any(value in _everything(history) for value in forbidden())
    read = _everything(RedactingPersistence(history, REDACTOR))
    assert [value for value in forbidden() if value in read] == []
    assert "[REDACTED:github-token]" in read
    assert {path: path.read_bytes() for path in tmp_path.rglob("*.jsonl")} == files


def test_documents_are_the_redacted_events_documents(tmp_path: Path) -> None:
    wrapped = RedactingPersistence(_history(tmp_path), REDACTOR)
    for entry in wrapped.list():
        fast = wrapped.read_documents(entry.header.id)
        slow = stored_documents(wrapped, entry.header.id)
        assert fast == slow
        assert fast.revision == entry.revision
        text = "\n".join(document.text for document in fast.documents)
        assert [value for value in forbidden() if value in text] == []


def test_a_title_derived_from_a_prompt_with_a_secret_keeps_no_part_of_it(tmp_path: Path) -> None:
    wrapped = RedactingPersistence(_history(tmp_path), REDACTOR)
    (openai,) = (p for p in PLANTED if p.rule == "openai-api-key")
    session = next(e.header.id for e in wrapped.list() if CLAUDE_SESSION in e.header.id)
    with wrapped.open_read(session) as handle:
        titles = [event for event in handle.read() if event.type == "session/title"]
        (alone,) = handle.read(titles[0].seq, 1)
    derived = titles[0].data["title"]
    assert "[REDACTED:openai-api-key]" in derived
    assert openai.value[:12] not in derived
    assert alone == titles[0]


def test_revisions_and_the_change_token_carry_the_fingerprint(tmp_path: Path) -> None:
    inner = _store_with_secret(tmp_path / "store")
    wrapped = RedactingPersistence(inner, REDACTOR)
    (entry,) = inner.list()
    (seen,) = wrapped.list()
    assert seen.revision == f"{entry.revision}#{REDACTOR.fingerprint}"
    assert wrapped.stat("s1") == seen
    assert wrapped.stat("absent") is None
    token = wrapped.change_token()
    assert token == f"{REDACTOR.fingerprint}\n{inner.change_token()}"
    assert wrapped.changed_since(token) == frozenset()
    assert wrapped.changed_since(f"redact-0-old\n{inner.change_token()}") is None
    assert wrapped.root.endswith(str(inner.root))


def test_it_offers_every_capability_and_passes_problems_through(tmp_path: Path) -> None:
    wrapped = RedactingPersistence(_store_with_secret(tmp_path / "store"), REDACTOR)
    for capability in (
        DocumentSource,
        ChangeTokenSource,
        ChangeJournal,
        ProblemSource,
        ArchiveAware,
    ):
        assert isinstance(wrapped, capability)
    assert wrapped.problems() == []
    assert wrapped.archived_ids() == frozenset()


class _Bare:
    """A persistence with nothing but the three required methods."""

    def __init__(self, inner: JsonlPersistence) -> None:
        self._inner = inner

    def list(self) -> list[PersistedSession]:
        return self._inner.list()

    def stat(self, session_id: str) -> PersistedSession | None:
        return self._inner.stat(session_id)

    def open_read(self, session_id: str) -> ReadHandle:
        return self._inner.open_read(session_id)


def test_over_a_bare_persistence_documents_come_from_the_redacted_events(tmp_path: Path) -> None:
    wrapped = RedactingPersistence(_Bare(_store_with_secret(tmp_path / "store")), REDACTOR)
    log = wrapped.read_documents("s1")
    assert [d.text for d in log.documents] == ["GITHUB_TOKEN=[REDACTED:github-token]"]
    assert wrapped.change_token() is None
    assert wrapped.changed_since("anything") is None
    assert wrapped.problems() == []


def test_a_clean_event_comes_out_as_the_same_object(tmp_path: Path) -> None:
    inner = _store_with_secret(tmp_path / "store")
    with RedactingPersistence(inner, REDACTOR).open_read("s1") as handle:
        start, prompt, end = handle.read()
    with inner.open_read("s1") as handle:
        stored = handle.read()
    assert start == stored[0] and end == stored[2]
    assert prompt != stored[1]
    assert prompt.data["content"][0]["text"] == "GITHUB_TOKEN=[REDACTED:github-token]"


def test_two_wrapped_stores_have_different_roots(tmp_path: Path) -> None:
    first = RedactingPersistence(JsonlPersistence(tmp_path / "a"), REDACTOR)
    second = RedactingPersistence(JsonlPersistence(tmp_path / "b"), REDACTOR)
    assert first.root != second.root


def test_origin_of_passes_the_combined_sources_labels_through(tmp_path: Path) -> None:
    history = _history(tmp_path)
    wrapped = RedactingPersistence(history, REDACTOR)
    entries = wrapped.list()
    assert {wrapped.origin_of(e.header.id) for e in entries} == {
        history.origin_of(e.header.id) for e in entries
    }
    assert wrapped.origin_of("absent") is None
    single = RedactingPersistence(_store_with_secret(tmp_path / "s"), REDACTOR)
    assert single.origin_of("s1") is None
