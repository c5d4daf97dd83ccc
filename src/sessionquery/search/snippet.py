"""Snippets and text sanitisation for the search index.

Invariants:

* Document text and query text go through :func:`sanitize_text` before they reach SQLite, so
  the two private-use marker characters that :data:`MATCH_MARK` relies on (U+FDD0, U+FDD1)
  and NUL never occur in indexed text, and every stored length is a code-point count of the
  sanitised text.
* A snippet is at most ``snippet_chars`` code points of whitespace-normalised plain text
  around the first match; a cut end is marked with one ``…`` (U+2026) that counts toward the
  budget.
"""

from __future__ import annotations

import re

__all__ = [
    "ELLIPSIS",
    "MATCH_MARK",
    "make_snippet",
    "sanitize_text",
    "snippet_around",
    "snippet_at",
    "snippet_from_highlight",
]

MATCH_MARK = "\ufdd0"
"""Inserted by FTS5 ``highlight()`` before every match span (never present in indexed text)."""

ELLIPSIS = "\u2026"

# Reserved markers, NUL and lone surrogates (which SQLite cannot store) become U+FFFD.
_UNSAFE = re.compile("[\ufdd0\ufdd1\x00\ud800-\udfff]")


def sanitize_text(text: str) -> str:
    """Replace NUL, the reserved marker characters and lone surrogates with U+FFFD."""
    if text.isascii():
        return text.replace("\x00", "\ufffd") if "\x00" in text else text
    return _UNSAFE.sub("\ufffd", text)


def snippet_from_highlight(highlighted: str, snippet_chars: int) -> str:
    """The snippet of one highlighted document (``MATCH_MARK`` before each match span).

    Markers are dropped, every whitespace run becomes one space and the ends are trimmed;
    the window is then placed around the first match (code-point index ``m``).
    """
    first = highlighted.find(MATCH_MARK)
    return snippet_at(highlighted.replace(MATCH_MARK, ""), first, snippet_chars)


def snippet_at(plain: str, first: int, snippet_chars: int) -> str:
    """The snippet of ``plain`` whose first match starts at code point ``first`` (``-1`` or
    ``0``: the start of the text); the same cut as :func:`snippet_from_highlight`."""
    text = " ".join(plain.split())
    if first <= 0:
        return make_snippet(text, 0, snippet_chars)
    before = plain[:first].split()
    m = len(" ".join(before))
    if before and plain[first - 1].isspace():
        m += 1
    return make_snippet(text, m, snippet_chars)


_SPACE = re.compile(r"\s")


def snippet_around(plain: str, first: int, snippet_chars: int) -> str:
    """:func:`snippet_at` reading only a window of ``plain`` around ``first``.

    Equal to ``snippet_at(plain, first, snippet_chars)``; the cost depends on the snippet
    length, not on the document's. Whitespace normalisation only joins words, so a window
    cut on whitespace normalises to a piece of the whole normalised text; once the window
    holds at least ``2 * snippet_chars`` normalised code points on each side of the match
    that is not the end of the text, the cut cannot reach beyond it (the text outside only
    decides whether an ellipsis is shown, which the windows' neighbours stand in for).
    """
    first = max(first, 0)
    reach = 4 * snippet_chars + 64
    while True:
        low, high = max(0, first - reach), min(len(plain), first + reach)
        if low == 0 and high == len(plain):
            return snippet_at(plain, first, snippet_chars)
        if low > 0:
            found = _SPACE.search(plain, low, first)
            low = first if found is None else found.start()
        if high < len(plain):
            found = _SPACE.search(plain, high)
            high = len(plain) if found is None else found.start()
        left = " ".join(plain[low:first].split())
        right = " ".join(plain[first:high].split())
        wide_left = low == 0 or len(left) >= 2 * snippet_chars
        wide_right = high == len(plain) or len(right) >= 2 * snippet_chars
        if wide_left and wide_right:
            break
        reach *= 4
    before = "" if low == 0 or plain[:low].isspace() else "x "
    after = "" if high == len(plain) or plain[high:].isspace() else " x"
    window = before + plain[low:high] + after
    return snippet_at(window, first - low + len(before), snippet_chars)


def make_snippet(text: str, m: int, k: int) -> str:
    """Cut ``text`` (already normalised) to at most ``k`` code points around index ``m``.

    The order of decisions is part of the contract: the prefix ellipsis is decided before the
    window is pulled back from the end of the text.
    """
    n = len(text)
    if n <= k:
        return text
    if k == 1:
        return ELLIPSIS
    start = max(0, m - k // 3)
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS
    content = k - len(prefix) - len(suffix)
    if content < 1:
        start = m
        suffix = ""
        content = k - len(prefix)
    elif m >= start + content:
        start = m - content + 1
    end = min(n, start + content)
    if end == n:
        suffix = ""
        content = k - len(prefix)
        start = max(0, end - content)
    return prefix + text[start : min(n, start + content)] + suffix
