"""Reading sessions for a push: reader processes forked from this one return exactly what
this process reads, in the order asked (real files, real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessionquery.redact import RedactingPersistence, default_redactor
from sessionquery.sources import ClaudeCodeSource
from sessionquery.team.reading import MAX_JOBS, Local, readers
from team_support import write_claude


def _history(projects: Path, count: int) -> list[str]:
    ids = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(count)]
    for n, sid in enumerate(ids):
        texts = [
            f"question {n} about the login test",
            f"answer {n} with token ghp_{n:04d}{'a1B2' * 8}",
        ]
        write_claude(projects, sid, f"/src/app{n % 3}", texts * (1 + n % 4))
    return ids


def _shape(item: Local | str) -> object:
    if isinstance(item, str):
        return item
    return (item.header.id, item.lines, item.workspace, item.size, item.own, item.fold_error)


def _read(source: RedactingPersistence, jobs: int, keep_docs: bool = True) -> list[Local | str]:
    entries = sorted(source.list(), key=lambda entry: entry.header.id)
    with readers(source, "laptop", jobs) as read:
        return list(read((entry, keep_docs) for entry in entries))


@pytest.mark.parametrize("jobs", [2, 3])
def test_reader_processes_return_what_this_process_reads_in_the_order_asked(
    tmp_path: Path, jobs: int
) -> None:
    ids = _history(tmp_path / "projects", 11)
    source = RedactingPersistence(ClaudeCodeSource(tmp_path / "projects"), default_redactor())
    here = _read(source, 1)
    forked = _read(source, jobs)
    assert [_shape(item) for item in forked] == [_shape(item) for item in here]
    assert [item.header.id for item in forked if isinstance(item, Local)] == ids
    assert all(
        "sk-0000" not in line for item in forked if isinstance(item, Local) for line in item.lines
    )


def test_a_reader_process_sends_back_documents_only_when_asked(tmp_path: Path) -> None:
    _history(tmp_path / "projects", 4)
    source = RedactingPersistence(ClaudeCodeSource(tmp_path / "projects"), default_redactor())
    here = [item for item in _read(source, 1) if isinstance(item, Local)]
    without = [item for item in _read(source, 2, keep_docs=False) if isinstance(item, Local)]
    with_docs = [item for item in _read(source, 2, keep_docs=True) if isinstance(item, Local)]
    assert all(item.events is None and item.docs is None for item in without)
    assert [item.docs for item in with_docs] == [item.docs for item in here]
    assert all(item.events is not None for item in here)


def test_a_session_gone_after_the_listing_is_one_sentence_in_its_place(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    ids = _history(projects, 5)
    source = RedactingPersistence(ClaudeCodeSource(projects), default_redactor())
    entries = sorted(source.list(), key=lambda entry: entry.header.id)
    gone = next(projects.rglob(f"{ids[2]}.jsonl"))
    gone.write_text("not json at all\n", encoding="utf-8")
    with readers(source, "laptop", 2) as read:
        items = list(read((entry, False) for entry in entries))
    assert [isinstance(item, Local) for item in items] == [True, True, False, True, True]
    assert isinstance(items[2], str) and ids[2] in items[2]


def test_reader_processes_share_no_connection_with_the_parent_s_metadata_cache(
    tmp_path: Path,
) -> None:
    projects = tmp_path / "projects"
    ids = _history(projects, 6)
    cache = tmp_path / "importer-cache.sqlite3"
    source = RedactingPersistence(
        ClaudeCodeSource(projects, metadata_cache=cache), default_redactor()
    )
    entries = sorted(source.list(), key=lambda entry: entry.header.id)
    write_claude(projects, ids[0], "/src/app0", ["a new first question"])  # read again below
    with readers(source, "laptop", 2) as read:
        items = list(read((entry, False) for entry in entries))
    assert all(isinstance(item, Local) for item in items)
    # The parent's own connection still works after its readers used the file.
    write_claude(projects, ids[1], "/src/app1", ["another question"])
    before = {entry.header.id: entry.event_count for entry in entries}
    again = {entry.header.id: entry.event_count for entry in source.list()}
    assert again[ids[1]] != before[ids[1]]
    fresh = ClaudeCodeSource(projects, metadata_cache=cache)
    assert {entry.header.id: entry.event_count for entry in fresh.list()} == again


@pytest.mark.parametrize("jobs", [0, MAX_JOBS + 1])
def test_a_number_of_readers_out_of_range_is_refused(tmp_path: Path, jobs: int) -> None:
    source = ClaudeCodeSource(tmp_path)
    with pytest.raises(ValueError, match="jobs must be between 1"), readers(source, "x", jobs):
        pass


def test_reader_processes_end_with_the_readers(tmp_path: Path) -> None:
    _history(tmp_path / "projects", 3)
    source = ClaudeCodeSource(tmp_path / "projects")
    entries = source.list()
    with readers(source, "laptop", 2) as read:
        list(read((entry, False) for entry in entries))
        children = _children()
        assert len(children) >= 2
    assert not (_children() & children)


def _children() -> set[int]:
    return _children_of(os.getpid())


def _children_of(parent: int) -> set[int]:
    me = str(parent)
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                found.add(int(entry.name))
    return found


_HOLD = """
import sys, time
from sessionquery.sources import ClaudeCodeSource
from sessionquery.team.reading import readers
source = ClaudeCodeSource(sys.argv[1])
with readers(source, "laptop", 2) as read:
    list(read((entry, False) for entry in source.list()))
    print("ready", flush=True)
    time.sleep(600)
"""


def test_reader_processes_die_with_a_push_killed_by_sigkill(tmp_path: Path) -> None:
    _history(tmp_path / "projects", 3)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    push = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path / "projects")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert push.stdout is not None
        assert push.stdout.readline().strip() == "ready"
        orphans = _children_of(push.pid)
        assert len(orphans) == 2
        push.send_signal(signal.SIGKILL)
        push.wait(60)
        deadline = time.monotonic() + 60
        while orphans and time.monotonic() < deadline:
            orphans = {pid for pid in orphans if _alive(pid)}
            time.sleep(0.05)
        assert not orphans
    finally:
        push.kill()
        push.communicate(timeout=60)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
