"""The fast skeleton pass over JSONL event lines gives the strict parse's verdict, line by line."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.errors import PersistenceCorrupt
from sessionquery.model import SessionEvent
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.persistence import _format, _skeletons
from sessionquery.persistence._skeletons import skeleton_lines
from strategies import json_values, valid_events, valid_logs


def _lines(events: list[SessionEvent]) -> bytes:
    return b"".join(_format.dumps_line(event.to_json()) for event in events)


def _same_verdict(data: bytes, first_seq: int = 0) -> None:
    """``skeleton_lines`` accepts exactly what ``parse_events`` accepts, with equal skeletons,
    and refuses with the same error (message, line) otherwise."""
    try:
        events = _format.parse_events(data, first_seq, "/s.jsonl")
    except PersistenceCorrupt as strict:
        with pytest.raises(PersistenceCorrupt) as caught:
            skeleton_lines(data, first_seq, "/s.jsonl")
        assert (str(caught.value), caught.value.line) == (str(strict), strict.line)
        return
    skeletons, ends = skeleton_lines(data, first_seq, "/s.jsonl")
    assert skeletons == [EventSkeleton.of(event) for event in events]
    assert ends == [index + 1 for index, byte in enumerate(data) if byte == 0x0A]


@given(valid_logs(max_turns=4))
def test_the_skeletons_of_a_valid_log_are_its_events_skeletons(events: list[SessionEvent]) -> None:
    _same_verdict(_lines(events))


@given(st.lists(valid_events(), max_size=4))
def test_any_valid_events_get_their_skeletons_or_the_same_error(
    events: list[SessionEvent],
) -> None:
    renumbered = [
        SessionEvent(e.type, seq, e.time, e.data, None, None, e.ignorable)
        for seq, e in enumerate(events)
    ]
    _same_verdict(_lines(renumbered))


@given(json_values())
def test_any_data_value_gets_the_strict_verdict(value: Any) -> None:
    line = _format.dumps_line({"type": "tool/call", "seq": 0, "time": 1, "data": value})
    _same_verdict(line)


_GOOD = b'{"type":"note","seq":0,"time":1,"data":{}}\n'


@pytest.mark.parametrize(
    "line",
    [
        b"{not json",
        b'{"type":"note","seq":1,"time":1,"data":{}}',  # wrong seq
        b'{"type":"note","seq":1.0,"time":1,"data":{}}',
        b'{"type":"note","seq":true,"time":1,"data":{}}',
        b'{"type":"","seq":1,"time":1,"data":{}}',
        b'{"type":"note","seq":1,"time":-1,"data":{}}',
        b'{"type":"note","seq":1,"time":99999999999999999999,"data":{}}',
        b'{"type":"note","seq":1,"time":1}',  # no data
        b'{"type":"note","seq":1,"time":1,"data":{},"extra":1}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":NaN}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":1e999}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":1E+400}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":1e-400}}',  # fine: 0.0
        b'{"type":"note","seq":1,"time":1,"data":{"x":' + b"9" * 5000 + b"}}",
        b'{"type":"note","seq":1,"time":1,"data":{"x":' + b"9" * 250 + b".5e70}}",
        b'{"type":"note","seq":1,"time":1,"data":{"x":"\\ud800"}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":"\\udc00\\ud800"}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":"\\q"}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":"a\x01"}}',
        b'{"type":"note","seq":1,"time":1,"data":{"x":"\xff"}}',  # invalid UTF-8
        b'{"type":"note","seq":1,"time":1,"data":' + b"[" * 990 + b"]" * 990 + b"}",
        b'{"type":"note","seq":1,"time":1,"data":' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"type":"note","seq":1,"time":1,"data":{},"surfaceOp":"prepend"}',
        b'{"type":"note","seq":1,"time":1,"data":{},"surfaceOp":{"op":"replace","startSeq":0}}',
        b'{"type":"note","seq":1,"time":1,"data":{},"surfaceOp":'
        b'{"op":"replace","startSeq":0,"endSeq":-1}}',
        b'{"type":"note","seq":1,"time":1,"data":{},"sourceEventSeqs":[-1]}',
        b'{"type":"note","seq":1,"time":1,"data":{},"sourceEventSeqs":"0"}',
        b'{"type":"note","seq":1,"time":1,"data":{},"ignorable":1}',
        b'{"type":"note","seq":1,"time":1,"data":{},"ignorable":null}',
        b'{"type":"note","seq":1,"time":1,"data":{},"surfaceOp":null,"sourceEventSeqs":null}',
        b'{"type":"note","type":"tool/call","seq":1,"time":1,"data":{"callId":"c","name":"x"}}',
        b'{"type":"tool/call","seq":1,"time":1,"data":"not an object"}',
        b'{"type":"tool/call","seq":1,"time":1,"data":{"callId":7,"name":"x"}}',
        b'{"type":"assistant/message","seq":1,"time":1,"data":{"message":"text"}}',
        b'{"type":"assistant/message","seq":1,"time":1,"data":{"message":{"content":'
        b'["a",{"type":"tool-call","id":"c1","name":""},{"type":"tool-call","id":"c2"}]}}}',
        b' {"type":"note","seq":1,"time":1,"data":{}}\r',
        b'\xef\xbb\xbf{"type":"note","seq":1,"time":1,"data":{}}',
        b"",
    ],
)
def test_a_doubtful_line_gets_the_strict_verdict(line: bytes) -> None:
    _same_verdict(_GOOD + line + b"\n" + _GOOD.replace(b'"seq":0', b'"seq":2'))


def test_the_first_damaged_line_is_the_one_reported() -> None:
    bad_json = b"{not json\n"
    bad_number = b'{"type":"note","seq":2,"time":1,"data":1e999}\n'
    data = _GOOD + bad_json + bad_number
    with pytest.raises(PersistenceCorrupt) as caught:
        skeleton_lines(data, 0, "/s.jsonl")
    assert caught.value.line == 3


def test_invalid_utf8_anywhere_is_reported_first_as_the_strict_parse_does() -> None:
    data = _GOOD + b"{not json\n" + b'{"type":"note","seq":2,"time":1,"data":"\xff"}\n'
    _same_verdict(data)
    with pytest.raises(PersistenceCorrupt) as caught:
        skeleton_lines(data, 0, "/s.jsonl")
    assert caught.value.line == 4 and "UTF-8" in str(caught.value)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_pass_leaves_the_cycle_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        skeleton_lines(_GOOD, 0, "/s.jsonl")
        assert gc.isenabled() is enabled
        with pytest.raises(PersistenceCorrupt):
            skeleton_lines(_GOOD + b"{not json\n", 0, "/s.jsonl")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _doubtful_lines(data: bytes) -> set[int]:
    """What the scan for doubtful numbers and nesting must find, one line at a time."""
    found = set()
    for index, line in enumerate(data.split(b"\n")[:-1]):
        marked = line.translate(_skeletons._NUMBERS)
        brackets = line.count(b"[") + line.count(b"{")
        if any(p in marked for p in _skeletons._SUSPECT_NUMBERS) or brackets > 400:
            found.add(index)
    return found


_SCANNED = st.lists(
    st.lists(
        st.sampled_from([b"1", b"e", b"E", b"+", b"-", b"[", b"{", b"x", b"0" * 70, b"[" * 150]),
        max_size=40,
    ).map(b"".join),
    max_size=12,
)


@given(_SCANNED, st.integers(1, 300))
def test_the_scan_finds_the_doubtful_lines_whatever_its_chunks(
    lines: list[bytes], chunk: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    expected = _doubtful_lines(data)
    assert _skeletons._suspect_lines(data, starts[: len(lines)], chunk) == expected
    assert _skeletons._suspect_lines(data, starts[: len(lines)]) == expected
