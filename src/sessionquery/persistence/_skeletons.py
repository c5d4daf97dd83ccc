"""The skeletons of a JSONL log's event lines, validated as strictly as an exact read.

Opening a 50,000-event session at one event needs the whole log's envelope (for the surface
fold, the count, the call names) but the data of only the events shown. Parsing every line
into frozen events costs about a second of CPU for 16 MB; this pass costs a tenth of that:
each line is decoded by msgspec into its envelope, the data kept as raw bytes (msgspec checks
its JSON syntax while it skips it), and only the calls of ``tool/call`` and assistant events
are decoded from it.

**Same verdict as the strict parse** (:func:`~._format.parse_event_line`, what every exact read
uses): a line is accepted here only when the strict parse would accept it with this very
envelope; any line this pass is not sure of is handed to the strict parse, which accepts it or
raises its own error, worded as always. Lines are judged in order, so the first bad line is
the one reported, as by :func:`~._format.parse_events`. What the fast decode does not check
itself is checked over the whole block first:

* invalid UTF-8 anywhere is found by decoding the block once, and then reported by the strict
  parse of the whole block (which reports it before any other damage, as it always has);
* numbers the strict parse refuses (a float that overflows to infinity, an integer too long
  to write) need a three-digit exponent or a run of 200 digits: lines with either are parsed
  strictly (a cheap scan over the block; a hash or hex id may send a good line there too);
* nesting too deep for the strict parse needs hundreds of brackets: a line with more than
  :data:`_BRACKETS` is parsed strictly;
* seqs, times, sources and replace endpoints must be integers in ``[0, 2**63 - 1]``, the type
  a non-empty string, the envelope only the known keys (msgspec refuses unknown ones).
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Final, Literal

import msgspec

from sessionquery.model import Replace, SessionEvent
from sessionquery.model.skeleton import EventSkeleton, call_entry
from sessionquery.persistence._format import parse_event_line, parse_events

__all__ = ["skeleton_lines"]

_MAX: Final = 2**63 - 1
_BRACKETS: Final = 400
_LONG_DIGITS: Final = 200


class _ReplaceWire(msgspec.Struct, forbid_unknown_fields=True):
    op: Literal["replace"]
    startSeq: int
    endSeq: int


class _Wire(msgspec.Struct, forbid_unknown_fields=True):
    type: str
    seq: int
    time: int
    data: msgspec.Raw
    surfaceOp: Literal["append"] | _ReplaceWire | None = None
    sourceEventSeqs: list[int] | None = None
    ignorable: bool = False


class _CallData(msgspec.Struct):
    callId: Any = None
    name: Any = None


class _Block(msgspec.Struct):
    type: Any = None
    id: Any = None
    name: Any = None


class _Message(msgspec.Struct):
    content: list[_Block] | None = None


class _AssistantData(msgspec.Struct):
    message: _Message | None = None


_WIRE = msgspec.json.Decoder(_Wire)
_CALLING = frozenset({"tool/call", "assistant/message"})
_CALL = msgspec.json.Decoder(_CallData)
_ASSISTANT = msgspec.json.Decoder(_AssistantData)

# Digits become "0"; "e", "E" and the signs become "e" (so "1E+308" reads "0ee000"): a
# number the strict parse may refuse then shows as "e000" or as a long run of "0".
_NUMBERS = bytes(
    ord("0") if byte in b"0123456789" else ord("e") if byte in b"eE+-" else byte
    for byte in range(256)
)
_SUSPECT_NUMBERS = (b"e000", b"0" * _LONG_DIGITS)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[{\n")


def _suspect_lines(data: bytes, starts: list[int]) -> set[int]:
    """Indexes of the lines that may hold a number or a nesting the strict parse refuses."""
    suspects: set[int] = set()
    marked = data.translate(_NUMBERS)
    for pattern in _SUSPECT_NUMBERS:
        at = marked.find(pattern)
        while at != -1:
            line = bisect.bisect_right(starts, at) - 1
            suspects.add(line)
            at = marked.find(pattern, starts[line + 1] if line + 1 < len(starts) else len(data))
    brackets = data.translate(None, delete=_NOT_BRACKETS)
    if len(brackets) - len(starts) > _BRACKETS:
        for index, run in enumerate(brackets.split(b"\n")):
            if len(run) > _BRACKETS:
                suspects.add(index)
    return suspects


def _in_range(value: int) -> bool:
    return 0 <= value <= _MAX


def _op(wire: _Wire) -> Literal["append"] | Replace | bool | None:
    """The surface operation, or ``False`` when the strict parse must decide."""
    op = wire.surfaceOp
    if op is None or op == "append":
        return op
    if isinstance(op, _ReplaceWire) and _in_range(op.startSeq) and _in_range(op.endSeq):
        return Replace(op.startSeq, op.endSeq)
    return False


def _calls(wire: _Wire) -> tuple[tuple[str, str], ...] | None:
    """The calls an event announces, or ``None`` when the strict parse must decide."""
    try:
        if wire.type == "tool/call":
            call = _CALL.decode(wire.data)
            entry = call_entry(call.callId, call.name)
            return () if entry is None else (entry,)
        if wire.type == "assistant/message":
            message = _ASSISTANT.decode(wire.data).message
            if message is None or message.content is None:
                return ()
            calls = []
            for block in message.content:
                if block.type == "tool-call":
                    entry = call_entry(block.id, block.name)
                    if entry is not None:
                        calls.append(entry)
            return tuple(calls)
    except (msgspec.DecodeError, RecursionError):
        return None  # a shape the rule reads otherwise (data or a block not an object...)
    return ()


def _fast(wire: _Wire, seq: int) -> EventSkeleton | None:
    """The skeleton of a decoded line the strict parse certainly accepts as event ``seq``,
    else ``None``."""
    sources = wire.sourceEventSeqs
    if (
        wire.seq != seq
        or not wire.type
        or not 0 <= wire.time <= _MAX
        or (sources is not None and not all(map(_in_range, sources)))
    ):
        return None
    op: Literal["append"] | Replace | bool | None = wire.surfaceOp  # type: ignore[assignment]
    if op is not None and op != "append":
        op = _op(wire)
        if op is False:
            return None
    calls: tuple[tuple[str, str], ...] | None = ()
    if wire.type in _CALLING:
        calls = _calls(wire)
        if calls is None:
            return None
    return EventSkeleton(
        wire.type,
        seq,
        wire.time,
        op,  # type: ignore[arg-type]
        None if sources is None else tuple(sources),
        wire.ignorable,
        calls,  # type: ignore[arg-type]
    )


def skeleton_lines(data: bytes, first_seq: int, path: str) -> tuple[list[EventSkeleton], list[int]]:
    """The skeletons of complete event lines (``data`` ends with ``\\n``) whose first seq is
    ``first_seq``, and the offset in ``data`` where each line ends (after its newline).

    Raises:
        PersistenceCorrupt: exactly as :func:`~._format.parse_events` over the same bytes.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        parse_events(data, first_seq, path)  # raises its own error for that byte
        raise AssertionError("unreachable: the strict parse refuses invalid UTF-8") from None
    lines = data.split(b"\n")
    lines.pop()
    ends = list(itertools.accumulate(len(line) + 1 for line in lines))
    starts = [0, *ends[:-1]]
    suspects = _suspect_lines(data, starts) if lines else set()
    skeletons: list[EventSkeleton] = []
    append = skeletons.append
    decode = _WIRE.decode
    for index, line in enumerate(lines):
        seq = first_seq + index
        skeleton = None
        if index not in suspects:
            try:
                skeleton = _fast(decode(line), seq)
            except (msgspec.DecodeError, RecursionError):
                pass  # the strict parse decides, and words the error
        append(skeleton or EventSkeleton.of(_strict(line, seq, path)))
    return skeletons, ends


def _strict(line: bytes, seq: int, path: str) -> SessionEvent:
    return parse_event_line(line.decode("utf-8"), seq, path)
