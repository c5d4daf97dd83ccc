"""One event of a session log and its wire form.

An event is immutable: ``data`` is deep-frozen (see :mod:`sessionquery.model.jsonvalue`),
``source_event_seqs`` is a tuple. The wire form is one JSON object per JSONL line::

    {"type", "seq", "time", "data", "surfaceOp"?, "sourceEventSeqs"?, "ignorable"?}

with a replace written ``{"op": "replace", "startSeq": s, "endSeq": e}``. Unknown envelope
keys are rejected, so a newer writer's fields are never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sessionquery.model.jsonvalue import JsonValue, freeze_json, loads_json

__all__ = ["Replace", "SessionEvent", "SurfaceOp"]


_MAX_STORED_INT = 2**63 - 1
"""Seqs and times are stored as SQLite INTEGERs by the search index: 64-bit signed."""


def _check_seq(value: object, field: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{field} must be a non-negative integer, not {value!r}")
    if value > _MAX_STORED_INT:
        raise ValueError(f"{field} must be at most 2**63 - 1, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Replace:
    """Replace the surface run from ``start_seq`` to ``end_seq`` (both inclusive).

    Both endpoints are seqs of events currently on the surface, not positions.
    """

    start_seq: int
    end_seq: int

    def __post_init__(self) -> None:
        _check_seq(self.start_seq, "start_seq")
        _check_seq(self.end_seq, "end_seq")

    def to_json(self) -> dict[str, Any]:
        """The wire form ``{"op": "replace", "startSeq": s, "endSeq": e}``."""
        return {"op": "replace", "startSeq": self.start_seq, "endSeq": self.end_seq}


SurfaceOp = Literal["append"] | Replace

_ENVELOPE_KEYS = frozenset(
    {"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"}
)


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One immutable entry of a session's event log.

    Raises:
        ValueError: on construction, naming the first invalid field.
    """

    type: str
    seq: int
    time: int
    data: JsonValue = None
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not self.type:
            raise ValueError(f"event type must be a non-empty string, not {self.type!r}")
        freeze_json(self.type, "type")  # rejects lone surrogates: the type is written as UTF-8
        _check_seq(self.seq, "seq")
        _check_seq(self.time, "time")
        object.__setattr__(self, "data", freeze_json(self.data, "data"))
        op = self.surface_op
        if op is not None and op != "append" and not isinstance(op, Replace):
            raise ValueError(f"surface_op must be 'append', a Replace or None, not {op!r}")
        sources = self.source_event_seqs
        if sources is not None:
            if isinstance(sources, str | bytes) or not hasattr(sources, "__iter__"):
                raise ValueError(f"source_event_seqs must be a sequence of seqs, not {sources!r}")
            frozen = tuple(sources)
            for item in frozen:
                _check_seq(item, "source_event_seqs item")
            object.__setattr__(self, "source_event_seqs", frozen)
        if type(self.ignorable) is not bool:
            raise ValueError(f"ignorable must be a bool, not {self.ignorable!r}")

    def to_json(self) -> dict[str, Any]:
        """The wire form of this event (optional keys only when set)."""
        record: dict[str, Any] = {
            "type": self.type,
            "seq": self.seq,
            "time": self.time,
            "data": self.data,
        }
        op = self.surface_op
        if op is not None:
            record["surfaceOp"] = op if op == "append" else op.to_json()
        if self.source_event_seqs is not None:
            record["sourceEventSeqs"] = list(self.source_event_seqs)
        if self.ignorable:
            record["ignorable"] = True
        return record

    @classmethod
    def from_json(cls, obj: object) -> SessionEvent:
        """Parse one wire-form event.

        Raises:
            ValueError: for a non-object, unknown or missing keys, or invalid values.
        """
        if not isinstance(obj, dict):
            raise ValueError(f"an event must be a JSON object, not {type(obj).__name__}")
        keys: set[Any] = set(obj)  # pyright: ignore[reportUnknownArgumentType]
        unknown = keys - _ENVELOPE_KEYS
        if unknown:
            raise ValueError(f"unknown event keys: {', '.join(sorted(map(str, unknown)))}")
        for key in ("type", "seq", "time", "data"):
            if key not in keys:
                raise ValueError(f"event is missing {key!r}")
        return cls(
            type=obj["type"],
            seq=obj["seq"],
            time=obj["time"],
            data=obj["data"],
            surface_op=_parse_surface_op(obj.get("surfaceOp")),
            source_event_seqs=_parse_sources(obj.get("sourceEventSeqs")),
            ignorable=obj.get("ignorable", False),
        )

    @classmethod
    def from_json_line(cls, line: str) -> SessionEvent:
        """Parse one JSONL line holding a wire-form event (the fast path for readers).

        Raises:
            ValueError: ``json.JSONDecodeError`` for malformed JSON, else as :meth:`from_json`.
        """
        return cls.from_json(loads_json(line))


def _parse_surface_op(value: object) -> SurfaceOp | None:
    if value is None or value == "append":
        return value
    if isinstance(value, dict):
        keys: set[Any] = set(value)  # pyright: ignore[reportUnknownArgumentType]
        if keys == {"op", "startSeq", "endSeq"} and value["op"] == "replace":
            return Replace(value["startSeq"], value["endSeq"])
    raise ValueError(
        f"surfaceOp must be 'append' or {{'op': 'replace', 'startSeq', 'endSeq'}}, not {value!r}"
    )


def _parse_sources(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"sourceEventSeqs must be a list of seqs, not {value!r}")
    return tuple(value)  # pyright: ignore[reportUnknownArgumentType]
