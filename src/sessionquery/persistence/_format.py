"""The JSONL session file format: encoding and strict parsing of header and event lines.

A session file is UTF-8 text. Line 1 is the header record ``{"type":"session","version":3,
"id",...}``; then one event per line in its wire form (SPEC §3.2); every line ends with ``\\n``.
The event on physical line *k* has seq *k - 2*.

Invariants:

* **Damage is loud.** Any complete line that is not a valid event with the expected seq is
  :class:`~sessionquery.errors.PersistenceCorrupt` carrying the file (``path``) and the 1-based
  physical line (``line``; the header is line 1). Nothing is skipped silently.
* **Linear time.** Every function here reads and parses in time linear in the bytes it is
  given, however long a single line is.
"""

from __future__ import annotations

import json
import os
from typing import Any

from sessionquery.errors import PersistenceCorrupt
from sessionquery.model import FORMAT_VERSION, SessionEvent, SessionHeader
from sessionquery.model.jsonvalue import compact_json

__all__ = [
    "HEADER_TYPE",
    "corrupt",
    "dumps_line",
    "encode_header",
    "parse_event_line",
    "parse_events",
    "parse_header",
    "read_header_line",
    "split_header_line",
]

HEADER_TYPE = "session"
"""The ``type`` of every header record."""

_CHUNK = 1 << 16
_REQUIRED_HEADER_KEYS = ("type", "version", "id", "createdAt", "isSeeded", "delegationDepth")
_OPTIONAL_HEADER_KEYS = ("cwd", "parentSession", "origin", "agentPreset", "inheritedEventCount")
_HEADER_KEYS = frozenset(_REQUIRED_HEADER_KEYS + _OPTIONAL_HEADER_KEYS)


def dumps_line(record: dict[str, Any]) -> bytes:
    """One compact JSON line (keys in their given order), newline-terminated."""
    return compact_json(record).encode("utf-8") + b"\n"


def encode_header(header: SessionHeader, inherited_event_count: int) -> bytes:
    """The header line of a new session file."""
    record: dict[str, Any] = {"type": HEADER_TYPE, **header.to_json()}
    if header.is_seeded:
        record["inheritedEventCount"] = inherited_event_count
    return dumps_line(record)


def corrupt(path: str, line: int | None, message: str) -> PersistenceCorrupt:
    """The error for damage at ``line`` of ``path`` (``None``: the whole file)."""
    where = path if line is None else f"{path} line {line}"
    return PersistenceCorrupt(f"{where}: {message}", path=path, line=line)


def parse_header(line: bytes, path: str) -> tuple[SessionHeader, int]:
    """Parse header line bytes (without the newline) into the header and inherited count."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        raise corrupt(path, 1, "invalid JSON in the header line") from None
    if not isinstance(obj, dict):
        raise corrupt(path, 1, "the header line is not a JSON object")
    record: dict[str, Any] = obj
    # The version decides how the rest is read, so it is checked before the shape.
    version = record.get("version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise corrupt(
            path,
            1,
            f"unsupported format version {version!r}; this library reads version {FORMAT_VERSION}",
        )
    if record.get("type") != HEADER_TYPE:
        raise corrupt(path, 1, f"header type must be {HEADER_TYPE!r}, not {record.get('type')!r}")
    unknown = set(record) - _HEADER_KEYS
    if unknown:
        raise corrupt(path, 1, f"unknown header keys: {', '.join(sorted(unknown))}")
    missing = [key for key in _REQUIRED_HEADER_KEYS if key not in record]
    if missing:
        raise corrupt(path, 1, f"header is missing {', '.join(missing)}")
    inherited = record.get("inheritedEventCount", 0)
    fields = {k: v for k, v in record.items() if k not in ("type", "inheritedEventCount")}
    try:
        header = SessionHeader.from_json(fields)
    except ValueError as exc:
        raise corrupt(path, 1, f"invalid header: {exc}") from None
    if type(inherited) is not int or inherited < 0:
        raise corrupt(path, 1, f"inheritedEventCount must be a non-negative integer: {inherited}")
    if inherited and not header.is_seeded:
        raise corrupt(path, 1, "inheritedEventCount is set but the session is not seeded")
    return header, inherited


def parse_events(data: bytes, first_seq: int, path: str) -> list[SessionEvent]:
    """Parse complete event lines (``data`` ends with ``\\n``) whose first seq is ``first_seq``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The line holding the first bad byte: count the newlines before it (linear).
        bad_line = first_seq + 2 + data.count(b"\n", 0, exc.start)
        raise corrupt(path, bad_line, "invalid UTF-8") from None
    lines = text.split("\n")
    lines.pop()  # the empty string after the final newline
    return [parse_event_line(line, seq, path) for seq, line in enumerate(lines, first_seq)]


def parse_event_line(line: str, seq: int, path: str) -> SessionEvent:
    """Parse one event line (without its newline) that must hold the event ``seq``: the strict
    parse every exact read uses, and the one that decides and words every error.

    Raises:
        PersistenceCorrupt: the line is not a valid event of that seq (names file and line).
    """
    try:
        event = SessionEvent.from_json_line(line)
    except json.JSONDecodeError:
        raise corrupt(path, seq + 2, "invalid JSON") from None
    except RecursionError:
        raise corrupt(path, seq + 2, "JSON nested too deeply") from None
    except ValueError as exc:
        raise corrupt(path, seq + 2, f"invalid event: {exc}") from None
    if event.seq != seq:
        raise corrupt(path, seq + 2, f"event has seq {event.seq}, expected {seq}")
    return event


def split_header_line(data: bytes, path: str) -> tuple[bytes, int]:
    """The header line of a whole file's bytes (without newline) and the offset after it."""
    newline = data.find(b"\n")
    if newline == -1:
        raise _no_header(path, data)
    return data[:newline], newline + 1


def read_header_line(fd: int, path: str) -> tuple[bytes, int]:
    """Read just the header line (without newline) of an open file and the offset after it.

    Reads grow geometrically and each byte is searched once, so a header line of any length
    is read in linear time.
    """
    chunks: list[bytes] = []
    offset = 0
    want = _CHUNK
    while True:
        chunk = os.pread(fd, want, offset)
        newline = chunk.find(b"\n")
        if newline != -1:
            chunks.append(chunk[:newline])
            return b"".join(chunks), offset + newline + 1
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        want = min(want * 2, 1 << 26)
    raise _no_header(path, b"".join(chunks))


def _no_header(path: str, data: bytes) -> PersistenceCorrupt:
    what = "the file is empty" if not data else "the header line is incomplete (no newline)"
    return corrupt(path, 1, what)
