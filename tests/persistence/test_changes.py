"""The change token and change journal of the JSONL store, against real files and processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import user
from sessionquery import SessionQuery
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence import ChangeJournal, ChangeTokenSource, JsonlPersistence, _changes
from sessionquery.search.sqlite import SqliteSearch


def _header(session_id: str, cwd: str = "/work") -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1_700_000_000_000, cwd=cwd)


def _note(seq: int, text: str) -> SessionEvent:
    return SessionEvent("note", seq, 1000 + seq, {"text": text})


def _create(store: JsonlPersistence, session_id: str, count: int = 1) -> None:
    with store.create(_header(session_id)) as writer:
        writer.append([_note(seq, f"event {seq}") for seq in range(count)])


def _append(store: JsonlPersistence, session_id: str, count: int = 1) -> None:
    with store.open_write(session_id) as writer:
        start = writer.event_count
        writer.append([_note(seq, f"event {seq}") for seq in range(start, start + count)])


def _quiet(store: JsonlPersistence) -> None:
    """Age the root's times past the racy window, as a store untouched for a while would be."""
    past = time.time_ns() - 10 * _changes.RACY_NS
    os.utime(store.root, ns=(past, past))


# --------------------------------------------------------------------------- protocols


def test_the_store_declares_the_change_token_and_journal_capabilities(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    assert isinstance(store, ChangeTokenSource)
    assert isinstance(store, ChangeJournal)


# --------------------------------------------------------------------------- the token


def test_the_token_is_stable_while_nothing_changes(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    first = store.change_token()
    store.list()
    store.verify()
    with store.open_read("a") as reader:
        reader.read()
    assert store.change_token() == first
    assert JsonlPersistence(tmp_path).change_token() == first


def test_a_session_file_deleted_by_hand_changes_the_token(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _create(store, "b")
    _quiet(store)
    before = store.change_token()
    os.unlink(store.path_of("b"))
    assert store.change_token() != before
    assert store.changed_since(before) is None


def test_a_session_file_added_by_hand_changes_the_token(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path / "store")
    other = JsonlPersistence(tmp_path / "other")
    _create(store, "a")
    _create(other, "b")
    before = store.change_token()  # racy: taken right after a create
    shutil.copyfile(other.path_of("b"), store.path_of("b"))
    assert store.change_token() != before
    assert store.changed_since(before) is None
    assert sorted(s.header.id for s in store.list()) == ["a", "b"]


def test_a_session_file_replaced_by_rename_changes_the_token(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path / "store")
    other = JsonlPersistence(tmp_path / "other")
    _create(store, "a")
    with other.create(_header("a", cwd="/elsewhere")):
        pass
    _quiet(store)
    before = store.change_token()
    os.replace(other.path_of("a"), store.path_of("a"))
    assert store.change_token() != before
    assert store.changed_since(before) is None


def test_a_hand_made_change_in_the_same_clock_tick_as_a_store_change_is_still_seen(
    tmp_path: Path,
) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _create(store, "b")
    before = store.change_token()  # the root changed just now: the token carries a digest
    os.unlink(store.path_of("b"))  # very likely within the same tick of the file clock
    assert store.change_token() != before
    assert store.changed_since(before) is None


def test_a_racy_token_is_still_answered_once_the_root_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    os.utime(store.root)  # the root changed just now (a create on a loaded disk may be slow)
    before = store.change_token()
    assert "#" in before  # taken within the racy window: it carries an entry digest
    # The window passes (shrunk rather than waited for): the same directory is no change.
    monkeypatch.setattr(_changes, "RACY_NS", 0)
    assert "#" not in store.change_token()
    assert store.changed_since(before) == frozenset()
    _append(store, "a")
    assert store.changed_since(before) == frozenset({"a"})
    os.unlink(store.path_of("a"))
    assert store.changed_since(before) is None


# --------------------------------------------------------------------------- the journal


def test_changed_since_names_the_sessions_appended_to_since_the_token(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    for name in ("a", "b", "c"):
        _create(store, name)
    _quiet(store)
    token = store.change_token()
    assert store.changed_since(token) == frozenset()
    _append(store, "b")
    _append(store, "c", 3)
    assert store.changed_since(token) == frozenset({"b", "c"})
    later = store.change_token()
    assert store.changed_since(later) == frozenset()


def test_a_create_or_delete_through_the_store_is_never_missed(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _quiet(store)
    token = store.change_token()
    _create(store, "b")
    answer = store.changed_since(token)
    assert answer is None or "b" in answer
    token = store.change_token()
    store.delete("a")
    answer = store.changed_since(token)
    assert answer is None or "a" in answer


def test_changed_since_refuses_tokens_it_cannot_vouch_for(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path / "one")
    other = JsonlPersistence(tmp_path / "two")
    _create(store, "a")
    _create(other, "a")
    for token in ("", "0", "garbage", "v2:x:1", other.change_token(), "v2:abc:notanumber:x"):
        assert store.changed_since(token) is None


def test_a_token_read_while_a_change_is_in_progress_is_one_off(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    changes = _changes.ChangeLog(store.root)
    with changes.changing("a", strict=True):
        first, second = store.change_token(), store.change_token()
    assert first != second
    assert store.changed_since(first) is None


@pytest.mark.slow
def test_a_compacted_journal_answers_recent_tokens_and_refuses_old_ones(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _quiet(store)
    old = store.change_token()
    journal = Path(store.root) / _changes.JOURNAL_NAME
    rounds = 0
    with store.open_write("a") as writer:
        while journal.stat().st_size <= _changes.JOURNAL_LIMIT // 2 or rounds < 10:
            writer.append([_note(writer.event_count, "x")])
            writer.flush()
            rounds += 1
            assert rounds < 20_000, "the journal never grew"
        before_compaction = journal.stat().st_ino
        while journal.stat().st_ino == before_compaction:
            writer.append([_note(writer.event_count, "x")])
            writer.flush()
            rounds += 1
            assert rounds < 40_000, "the journal was never compacted"
        assert journal.stat().st_size <= _changes.JOURNAL_LIMIT
        _quiet(store)
        recent = store.change_token()
        writer.append([_note(writer.event_count, "y")])
        writer.flush()
    assert store.changed_since(old) is None
    assert store.changed_since(recent) == frozenset({"a"})


def test_a_torn_journal_line_is_cut_away_by_the_next_writer(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    journal = Path(store.root) / _changes.JOURNAL_NAME
    with journal.open("ab") as file:
        file.write(b"0000000000000000")  # a crash in the middle of an entry
    _quiet(store)
    token = store.change_token()
    _append(store, "a")
    assert store.changed_since(token) == frozenset({"a"})
    assert journal.read_bytes().endswith(b"\n")


def test_a_damaged_journal_makes_the_answer_unknown_not_wrong(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _create(store, "b")
    _quiet(store)
    token = store.change_token()
    _append(store, "a")
    journal = Path(store.root) / _changes.JOURNAL_NAME
    lines = journal.read_bytes().split(b"\n")
    lines[-2] = b"garbage"
    journal.write_bytes(b"\n".join(lines))
    _quiet(store)
    assert store.changed_since(token) is None


@pytest.mark.slow
def test_changes_made_by_another_process_are_in_the_journal(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _create(store, "b")
    _quiet(store)
    token = store.change_token()
    code = (
        "import sys\n"
        "from sessionquery.model import SessionEvent\n"
        "from sessionquery.persistence import JsonlPersistence\n"
        "with JsonlPersistence(sys.argv[1]).open_write('b') as w:\n"
        "    w.append([SessionEvent('note', w.event_count, 5, {'text': 'child'})])\n"
    )
    subprocess.run([sys.executable, "-c", code, store.root], check=True, timeout=60)
    assert store.change_token() != token
    assert store.changed_since(token) == frozenset({"b"})


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "append", "delete", "hand_delete", "hand_add", "quiet"]),
        st.sampled_from(["a", "b", "c"]),
    ),
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS, cut=st.integers(min_value=0, max_value=12))
def test_changed_since_never_misses_a_changed_session(
    tmp_path_factory: object, ops: list[tuple[str, str]], cut: int
) -> None:
    """Property: whatever happens after a token, the answer covers every session whose file
    changed (or is ``None``), for store-made and hand-made changes alike."""
    root = Path(tempfile.mkdtemp())
    spare = Path(tempfile.mkdtemp())
    try:
        store = JsonlPersistence(root)
        _create(store, "a")
        token = store.change_token()
        revisions = {s.header.id: s.revision for s in store.list()}
        for index, (op, name) in enumerate(ops):
            if index == cut:
                token = store.change_token()
                revisions = {s.header.id: s.revision for s in store.list()}
            _apply(store, spare, op, name)
        answer = store.changed_since(token)
        if answer is None:
            return
        now = {s.header.id: s.revision for s in store.list()}
        changed = {
            sid for sid in now.keys() | revisions.keys() if now.get(sid) != revisions.get(sid)
        }
        assert changed <= answer
    finally:
        shutil.rmtree(root)
        shutil.rmtree(spare)


def _apply(store: JsonlPersistence, spare: Path, op: str, name: str) -> None:
    path = Path(store.path_of(name))
    exists = path.exists()
    if op == "create" and not exists:
        _create(store, name)
    elif op == "append" and exists:
        _append(store, name)
    elif op == "delete" and exists:
        store.delete(name)
    elif op == "hand_delete" and exists:
        path.unlink()
    elif op == "hand_add" and not exists:
        other = JsonlPersistence(tempfile.mkdtemp(dir=spare))
        _create(other, name, 2)
        shutil.copyfile(other.path_of(name), path)
    elif op == "quiet":
        _quiet(store)


# --------------------------------------------------------------------------- long-running


def test_a_long_running_search_notices_files_deleted_replaced_and_added_by_hand(
    tmp_path: Path,
) -> None:
    store = JsonlPersistence(tmp_path / "store")
    spare = JsonlPersistence(tmp_path / "spare")
    for name in ("keep", "gone", "swap"):
        with store.create(_header(name)) as writer:
            writer.append([user(0, f"needle in {name}", id="m0")])
    with spare.create(_header("swap", cwd="/elsewhere")) as writer:
        writer.append([user(0, "replaced without the word", id="m0")])
    with spare.create(_header("new")) as writer:
        writer.append([user(0, "needle in new", id="m0")])
    with SessionQuery(None, store, search=SqliteSearch(tmp_path / "index.sqlite3")) as query:

        def found() -> set[str]:
            return {hit.record.id for hit in query.search_sessions("needle").items}

        assert found() == frozenset({"keep", "gone", "swap"})
        _quiet(store)
        assert found() == frozenset({"keep", "gone", "swap"})
        os.unlink(store.path_of("gone"))
        assert found() == frozenset({"keep", "swap"})
        _quiet(store)
        os.replace(spare.path_of("swap"), store.path_of("swap"))
        assert found() == frozenset({"keep"})
        _quiet(store)
        shutil.copyfile(spare.path_of("new"), store.path_of("new"))
        assert found() == frozenset({"keep", "new"})


def test_a_fifo_in_place_of_the_journal_never_hangs_a_reader(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    journal = Path(store.root) / _changes.JOURNAL_NAME
    journal.unlink()
    os.mkfifo(journal)
    _quiet(store)
    token = store.change_token()
    assert store.changed_since(token) == frozenset()
    _append(store, "a")  # the journal cannot be written; the token still moves
    assert store.change_token() != token
    assert store.changed_since(token) is None


_APPENDER = """
import sys, time
from sessionquery.model import SessionEvent
from sessionquery.persistence import JsonlPersistence
store = JsonlPersistence(sys.argv[1])
until = time.monotonic() + float(sys.argv[3])
with store.open_write(sys.argv[2]) as writer:
    while time.monotonic() < until:
        writer.append([SessionEvent("note", writer.event_count, 1, {"text": "x"})])
        writer.flush()
"""


@pytest.mark.slow
def test_changed_since_never_misses_appends_made_by_concurrent_processes(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    names = ("a", "b", "c")
    for name in names:
        _create(store, name)
    _append(store, "a")  # the token, journal and lock files exist from here on
    _quiet(store)

    def revisions() -> dict[str, str | None]:
        entries = {name: store.stat(name) for name in names}
        return {name: None if entry is None else entry.revision for name, entry in entries.items()}

    writers = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, store.root, name, "3"])
        for name in ("a", "b")
    ]
    answered = checks = 0
    try:
        token = store.change_token()
        seen = revisions()  # read after the token: what a reconciler would have indexed
        while any(writer.poll() is None for writer in writers):
            now = revisions()  # read before asking: every change in it must be answered
            new_token = store.change_token()
            changed = store.changed_since(token)
            checks += 1
            if changed is not None:
                answered += 1
                missed = {name for name in names if now[name] != seen[name]} - changed
                assert not missed, f"changes to {missed} were not reported"
            token, seen = new_token, revisions()
            assert checks < 1_000_000
    finally:
        for writer in writers:
            writer.wait(timeout=60)
    assert all(writer.returncode == 0 for writer in writers)
    assert answered > 0  # the journal, not only the "unknown" answer, was exercised


def test_an_edit_inside_an_existing_file_by_hand_moves_its_revision_not_the_token(
    tmp_path: Path,
) -> None:
    # The documented limit: O(1) cannot see bytes rewritten in place by another program;
    # the file's revision does, at the next full listing.
    store = JsonlPersistence(tmp_path)
    _create(store, "a")
    _append(store, "a")
    _quiet(store)
    token = store.change_token()
    [before] = store.list()
    with open(store.path_of("a"), "ab") as file:
        file.write(b'{"type":"note","seq":2,"time":1,"data":{}}\n')
    assert store.change_token() == token
    [after] = store.list()
    assert after.revision != before.revision


def test_a_writer_killed_inside_a_flush_leaves_its_session_in_the_journal(tmp_path: Path) -> None:
    from reliability.child import Child
    from reliability.corpus import events

    store = JsonlPersistence(tmp_path)
    with store.create(_header("s")) as handle:
        handle.append(events("s", 0, 6))
    _quiet(store)
    token = store.change_token()
    child = Child("paused_writer.py", store.root, "s")
    try:
        assert child.read_line() == "announced"  # the counter moved; no byte written yet
        assert store.changed_since(token) == frozenset({"s"})
        assert child.proc.stdin is not None
        child.proc.stdin.write(b"go\n")
        child.proc.stdin.flush()
        assert child.read_line() == "written"
    finally:
        child.kill()
    # Killed between its write and its second announcement: the journal still names it.
    after = store.change_token()
    assert after != token
    assert store.changed_since(token) == frozenset({"s"})
    with store.open_read("s") as reader:
        assert len(reader.read()) == 12
