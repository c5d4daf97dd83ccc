"""The importers' metadata cache: only new or changed transcripts are read, never a stale one."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from conftest import raises_code
from sessionquery import _forks
from sessionquery.errors import ErrorCode
from sessionquery.sources import ClaudeCodeSource, CodexSource, _catalog
from sessionquery.sources._cache import APPLICATION_ID, MetadataCache
from sessionquery.sources.units import FileTree


def _user(session: str, text: str, uuid: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": session,
            "cwd": "/work",
            "timestamp": "2025-01-01T00:00:00Z",
            "uuid": uuid,
            "message": {"role": "user", "content": text},
        }
    )


def _transcript(root: Path, session: str, texts: list[str]) -> Path:
    path = root / "-work" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [_user(session, text, f"u{i}") for i, text in enumerate(texts)]
    path.write_text("\n".join(lines) + "\n")
    return path


class ReadCounter:
    """Counts transcript reads (the real reading still happens)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = FileTree.read

        def counting(tree: FileTree, key: str, max_bytes: int) -> tuple[bytes, object]:
            self.paths.append(key.rsplit("/", 1)[-1])
            return real(tree, key, max_bytes)

        monkeypatch.setattr(FileTree, "read", counting)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> ReadCounter:
    return ReadCounter(monkeypatch)


def _titles(source: ClaudeCodeSource) -> dict[str, int | None]:
    return {entry.header.id: entry.event_count for entry in source.list()}


def test_a_new_source_on_the_same_cache_file_lists_without_reading_a_transcript(
    tmp_path: Path, reads: ReadCounter
) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    for index in range(5):
        _transcript(root, f"s-{index}", ["fix the flaky test", "and the other one"])
    first = ClaudeCodeSource(root, metadata_cache=cache).list()
    assert len(reads.paths) == 5
    reads.paths.clear()
    again = ClaudeCodeSource(root, metadata_cache=cache).list()
    assert reads.paths == []
    assert again == first


def test_only_the_changed_transcript_is_read_again(tmp_path: Path, reads: ReadCounter) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    _transcript(root, "s-0", ["one"])
    path = _transcript(root, "s-1", ["one"])
    source = ClaudeCodeSource(root, metadata_cache=cache)
    before = {e.header.id: e.revision for e in source.list()}
    reads.paths.clear()
    with path.open("a") as handle:
        handle.write(_user("s-1", "two", "u9") + "\n")
    after = {e.header.id: e.revision for e in ClaudeCodeSource(root, metadata_cache=cache).list()}
    assert reads.paths == ["s-1.jsonl"]
    assert after["s-0"] == before["s-0"]
    assert after["s-1"] != before["s-1"]


def test_a_rewrite_with_the_same_size_and_mtime_is_still_noticed(tmp_path: Path) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    path = _transcript(root, "s-0", ["alpha"])
    source = ClaudeCodeSource(root, metadata_cache=cache)
    (entry,) = source.list()
    stat = path.stat()
    path.write_text(path.read_text().replace("alpha", "omega"))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert path.stat().st_size == stat.st_size
    for fresh in (source, ClaudeCodeSource(root, metadata_cache=cache)):
        (changed,) = fresh.list()
        assert changed.revision != entry.revision
        with fresh.open_read("s-0") as handle:
            events = handle.read()
        texts = [e.data["content"][0]["text"] for e in events if e.type == "user/message"]
        assert texts == ["omega"]


def test_a_file_replaced_by_rename_with_equal_size_and_mtime_is_noticed(tmp_path: Path) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    path = _transcript(root, "s-0", ["alpha", "beta"])
    (entry,) = ClaudeCodeSource(root, metadata_cache=cache).list()
    stat = path.stat()
    spare = tmp_path / "spare.jsonl"
    spare.write_text(path.read_text().replace("beta", "gamm"))
    os.utime(spare, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(spare, path)
    (changed,) = ClaudeCodeSource(root, metadata_cache=cache).list()
    assert changed.revision != entry.revision
    documents = ClaudeCodeSource(root, metadata_cache=cache).read_documents("s-0").documents
    assert "gamm" in [d.text for d in documents]


def test_a_removed_transcript_leaves_the_listing_and_the_cache(tmp_path: Path) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    _transcript(root, "s-0", ["one"])
    gone = _transcript(root, "s-1", ["one"])
    ClaudeCodeSource(root, metadata_cache=cache).list()
    gone.unlink()
    assert [e.header.id for e in ClaudeCodeSource(root, metadata_cache=cache).list()] == ["s-0"]
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone() == (1,)


def test_claude_and_codex_sources_can_share_one_cache_file(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite3"
    _transcript(tmp_path / "claude", "s-0", ["one"])
    codex = tmp_path / "codex" / "2025" / "01" / "01"
    codex.mkdir(parents=True)
    meta = {"id": "c-1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/work"}
    (codex / "rollout-x.jsonl").write_text(
        json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": meta})
        + "\n"
    )
    for _ in range(2):
        claude = ClaudeCodeSource(tmp_path / "claude", metadata_cache=cache)
        rollouts = CodexSource(tmp_path / "codex", metadata_cache=cache)
        assert [e.header.id for e in claude.list()] == ["s-0"]
        assert [e.header.id for e in rollouts.list()] == ["c-1"]


def test_the_cache_file_is_marked_as_ours_and_uses_wal(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite3"
    _transcript(tmp_path / "p", "s-0", ["one"])
    ClaudeCodeSource(tmp_path / "p", metadata_cache=cache).list()
    with sqlite3.connect(cache) as conn:
        assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.parametrize("kind", ["text", "other-app", "unmarked-with-tables"])
def test_a_foreign_cache_file_is_refused_and_left_byte_for_byte_untouched(
    tmp_path: Path, kind: str
) -> None:
    cache = tmp_path / "cache.sqlite3"
    if kind == "text":
        cache.write_text("my notes, not a database\n")
    else:
        with sqlite3.connect(cache) as conn:
            conn.execute("CREATE TABLE mine (x)")
            if kind == "other-app":
                conn.execute("PRAGMA application_id = 42")
        conn.close()
    before = cache.read_bytes()
    with raises_code(ErrorCode.INVALID_CONFIG):
        ClaudeCodeSource(tmp_path, metadata_cache=cache)
    assert cache.read_bytes() == before


def test_a_damaged_cache_of_ours_is_rebuilt(tmp_path: Path) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    _transcript(root, "s-0", ["one"])
    first = ClaudeCodeSource(root, metadata_cache=cache)
    expected = first.list()
    first.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{cache}{suffix}").unlink(missing_ok=True)
    data = bytearray(cache.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)  # keep the header (ours), wreck every page
    cache.write_bytes(bytes(data))
    assert ClaudeCodeSource(root, metadata_cache=cache).list() == expected


def test_a_cache_row_written_by_another_process_is_used_instead_of_reading_again(
    tmp_path: Path, reads: ReadCounter
) -> None:
    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    _transcript(root, "s-0", ["one"])
    source = ClaudeCodeSource(root, metadata_cache=cache)
    source.list()
    path = _transcript(root, "s-0", ["one", "two"])
    script = (
        "import sys\nfrom sessionquery.sources import ClaudeCodeSource\n"
        "print(ClaudeCodeSource(sys.argv[1], metadata_cache=sys.argv[2]).list()[0].event_count)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), str(cache)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    reads.paths.clear()
    (entry,) = source.list()
    assert str(entry.event_count) == done.stdout.strip()
    assert reads.paths == []
    assert path.name == "s-0.jsonl"


def test_without_a_cache_file_an_unchanged_file_is_read_once_per_source(
    tmp_path: Path, reads: ReadCounter
) -> None:
    _transcript(tmp_path / "p", "s-0", ["one"])
    source = ClaudeCodeSource(tmp_path / "p")
    for _ in range(3):
        assert _titles(source) == {"s-0": _titles(source)["s-0"]}
    assert reads.paths == ["s-0.jsonl"]


def test_a_cache_path_that_cannot_be_created_falls_back_to_memory(tmp_path: Path) -> None:
    _transcript(tmp_path / "p", "s-0", ["one"])
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache's folder would be")
    source = ClaudeCodeSource(tmp_path / "p", metadata_cache=blocker / "cache.sqlite3")
    assert [e.header.id for e in source.list()] == ["s-0"]
    assert blocker.read_text() == "a file where the cache's folder would be"


def test_an_interrupted_first_listing_keeps_what_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: ReadCounter
) -> None:
    from sessionquery.sources._catalog import Catalog
    from sessionquery.sources._parsed import ParsedFile, UnitInput
    from sessionquery.sources.claude import parse_claude_file, select_claude

    root, cache = tmp_path / "projects", tmp_path / "cache.sqlite3"
    for index in range(4):
        _transcript(root, f"s-{index}", ["one"])
    monkeypatch.setattr(_catalog, "_FLUSH_SECONDS", 0.0)

    def stopped_at_the_third(unit: UnitInput) -> ParsedFile:
        if unit.name == "s-2.jsonl":
            raise KeyboardInterrupt
        return parse_claude_file(unit)

    tree = FileTree(root, select_claude)
    interrupted = Catalog(tree, stopped_at_the_third, metadata_cache=cache)
    with pytest.raises(KeyboardInterrupt):
        interrupted.list()
    interrupted.close()
    reads.paths.clear()
    listed = ClaudeCodeSource(root, metadata_cache=cache).list()
    assert [e.header.id for e in listed] == ["s-0", "s-1", "s-2", "s-3"]
    assert reads.paths == ["s-2.jsonl", "s-3.jsonl"]


def _in_forked_child(cache: MetadataCache, parents: int, out: Connection) -> None:
    found = cache.get("root", "a.jsonl")
    cache.store("root", {"b.jsonl": ("stamp-b", {"n": 2})}, ())
    conn = cache._conn  # the connection the child used: not its copy of the parent's
    kept = [id(inherited) for inherited in _forks._INHERITED]
    out.send((found, conn is not None and id(conn) != parents, parents in kept))


def test_a_forked_child_uses_a_connection_of_its_own_and_the_parent_keeps_its_own(
    tmp_path: Path,
) -> None:
    cache = MetadataCache(tmp_path / "cache.sqlite3")
    cache.store("root", {"a.jsonl": ("stamp-a", {"n": 1})}, ())
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    parents = id(cache._conn)
    child = context.Process(target=_in_forked_child, args=(cache, parents, send))
    child.start()
    assert receive.poll(60)
    found, own, set_aside = receive.recv()
    child.join(60)
    assert child.exitcode == 0
    assert found == ("stamp-a", {"n": 1})
    assert own and set_aside
    assert cache.get("root", "b.jsonl") == ("stamp-b", {"n": 2})
    cache.store("root", {"c.jsonl": ("stamp-c", {"n": 3})}, ())
    assert set(cache.load("root")) == {"a.jsonl", "b.jsonl", "c.jsonl"}
    cache.close()
