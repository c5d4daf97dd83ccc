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
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "WHITESPACE",
    "WHITESPACE_RUN",
    "LiteralPattern",
    "collapse_whitespace",
    "fold_case",
    "is_blank",
    "literal_pattern",
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
    if text.isascii():
        # bytes.split() splits on exactly the ASCII part of WHITESPACE (str.split() would
        # also split on U+001C..U+001F), and all in C: an 800 kB query in a few ms
        return b" ".join(text.encode("ascii").split()).decode("ascii")
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
    """Simple foldings, computed on first use of each code point."""

    def __missing__(self, code_point: int) -> str:
        folded = _simple_folding(code_point)
        self[code_point] = folded
        return folded


_FOLDING = _FoldingTable()

# The code points whose simple folding is not what ``str.lower()`` makes of them: U+0130
# (lowercased to two code points), capital sigma (``lower()`` applies the final-sigma rule),
# and letters whose folding is another letter than their lowercase. Every other code point
# folds exactly as ``lower()`` lowercases it, in C; a test derives this list afresh.
_FOLDS_UNLIKE_LOWER = re.compile(
    "(["
    "\u00b5\u0130\u017f\u0345\u03a3\u03c2\u03d0\u03d1\u03d5\u03d6\u03f0\u03f1\u03f5"
    "\u13a0-\u13f5\u13f8-\u13fd\u1c80-\u1c88\u1e9b\u1fbe\u1fd3\u1fe3\uab70-\uabbf\ufb05"
    "])"
)


def fold_case(text: str) -> str:
    """``text`` with every code point replaced by its simple case folding.

    Two texts match case-insensitively, as JavaScript compares them, exactly when their
    foldings are equal; the folding has the same length as ``text``.
    """
    if text.isascii():
        return text.lower()  # for ASCII, simple folding is lowercasing A-Z
    parts = _FOLDS_UNLIKE_LOWER.split(text)  # odd items are single exceptional code points
    parts[::2] = [part.lower() for part in parts[::2]]
    parts[1::2] = [_FOLDING[ord(char)] for char in parts[1::2]]
    return "".join(parts)


# For an ASCII needle, Python's IGNORECASE agrees with simple case folding on every code point
# except that it lets "i" match U+0130 and U+0131. Texts holding either of those are searched
# with "i" and "I" matched case-sensitively as a class of the two. (The Kelvin sign still
# matches "k", and U+017F "s", in both systems.)
_ASCII_I = "(?-i:[iI])"
_DOTTED_AND_DOTLESS_I = ("\u0130", "\u0131")


@dataclass(frozen=True, slots=True)
class LiteralPattern:
    """A compiled literal, case-insensitive, whitespace-flexible search for a word sequence.

    Attributes:
        regex: the compiled expression.
        folds: whether texts are case-folded before ``regex`` runs over them (needles with
            non-ASCII characters); ASCII needles run over the text as it is.
        strict_i: for an ASCII needle, the expression used on texts that hold U+0130 or
            U+0131 (``i`` matched as ``[iI]`` only); ``None`` otherwise.
    """

    regex: re.Pattern[str]
    folds: bool
    strict_i: re.Pattern[str] | None = None

    def found_in(self, text: str) -> bool:
        """Whether the words occur in ``text``, in order, separated by whitespace runs."""
        if self.folds:
            return self.regex.search(fold_case(text)) is not None
        regex = self.regex
        if self.strict_i is not None and any(char in text for char in _DOTTED_AND_DOTLESS_I):
            regex = self.strict_i
        return regex.search(text) is not None


def literal_pattern(words: Sequence[str]) -> LiteralPattern:
    """The search for ``words`` (non-empty pieces without whitespace) as one literal phrase:
    case-insensitive as JavaScript's ``iu`` matching, any whitespace run between words."""
    if all(word.isascii() for word in words):
        plain = WHITESPACE_RUN.join(map(re.escape, words))
        strict = WHITESPACE_RUN.join(
            "".join(_ASCII_I if char in "iI" else re.escape(char) for char in word)
            for word in words
        )
        return LiteralPattern(
            re.compile(plain, re.IGNORECASE),
            folds=False,
            strict_i=re.compile(strict, re.IGNORECASE) if strict != plain else None,
        )
    pieces = (re.escape(fold_case(word)) for word in words)
    return LiteralPattern(re.compile(WHITESPACE_RUN.join(pieces)), folds=True)
