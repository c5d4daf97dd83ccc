"""Over-long span-ordered queries (the ``phrase`` and ``words`` modes' plans), answered in
bounded time by both backends.

A search engine's expression for a query of thousands of distinct words is expensive to
build (SQLite FTS5 prepares an ``AND`` of ``n`` terms in time quadratic in ``n``, before any
step a deadline can interrupt; PostgreSQL would get a ``tsquery`` and a predicate per word).
So a query of more than :data:`EXPRESSION_TERMS` distinct tokens (or a phrase of more than
:data:`PHRASE_TOKENS` tokens) never becomes one:

1. every distinct token is looked up (an existence check per token, each interruptible);
   a token no document holds means nothing matches (both modes need every token);
2. the candidates are the documents holding the :data:`EXPRESSION_TERMS` longest distinct
   tokens (long tokens are rare ones), an expression of bounded size;
3. each candidate's own tokens decide, exactly as the expression would have: every token
   present (:attr:`Words.EVERY`) or the whole token sequence present
   (:attr:`Words.AS_PHRASE`), and its match span
   count by the same rule as FTS5 ``highlight()`` (:func:`count_spans`).

The answer is the same as the one expression would give, so results never depend on the
query's length; only the work does. Relevance queries are bounded by their own caps
(:mod:`.relevance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sessionquery.match_modes import Words

__all__ = [
    "EXPRESSION_TERMS",
    "PHRASE_TOKENS",
    "Phrases",
    "count_spans",
    "first_span",
    "is_long",
    "phrases_of",
    "selective_tokens",
]

EXPRESSION_TERMS: Final = 64
"""Distinct tokens a ``phrase`` or ``words`` query may have and still be one expression."""
PHRASE_TOKENS: Final = 256
"""Tokens (repeats counted) a ``phrase`` query may have and still be one expression."""

Phrases = tuple[tuple[str, ...], ...]
"""What a query requires: one phrase (``phrase`` mode) or one single-token phrase per
distinct word (``words`` mode)."""


def phrases_of(tokens: Sequence[str], words: Words) -> Phrases:
    """The phrases a span-ordered query of these tokens requires: one phrase of them all
    (:attr:`Words.AS_PHRASE`) or one single-token phrase per distinct token
    (:attr:`Words.EVERY`).

    Raises:
        ValueError: for :attr:`Words.ANY` (relevance has its own plan, :mod:`.relevance`).
    """
    if words is Words.AS_PHRASE:
        return (tuple(tokens),) if tokens else ()
    if words is Words.EVERY:
        return tuple(zip(dict.fromkeys(tokens)))  # one 1-tuple per distinct token, in C
    raise ValueError(f"{words.name} candidates are not phrases")


def is_long(phrases: Phrases) -> bool:
    """Whether a query requiring these phrases takes the bounded path: more than
    :data:`EXPRESSION_TERMS` distinct tokens, or a phrase of more than :data:`PHRASE_TOKENS`."""
    distinct: set[str] = set()
    for phrase in phrases:  # ends as soon as it knows: a long query is long early
        if len(phrase) > PHRASE_TOKENS:
            return True
        distinct.update(phrase)
        if len(distinct) > EXPRESSION_TERMS:
            return True
    return False


def selective_tokens(tokens: Sequence[str]) -> list[str]:
    """The :data:`EXPRESSION_TERMS` distinct tokens the candidates must hold: the longest
    (ties in code-point order), a cheap stand-in for the rarest."""
    distinct = sorted(set(tokens), key=lambda token: (-len(token), token))
    return distinct[:EXPRESSION_TERMS]


def _instances(words: Sequence[str], phrases: Phrases) -> list[tuple[int, int]]:
    """``(start, end)`` token intervals (end exclusive) of every phrase instance, sorted."""
    found: list[tuple[int, int]] = []
    for phrase in phrases:
        n = len(phrase)
        first = phrase[0]
        for i, word in enumerate(words):
            if word == first and tuple(words[i : i + n]) == phrase:
                found.append((i, i + n))
    found.sort()
    return found


def count_spans(words: Sequence[str], phrases: Phrases) -> int:
    """Match spans of ``phrases`` in a document of these tokens: 0 unless every phrase
    occurs; otherwise instances, overlapping ones merged (FTS5 ``highlight()``'s rule)."""
    instances = _instances(words, phrases)
    present = {tuple(words[s:e]) for s, e in instances}
    if len(present) != len(phrases):
        return 0
    spans = 0
    end = -1
    for start, stop in instances:
        if start >= end:
            spans += 1
            end = stop
        else:
            end = max(end, stop)
    return spans


def first_span(words: Sequence[str], phrases: Phrases) -> int | None:
    """The token index where the first match span starts, if any phrase occurs."""
    instances = _instances(words, phrases)
    return instances[0][0] if instances else None
