"""Tokens, match plans and match-span counting shared by the PostgreSQL index and its overlay.

Invariants:

* Text is tokenized exactly like SQLite FTS5 ``unicode61`` (see :mod:`.unicode61`), in Python,
  for documents and queries alike; PostgreSQL never tokenizes anything, so the database
  locale and PostgreSQL's parser play no part in what matches.
* A document's **normal form** (:func:`normal_form`) is its tokens, each wrapped in one space
  on both sides (``" a  b  c "``). A phrase's pattern is built the same way, so a substring
  occurrence of the pattern is exactly a phrase instance aligned on token boundaries.
* Match spans are counted as FTS5 ``highlight()`` marks them: instances of every phrase of the
  query, overlapping instances merged into one span (adjacent ones are not merged).
  :attr:`MatchPlan.simple` says when the cheap count (non-overlapping occurrences per phrase,
  summed) equals that: when no phrase can overlap itself (no proper border) or another phrase
  (no shared token).
* No token holds a tab, a line break (``\n``, ``\r``) or a backslash: they are separators.
  Tokens, normal forms and lexemes therefore go into ``COPY`` text as they are, unescaped
  (:mod:`sessionquery.team.rows`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sessionquery.match_modes import Words
from sessionquery.search.bounded import count_spans, phrases_of
from sessionquery.search.postgres._unicode61_table import FOLDED, SEPARATORS, SILENT

__all__ = [
    "LEXEME_CHARS",
    "MatchPlan",
    "first_match",
    "lexeme",
    "match_plan",
    "normal_form",
    "span_count",
    "token_spans",
    "tokens",
]

LEXEME_CHARS = 200
"""Tokens are cut to this many characters as tsvector lexemes (PostgreSQL refuses lexemes over
2 KiB); the exact match is decided on the normal form, so the cut only widens the candidates."""

_TRANSLATE: dict[int, str] = {}
for _lo, _hi in SEPARATORS:
    for _c in range(_lo, _hi + 1):
        _TRANSLATE[_c] = " "
for _c in SILENT:
    _TRANSLATE[_c] = ""
for _c, _to in FOLDED:
    _TRANSLATE[_c] = chr(_to)
_TRANSLATE[0] = " "

_ASCII_TRANSLATE = {c: v for c, v in _TRANSLATE.items() if c < 0x80}

# The same for ASCII text as bytes (a 256-byte table and the deleted bytes): ``bytes.translate``
# runs in C. After it every ASCII whitespace character is a space (they are all separators),
# so ``split()`` gives exactly the non-empty runs between spaces.
_ASCII_BYTES = bytes(ord(_ASCII_TRANSLATE.get(c, chr(c)) or " ") for c in range(256))
_ASCII_DELETE = bytes(c for c, v in _ASCII_TRANSLATE.items() if v == "")
_ASCII_SPLIT_EXACT = all(_ASCII_TRANSLATE.get(c) == " " for c in range(0x80) if chr(c).isspace())


def _char_class(ranges: Sequence[tuple[int, int]]) -> str:
    parts = []
    for lo, hi in ranges:
        parts.append(
            re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        )
    return "".join(parts)


_TOKEN_RUN = re.compile(f"[^\\x00{_char_class(SEPARATORS)}]+")


def tokens(text: str) -> list[str]:
    """The ``unicode61`` tokens of ``text``, folded, in order (empty tokens are dropped)."""
    if text.isascii():
        if _ASCII_SPLIT_EXACT:
            folded = text.encode("ascii").translate(_ASCII_BYTES, _ASCII_DELETE)
            return folded.decode("ascii").split()
        return [token for token in text.translate(_ASCII_TRANSLATE).split(" ") if token]
    return [token for token in text.translate(_TRANSLATE).split(" ") if token]


def token_spans(text: str) -> list[tuple[str, int]]:
    """``(token, start)`` for every token of ``text``; ``start`` is a code-point index."""
    out: list[tuple[str, int]] = []
    for run in _TOKEN_RUN.finditer(text):
        token = run.group().translate(_TRANSLATE)
        if token:
            out.append((token, run.start()))
    return out


def normal_form(words: Sequence[str]) -> str:
    """``words`` each wrapped in single spaces: ``" a  b "`` (empty for no tokens)."""
    return f" {'  '.join(words)} " if words else ""


def lexeme(token: str) -> str:
    """The tsvector lexeme standing for ``token``."""
    return token[:LEXEME_CHARS]


def _has_border(phrase: Sequence[str]) -> bool:
    n = len(phrase)
    return any(tuple(phrase[:k]) == tuple(phrase[n - k :]) for k in range(1, n))


@dataclass(frozen=True, slots=True)
class MatchPlan:
    """What a query must find: every phrase (at least one), each a tuple of tokens.

    Attributes:
        phrases: distinct phrases; an event matches when it contains each of them.
        simple: whether summing non-overlapping occurrence counts per phrase gives the
            number of match spans (no instance can overlap another).
    """

    phrases: tuple[tuple[str, ...], ...]
    simple: bool

    @property
    def patterns(self) -> list[str]:
        """The normal-form pattern of each phrase."""
        return [normal_form(phrase) for phrase in self.phrases]

    @property
    def lexemes(self) -> list[str]:
        """The distinct lexemes every matching document's tsvector contains."""
        return sorted({lexeme(token) for phrase in self.phrases for token in phrase})


def match_plan(normalized_query: str, words: Words) -> MatchPlan | None:
    """The plan for a normalised query, or ``None`` when it has no token (matches nothing).

    :attr:`Words.AS_PHRASE`: the whole query is one phrase. :attr:`Words.EVERY`: every
    distinct token of the query is a one-token phrase of its own (``foo.bar baz`` needs
    ``foo``, ``bar`` and ``baz`` anywhere in the event), as the SQLite backend's ``AND`` of
    tokens (the kernel's :func:`~sessionquery.search.bounded.phrases_of`).
    """
    found = phrases_of(tokens(normalized_query), words)
    phrases = tuple(dict.fromkeys(phrase for phrase in found if phrase))
    if not phrases:
        return None
    seen: set[str] = set()
    disjoint = True
    for phrase in phrases:
        if seen.intersection(phrase):
            disjoint = False
        seen.update(phrase)
    simple = disjoint and not any(_has_border(phrase) for phrase in phrases)
    return MatchPlan(phrases=phrases, simple=simple)


def span_count(words: Sequence[str], plan: MatchPlan) -> int:
    """Match spans of ``plan`` in a document of these tokens; 0 unless every phrase occurs
    (the kernel's rule, :func:`sessionquery.search.bounded.count_spans`)."""
    return count_spans(words, plan.phrases)


def _phrase_pattern(phrase: tuple[str, ...]) -> str:
    """A phrase as whole tokens of folded text (separators are spaces there)."""
    return "(?<![^ ])" + " +".join(re.escape(token) for token in phrase) + "(?![^ ])"


def first_match(text: str, plan: MatchPlan) -> int | None:
    """The code-point index in ``text`` where the first match span starts, if any.

    When folding keeps every code point in place (no silent characters), the folded text is
    searched with one regular expression per phrase; otherwise it is tokenized only as far as
    needed: once an instance is found, an instance starting earlier can end at most
    ``longest phrase - 1`` tokens later.
    """
    folded = text.translate(_ASCII_TRANSLATE if text.isascii() else _TRANSLATE)
    if len(folded) == len(text):
        found = [
            hit.start()
            for phrase in plan.phrases
            if (hit := re.search(_phrase_pattern(phrase), folded)) is not None
        ]
        return min(found, default=None)
    longest = max(len(phrase) for phrase in plan.phrases)
    words: list[str] = []
    starts: list[int] = []
    best: int | None = None
    for run in _TOKEN_RUN.finditer(text):
        token = run.group().translate(_TRANSLATE)
        if not token:
            continue
        words.append(token)
        starts.append(run.start())
        end = len(words)
        for phrase in plan.phrases:
            n = len(phrase)
            if end >= n and words[end - 1] == phrase[-1] and tuple(words[end - n :]) == phrase:
                begin = end - n
                best = begin if best is None else min(best, begin)
        if best is not None and end >= best + longest:
            break
    return None if best is None else starts[best]
