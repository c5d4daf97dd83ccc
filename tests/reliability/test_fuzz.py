"""Hostile input: random bytes and JSON into the wire format, the JSONL reader and the tools.

Properties:

* ``SessionEvent.from_json`` / ``SessionHeader.from_json`` on any JSON value either return a
  value that round-trips or raise ``ValueError`` — never another exception;
* a session file holding any bytes reads through ``JsonlPersistence`` (``list``, ``stat``,
  ``open_read``, ``verify``) and ``SessionQuery`` with only typed errors
  (``PersistenceError``/``ValueError`` from the store, ``SessionQueryError`` from the service),
  and reading never changes the file;
* a valid log with random damage (flipped, cut or inserted bytes) reads as a prefix of the
  original, or fails with ``PersistenceCorrupt``; never a crash;
* ``SessionQueryTools.call`` with any name, any arguments (mapping or raw text) and any caller
  returns a ``ToolResult``; errors carry a code and no path of the store.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import raises_code
from reliability.corpus import events, header
from reliability.stats import record
from sessionquery.errors import (
    ErrorCode,
    PersistenceCorrupt,
    PersistenceError,
    SessionQueryError,
)
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.filters import CreatedBetween, SeqBetween, TimeBetween
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.tools import SessionQueryTools, ToolCaller, ToolResult
from sessionquery.tools.specs import TOOL_NAMES
from strategies import json_values, valid_events

FUZZ = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
ENVELOPE_KEYS = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")
HEADER_KEYS = (
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "isSeeded",
    "origin",
    "delegationDepth",
    "agentPreset",
    "version",
)
hostile_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from(["append", "replace", "/abs", "user/message", "\x00", "\ud800", ""])
)
hostile_values = st.recursive(
    hostile_scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.text(max_size=6) | st.sampled_from(ENVELOPE_KEYS), children, max_size=3
        )
    ),
    max_leaves=12,
)


def _envelopes(keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(
        st.sampled_from(keys) | st.text(max_size=5), hostile_values, max_size=len(keys) + 1
    )


def _with_one_field_spoiled(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event's wire form with one key replaced, added or removed."""
    wire = draw(valid_events()).to_json()
    key = draw(st.sampled_from([*ENVELOPE_KEYS, "extra"]))
    if draw(st.booleans()):
        wire.pop(key, None)
    else:
        wire[key] = draw(hostile_values)
    return wire


event_json = st.one_of(
    valid_events().map(lambda event: event.to_json()),
    st.composite(_with_one_field_spoiled)(),
    _envelopes(ENVELOPE_KEYS),
    hostile_values,
)


@given(event_json)
def test_event_from_any_json_is_an_event_or_a_value_error(obj: object) -> None:
    try:
        event = SessionEvent.from_json(obj)
    except ValueError:
        record("fuzz", event_values=1, refused=1)
        return
    assert SessionEvent.from_json(event.to_json()) == event
    record("fuzz", event_values=1)


@given(_envelopes(HEADER_KEYS))
def test_header_from_any_json_is_a_header_or_a_value_error(obj: dict[str, Any]) -> None:
    try:
        parsed = SessionHeader.from_json(obj)
    except ValueError:
        return
    assert SessionHeader.from_json(parsed.to_json()) == parsed


def _nested(depth: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize("depth", [400, 5_000, 100_000])
def test_deeply_nested_event_data_is_a_value_error_not_a_recursion_error(depth: int) -> None:
    """Regression: ``freeze_json`` recursed without a guard, so deep data (a few hundred
    levels inside pytest) escaped ``SessionEvent.from_json`` as ``RecursionError``."""
    obj = {"type": "x", "seq": 0, "time": 0, "data": _nested(depth)}
    with pytest.raises(ValueError, match="nested too deeply"):
        SessionEvent.from_json(obj)


@pytest.mark.parametrize("field", ["seq", "time"])
def test_event_integers_beyond_64_bits_are_refused(field: str) -> None:
    """Regression: a stored time (or seq) beyond SQLite's 64-bit INTEGER was accepted by the
    model and then broke every search with a raw ``OverflowError`` at indexing."""
    obj: dict[str, Any] = {"type": "x", "seq": 0, "time": 0, "data": None, field: 2**63}
    with pytest.raises(ValueError, match=field):
        SessionEvent.from_json(obj)
    assert SessionEvent.from_json({**obj, field: 2**63 - 1}).to_json()[field] == 2**63 - 1


@pytest.mark.parametrize("field", ["created_at", "delegation_depth"])
def test_header_integers_beyond_64_bits_are_refused(field: str) -> None:
    """Regression: a header ``created_at`` beyond 64 bits was accepted, then overflowed SQLite."""
    values: dict[str, Any] = {"id": "h", "created_at": 0, field: 2**63}
    with pytest.raises(ValueError, match=field):
        SessionHeader(**values)


def test_a_session_file_with_a_huge_time_gives_a_typed_error_not_an_overflow(
    tmp_path: Path,
) -> None:
    """Regression: the same bug seen from a file written by another program."""
    store = JsonlPersistence(tmp_path / "store")
    with store.create(header("fine")) as handle:
        handle.append(events("fine", 0, 6))
    with store.create(header("huge")) as handle:
        handle.append(events("huge", 0, 1))
    path = Path(store.path_of("huge"))
    path.write_bytes(path.read_bytes().replace(b'"time":1700000000000', b'"time":' + b"9" * 25))
    with SessionQuery(persistence=store, search=SqliteSearch(":memory:")) as query:
        with raises_code(ErrorCode.CORRUPT_SESSION):
            query.search_sessions("alpha")
        assert query.read_event("fine", 1).target.seq == 1


@pytest.mark.parametrize(
    ("session_filters", "event_filters", "expected"),
    [
        ((), (TimeBetween(0, 2**70),), 1),
        ((), (TimeBetween(2**70, None),), 0),
        ((), (TimeBetween(None, -(2**2000)),), 0),
        ((CreatedBetween(-(2**70), None),), (), 1),
        ((CreatedBetween(None, 10**400),), (), 1),
        ((), (SeqBetween(2**64, None),), 0),
        ((), (SeqBetween(None, 2**64),), 1),
    ],
)
def test_search_range_bounds_beyond_64_bits_filter_instead_of_overflowing(
    tmp_path: Path,
    session_filters: tuple[CreatedBetween, ...],
    event_filters: tuple[Any, ...],
    expected: int,
) -> None:
    """Regression: an integer range bound outside SQLite's 64-bit range raised a raw
    ``OverflowError`` from the index (a ``TOOL_FAILED`` through the tools)."""
    store = JsonlPersistence(tmp_path / "store")
    with store.create(header("s")) as handle:
        handle.append(events("s", 0, 6))
    with SessionQuery(persistence=store, search=SqliteSearch(":memory:")) as query:
        page = query.search_sessions(
            "alpha", session_filters=session_filters, event_filters=event_filters
        )
        assert len(page.items) == expected
        every = len(query.search_events("s", "alpha").items)
        hits = query.search_events("s", "alpha", filters=list(event_filters))
        assert len(hits.items) == (every if expected else 0)


def test_huge_seq_arguments_through_the_tools_are_refused_by_name_not_failed(
    tmp_path: Path,
) -> None:
    store = JsonlPersistence(tmp_path / "store")
    with store.create(header("s", cwd="/w")) as handle:
        handle.append(events("s", 0, 6))
    with SessionQuery(persistence=store, search=SqliteSearch(":memory:")) as query:
        tools = SessionQueryTools(query)
        caller = ToolCaller(cwd="/w")
        for arguments in (
            {"query": "alpha", "event_seq_from": 2**64},
            {"query": "alpha", "event_seq_to": 2**80},
        ):
            result = tools.call("session_search", arguments, caller)
            assert result.code != "SESSION_QUERY_TOOL_FAILED", result.text
        result = tools.call(
            "session_event_search", {"session_id": "s", "query": "alpha", "seq_to": 2**70}, caller
        )
        assert result.code == ErrorCode.INVALID_FILTER.value  # the tools name the argument
        assert "seq_to" in result.text


# --- the JSONL reader -------------------------------------------------------------------------


def _read_everything(store: JsonlPersistence, session_id: str) -> list[SessionEvent] | None:
    """Every read path of the store; ``None`` when it refused with a typed error."""
    try:
        store.list()
        store.stat(session_id)
        with store.open_read(session_id) as handle:
            return handle.read()
    except (PersistenceError, ValueError):
        return None
    finally:
        assert all(problem.message for problem in store.verify())


_valid_header_line = (
    json.dumps(
        {
            "type": "session",
            "version": 3,
            "id": "f",
            "createdAt": 0,
            "isSeeded": False,
            "delegationDepth": 0,
        }
    )
    + "\n"
).encode()


@FUZZ
@given(
    body=st.binary(max_size=300)
    | st.lists(
        st.one_of(
            st.builds(lambda e: json.dumps(e.to_json()), valid_events()),
            st.builds(json.dumps, json_values()),
            st.text(max_size=40),
        ),
        max_size=5,
    ).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
    with_header=st.booleans(),
)
def test_any_bytes_in_a_session_file_read_with_typed_errors_and_are_never_modified(
    tmp_path: Path, body: bytes, with_header: bool
) -> None:
    store = JsonlPersistence(tempfile.mkdtemp(dir=tmp_path))  # fresh per example
    path = Path(store.path_of("f"))
    data = (_valid_header_line if with_header else b"") + body
    path.write_bytes(data)
    _read_everything(store, "f")
    with SessionQuery(persistence=store) as query:
        try:
            query.read_session("f")
            query.list_sessions()
        except SessionQueryError as exc:
            assert exc.code in {
                ErrorCode.CORRUPT_SESSION,
                ErrorCode.PERSISTENCE_FAILED,
                ErrorCode.SESSION_NOT_FOUND,
                ErrorCode.INVALID_SURFACE,
            }
    assert path.read_bytes() == data
    path.unlink()
    record("fuzz", session_files=1)


@FUZZ
@given(data=st.data())
def test_a_damaged_valid_log_reads_as_a_prefix_or_is_reported_corrupt(
    tmp_path: Path, data: st.DataObject
) -> None:
    store = JsonlPersistence(tempfile.mkdtemp(dir=tmp_path))  # fresh per example
    original = events("d", 0, 18)
    with store.create(header("d")) as handle:
        handle.append(original)
    path = Path(store.path_of("d"))
    raw = bytearray(path.read_bytes())
    first_line = raw.index(b"\n") + 1
    damage = data.draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
    at = data.draw(st.integers(first_line, len(raw) - 1))
    if damage == "flip":
        raw[at] ^= data.draw(st.integers(1, 255))
    elif damage == "cut":
        del raw[at:]
    elif damage == "insert":
        raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    else:
        del raw[at : at + data.draw(st.integers(1, 20))]
    path.write_bytes(bytes(raw))
    try:
        with store.open_read("d") as handle:
            stored = handle.read()
    except PersistenceCorrupt as exc:
        assert " line " in str(exc)
        return
    finally:
        assert path.read_bytes() == bytes(raw)
    if damage in ("cut", "delete") or stored == original[: len(stored)]:
        # A cut leaves a prefix; a deletion may join two lines into one torn tail.
        pass
    # A flip inside a string value can yield a different but valid event: only the shape is
    # promised then (contiguous seqs from 0).
    assert [event.seq for event in stored] == list(range(len(stored)))


# --- the tools ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_tools(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("fuzz-tools")
    store = JsonlPersistence(root / "store")
    for number, cwd in enumerate(["/w", "/w/", "/v", None]):
        with store.create(header(f"s{number}", cwd=cwd or "/w")) as handle:
            handle.append(events(f"s{number}", 0, 12))
    query = SessionQuery(persistence=store, search=SqliteSearch(":memory:"))
    yield SessionQueryTools(query, max_search_results=5), str(root)
    query.close()


tool_arguments = (
    st.dictionaries(
        st.sampled_from(
            [
                "query",
                "session_id",
                "seq",
                "before",
                "after",
                "seq_from",
                "seq_to",
                "event_seq_from",
                "event_seq_to",
                "session_ids",
                "parent_session_ids",
                "availability",
                "surfaces",
                "event_types",
                "time_from",
                "created_at_to",
                "include_root_sessions",
            ]
        )
        | st.text(max_size=6),
        hostile_values,
        max_size=5,
    )
    | st.text(max_size=40)
    | st.none()
    | st.builds(json.dumps, json_values())
)
callers = st.builds(
    ToolCaller,
    session_id=st.none() | st.sampled_from(["s0", "s1", "s2", "nope", "../s0"]),
    cwd=st.none() | st.sampled_from(["/w", "/w/", "/v", "/x"]),
    current_step_seq=st.none() | st.integers(0, 2**70),
)


@FUZZ
@given(
    name=st.sampled_from(TOOL_NAMES) | st.text(max_size=12),
    arguments=tool_arguments,
    caller=callers,
)
def test_tool_calls_with_any_arguments_always_return_a_tool_result(
    fuzz_tools: Any, name: str, arguments: Any, caller: ToolCaller
) -> None:
    tools, root = fuzz_tools
    result = tools.call(name, arguments, caller)
    assert isinstance(result, ToolResult)
    assert result.code != "SESSION_QUERY_TOOL_FAILED", result.text
    if result.is_error:
        assert result.code is not None and result.text.startswith(result.code)
    assert root not in result.text
    record("fuzz", tool_calls=1)


def test_nan_and_infinity_never_enter_a_stored_event() -> None:
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            SessionEvent.from_json({"type": "x", "seq": 0, "time": 0, "data": [value]})
