"""One bad file never takes the history down: each hostile case of issue 15, and ids that
cannot collide."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from sessionquery import SessionQuery
from sessionquery.model import validate_session_id
from sessionquery.model.header import MAX_ID_LENGTH
from sessionquery.sources import ClaudeCodeSource, CodexSource, MultiSource
from sessionquery.sources._catalog import Catalog
from sessionquery.sources._parsed import ParsedFile, UnitInput
from sessionquery.sources.claude import parse_claude_file, select_claude
from sessionquery.sources.units import FileTree


def _record(session: str | None, text: str, uuid: str, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {
        "type": "user",
        "cwd": "/work",
        "timestamp": "2025-01-01T00:00:00Z",
        "uuid": uuid,
        "message": {"role": "user", "content": text},
        **extra,
    }
    if session is not None:
        record["sessionId"] = session
    return record


def _write(path: Path, *records: Mapping[str, object] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def _good(root: Path) -> None:
    _write(root / "-work" / "good.jsonl", _record("good", "still readable", "g1"))


def _within(seconds: float, call: Callable[[], object]) -> object:
    """Run ``call`` in a thread; fail (instead of hanging) if it takes longer than ``seconds``."""
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"call did not return within {seconds} s"
    return result[0]


def _ids(source: ClaudeCodeSource | CodexSource | MultiSource) -> set[str]:
    return {entry.header.id for entry in source.list()}


def test_a_control_character_in_a_file_name_without_session_id_gives_a_clean_id(
    tmp_path: Path,
) -> None:
    _good(tmp_path)
    _write(tmp_path / "-work" / "bad\x1bname.jsonl", _record(None, "hello", "u1"))
    source = ClaudeCodeSource(tmp_path)
    ids = _ids(source)
    assert "good" in ids and len(ids) == 2
    for session_id in ids:
        assert validate_session_id(session_id) == session_id
    assert any("no sessionId" in p.message for p in source.problems())


def test_a_control_character_in_a_subagents_folder_name_gives_clean_ids(tmp_path: Path) -> None:
    _good(tmp_path)
    folder = tmp_path / "-work" / "par\x07ent" / "subagents"
    _write(folder / "agent-a1.jsonl", _record(None, "sub work", "u1", isSidechain=True))
    entries = ClaudeCodeSource(tmp_path).list()
    assert len(entries) == 2
    child = next(e for e in entries if e.header.id != "good")
    assert child.header.parent_session is not None
    assert validate_session_id(child.header.parent_session)


@pytest.mark.parametrize("cwd", ["/work/\x00evil", "/work/\\udc80"])
def test_a_cwd_with_nul_or_a_lone_surrogate_never_breaks_the_listing(
    tmp_path: Path, cwd: str
) -> None:
    _good(tmp_path)
    line = json.dumps(_record("odd", "hello", "u1")).replace('"/work"', json.dumps(cwd))
    line = line.replace("\\\\udc80", "\\udc80")  # a real lone-surrogate escape in the JSON
    _write(tmp_path / "-work" / "odd.jsonl", line, _record("odd", "second", "u2"))
    source = ClaudeCodeSource(tmp_path)
    entries = {e.header.id: e for e in source.list()}
    assert set(entries) == {"good", "odd"}
    assert entries["odd"].header.cwd in (None, "/work")
    assert source.problems()


def test_a_codex_cwd_with_nul_is_dropped_with_a_problem(tmp_path: Path) -> None:
    meta = {"id": "c-1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/x/\x00y"}
    line = {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": meta}
    _write(tmp_path / "rollout-1.jsonl", line)
    source = CodexSource(tmp_path)
    (entry,) = source.list()
    assert entry.header.cwd is None
    assert any("cwd" in p.message for p in source.problems())


def test_over_long_agent_and_sidechain_ids_give_children_of_at_most_512_characters(
    tmp_path: Path,
) -> None:
    _good(tmp_path)
    long_agent = "a" * 600
    _write(
        tmp_path / "-work" / "p" / "subagents" / "agent-x.jsonl",
        _record("p", "sub", "u1", isSidechain=True, agentId=long_agent),
    )
    long_uuid = "b" * 510
    _write(
        tmp_path / "-work" / "p.jsonl",
        _record("p", "main", "m1"),
        _record("p", "side", long_uuid, isSidechain=True, parentUuid=None),
    )
    ids = _ids(ClaudeCodeSource(tmp_path))
    assert len(ids) == 4
    assert all(len(i) <= MAX_ID_LENGTH for i in ids)


def test_a_line_nested_100000_levels_deep_is_a_line_problem(tmp_path: Path) -> None:
    _good(tmp_path)
    deep = '{"type": "user", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = _write(tmp_path / "-work" / "deep.jsonl", deep, _record("deep", "after it", "u1"))
    source = ClaudeCodeSource(tmp_path)
    assert _ids(source) == {"good", "deep"}
    assert (str(path), 1) in {(p.path, p.line) for p in source.problems()}


@pytest.mark.parametrize("error", [RecursionError, MemoryError, KeyError, AssertionError])
def test_any_exception_while_reading_one_file_is_contained_as_its_problem(
    tmp_path: Path, error: type[BaseException]
) -> None:
    _good(tmp_path)
    _write(tmp_path / "-work" / "boom.jsonl", _record("boom", "x", "u1"))

    def parser(unit: UnitInput) -> ParsedFile:
        if unit.name == "boom.jsonl":
            raise error("raised while parsing")
        return parse_claude_file(unit)

    catalog = Catalog(FileTree(tmp_path, select_claude), parser)
    assert [e.header.id for e in catalog.list()] == ["good"]
    (problem,) = catalog.problems()
    assert problem.path.endswith("boom.jsonl") and error.__name__ in problem.message


def test_a_duplicate_cannot_take_the_name_of_a_literal_id(tmp_path: Path) -> None:
    # x.jsonl keeps "x"; other.jsonl also says "x" and would be renamed "x@-work/other.jsonl",
    # which a third file claims literally: nothing may vanish.
    _write(tmp_path / "-work" / "x.jsonl", _record("x", "the original", "u1"))
    _write(
        tmp_path / "-work" / "other.jsonl",
        _record("x", "the duplicate", "u2"),
        _record("x", "its sidechain", "u3", isSidechain=True, parentUuid=None),
    )
    literal = "x@-work/other.jsonl"
    _write(tmp_path / "-work" / "z.jsonl", _record(literal, "the literal", "u4"))
    source = ClaudeCodeSource(tmp_path)
    entries = {e.header.id: e for e in source.list()}
    assert len(entries) == 4
    assert "x" in entries and literal in entries
    texts = {}
    for session_id in entries:
        with source.open_read(session_id) as handle:
            texts[session_id] = [
                e.data["content"][0]["text"] for e in handle.read() if e.type == "user/message"
            ]
    assert texts["x"] == ["the original"]
    assert texts[literal] == ["the literal"]
    (duplicate,) = [i for i, t in texts.items() if t == ["the duplicate"]]
    (child,) = [i for i, t in texts.items() if t == ["its sidechain"]]
    assert entries[child].header.parent_session == duplicate
    assert child.startswith(f"{duplicate}/")


def test_multisource_ids_cannot_collide_across_sources(tmp_path: Path) -> None:
    meta = {"id": "abc", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/work"}
    rollout = {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": meta}
    _write(tmp_path / "codex" / "rollout-abc.jsonl", rollout)
    _write(tmp_path / "claude" / "-work" / "abc.jsonl", _record("abc", "claude abc", "u1"))
    _write(tmp_path / "claude" / "-work" / "c.jsonl", _record("codex:abc", "literal", "u2"))
    multi = MultiSource([ClaudeCodeSource(tmp_path / "claude"), CodexSource(tmp_path / "codex")])
    ids = [e.header.id for e in multi.list()]
    assert len(ids) == len(set(ids)) == 3
    assert "codex:abc" in ids and "claude:abc" in ids and "claude:codex:abc" in ids
    with SessionQuery(persistence=multi) as query:
        assert len(query.list_sessions()) == 3


def test_a_multisource_label_with_a_colon_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="label"):
        MultiSource([("a:b", ClaudeCodeSource(tmp_path))])


def test_a_fifo_named_like_a_transcript_is_skipped_without_hanging(tmp_path: Path) -> None:
    _good(tmp_path)
    os.mkfifo(tmp_path / "-work" / "pipe.jsonl")
    source = ClaudeCodeSource(tmp_path)
    assert _within(20, lambda: _ids(source)) == {"good"}
    assert any("not a regular file" in p.message for p in source.problems())


def test_a_link_leaving_the_source_folder_is_reported_and_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    _good(root)
    outside = _write(tmp_path / "secret" / "s.jsonl", _record("secret", "private words", "u1"))
    (root / "-work" / "link.jsonl").symlink_to(outside)
    (root / "-linked-folder").symlink_to(outside.parent, target_is_directory=True)
    inside = _write(root / "-other" / "in.jsonl", _record("in", "inside", "u2"))
    (root / "-work" / "alias.jsonl").symlink_to(inside)
    source = ClaudeCodeSource(root)
    ids = _ids(source)
    assert "secret" not in ids and {"good", "in"} <= ids
    messages = [p.message for p in source.problems()]
    assert sum("leaves the source folder" in m for m in messages) == 2
    assert "secret" in _ids(ClaudeCodeSource(root, follow_outside_links=True))


def test_a_transcript_over_the_size_cap_is_reported_and_not_read(tmp_path: Path) -> None:
    _good(tmp_path)
    big = _write(tmp_path / "-work" / "big.jsonl", _record("big", "x" * 5000, "u1"))
    source = ClaudeCodeSource(tmp_path, max_file_bytes=2000)
    assert _ids(source) == {"good"}
    assert any(p.path == str(big) and "max_file_bytes" in p.message for p in source.problems())
    assert _ids(ClaudeCodeSource(tmp_path)) == {"good", "big"}
    with pytest.raises(ValueError, match="max_file_bytes"):
        ClaudeCodeSource(tmp_path, max_file_bytes=0)


@pytest.mark.slow
def test_a_32_mb_line_is_read_in_linear_time(tmp_path: Path) -> None:
    text = "word " * 6_400_000
    _write(
        tmp_path / "-work" / "huge.jsonl", _record("huge", text, "u1"), _record("huge", "end", "u2")
    )
    started = time.process_time()  # CPU time: a bound on work, not on the machine's load
    source = ClaudeCodeSource(tmp_path)
    (entry,) = source.list()
    documents = source.read_documents("huge").documents
    elapsed = time.process_time() - started
    assert entry.event_count is not None and entry.event_count >= 4
    assert documents[-1].text == "end"
    assert elapsed < 20, f"took {elapsed:.1f} s of CPU"


_UNDER_A_MEMORY_LIMIT = """
import resource, sys
from sessionquery.sources import ClaudeCodeSource
source = ClaudeCodeSource(sys.argv[1])
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) for line in status if line.startswith("VmSize")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 64 * 2**20, resource.RLIM_INFINITY))
print(sorted(entry.header.id for entry in source.list()))
print(any("MemoryError" in problem.message for problem in source.problems()))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_huge_file_read_under_a_memory_limit_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    _good(tmp_path)
    with (tmp_path / "-work" / "huge.jsonl").open("wb") as handle:
        handle.truncate(200 * 2**20)  # sparse: 200 MiB of zeros, no disk used
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_A_MEMORY_LIMIT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["['good']", "True"]


def test_a_file_name_that_is_not_valid_utf8_is_listed_and_cached(tmp_path: Path) -> None:
    _good(tmp_path)
    folder = os.fsencode(tmp_path / "-work")
    with open(os.path.join(folder, b"bad\xff.jsonl"), "wb") as handle:
        handle.write(json.dumps(_record(None, "odd name", "u1")).encode() + b"\n")
    cache = tmp_path / "cache.sqlite3"
    for _ in range(2):  # the second source lists from the cache file
        ids = _ids(ClaudeCodeSource(tmp_path, metadata_cache=cache))
        assert len(ids) == 2 and "good" in ids
        for session_id in ids:
            assert validate_session_id(session_id) == session_id
