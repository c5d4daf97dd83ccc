"""The importers end to end with the SQLite index: every real transcript is searchable.

The Claude Code and Codex files of the shared corpus are read in place (the trees under
``tmp_path`` hold symlinks to them); the index lives in ``tmp_path``. Each file has at least one
distinctive phrase below, checked with ``search_sessions`` (the hit is a session of that file,
the snippet shows the words) and ``search_events`` inside the session (the event type is right
and its origin pointer leads back to the file). The re-indexing tests copy one transcript into
``tmp_path`` and append a line to the copy, never touching the corpus.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import raises_code
from locations import CORPUS
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import extract_event_text
from sessionquery.persistence.base import DocumentLog
from sessionquery.query.cancel import CancelToken
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource

VIEWER = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
HEAVY = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
USER = "user/message"
ASSISTANT = "assistant/message"

# real Claude Code file (relative to the corpus) -> [(phrase, session id, event type)]
CLAUDE_PHRASES: dict[str, list[tuple[str, str, str]]] = {
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": [
        (
            "analyze the codebase and create a CLAUDE.md file",
            "1af7fc5e-8455-4414-9ccd-011d40f70b2a",
            ASSISTANT,
        ),
    ],
    f"claude-code-viewer/{VIEWER}.jsonl": [
        ("update the CLAUDE.md file to the latest state", VIEWER, ASSISTANT),
        (
            "examine the package.json files in the Demo directory",
            f"{VIEWER}/sidechain-6340ddef-f656-4b72-a065-82390f637678",
            ASSISTANT,
        ),
        (
            "compare it to what's documented in CLAUDE.md",
            f"{VIEWER}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5",
            ASSISTANT,
        ),
    ],
    "claude-code-viewer/agent-test-hash-123.jsonl": [
        ("I'll run the test suite for you", f"{VIEWER}/agent-test-hash-123", ASSISTANT),
    ],
    f"claude-code-viewer/{HEAVY}.jsonl": [
        ("breaking this into parallel subtasks", HEAVY, ASSISTANT),
        (
            "I'll create React components for a TODO app",
            f"{HEAVY}/sidechain-6690d10e-f521-4ac0-800d-e5eb7a2d8072",
            ASSISTANT,
        ),
        (
            "with the specifications you provided",
            f"{HEAVY}/sidechain-60dade70-20bb-4edb-9dad-9f08267e0cc2",
            ASSISTANT,
        ),
        (
            "core Todo interface and related types",
            f"{HEAVY}/sidechain-f4546a51-ea10-47e0-b4e0-76802974f8a9",
            ASSISTANT,
        ),
        (
            "exploring the existing codebase to understand the structure",
            f"{HEAVY}/sidechain-0d692b0f-17cb-4fd0-94fb-215dabcef803",
            ASSISTANT,
        ),
        (
            "understand what components are available",
            f"{HEAVY}/sidechain-f4ab2bf6-d642-431a-85cb-66691f24c404",
            ASSISTANT,
        ),
    ],
    "episodic-memory/large-conversation.jsonl": [
        ("Prisma exclusions", "0fae0449-64d3-4788-8622-d3a47d82c14b", ASSISTANT),
    ],
    "episodic-memory/long-conversation.jsonl": [
        ("talk to me about the idea", "9a9eadc8-c1f1-493e-a0f1-884aa996b05b", USER),
    ],
    "episodic-memory/short-conversation.jsonl": [
        ("Employee class", "982581eb-41b9-46da-86c1-ac34168117a8", USER),
    ],
    "agentcmd/06381696-0074-49f8-863e-6ad4fac507f9.jsonl": [
        ("evaluate using them", "06381696-0074-49f8-863e-6ad4fac507f9", USER),
    ],
    "agentcmd/full-session-four.jsonl": [
        ("first two initials", "2d984148-cddb-4605-aac1-13e720fe613c", USER),
    ],
    "agentcmd/full-session-two.jsonl": [
        ("to the right of the search", "8a2518dd-ff41-4d5f-83a1-407b03598cc6", USER),
    ],
    "agentcmd/full-session.jsonl": [
        ("audit this codebase", "cfa1e878-62b5-4e40-b281-bbf9b250d766", USER),
    ],
    "agent-sessions/claude/small.jsonl": [
        ("Listing the files", "ses_stage0_small", ASSISTANT),
        ("Partial reply", "ses_stage0_small/sidechain-sys1", ASSISTANT),
    ],
}

# The one Claude Code file with no searchable text: only snapshots and a summary title.
TITLE_ONLY_FILE = "episodic-memory/medium-conversation.jsonl"
TITLE_ONLY = (
    "medium-conversation",
    "Debugging Complex Web App Authentication and State Management",
)

# real Codex file -> [(phrase, session id, event type)]
CODEX_PHRASES: dict[str, list[tuple[str, str, str]]] = {
    "agentcmd/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl": [
        ("does not optimistically update", "01997e76-d124-7592-9cac-2ec05abbca08", USER),
        (
            "Switched to a new branch 'feat/dashboard-refactor'",
            "01997e76-d124-7592-9cac-2ec05abbca08",
            "tool/result",
        ),
    ],
    "agentcmd/rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl": [
        ("I see 4 queries", "01997ea4-a70d-7da3-8c20-c736db82a7c5", USER),
    ],
    "agentcmd/rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl": [
        ("label counts over time", "0199812e-64f0-7f73-91fc-095dda01c36e", USER),
    ],
    "agentcmd/rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl": [
        ("migrate this app from", "01998190-fba6-7f40-9309-dc4e48c5844a", USER),
    ],
    "agentcmd/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": [
        ("drop in replacement", "019982b8-3422-79e0-8b3b-05abaf4f3c3e", USER),
    ],
    "agent-sessions/codex/small.jsonl": [
        ("List the files", "019fc8be-3658-7ca3-9e29-000000000000", USER),
    ],
}

CASES = [
    (rel, phrase, session_id, event_type)
    for table in (CLAUDE_PHRASES, CODEX_PHRASES)
    for rel, rows in table.items()
    for phrase, session_id, event_type in rows
]


def _is_codex(rel: str) -> bool:
    return Path(rel).name.startswith("rollout-") or Path(rel).parent.name == "codex"


def _tree_name(rel: str) -> str:
    """Where ``rel`` sits inside the source trees (what an event's origin ``file`` names)."""
    name = Path(rel).name
    if _is_codex(rel):
        return "2025/" + (name if name.startswith("rollout-") else "rollout-small.jsonl")
    return "-" + str(Path(rel).parent).replace("/", "-") + "/" + name


def _build_trees(root: Path) -> tuple[Path, Path]:
    """Claude projects and Codex sessions trees holding copies of every real file."""
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    claude, codex = root / "claude", root / "codex"
    for rel in [*CLAUDE_PHRASES, TITLE_ONLY_FILE, *CODEX_PHRASES]:
        source = CORPUS / rel
        assert source.is_file(), source
        link = (codex if _is_codex(rel) else claude) / _tree_name(rel)
        link.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, link)
    return claude, codex


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _contains_phrase(text: str, phrase: str) -> bool:
    """Whether the phrase's words occur adjacent and in order in ``text`` (index semantics)."""
    return f" {' '.join(_words(phrase))} " in f" {' '.join(_words(text))} "


@pytest.fixture(scope="module")
def query(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionQuery]:
    """One index over the whole real corpus through ``MultiSource``, built once (read-only)."""
    root = tmp_path_factory.mktemp("corpus")
    claude, codex = _build_trees(root)
    multi = MultiSource([ClaudeCodeSource(claude), CodexSource(codex)])
    service = SessionQuery(persistence=multi, search=SqliteSearch(root / "index.sqlite3"))
    try:
        yield service
    finally:
        service.close()


def test_phrase_tables_name_every_claude_and_codex_file_of_the_corpus() -> None:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    found = {
        p.relative_to(CORPUS).as_posix()
        for p in CORPUS.rglob("*.jsonl")
        if "deepseek" not in p.relative_to(CORPUS).as_posix()
    }
    assert found == {*CLAUDE_PHRASES, TITLE_ONLY_FILE, *CODEX_PHRASES}


def test_phrase_tables_name_every_imported_session(query: SessionQuery) -> None:
    listed = {record.header.id for record in query.list_sessions()}
    named = {session_id for _, _, session_id, _ in CASES} | {TITLE_ONLY[0]}
    assert listed == named


@pytest.mark.parametrize(
    ("rel", "phrase", "session_id", "event_type"), CASES, ids=[c[1] for c in CASES]
)
def test_distinctive_phrase_finds_its_session_and_only_sessions_of_its_file(
    query: SessionQuery, rel: str, phrase: str, session_id: str, event_type: str
) -> None:
    page = query.search_sessions(phrase, limit=100)
    assert page.next_cursor is None
    hits = {hit.record.header.id: hit for hit in page.items}
    assert session_id in hits, [h.record.header.id for h in page.items]
    for hit in page.items:
        assert _contains_phrase(hit.best_match.snippet, phrase), hit.best_match.snippet
        # A sidechain's prompt also appears in its parent's Task call: same file, never another.
        window = query.read_event(hit.record.header.id, hit.best_match.seq)
        assert window.target.data["origin"]["file"] == _tree_name(rel)


@pytest.mark.parametrize(
    ("rel", "phrase", "session_id", "event_type"), CASES, ids=[c[1] for c in CASES]
)
def test_event_search_inside_the_session_finds_the_phrase_with_its_event_type(
    query: SessionQuery, rel: str, phrase: str, session_id: str, event_type: str
) -> None:
    page = query.search_events(session_id, phrase, limit=100)
    assert page.session.id == session_id
    assert page.items and all(item.session_id == session_id for item in page.items)
    assert all(_contains_phrase(item.snippet, phrase) for item in page.items)
    typed = [item for item in page.items if item.type == event_type]
    assert typed, [(item.seq, item.type) for item in page.items]
    event = query.read_event(session_id, typed[0].seq).target
    assert event.type == event_type
    assert _contains_phrase(extract_event_text(event), phrase)
    origin = event.data["origin"]
    assert origin["file"] == _tree_name(rel)
    line = (CORPUS / rel).read_text(encoding="utf-8").splitlines()[origin["line"] - 1]
    assert json.loads(line)  # the pointer names a real line of the original file


def test_title_only_transcript_is_listed_with_its_title_but_titles_are_not_searchable(
    query: SessionQuery,
) -> None:
    session_id, title = TITLE_ONLY
    (result,) = query.read_title_snapshots([session_id])
    assert result.error is None and result.title is not None
    assert result.title.title == title
    assert query.search_sessions(title).items == []
    assert query.search_events(session_id, "Debugging").items == []


def test_index_of_the_whole_corpus_is_reused_when_nothing_changed(tmp_path: Path) -> None:
    claude, codex = _build_trees(tmp_path)
    multi = MultiSource([ClaudeCodeSource(claude), CodexSource(codex)])
    query = SessionQuery(persistence=multi)
    with SqliteSearch(tmp_path / "index.sqlite3") as search:
        first = search.update(query.corpus)
        assert (
            first.persisted_indexed == len(query.list_sessions()) == len({c[2] for c in CASES}) + 1
        )
        assert first.documents_written > 2000
        again = search.update(query.corpus)
        assert (again.persisted_indexed, again.persisted_removed) == (0, 0)
        assert again.documents_written == 0


# --- re-indexing after an imported file changes ----------------------------------------------


def _claude_line(text: str) -> str:
    record = {
        "type": "user",
        "sessionId": "8a2518dd-ff41-4d5f-83a1-407b03598cc6",
        "cwd": "/Users/jnarowski/Dev/sourceborn/src/agent-workflows-monorepo-v2",
        "timestamp": "2025-10-01T12:00:00.000Z",
        "uuid": "appended-line-1",
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(record)


def _codex_line(text: str) -> str:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return json.dumps(
        {"timestamp": "2026-08-03T12:00:00.000Z", "type": "response_item", "payload": item}
    )


# format -> (real file, tree path of the copy, session id, old phrase, line maker)
REINDEX = {
    "claude": (
        "agentcmd/full-session-two.jsonl",
        "-agentcmd/full-session-two.jsonl",
        "8a2518dd-ff41-4d5f-83a1-407b03598cc6",
        "to the right of the search",
        _claude_line,
    ),
    "codex": (
        "agent-sessions/codex/small.jsonl",
        "2025/rollout-small.jsonl",
        "019fc8be-3658-7ca3-9e29-000000000000",
        "List the files",
        _codex_line,
    ),
}
FRESH = "quokka lantern meridian calibration"


@pytest.mark.parametrize("fmt", sorted(REINDEX))
def test_appended_line_in_an_imported_file_is_indexed_and_old_hits_remain(
    tmp_path: Path, fmt: str
) -> None:
    rel, tree_path, session_id, old_phrase, make_line = REINDEX[fmt]
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    copy = tmp_path / fmt / tree_path
    copy.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / rel, copy)
    source = ClaudeCodeSource(tmp_path / fmt) if fmt == "claude" else CodexSource(tmp_path / fmt)
    search = SqliteSearch(tmp_path / "index.sqlite3")
    with SessionQuery(persistence=source, search=search) as query:
        before = query.search_sessions(old_phrase).items
        assert [hit.record.header.id for hit in before] == [session_id]
        assert query.search_sessions(FRESH).items == []
        entry = source.stat(session_id)
        assert entry is not None and entry.event_count is not None

        with copy.open("a", encoding="utf-8") as handle:
            handle.write(make_line(f"Please check the {FRESH} before release") + "\n")

        fresh = query.search_sessions(FRESH).items
        assert [hit.record.header.id for hit in fresh] == [session_id]
        assert fresh[0].best_match.type == USER
        assert fresh[0].best_match.seq >= entry.event_count  # after every old event
        assert _contains_phrase(fresh[0].best_match.snippet, FRESH)
        after = query.search_sessions(old_phrase).items
        assert [(h.record.header.id, h.best_match.seq) for h in after] == [
            (h.record.header.id, h.best_match.seq) for h in before
        ]
        events = query.search_events(session_id, FRESH).items
        assert [(e.type, e.seq) for e in events] == [(USER, fresh[0].best_match.seq)]
        target = query.read_event(session_id, events[0].seq).target
        assert target.data["origin"]["line"] == len(copy.read_text().splitlines())
    assert (CORPUS / rel).read_bytes() != copy.read_bytes()


# --- deadlines inside a big transcript ---------------------------------------------------------

_MEGABYTE_OF_WORDS = " ".join(f"w{i % 7919}x{i % 13}" for i in range(120_000))


def _big_transcript(fmt: str, root: Path, session_id: str, texts: list[str]) -> None:
    if fmt == "claude":
        lines = [
            json.dumps(
                {
                    "type": "user",
                    "sessionId": session_id,
                    "cwd": "/work",
                    "timestamp": "2025-10-01T12:00:00.000Z",
                    "uuid": f"{session_id}-{number}",
                    "message": {"role": "user", "content": text},
                }
            )
            for number, text in enumerate(texts)
        ]
        path = root / "-work" / f"{session_id}.jsonl"
    else:
        meta = {"id": session_id, "timestamp": "2025-10-01T12:00:00.000Z", "cwd": "/work"}
        lines = [json.dumps({"type": "session_meta", "payload": meta})]
        lines += [_codex_line(text) for text in texts]
        path = root / "2025" / f"rollout-{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("fmt", ["claude", "codex"])
@pytest.mark.slow
def test_a_deadline_passing_inside_a_big_transcript_stops_its_read_and_the_next_search_finds_it(
    tmp_path: Path, fmt: str
) -> None:
    small, big = "0199aaaa-0000-7000-8000-000000000001", "0199aaaa-0000-7000-8000-000000000002"
    _big_transcript(fmt, tmp_path / fmt, small, ["a small session"])
    _big_transcript(fmt, tmp_path / fmt, big, [f"{_MEGABYTE_OF_WORDS} tail{i}" for i in range(12)])
    token = CancelToken()
    kind = ClaudeCodeSource if fmt == "claude" else CodexSource
    stopped: list[str] = []

    class Source(kind):  # type: ignore[valid-type,misc]
        def read_documents(self, session_id: str) -> DocumentLog:
            if session_id != big:
                return super().read_documents(session_id)  # type: ignore[no-any-return]
            token.deadline = time.monotonic()  # the deadline passes as the 12 MB log is read
            try:
                return super().read_documents(session_id)  # type: ignore[no-any-return]
            except SessionQueryError as exc:
                stopped.append(exc.code.value)
                raise

    with (
        SessionQuery(persistence=Source(tmp_path / fmt)) as query,
        SqliteSearch(tmp_path / "index.db") as search,
    ):
        with raises_code(ErrorCode.ABORTED):
            search.update(query.corpus, cancel=token)
        assert token.deadline is not None
        # Generous bound against a hang: reading and writing the whole log without the checks
        # took about 0.8 s on the development machine; with them, a few milliseconds.
        assert time.monotonic() - token.deadline < 2.0
        conn = sqlite3.connect(tmp_path / "index.db")
        try:
            indexed = {row[0] for row in conn.execute("SELECT id FROM persisted_sessions")}
        finally:
            conn.close()
        assert big not in indexed  # cut while it was read: nothing of it was written
        assert stopped == ["SESSION_QUERY_ABORTED"]  # by a check inside the read
        search.update(query.corpus)
        hits = search.search_events(query.corpus, big, "tail11").items
        assert len(hits) == 1
        assert query.read_event(big, hits[0].seq).target.data["origin"]["line"] == 12 + (
            fmt == "codex"
        )
