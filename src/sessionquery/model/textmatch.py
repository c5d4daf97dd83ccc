"""How text is compared: the whitespace set and the case folding of the original system.

Text filters and queries behave as the original's JavaScript does, so one history gives the
same answers in both systems:

* **whitespace** is the set of JavaScript's ``\\s`` (and ``String.prototype.trim``): tab, line
  feed, vertical tab, form feed, carriage return, space, U+00A0, U+1680, U+2000 to U+200A,
  U+2028, U+2029, U+202F, U+205F, U+3000 and U+FEFF. Python's ``str.split()`` and ``\\s``
  differ: they also take U+001C to U+001F and U+0085, and they do not take U+FEFF;
* **case folding** is JavaScript's case-insensitive matching (the ``iu`` flags): each code
  point is replaced by its *simple* case folding, one code point for one, with no special
  casing, so ``"istanbul"`` does not match ``"İstanbul"`` (U+0130 has only a full folding)
  while the Kelvin sign matches ``k``. Python's ``re.IGNORECASE`` and ``str.casefold()`` both
  differ on such code points.

Invariants: :func:`fold_case` keeps the length and the positions of a text (one code point
in, one out), and no whitespace code point folds to anything else. Folding follows the
Unicode database of the running Python (Unicode 14 on Python 3.11); a character newer than
that database folds to itself.
"""

from __future__ import annotations

import re

__all__ = [
    "WHITESPACE",
    "WHITESPACE_RUN",
    "collapse_whitespace",
    "fold_case",
    "is_blank",
    "split_words",
    "trim",
]

WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""Every whitespace code point, as JavaScript's ``\\s`` matches them."""

WHITESPACE_RUN = "[" + re.escape(WHITESPACE) + "]+"
"""A regular-expression fragment matching one or more whitespace code points."""

_WHITESPACE_RUN = re.compile(WHITESPACE_RUN)

# Simple foldings that Python's full ``casefold()`` and ``lower()`` do not reveal: these
# code points are their own lowercase, yet CaseFolding.txt (status S) folds each to a
# canonically equivalent letter.
_EXTRA_SIMPLE_FOLDINGS = {0x1FD3: "\u0390", 0x1FE3: "\u03b0", 0xFB05: "\ufb06"}


def trim(text: str) -> str:
    """``text`` without leading and trailing whitespace."""
    return text.strip(WHITESPACE)


def split_words(text: str) -> list[str]:
    """The non-empty pieces of ``text`` between whitespace runs."""
    return [piece for piece in _WHITESPACE_RUN.split(text) if piece]


def collapse_whitespace(text: str) -> str:
    """``text`` trimmed, with each inner whitespace run replaced by one space."""
    return " ".join(split_words(text))


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing but whitespace (or nothing at all)."""
    return not trim(text)


def _simple_folding(code_point: int) -> str:
    char = chr(code_point)
    extra = _EXTRA_SIMPLE_FOLDINGS.get(code_point)
    if extra is not None:
        return extra
    full = char.casefold()
    if len(full) == 1:
        return full  # a common (C) folding, or none
    # The full folding expands (status F); the simple one (status S), where it exists, is
    # the single-code-point lowercase mapping.
    lower = char.lower()
    return lower if len(lower) == 1 else char


class _FoldingTable(dict[int, str]):
    """``str.translate`` table filled on first use of each code point."""

    def __missing__(self, code_point: int) -> str:
        folded = _simple_folding(code_point)
        self[code_point] = folded
        return folded


_FOLDING = _FoldingTable()


def fold_case(text: str) -> str:
    """``text`` with every code point replaced by its simple case folding.

    Two texts match case-insensitively, as JavaScript compares them, exactly when their
    foldings are equal; the folding has the same length as ``text``.
    """
    if text.isascii():
        return text.lower()  # for ASCII, simple folding is lowercasing A-Z
    return text.translate(_FOLDING)
