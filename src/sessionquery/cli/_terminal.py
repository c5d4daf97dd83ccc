"""Text that is safe and narrow on a terminal: escaping, display width, cutting.

Invariants:

* :func:`safe` output holds no control character, escape sequence, bidirectional override or
  lone surrogate from its input: each is shown as a visible ``\\xNN``/``\\uNNNN`` escape, so
  session data can never move the cursor, retitle the window or clear the screen;
* widths are terminal columns (East Asian wide characters count two, combining marks zero),
  and :func:`cut`/:func:`cut_left` never return more columns than asked, marking a cut
  with ``…``.

Styling is carried through rendering as private-use marker characters (:data:`MARKS`) and
turned into ANSI sequences only by :func:`terminal_line`, after :func:`safe` has run, so the
only escape sequences ever written are the fixed ones of this module.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "BOLD",
    "DIM",
    "ELLIPSIS",
    "MARKS",
    "MATCH",
    "RESET",
    "cut",
    "cut_left",
    "display_width",
    "printable",
    "safe",
    "terminal_line",
    "wrap",
]

ELLIPSIS = "…"
BOLD = "\ue000"
DIM = "\ue001"
MATCH = "\ue002"
RESET = "\ue003"
MARKS = {BOLD: "\x1b[1m", DIM: "\x1b[2m", MATCH: "\x1b[1;33m", RESET: "\x1b[0m"}
"""Marker character → the ANSI sequence it becomes on a styled terminal."""

_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_MARK = re.compile("[\ue000-\ue003]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """``text`` with tabs expanded and every unsafe character shown as a visible escape."""
    return _UNSAFE.sub(_escape, text.expandtabs(4))


def printable(text: str) -> str:
    """``text`` with unsafe characters escaped as :func:`safe` does, keeping tabs and newlines.

    For exported documents, where line structure and indentation are content.
    """
    return _UNSAFE.sub(lambda m: "\n" if m.group(0) == "\n" else _escape(m), text)


def terminal_line(line: str, enabled: bool) -> str:
    """One output line made safe; style markers become ANSI codes (or vanish when disabled)."""
    cleaned = safe(line)
    if enabled:
        return _MARK.sub(lambda m: MARKS[m.group(0)], cleaned)
    return _MARK.sub("", cleaned)


def _char_width(char: str) -> int:
    if char in MARKS or unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal (after :func:`safe`)."""
    return sum(_char_width(char) for char in text)


def cut(text: str, width: int) -> str:
    """``text`` cut at the end to at most ``width`` columns, with ``…`` where it was cut."""
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for char in text:
        size = _char_width(char)
        if used + size > width - 1:
            break
        out.append(char)
        used += size
    return "".join(out) + ELLIPSIS


def cut_left(text: str, width: int) -> str:
    """``text`` cut at the start (``…`` first) to at most ``width`` columns: keeps the tail."""
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for char in reversed(text):
        size = _char_width(char)
        if used + size > width - 1:
            break
        out.append(char)
        used += size
    return ELLIPSIS + "".join(reversed(out))


def wrap(text: str, width: int, max_lines: int) -> list[str]:
    """``text`` broken at spaces into at most ``max_lines`` lines of at most ``width`` columns.

    Text that does not fit ends with ``…``; a word longer than a line is cut.
    """
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if display_width(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        current = word
    if current:
        lines.append(current)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        last = lines[-1]
        fits = display_width(last) + 2 <= width
        lines[-1] = f"{last} {ELLIPSIS}" if fits else cut(last, width)
    return [cut(line, width) for line in lines]
