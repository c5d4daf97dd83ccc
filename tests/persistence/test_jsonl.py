"""JsonlPersistence against real files: format, damage, ownership, durability, tokens."""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionquery.errors import (
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceError,
    PersistenceExists,
    PersistenceNotFound,
    PersistenceOwned,
    PersistenceWriteFailed,
)
from sessionquery.model import Replace, SessionEvent, SessionHeader, SurfaceOp
from sessionquery.persistence import JsonlPersistence, ReadHandle, SessionPersistence, WriteHandle

# --------------------------------------------------------------------------- helpers


def _header(session_id: str = "s1", **fields: object) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1_700_000_000_000, cwd="/work", **fields)  # type: ignore[arg-type]


def _events(count: int, start: int = 0) -> list[SessionEvent]:
    return [
        SessionEvent("note", seq, 1000 + seq, {"n": seq, "text": f"event {seq}"})
        for seq in range(start, start + count)
    ]


def _store_with(tmp_path: Path, count: int, session_id: str = "s1") -> JsonlPersistence:
    store = JsonlPersistence(tmp_path / "store")
    with store.create(_header(session_id)) as writer:
        writer.append(_events(count))
    return store


def _read_all(store: JsonlPersistence, session_id: str = "s1") -> list[SessionEvent]:
    with store.open_read(session_id) as reader:
        return reader.read()


def _file(store: JsonlPersistence, session_id: str = "s1") -> Path:
    return Path(store.path_of(session_id))


def _read_line(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> str:
    """One line of a child's stdout, waiting at most ``timeout`` seconds."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, "child did not answer in time"
        chunk = os.read(fd, 1)
        assert chunk, f"child exited early: {proc.wait(timeout)}"
        line += chunk
    return line.decode().strip()


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


# --------------------------------------------------------------------------- strategies

_TEXT_CHARS = st.characters(exclude_categories=["Cs"])
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=_TEXT_CHARS, max_size=20)
)
_json = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(alphabet=_TEXT_CHARS, max_size=8),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@st.composite
def _event_lists(draw: st.DrawFn) -> list[SessionEvent]:
    count = draw(st.integers(min_value=0, max_value=8))
    events = []
    for seq in range(count):
        ops: list[SurfaceOp | None] = [None, "append", Replace(0, seq)]
        surface_op = draw(st.sampled_from(ops))
        sources = draw(st.none() | st.tuples(st.integers(0, 10), st.integers(0, 10)))
        events.append(
            SessionEvent(
                draw(st.text(min_size=1, max_size=12)),
                seq,
                draw(st.integers(0, 2**50)),
                draw(_json),
                surface_op=surface_op,
                source_event_seqs=sources,
                ignorable=draw(st.booleans()),
            )
        )
    return events


# --------------------------------------------------------------------------- round trip


def test_store_satisfies_the_persistence_protocols(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    assert isinstance(store, SessionPersistence)
    with store.open_read("s1") as reader:
        assert isinstance(reader, ReadHandle)
    with store.open_write("s1") as writer:
        assert isinstance(writer, WriteHandle)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(events=_event_lists(), seeded=st.booleans())
def test_written_events_read_back_equal(
    tmp_path_factory: pytest.TempPathFactory, events: list[SessionEvent], seeded: bool
) -> None:
    store = JsonlPersistence(tmp_path_factory.mktemp("rt"))
    header = _header(is_seeded=seeded)
    inherited = len(events) if seeded else 0
    with store.create(header, inherited_event_count=inherited) as writer:
        writer.append(events)
    with store.open_read("s1") as reader:
        assert reader.header == header
        assert reader.inherited_event_count == inherited
        assert reader.read() == events
    [listed] = store.list()
    assert listed.header == header


def test_file_is_a_header_line_then_one_compact_line_per_event(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    with store.create(_header("s1")) as writer:
        writer.append([SessionEvent("user/message", 0, 5, {"z": 1, "a": "é"}, surface_op="append")])
    lines = _file(store).read_bytes().split(b"\n")
    assert json.loads(lines[0]) == {
        "type": "session",
        "version": 3,
        "id": "s1",
        "createdAt": 1_700_000_000_000,
        "isSeeded": False,
        "delegationDepth": 0,
        "cwd": "/work",
    }
    assert lines[0].startswith(b'{"type":"session","version":3,')
    assert (
        lines[1]
        == (
            '{"type":"user/message","seq":0,"time":5,"data":{"z":1,"a":"é"},"surfaceOp":"append"}'
        ).encode()
    )
    assert lines[2] == b""


def test_read_window_returns_the_requested_slice_and_empty_past_the_end(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 10)
    with store.open_read("s1") as reader:
        assert reader.read(3, 2) == _events(2, start=3)
        assert reader.read(8) == _events(2, start=8)
        assert reader.read(10) == []
        assert reader.read(50, 5) == []
        with pytest.raises(ValueError):
            reader.read(-1)


def test_open_write_continues_after_the_last_stored_event(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 3)
    with store.open_write("s1") as writer:
        assert writer.event_count == 3
        writer.append(_events(2, start=3))
    assert _read_all(store) == _events(5)


def test_append_with_a_wrong_seq_queues_nothing(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    with store.create(_header()) as writer:
        writer.append(_events(2))
        with pytest.raises(ValueError):
            writer.append([*_events(1, start=2), *_events(1, start=7)])
        assert writer.event_count == 2
    assert _read_all(store) == _events(2)


def test_append_does_no_io_until_flush(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    writer = store.create(_header())
    size = _file(store).stat().st_size
    writer.append(_events(3))
    assert _file(store).stat().st_size == size
    assert _read_all(store) == []
    writer.flush()
    assert _read_all(store) == _events(3)
    writer.close()


def test_handles_refuse_use_after_close_and_close_twice(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    reader = store.open_read("s1")
    reader.close()
    reader.close()
    with pytest.raises(PersistenceClosed):
        reader.read()
    writer = store.open_write("s1")
    writer.close()
    writer.close()
    with pytest.raises(PersistenceClosed):
        writer.append(_events(1, start=1))
    with pytest.raises(PersistenceClosed):
        writer.flush()


def test_create_of_a_stored_id_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 2)
    before = _file(store).read_bytes()
    with pytest.raises(PersistenceExists) as caught:
        store.create(_header())
    assert isinstance(caught.value, ValueError)
    assert _file(store).read_bytes() == before


def test_inherited_events_require_a_seeded_header(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    with pytest.raises(ValueError):
        store.create(_header(), inherited_event_count=2)
    with store.create(_header("seeded", is_seeded=True), inherited_event_count=2) as writer:
        writer.append(_events(2))
    with store.open_read("seeded") as reader:
        assert reader.inherited_event_count == 2


def test_unknown_and_invalid_ids_get_clear_errors(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    with pytest.raises(PersistenceNotFound):
        store.open_read("missing")
    with pytest.raises(PersistenceNotFound):
        store.open_write("missing")
    with pytest.raises(PersistenceNotFound):
        store.delete("missing")
    assert store.stat("missing") is None
    for bad in ("", "a\x00b", "a\nb"):
        with pytest.raises(ValueError):
            store.stat(bad)


# --------------------------------------------------------------------------- ids and names

_HOSTILE_IDS = [
    "a/b",
    "../escape",
    "..",
    ".",
    "/etc/passwd",
    "..\\..\\windows",
    "会话 ünïcødé 🚀",
    "Session",
    "session",
    "SESSION",
    "~7e",
    "~",
    "x" * 512,
    "X" * 512,
    "é" * 512,
]


def test_hostile_ids_are_stored_inside_the_root_and_listed_exactly(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = JsonlPersistence(root)
    for index, session_id in enumerate(_HOSTILE_IDS):
        with store.create(_header(session_id)) as writer:
            writer.append(_events(index + 1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    files = [p for p in root.iterdir() if not p.name.startswith(".")]
    assert len(files) == len(_HOSTILE_IDS)
    assert all(p.is_file() and len(p.name.encode()) <= 255 for p in files)
    assert sorted(s.header.id for s in store.list()) == sorted(_HOSTILE_IDS)
    for index, session_id in enumerate(_HOSTILE_IDS):
        assert _read_all(store, session_id) == _events(index + 1)
        entry = store.stat(session_id)
        assert entry is not None and entry.header.id == session_id


def test_a_file_renamed_to_another_ids_name_is_reported_corrupt(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1, "one")
    os.rename(store.path_of("one"), store.path_of("two"))
    with pytest.raises(PersistenceCorrupt):
        store.open_read("two")
    assert store.list() == []
    [problem] = store.problems()
    assert (problem.path, problem.line) == (store.path_of("two"), 1)


# --------------------------------------------------------------------------- damage


def _write_raw(path: Path, header: dict[str, object], lines: list[bytes]) -> None:
    path.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))


def _raw_header(session_id: str = "s1", **extra: object) -> dict[str, object]:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "createdAt": 1,
        "isSeeded": False,
        "delegationDepth": 0,
        **extra,
    }


def _raw_event(seq: int) -> bytes:
    return json.dumps(SessionEvent("note", seq, 1, {"n": seq}).to_json()).encode() + b"\n"


@pytest.fixture
def store(tmp_path: Path) -> JsonlPersistence:
    return JsonlPersistence(tmp_path / "store")


def test_torn_final_line_is_ignored_by_reads_which_change_no_byte(
    store: JsonlPersistence,
) -> None:
    path = _file(store)
    _write_raw(path, _raw_header(), [_raw_event(0), _raw_event(1), b'{"type":"note","se'])
    before = path.read_bytes()
    assert [e.seq for e in _read_all(store)] == [0, 1]
    assert store.stat("s1") is not None
    store.list()
    assert path.read_bytes() == before


def test_open_write_truncates_the_torn_tail_and_appends_after_it(
    store: JsonlPersistence,
) -> None:
    path = _file(store)
    _write_raw(path, _raw_header(), [_raw_event(0), b'{"type":"no'])
    with store.open_write("s1") as writer:
        assert path.read_bytes().endswith(_raw_event(0))
        writer.append(_events(1, start=1))
    assert [e.seq for e in _read_all(store)] == [0, 1]
    assert path.read_bytes().endswith(b"\n")


@pytest.mark.parametrize(
    ("lines", "line_number", "fragment"),
    [
        ([_raw_event(0), b"{not json\n", _raw_event(2), _raw_event(3)], 3, "invalid JSON"),
        ([_raw_event(0), _raw_event(1), b"{bad\n", _raw_event(3)], 4, "invalid JSON"),
        ([_raw_event(0), _raw_event(1), b"{bad\n"], 4, "invalid JSON"),  # complete final line
        ([_raw_event(0), _raw_event(2), _raw_event(3)], 3, "expected 1"),
        ([_raw_event(0), b'{"type":"x","seq":1}\n', _raw_event(2)], 3, "invalid event"),
        ([_raw_event(0), b"\n", _raw_event(2)], 3, "invalid JSON"),
        ([_raw_event(0), b"\xff\xfe\n", _raw_event(2)], 3, "UTF-8"),
    ],
)
def test_damage_before_the_tail_is_corrupt_naming_file_and_line(
    store: JsonlPersistence, lines: list[bytes], line_number: int, fragment: str
) -> None:
    path = _file(store)
    _write_raw(path, _raw_header(), lines)
    before = path.read_bytes()
    with pytest.raises(PersistenceCorrupt) as caught:
        _read_all(store)
    message = str(caught.value)
    assert message.startswith(f"{path} line {line_number}: ")
    assert fragment in message
    with pytest.raises(PersistenceCorrupt):
        store.open_write("s1")  # a writer never builds on a damaged log
    assert path.read_bytes() == before
    [problem] = store.verify()
    assert problem.fatal and problem.line == line_number


def test_a_window_read_still_reports_damage_later_in_the_file(store: JsonlPersistence) -> None:
    path = _file(store)
    _write_raw(path, _raw_header(), [_raw_event(0), _raw_event(1), b"{bad\n"])
    with store.open_read("s1") as reader, pytest.raises(PersistenceCorrupt):
        reader.read(0, 1)  # reading validates the whole file read so far


@pytest.mark.parametrize("version", [2, 4, "3", None])
def test_unsupported_format_version_is_refused_before_shape_checks(
    store: JsonlPersistence, version: object
) -> None:
    # Unknown keys are present too: the version must be reported, not the keys.
    _write_raw(_file(store), {**_raw_header(version=version), "future": True}, [])
    with pytest.raises(PersistenceCorrupt, match="unsupported format version"):
        store.open_read("s1")
    assert store.list() == []
    [problem] = store.problems()
    assert "unsupported format version" in problem.message


@pytest.mark.parametrize(
    "header",
    [
        _raw_header(sandboxMode="x"),
        {k: v for k, v in _raw_header().items() if k != "isSeeded"},
        _raw_header(type="other"),
        _raw_header(createdAt=-1),
        _raw_header(inheritedEventCount=2),  # not seeded
    ],
)
def test_invalid_headers_are_corrupt_at_line_one(
    store: JsonlPersistence, header: dict[str, object]
) -> None:
    path = _file(store)
    _write_raw(path, header, [])
    with pytest.raises(PersistenceCorrupt) as caught:
        store.open_read("s1")
    assert str(caught.value).startswith(f"{path} line 1: ")


def test_list_ignores_foreign_entries_and_reports_a_garbage_header_as_a_problem(
    store: JsonlPersistence,
) -> None:
    root = Path(store.root)
    with store.create(_header("good")):
        pass
    (root / "notes.txt").write_text("hello")
    (root / ".hidden.jsonl").write_text("garbage")
    (root / "dir.jsonl").mkdir()
    assert [s.header.id for s in store.list()] == ["good"]
    garbage = root / "garbage.jsonl"
    garbage.write_text("this is not json\n")
    assert [s.header.id for s in store.list()] == ["good"]  # one bad file hides nothing
    [problem] = store.problems()
    assert (problem.path, problem.line, problem.fatal) == (str(garbage), 1, True)
    assert problem.message == "invalid JSON in the header line"  # the reason; path says where
    assert [p.path for p in store.verify()] == [str(garbage)]


def test_verify_reports_a_torn_tail_as_not_fatal(store: JsonlPersistence) -> None:
    _write_raw(_file(store), _raw_header(), [_raw_event(0), b"{"])
    [problem] = store.verify()
    assert not problem.fatal
    assert problem.line == 3


# --------------------------------------------------------------------------- ownership


def test_second_writer_in_this_process_is_refused(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    other = JsonlPersistence(tmp_path / "store")
    with store.open_write("s1"):
        with pytest.raises(PersistenceOwned):
            store.open_write("s1")
        with pytest.raises(PersistenceOwned):
            other.open_write("s1")
        with pytest.raises(PersistenceOwned):
            other.delete("s1")
        assert _read_all(other) == _events(1)  # readers are never blocked
    with store.open_write("s1"):
        pass


_OWNER_CHILD = """
    import sys
    from sessionquery.persistence import JsonlPersistence
    store = JsonlPersistence(sys.argv[1])
    writer = store.open_write("s1")
    print("owned", flush=True)
    sys.stdin.readline()
    writer.close()
    print("released", flush=True)
"""


def test_second_writer_in_another_process_is_refused(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_OWNER_CHILD), store.root],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert _read_line(proc) == "owned"
        with pytest.raises(PersistenceOwned):
            store.open_write("s1")
        with pytest.raises(PersistenceOwned):
            store.delete("s1")
        assert _read_all(store) == _events(1)
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert _read_line(proc) == "released"
        assert proc.wait(timeout=10) == 0
    finally:
        _finish(proc)
    with store.open_write("s1"):
        pass


def test_delete_removes_the_session_and_allows_recreating_it(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 2)
    store.delete("s1")
    assert store.stat("s1") is None
    assert store.list() == []
    with pytest.raises(PersistenceNotFound):
        store.open_read("s1")
    with store.create(_header()) as writer:
        writer.append(_events(1))
    assert _read_all(store) == _events(1)


def test_an_open_reader_keeps_reading_a_deleted_session(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 2)
    with store.open_read("s1") as reader:
        store.delete("s1")
        assert reader.read() == _events(2)


# --------------------------------------------------------------------------- concurrency


def test_concurrent_readers_always_see_a_valid_prefix(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    expected = _events(300)
    writer = store.create(_header())
    stop = threading.Event()
    failures: list[BaseException] = []
    longest = [0]

    def read_loop() -> None:
        try:
            with store.open_read("s1") as tail:
                seen = 0
                while not stop.is_set():
                    with store.open_read("s1") as fresh:
                        events = fresh.read()
                    assert events == expected[: len(events)]
                    grown = tail.read(seen)
                    assert grown == expected[seen : seen + len(grown)]
                    seen += len(grown)
                    longest[0] = max(longest[0], seen)
        except BaseException as exc:
            failures.append(exc)

    readers = [threading.Thread(target=read_loop) for _ in range(3)]
    for thread in readers:
        thread.start()
    try:
        for start in range(0, 300, 7):
            writer.append(expected[start : start + 7])
            writer.flush()
    finally:
        writer.close()
        stop.set()
        for thread in readers:
            thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in readers)
    assert failures == []
    assert _read_all(store) == expected


# --------------------------------------------------------------------------- crashes

_KILLED_CHILD = """
    import sys
    from sessionquery.model import SessionEvent, SessionHeader
    from sessionquery.persistence import JsonlPersistence
    store = JsonlPersistence(sys.argv[1])
    writer = store.create(SessionHeader(id="crash", created_at=1))
    seq = 0
    blob = "x" * 300_000
    while True:
        writer.append([SessionEvent("note", seq + i, 1, {"n": seq + i, "blob": blob})
                       for i in range(3)])
        writer.flush()
        seq += 3
        print(seq, flush=True)
"""


def test_a_writer_killed_mid_append_loses_only_the_unflushed_tail(tmp_path: Path) -> None:
    root = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED_CHILD), str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        flushed = [int(_read_line(proc)) for _ in range(4)]
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        _finish(proc)
    assert flushed == [3, 6, 9, 12]
    store = JsonlPersistence(root)
    path = _file(store, "crash")
    before = path.read_bytes()
    events = _read_all(store, "crash")
    assert len(events) >= flushed[-1]
    assert [e.seq for e in events] == list(range(len(events)))
    assert path.read_bytes() == before
    with store.open_write("crash") as writer:
        assert writer.event_count == len(events)
        assert path.read_bytes().endswith(b"\n")
        writer.append([SessionEvent("after", len(events), 2)])
    again = _read_all(store, "crash")
    assert again[:-1] == events
    assert again[-1].type == "after"


_FULL_DISK_CHILD = """
    import json, resource, signal, sys
    from sessionquery.errors import PersistenceWriteFailed
    from sessionquery.model import SessionEvent, SessionHeader
    from sessionquery.persistence import JsonlPersistence
    store = JsonlPersistence(sys.argv[1])
    writer = store.create(SessionHeader(id="full", created_at=1))
    writer.append([SessionEvent("note", 0, 1, {"n": 0})])
    writer.flush()
    path = store.path_of("full")
    good = len(open(path, "rb").read())
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (good + 100, hard))
    writer.append([SessionEvent("note", 1, 1, {"blob": "x" * 5000})])
    try:
        writer.flush()
        failed = None
    except PersistenceWriteFailed as exc:
        failed = [exc.errno, isinstance(exc, OSError)]
    size_after_failure = len(open(path, "rb").read())
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    writer.close()
    print(json.dumps({"failed": failed, "good": good, "after": size_after_failure}))
"""


def test_a_failed_flush_keeps_the_events_and_cuts_the_file_back(tmp_path: Path) -> None:
    root = tmp_path / "store"
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_FULL_DISK_CHILD), str(root)],
        capture_output=True,
        timeout=60,
        check=True,
    )
    report = json.loads(result.stdout)
    assert report["failed"] is not None and report["failed"][1] is True
    assert report["after"] == report["good"]
    events = _read_all(JsonlPersistence(root), "full")
    assert [e.seq for e in events] == [0, 1]
    assert events[1].data == {"blob": "x" * 5000}


# --------------------------------------------------------------------------- modes


@pytest.fixture
def wide_umask() -> Iterator[None]:
    previous = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("wide_umask")
def test_new_directories_are_0700_and_files_0600(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b"
    store = JsonlPersistence(root)
    with store.create(_header()) as writer:
        writer.append(_events(1))
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for path in root.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_existing_modes_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    store = _store_with(tmp_path, 1)
    os.chmod(_file(store), 0o640)
    with store.open_write("s1") as writer:
        writer.append(_events(1, start=1))
    assert stat.S_IMODE(root.stat().st_mode) == 0o755
    assert stat.S_IMODE(_file(store).stat().st_mode) == 0o640


# --------------------------------------------------------------------------- revision, token


def test_revision_changes_on_flush_and_not_on_read(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    first = store.stat("s1")
    assert first is not None
    _read_all(store)
    assert store.stat("s1") == first
    [listed] = store.list()
    assert listed.revision == first.revision
    assert listed.size_bytes == _file(store).stat().st_size
    with store.open_write("s1") as writer:
        writer.append(_events(1, start=1))
        writer.flush()
        second = store.stat("s1")
    assert second is not None and second.revision != first.revision


def test_change_token_changes_on_create_flush_and_delete_only(tmp_path: Path) -> None:
    store = JsonlPersistence(tmp_path)
    other = JsonlPersistence(tmp_path)  # another instance sees the same token
    tokens = [store.change_token()]
    writer = store.create(_header())
    tokens.append(other.change_token())
    writer.append(_events(2))
    assert other.change_token() == tokens[-1]  # queued, not yet stored
    writer.flush()
    tokens.append(other.change_token())
    writer.flush()  # nothing new
    assert other.change_token() == tokens[-1]
    writer.close()
    _read_all(store)
    store.list()
    store.stat("s1")
    store.verify()
    assert other.change_token() == tokens[-1]
    store.delete("s1")
    tokens.append(other.change_token())
    assert len(set(tokens)) == len(tokens)


def test_change_token_sees_writes_from_another_process(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    before = store.change_token()
    code = (
        "import sys\n"
        "from sessionquery.model import SessionHeader\n"
        "from sessionquery.persistence import JsonlPersistence\n"
        "JsonlPersistence(sys.argv[1]).create(SessionHeader(id='p2', created_at=1)).close()\n"
    )
    subprocess.run([sys.executable, "-c", code, store.root], check=True, timeout=60)
    assert store.change_token() != before
    assert sorted(s.header.id for s in store.list()) == ["p2", "s1"]


def test_list_reuses_cached_headers_of_unchanged_files(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1)
    path = _file(store)
    [first] = store.list()
    # Edit the header in place without changing size or mtime: a re-read would notice.
    st = path.stat()
    path.write_bytes(
        path.read_bytes().replace(b'"createdAt":1700000000000', b'"createdAt":1700000000001')
    )
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    [second] = store.list()
    assert second.header == first.header
    [fresh] = JsonlPersistence(store.root).list()
    assert fresh.header.created_at == 1_700_000_000_001


def test_persistence_errors_share_one_base(tmp_path: Path) -> None:
    for error in (PersistenceExists, PersistenceWriteFailed, PersistenceOwned):
        assert issubclass(error, PersistenceError)


# --------------------------------------------------------------------------- hostile files


def test_a_fifo_named_like_a_session_never_hangs_any_call(tmp_path: Path) -> None:
    # In a child with a deadline: on failure the call would block forever in open().
    store = _store_with(tmp_path, 1, "good")
    os.mkfifo(store.path_of("pipe"))
    code = """
        import sys
        from sessionquery import SessionQuery
        from sessionquery.errors import PersistenceCorrupt, SessionQueryError
        from sessionquery.persistence import JsonlPersistence
        store = JsonlPersistence(sys.argv[1])
        print([s.header.id for s in store.list()])
        print([(p.line, "FIFO" in p.message) for p in store.problems()])
        print([(p.line, "FIFO" in p.message) for p in store.verify()])
        for call in (store.stat, store.open_read, store.open_write):
            try:
                call("pipe")
            except PersistenceCorrupt as exc:
                print(type(exc).__name__, exc.line)
        try:
            SessionQuery(None, store).read_session("pipe")
        except SessionQueryError as exc:
            print(exc.code.value)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), store.root],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['good']",
        "[(None, True)]",
        "[(None, True)]",
        "PersistenceCorrupt None",
        "PersistenceCorrupt None",
        "PersistenceCorrupt None",
        "SESSION_QUERY_CORRUPT_SESSION",
    ]


def test_a_symlink_named_like_a_session_is_a_problem_not_a_session(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1, "good")
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(_file(store, "good").read_bytes())
    os.symlink(outside, store.path_of("link"))
    assert [s.header.id for s in store.list()] == ["good"]
    [problem] = store.problems()
    assert problem.path == store.path_of("link")
    assert "symbolic link" in problem.message
    with pytest.raises(PersistenceCorrupt):
        store.open_read("link")


@pytest.mark.slow
def test_a_huge_garbage_header_is_listed_as_a_problem_in_linear_time(tmp_path: Path) -> None:
    store = _store_with(tmp_path, 1, "good")
    with open(store.path_of("huge"), "wb") as file:
        file.write(b'{"type":"session","cwd":"' + b"x" * (64 << 20) + b'"\n')
    started = time.monotonic()
    assert [s.header.id for s in store.list()] == ["good"]
    [problem] = store.problems()
    assert time.monotonic() - started < 20  # a hang guard: the quadratic read took minutes
    assert (problem.path, problem.line) == (store.path_of("huge"), 1)


def test_verify_takes_the_line_from_the_error_itself(store: JsonlPersistence) -> None:
    _write_raw(_file(store), _raw_header(), [_raw_event(0), b"not json", _raw_event(2)])
    [problem] = store.verify()
    assert (problem.line, problem.fatal) == (3, True)
    assert problem.message.startswith(f"{_file(store)} line 3:")


def test_the_store_declares_that_it_reports_problems(store: JsonlPersistence) -> None:
    from sessionquery.persistence import ProblemSource

    assert isinstance(store, ProblemSource)
    assert store.problems() == []
