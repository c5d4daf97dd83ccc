"""Outlines and windows: the same log, fold and errors as a whole read, without the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import raises_code
from sessionquery import JsonlPersistence, SessionQuery, SessionStore
from sessionquery.errors import ErrorCode
from sessionquery.model import SessionEvent, SessionHeader, fold_surface, thaw
from sessionquery.model import messages as m
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.persistence.base import ReadHandle, SessionPersistence, SkeletonHandle
from sessionquery.redact import RedactingPersistence, Redactor
from sessionquery.sources import MultiSource
from strategies import LogBuilder, valid_logs


def _turn(log: LogBuilder, question: str, answer: str) -> int:
    """One whole turn with a tool call; returns the seq of its tool result."""
    log.turn_start()
    log.user(question)
    log.step_start()
    call = log.new_call_id()
    log.assistant(answer, calls=[(call, "bash", '{"command": "ls"}')])
    started = log.tool_call(call, "bash", '{"command": "ls"}')
    result = log.tool_result(call, f"output of {question}", call_seq=started.seq)
    log.step_end()
    log.turn_end()
    return result.seq


def _store(root: Path, events: list[SessionEvent], session_id: str = "s") -> JsonlPersistence:
    store = JsonlPersistence(root)
    with store.create(SessionHeader(id=session_id, created_at=1)) as handle:
        handle.append(events)
    return store


def _equal_to_whole_read(query: SessionQuery, whole: SessionQuery, session_id: str) -> None:
    log = whole.read_session(session_id)
    outline = query.read_outline(session_id)
    assert outline.session == log.session
    assert outline.inherited_event_count == log.inherited_event_count
    assert outline.skeletons == tuple(EventSkeleton.of(event) for event in log.events)
    assert outline.fold == fold_surface(log.events)
    seqs = list(range(len(log.events)))
    assert query.read_window(session_id, seqs).events == log.events
    assert query.read_window(session_id, seqs[::-3]).events == log.events[::-3]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=valid_logs(max_turns=4, open_tail=True))
def test_an_outline_and_its_windows_equal_the_whole_read(
    tmp_path_factory: pytest.TempPathFactory, events: list[SessionEvent]
) -> None:
    root = tmp_path_factory.mktemp("store")
    _store(root, events)
    _equal_to_whole_read(
        SessionQuery(persistence=JsonlPersistence(root)),
        SessionQuery(persistence=JsonlPersistence(root)),
        "s",
    )


def _open_turn() -> list[SessionEvent]:
    log = LogBuilder()
    log.system()
    _turn(log, "first question", "first answer")
    log.turn_start()
    log.user("second")
    log.step_start()
    log.assistant("calling", calls=[(log.new_call_id(), "bash", "{}")])
    return list(log.events)


def test_the_closers_of_an_open_last_turn_are_in_the_outline_and_the_window(
    tmp_path: Path,
) -> None:
    events = _open_turn()
    _store(tmp_path, events)
    query = SessionQuery(persistence=JsonlPersistence(tmp_path))
    outline = query.read_outline("s")
    assert outline.stored_event_count == len(events) < outline.event_count
    assert outline.skeletons[-1].type == "turn/end"
    _equal_to_whole_read(query, SessionQuery(persistence=JsonlPersistence(tmp_path)), "s")


def test_a_torn_tail_is_ignored_and_left_as_it_is(tmp_path: Path) -> None:
    store = _store(tmp_path, _open_turn())
    path = Path(store.path_of("s"))
    with open(path, "ab") as file:
        file.write(b'{"type":"note","seq":')
    before = path.read_bytes()
    query = SessionQuery(persistence=JsonlPersistence(tmp_path))
    _equal_to_whole_read(query, SessionQuery(persistence=JsonlPersistence(tmp_path)), "s")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "damage",
    [
        b"{not json\n",
        b'{"type":"note","seq":SEQ,"time":1,"data":{"x":1e999}}\n',
        b'{"type":"note","seq":SEQ,"time":1,"data":{"x":"\\ud800"}}\n',
        b'{"type":"note","seq":SEQ,"time":1,"data":"\xff"}\n',
        b'{"type":"note","seq":SEQ,"time":1,"data":{},"extra":true}\n',
        b'{"type":"note","seq":9999,"time":1,"data":{}}\n',  # a wrong seq
        b'{"type":"user/message","seq":SEQ,"time":1,"data":{}}\n',  # breaks the fold
    ],
)
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_damaged_line_anywhere_fails_as_the_whole_read_fails(
    tmp_path: Path, damage: bytes, where: str
) -> None:
    events = LogBuilder()
    for index in range(6):
        _turn(events, f"question {index}", f"answer {index}")
    good = list(events.events)
    cut = {"first": 0, "middle": len(good) // 2, "last": len(good)}[where]
    store = _store(tmp_path, good[:cut])
    path = Path(store.path_of("s"))
    with open(path, "ab") as file:
        file.write(damage.replace(b"SEQ", str(cut).encode()))
    _store(tmp_path / "rest", good)
    rest = (tmp_path / "rest" / path.name).read_bytes().split(b"\n")[cut + 2 :]
    with open(path, "ab") as file:
        file.write(b"\n".join(rest))
    with raises_code(ErrorCode.CORRUPT_SESSION) as whole:
        SessionQuery(persistence=JsonlPersistence(tmp_path)).read_session("s")
    query = SessionQuery(persistence=JsonlPersistence(tmp_path))
    with raises_code(ErrorCode.CORRUPT_SESSION) as outlined:
        query.read_outline("s")
    assert str(outlined.value) == str(whole.value)
    with raises_code(ErrorCode.CORRUPT_SESSION):
        query.read_window("s", [0])


def test_a_changed_log_is_outlined_again(tmp_path: Path) -> None:
    log = LogBuilder()
    _turn(log, "one", "two")
    store = _store(tmp_path, list(log.events))
    query = SessionQuery(persistence=JsonlPersistence(tmp_path))
    first = query.read_outline("s")
    assert query.read_outline("s") is first  # kept while the revision is unchanged
    _turn(log, "three", "four")
    with store.open_write("s") as handle:
        handle.append(list(log.events)[first.event_count :])
    again = query.read_outline("s")
    assert again is not first and again.event_count == len(log.events)
    assert query.read_window("s", [again.event_count - 1]).events == (log.events[-1],)


def test_an_outlined_log_keeps_one_open_file_and_closes_it_when_evicted(tmp_path: Path) -> None:
    log = LogBuilder()
    _turn(log, "one", "two")
    for name in ("a", "b", "c"):
        _store(tmp_path, list(log.events), name)
    query = SessionQuery(persistence=JsonlPersistence(tmp_path), prepared_session_cache_size=1)
    before = len(os.listdir("/proc/self/fd"))
    for name in ("a", "b", "c"):
        query.read_window(name, [0])
    assert len(os.listdir("/proc/self/fd")) == before + 1


def test_a_window_of_a_missing_seq_is_event_not_found(tmp_path: Path) -> None:
    log = LogBuilder()
    _turn(log, "one", "two")
    _store(tmp_path, list(log.events))
    query = SessionQuery(persistence=JsonlPersistence(tmp_path))
    for seq in (-1, len(log.events) + 5, "1", 1.0):
        with raises_code(ErrorCode.EVENT_NOT_FOUND):
            query.read_window("s", [0, seq])  # type: ignore[list-item]
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        query.read_outline("nope")


def test_a_live_session_is_outlined_from_memory(tmp_path: Path) -> None:
    store = SessionStore()
    session = store.create("live", created_at=1)
    session.append("turn/start", m.turn_start(0))
    session.append("user/message", m.user_message("hi", id="u"), surface_op="append")
    query = SessionQuery(store=store, persistence=JsonlPersistence(tmp_path))
    outline = query.read_outline("live")
    assert outline.revision is None and outline.event_count == 2
    assert query.read_window("live", [1]).events == (session.events[1],)


class _WholeOnly:
    """A persistence whose handles cannot give skeletons (read whole, as an importer's)."""

    def __init__(self, inner: JsonlPersistence) -> None:
        self._inner = inner

    def list(self) -> list[object]:
        return list(self._inner.list())

    def stat(self, session_id: str) -> object:
        return self._inner.stat(session_id)

    def open_read(self, session_id: str) -> ReadHandle:
        handle = self._inner.open_read(session_id)
        handle.read()  # whole-read mode
        return _Plain(handle)


class _Plain:
    def __init__(self, inner: ReadHandle) -> None:
        self._inner = inner
        self.header = inner.header
        self.inherited_event_count = inner.inherited_event_count

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        return self._inner.read(offset, length)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> _Plain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.mark.parametrize("wrap", ["whole-only", "multi"])
def test_other_stores_outline_equally(tmp_path: Path, wrap: str) -> None:
    events = _open_turn()
    _store(tmp_path, events)
    inner = JsonlPersistence(tmp_path)
    persistence: SessionPersistence
    session_id = "s"
    if wrap == "multi":
        persistence = MultiSource([("root", inner)])
        persistence.list()
        session_id = "root:s" if persistence.stat("s") is None else "s"
        handle = persistence.open_read(session_id)
        assert isinstance(handle, SkeletonHandle)
        handle.close()
    else:
        persistence = _WholeOnly(inner)  # type: ignore[assignment]
    query = SessionQuery(persistence=persistence)
    _equal_to_whole_read(query, SessionQuery(persistence=persistence), session_id)


def test_an_invalid_rewrite_fails_the_outline_as_the_fold_does(tmp_path: Path) -> None:
    log = LogBuilder()
    result = _turn(log, "run it", "ran")
    log.rewrite_tool_result(result, "[pruned]")
    events = list(log.events)
    last = events[-1]
    data = thaw(last.data)
    data["turn"] = 99  # changes more than the output: not a valid rewrite
    events[-1] = SessionEvent(
        last.type, last.seq, last.time, data, last.surface_op, last.source_event_seqs
    )
    _store(tmp_path, events)
    with raises_code(ErrorCode.CORRUPT_SESSION) as whole:
        SessionQuery(persistence=JsonlPersistence(tmp_path)).read_session("s")
    with raises_code(ErrorCode.CORRUPT_SESSION) as outlined:
        SessionQuery(persistence=JsonlPersistence(tmp_path)).read_outline("s")
    assert str(outlined.value) == str(whole.value)


def test_outlines_and_windows_through_redaction_are_redacted_as_the_whole_read(
    tmp_path: Path,
) -> None:
    secret = "hunter2-correct-horse-battery"
    log = LogBuilder()
    log.turn_start()
    log.user(f"my password is {secret}")
    log.step_start()
    call = log.new_call_id()
    log.assistant("ok", calls=[(call, f"tool-{secret}", "{}")])
    log.tool_call(call, f"tool-{secret}", "{}")
    log.tool_result(call, f"echo {secret}")
    _store(tmp_path, list(log.events))
    redactor = Redactor(known_values={"PASSWORD": secret})
    persistence = RedactingPersistence(JsonlPersistence(tmp_path), redactor)
    query = SessionQuery(persistence=persistence)
    _equal_to_whole_read(query, SessionQuery(persistence=persistence), "s")
    outline = query.read_outline("s")
    window = query.read_window("s", range(outline.event_count))
    assert secret not in repr(window.events) and secret not in repr(outline)
    handle = persistence.open_read("s")
    assert isinstance(handle, SkeletonHandle)
    handle.close()
