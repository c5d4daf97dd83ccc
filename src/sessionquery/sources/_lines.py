"""Reading a JSONL transcript line by line, in linear time, never raising for a bad line.

A line is accepted only when it holds a JSON object the event model can store losslessly: no
``NaN``/``Infinity`` constants, no lone surrogates, no integer too long to write back, nesting
shallow enough to walk. Anything else becomes a :class:`Problem` for that line and the rest of
the file is read. Under :func:`~sessionquery.persistence.documents.checking` a long file checks
the caller's deadline every few thousand lines or megabyte (its exception stops the read).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionquery.persistence.documents import read_check
from sessionquery.sources._common import Problem

__all__ = ["Line", "parse_lines"]

_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line of a transcript: its number and parsed JSON object, or an error."""

    number: int
    record: dict[str, Any] | None
    raw: str
    error: str | None = None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _parse(chunk: bytes, torn: bool, number: int) -> Line:
    try:
        raw = chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Line(number, None, "", f"line is not valid UTF-8 ({exc.reason}); skipped")
    try:
        record = _DECODER.decode(raw)
    except RecursionError:
        return Line(number, None, raw, "line is nested too deeply to read; skipped")
    except ValueError as exc:
        message = (
            "truncated last line (no newline, incomplete JSON); ignored"
            if torn
            else f"line is not valid JSON ({exc}); skipped"
        )
        return Line(number, None, raw, message)
    if not isinstance(record, dict):
        return Line(number, None, raw, "line is not a JSON object; skipped")
    if _ESCAPED_SURROGATE.search(chunk) is not None:
        try:
            json.dumps(record, ensure_ascii=False).encode("utf-8")
        except (UnicodeEncodeError, RecursionError):
            return Line(number, None, raw, "line holds a lone surrogate (invalid text); skipped")
    return Line(number, record, raw)  # pyright: ignore[reportUnknownArgumentType]


def parse_lines(path: Path, data: bytes, empty: str) -> tuple[list[Line], list[Problem]]:
    """The parsed object lines of a transcript's bytes, and a problem for every other line.

    Blank lines are skipped silently; a last line without a newline that does not parse is
    reported as truncated. ``empty`` is the problem reported when the file holds no line at all.
    """
    problems: list[Problem] = []
    lines: list[Line] = []
    chunks = data.split(b"\n")
    last = len(chunks) - 1
    tick = read_check()
    for index, chunk in enumerate(chunks):
        tick(len(chunk))
        if not chunk.strip():
            continue
        line = _parse(chunk, index == last, index + 1)
        if line.record is None:
            problems.append(Problem(str(path), line.number, line.error or "unreadable line"))
        else:
            lines.append(line)
    if not lines and not problems:
        problems.append(Problem(str(path), None, empty))
    return lines, problems
