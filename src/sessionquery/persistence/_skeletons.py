"""The skeletons of a JSONL log's event lines, validated as strictly as an exact read.

Opening a 50,000-event session at one event needs the whole log's envelope (for the surface
fold, the count, the call names) but the data of only the events shown. Parsing every line
into frozen events costs about a second of CPU for 16 MB; this pass costs a tenth of that:
each line is decoded by msgspec into its envelope, the data kept as raw bytes (msgspec checks
its JSON syntax while it skips it), and only the calls of ``tool/call`` and assistant events
are decoded from it — in the same decode when the line starts as this store writes it
(``{"type":"tool/call",``), else from the raw data.

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

The pass builds no reference cycle, so the cycle collector is paused while it runs (and left
as it was found, also when a line is refused).
"""

from __future__ import annotations

import bisect
import gc
import threading
from typing import Annotated, Any, Final, Generic, Literal, TypeVar

import msgspec

from sessionquery.model import Replace, SessionEvent
from sessionquery.model.skeleton import EventSkeleton, call_entry
from sessionquery.persistence._format import parse_event_line, parse_events

__all__ = ["skeleton_lines"]

_MAX: Final = 2**63 - 1
_BRACKETS: Final = 400
_LONG_DIGITS: Final = 200


_Whole = Annotated[int, msgspec.Meta(ge=0, le=_MAX)]
"""An integer the strict parse accepts as a seq, time or source: in ``[0, 2**63 - 1]``."""

D = TypeVar("D")


class _ReplaceWire(msgspec.Struct, forbid_unknown_fields=True):
    op: Literal["replace"]
    startSeq: _Whole
    endSeq: _Whole


class _Line(msgspec.Struct, Generic[D], forbid_unknown_fields=True):
    """One line's envelope with its ``data`` decoded as ``D``: kept raw in general, decoded
    with its calls in the same pass for the line of a calling event (``tool/call``,
    ``assistant/message``)."""

    type: Annotated[str, msgspec.Meta(min_length=1)]
    seq: int
    time: _Whole
    data: D
    surfaceOp: Literal["append"] | _ReplaceWire | None = None
    sourceEventSeqs: tuple[_Whole, ...] | None = None
    ignorable: bool = False


_Wire = _Line[msgspec.Raw]


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
# Lines as this store writes them start with their type: a calling event's line is decoded
# with its calls at once (any other start, or a surprise inside, takes the general path).
_CALL_LINE = b'{"type":"tool/call",'
_ASSISTANT_LINE = b'{"type":"assistant/message",'
_CALL_WIRE = msgspec.json.Decoder(_Line[_CallData])
_ASSISTANT_WIRE = msgspec.json.Decoder(_Line[_AssistantData])

# Digits become "0"; "e", "E" and the signs become "e" (so "1E+308" reads "0ee000"): a
# number the strict parse may refuse then shows as "e000" or as a long run of "0".
_NUMBERS = bytes(
    ord("0") if byte in b"0123456789" else ord("e") if byte in b"eE+-" else byte
    for byte in range(256)
)
_SUSPECT_NUMBERS = (b"e000", b"0" * _LONG_DIGITS)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[{\n")
_SCAN_CHUNK: Final = 1 << 18


def _suspect_lines(data: bytes, starts: list[int], chunk: int = _SCAN_CHUNK) -> set[int]:
    """Indexes of the lines that may hold a number or a nesting the strict parse refuses.

    ``data`` is scanned ``chunk`` bytes at a time (the translated copies stay small and in
    the processor's cache); a number is found in the chunk it starts in (each chunk is read
    on as far as the longest pattern needs), a line's brackets are counted across chunks.
    """
    suspects: set[int] = set()
    size, lines = len(data), len(starts)
    at_line = 0  # the line the current chunk starts in
    carried = 0  # brackets of that line before the chunk
    for begin in range(0, size, chunk):
        end = min(begin + chunk, size)
        marked = data[begin : end + _LONG_DIGITS].translate(_NUMBERS)
        for pattern in _SUSPECT_NUMBERS:
            at = marked.find(pattern)
            while at != -1 and begin + at < end:
                line = bisect.bisect_right(starts, begin + at) - 1
                suspects.add(line)
                following = starts[line + 1] if line + 1 < lines else size
                at = marked.find(pattern, following - begin)
        runs = data[begin:end].translate(None, delete=_NOT_BRACKETS).split(b"\n")
        if len(runs) == 1:
            carried += len(runs[0])
            continue
        if carried + len(runs[0]) > _BRACKETS:
            suspects.add(at_line)
        if max(map(len, runs)) > _BRACKETS:
            suspects.update(
                at_line + index for index, run in enumerate(runs) if index and len(run) > _BRACKETS
            )
        at_line += len(runs) - 1
        carried = len(runs[-1])
    return suspects


def _calls(wire: _Wire) -> tuple[tuple[str, str], ...] | None:
    """The calls an event announces, or ``None`` when the strict parse must decide."""
    try:
        if wire.type == "tool/call":
            return _call_of(_CALL.decode(wire.data))
        if wire.type == "assistant/message":
            return _blocks_of(_ASSISTANT.decode(wire.data))
    except (msgspec.DecodeError, RecursionError):
        return None  # a shape the rule reads otherwise (data or a block not an object...)
    return ()


def _call_of(call: _CallData) -> tuple[tuple[str, str], ...]:
    entry = call_entry(call.callId, call.name)
    return () if entry is None else (entry,)


def _blocks_of(data: _AssistantData) -> tuple[tuple[str, str], ...]:
    message = data.message
    if message is None or message.content is None:
        return ()
    calls = []
    for block in message.content:
        if block.type == "tool-call":
            entry = call_entry(block.id, block.name)
            if entry is not None:
                calls.append(entry)
    return tuple(calls)


_new_tuple = tuple.__new__


class _CyclesPaused:
    """The cycle collector paused while a block runs (threads that overlap share one pause;
    the last to leave restores what the first found).

    The pass builds a hundred thousand tuples and no reference cycle: left running, the
    collector's full passes over the whole heap, set off by so many new objects, cost a
    quarter of the pass and free nothing (reference counting frees everything it drops).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if not self._inside:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._inside += 1

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self._inside -= 1
            if not self._inside and self._was_enabled:
                gc.enable()


_cycles_paused = _CyclesPaused()


def _skeleton(
    wire: _Line[Any], seq: int, calls: tuple[tuple[str, str], ...]
) -> EventSkeleton | None:
    """The skeleton of a decoded line (its ranges checked by the decoder), or ``None`` when
    it is not event ``seq``."""
    if wire.seq != seq:
        return None
    op = wire.surfaceOp
    sources = wire.sourceEventSeqs
    # The named tuple built directly (its generated ``__new__`` is a Python call per event).
    return _new_tuple(
        EventSkeleton,
        (
            wire.type,
            seq,
            wire.time,
            op if op is None or op == "append" else Replace(op.startSeq, op.endSeq),
            sources,
            wire.ignorable,
            calls,
        ),
    )


def _general(line: bytes, seq: int) -> EventSkeleton | None:
    """The skeleton of a line decoded by the general decoder (its data kept raw, the calls
    decoded from it), or ``None`` when the strict parse must decide.

    Raises:
        msgspec.DecodeError: (or ``RecursionError``) the strict parse must decide.
    """
    wire = _WIRE.decode(line)
    if wire.type not in _CALLING:
        return _skeleton(wire, seq, ())
    calls = _calls(wire)
    return None if calls is None else _skeleton(wire, seq, calls)


def skeleton_lines(data: bytes, first_seq: int, path: str) -> tuple[list[EventSkeleton], list[int]]:
    """The skeletons of complete event lines (``data`` ends with ``\\n``) whose first seq is
    ``first_seq``, and the offset in ``data`` where each line ends (after its newline).

    Raises:
        PersistenceCorrupt: exactly as :func:`~._format.parse_events` over the same bytes.
    """
    try:
        if not data.isascii():  # ASCII is UTF-8 (and checking it builds no string)
            data.decode("utf-8")
    except UnicodeDecodeError:
        parse_events(data, first_seq, path)  # raises its own error for that byte
        raise AssertionError("unreachable: the strict parse refuses invalid UTF-8") from None
    ends = _line_ends(data)
    starts = [0, *ends[:-1]]
    suspects = _suspect_lines(data, starts) if ends else set()
    with _cycles_paused:
        skeletons = _skeletons_of(data, ends, suspects, first_seq, path)
    return skeletons, ends


def _line_ends(data: bytes) -> list[int]:
    """The offset after each newline of ``data``, found without copying any line out."""
    ends: list[int] = []
    append, find = ends.append, data.find
    at = find(b"\n")
    while at >= 0:
        at += 1
        append(at)
        at = find(b"\n", at)
    return ends


def _skeletons_of(
    data: bytes, ends: list[int], suspects: set[int], first_seq: int, path: str
) -> list[EventSkeleton]:
    """The skeleton of each line ``data[start:end - 1]`` (the loop of
    :func:`skeleton_lines`). Each line is copied out when its turn comes and dropped after
    it, so a huge log's lines are never all copied at once beside the block (splitting 16 MB
    first doubled the pass's memory and cost more than finding the newlines).

    Raises:
        PersistenceCorrupt: for the first line the strict parse refuses.
    """
    skeletons: list[EventSkeleton] = []
    append = skeletons.append
    decode, call_decode, assistant_decode = _WIRE.decode, _CALL_WIRE.decode, _ASSISTANT_WIRE.decode
    # One pass, inlined (this runs once per event of a huge log): a line as this store
    # writes it is decoded once, calls included; anything unusual takes the general path,
    # and what that is not sure of goes to the strict parse.
    for index, (start, end) in enumerate(zip([0, *ends], ends)):  # noqa: B905 (one more start)
        line = data[start : end - 1]
        seq = first_seq + index
        wire: _Line[Any] | None = None
        calls: tuple[tuple[str, str], ...] | None = ()
        if index not in suspects:
            try:
                if line.startswith(_CALL_LINE):
                    wire = call_decode(line)
                    calls = _call_of(wire.data) if wire.type == "tool/call" else None
                elif line.startswith(_ASSISTANT_LINE):
                    wire = assistant_decode(line)
                    calls = _blocks_of(wire.data) if wire.type == "assistant/message" else None
                else:
                    wire = decode(line)
                    calls = None if wire.type in _CALLING else ()
            except (msgspec.DecodeError, RecursionError):
                wire = None
        if wire is not None and calls is not None and wire.seq == seq:
            op = wire.surfaceOp
            sources = wire.sourceEventSeqs
            skeleton = _new_tuple(
                EventSkeleton,
                (
                    wire.type,
                    seq,
                    wire.time,
                    op if op is None or op == "append" else Replace(op.startSeq, op.endSeq),
                    sources,
                    wire.ignorable,
                    calls,
                ),
            )
        else:
            skeleton = None
            if index not in suspects:
                try:
                    skeleton = _general(line, seq)
                except (msgspec.DecodeError, RecursionError):
                    pass  # the strict parse decides, and words the error
        append(skeleton or EventSkeleton.of(_strict(line, seq, path)))
    return skeletons


def _strict(line: bytes, seq: int, path: str) -> SessionEvent:
    return parse_event_line(line.decode("utf-8"), seq, path)
