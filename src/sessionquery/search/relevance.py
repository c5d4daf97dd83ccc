"""Relevance ranking (``match="relevance"``, SPEC §14.1), once for both search backends.

A relevance search takes the query as literal text, as the other modes do, but any of its
words may match, and events are ranked by how well they answer it: BM25 over the index's own
statistics, each session once by its best event, a session's titles adding to its score.
This module decides everything about that ranking that does not depend on where the index
lives, so the SQLite and PostgreSQL backends give the same order on the same corpus; each
backend only supplies counts (documents, tokens, documents holding a word) and evaluates
:func:`event_score`'s formula over its candidates.

Invariants:

* **Words.** The query's words are its tokens as the index tokenises them (FTS5
  ``unicode61``), lower-cased, each distinct word once in query order. Words of
  :data:`STOPWORDS` are left out unless every word is one, so "where did we fix the failing
  test" searches ``fix failing test``. At most :data:`MAX_LOOKUP` distinct words are looked up
  (a longer question is cut there); of those the index holds, the :data:`MAX_TERMS` most
  selective (fewest documents, then query order) are searched. So the work a question costs
  is bounded before any search expression is built, whatever its length.
* **Typos.** A looked-up word that no document holds is replaced by the indexed word one edit
  away (a character added, removed, replaced, or two neighbours swapped) that the most
  documents hold (ties: the word first in code-point order), and the answer's
  ``corrections`` say so; with no such word it is dropped. Numbers and words of fewer than
  :data:`MIN_CORRECTED` characters are never corrected, and at most :data:`MAX_CORRECTIONS`
  words of one question are. A search with session filters (a workspace) is only corrected
  to a word its own sessions hold, so a correction never reveals another workspace's words.
* **Statistics.** ``N`` documents holding ``T`` tokens in all, and for each word the number
  of documents holding it: over every indexed document (events with text and titles, stored
  and live). ``idf = max(ln((N - n + 0.5) / (n + 0.5)), 1e-6)`` as FTS5's ``bm25()`` has it.
* **Score of a document** (:func:`event_score`): ``sum(idf_i * tf_i * (k1 + 1) / (tf_i +
  k1 * (1 - b + b * D / avgdl)))`` over the searched words in :attr:`RelevancePlan.terms`
  order, ``k1 = 1.2``, ``b = 0.75``, ``D`` the document's token count, ``avgdl = T / N``. The
  constants are folded into :attr:`RelevancePlan.constants` once in Python, and each backend
  evaluates exactly this sequence of IEEE operations, so scores are bit-identical.
* **Boosts** (measured on the quality benchmark, ``benchmarks/quality.py``): a document
  holding the whole question as a phrase (all its tokens, stopwords included, in order; at
  most :data:`MAX_PHRASE` of them) scores :data:`PHRASE_FACTOR` times more, and one holding
  ``m`` of the ``K`` searched words ``1 + COVERAGE_BOOST * (m - 1) / (K - 1)`` times more
  (:attr:`RelevancePlan.coverage`): exact phrases and events holding all the words rank
  above partial ones. The final score is ``(bm25 * phrase) * coverage``.
* **Score of a session**: its best event's score plus :data:`TITLE_WEIGHT` times its best
  title's score (a session found only by its title has the title event as its best match).
* **Order**: score (higher first), then the §7 tie-breaks (shorter text, newer event, session
  id in binary order, higher seq).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "COVERAGE_BOOST",
    "IDF_FLOOR",
    "K1",
    "MAX_CORRECTIONS",
    "MAX_LOOKUP",
    "MAX_PHRASE",
    "MAX_SCOPE_CHECKS",
    "MAX_TERMS",
    "MIN_CORRECTED",
    "PHRASE_FACTOR",
    "STOPWORDS",
    "TITLE_WEIGHT",
    "B",
    "CorpusStats",
    "RelevancePlan",
    "best_correction",
    "edits",
    "event_score",
    "idf",
    "plan_relevance",
    "question_words",
]

K1: Final = 1.2
"""BM25 term-frequency saturation (FTS5's ``bm25()`` value)."""
B: Final = 0.75
"""BM25 length normalisation (FTS5's ``bm25()`` value)."""
IDF_FLOOR: Final = 1e-6
"""The weight of a word that more than half of the documents hold (FTS5's ``bm25()``)."""

MAX_LOOKUP: Final = 1024
"""Distinct words of one question that are looked up in the index; later ones are ignored."""
MAX_TERMS: Final = 16
"""Words of one question that are searched: the most selective of those the index holds."""
MIN_CORRECTED: Final = 4
"""Words shorter than this are never corrected (too many one-edit neighbours)."""
MAX_CORRECTIONS: Final = 8
"""Absent words of one question that are looked up for a correction (each costs a few
hundred lookups); later absent words are dropped."""
TITLE_WEIGHT: Final = 1.0
"""How much a session's best-matching title adds, relative to its best event."""
PHRASE_FACTOR: Final = 2.0
"""A document holding the whole question as a phrase scores this many times more."""
COVERAGE_BOOST: Final = 1.0
"""A document holding all the searched words scores ``1 + COVERAGE_BOOST`` times more than
one holding a single word (linearly between)."""
MAX_PHRASE: Final = 64
"""Questions of more tokens get no phrase boost (the phrase is not searched)."""

STOPWORDS: Final = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each earlier either
    else ever few for from further had has have having he her here hers him his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours out over own same she should so some such than that the their theirs them
    then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours
    """.split()
)
"""Words that carry no meaning for ranking a question: English function words and
question words. They are left out of a question that has other words (SPEC §14.1: "where did
we fix the failing test" must find the sessions that fixed a failing test); a question made
only of them searches them all. Negations ("not", "no") are kept out as well: BM25 cannot
use them as negations, and as words they only add noise."""


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What the ranking needs of the whole index.

    Attributes:
        documents: indexed documents (``N``).
        tokens: tokens of all of them (``T``).
    """

    documents: int
    tokens: int

    @property
    def avgdl(self) -> float:
        """Average document length in tokens (1.0 for an empty index)."""
        return self.tokens / self.documents if self.documents and self.tokens else 1.0


def idf(documents_with_word: int, documents: int) -> float:
    """The BM25 weight of a word ``documents_with_word`` of ``documents`` hold."""
    value = math.log((documents - documents_with_word + 0.5) / (documents_with_word + 0.5))
    return value if value > 0.0 else IDF_FLOOR


@dataclass(frozen=True, slots=True)
class RelevancePlan:
    """What one relevance search looks for and how it scores.

    Attributes:
        terms: the searched words, most selective first (ties in query order); a
            document's score sums over them in this order.
        weights: each term's idf, aligned with ``terms``.
        constants: ``(k1 + 1, k1 * (1 - b), k1 * b / avgdl)``: a document of ``D`` tokens
            scores ``w * (tf * c1) / (tf + (c2 + c3 * D))`` per term.
        phrase: the question's tokens, when a document holding them in order is boosted
            (two to :data:`MAX_PHRASE` tokens), else empty.
        coverage: ``coverage[m - 1]`` multiplies the score of a document holding ``m`` of
            the terms.
        corrections: typed word → word searched instead.
    """

    terms: tuple[str, ...]
    weights: tuple[float, ...]
    constants: tuple[float, float, float]
    phrase: tuple[str, ...] = ()
    coverage: tuple[float, ...] = (1.0,)
    corrections: Mapping[str, str] = field(default_factory=dict)

    @property
    def upper_bounds(self) -> tuple[float, ...]:
        """The most each term can add to a document's BM25 sum (``w * (k1 + 1)``)."""
        c1 = self.constants[0]
        return tuple(weight * c1 for weight in self.weights)

    def bound_after(self, step: int) -> float:
        """The highest score a document holding none of the first ``step + 1`` terms can
        have (it cannot hold the phrase, which holds every term)."""
        rest = self.upper_bounds[step + 1 :]
        if not rest:
            return 0.0
        return sum(rest) * self.coverage[len(rest) - 1]


def event_score(
    plan: RelevancePlan, frequencies: Sequence[int], length: int, phrase: bool = False
) -> float:
    """A document's score: ``frequencies[i]`` occurrences of ``plan.terms[i]`` in a document
    of ``length`` tokens, ``phrase`` when it holds :attr:`RelevancePlan.phrase`. The backends
    evaluate this same sequence of operations."""
    c1, c2, c3 = plan.constants
    norm = c2 + c3 * length
    score = 0.0
    held = 0
    for weight, tf in zip(plan.weights, frequencies, strict=True):
        if tf:
            held += 1
            score += weight * (tf * c1) / (tf + norm)
    if phrase and plan.phrase:
        score = score * PHRASE_FACTOR
    if held:
        score = score * plan.coverage[held - 1]
    return score


def question_words(tokens: Sequence[str]) -> list[str]:
    """The distinct words of a tokenised question worth looking up, in query order.

    Stopwords are left out unless every word is one; at most :data:`MAX_LOOKUP` are kept.
    """
    distinct = list(dict.fromkeys(tokens))
    meaningful = [word for word in distinct if word not in STOPWORDS]
    return (meaningful or distinct)[:MAX_LOOKUP]


_EDIT_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz"


def edits(word: str) -> set[str]:
    """Every string one edit from ``word``: a character removed, two neighbours swapped, a
    character replaced or inserted (ASCII letters, digits when the word has any, and the
    word's own characters)."""
    alphabet = set(_EDIT_ALPHABET) | set(word)
    if any(c.isdigit() for c in word):
        alphabet |= set("0123456789")
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {left + right[1:] for left, right in splits if right}
    out |= {left + right[1] + right[0] + right[2:] for left, right in splits if len(right) > 1}
    out |= {left + c + right[1:] for left, right in splits if right for c in alphabet}
    out |= {left + c + right for left, right in splits for c in alphabet}
    out.discard(word)
    out.discard("")
    return out


def _correctable(word: str) -> bool:
    return len(word) >= MIN_CORRECTED and not word.isdigit()


MAX_SCOPE_CHECKS: Final = 4
"""Candidate corrections checked against the search's scope, most common first."""


def best_correction(
    candidates: Mapping[str, int], in_scope: Callable[[str], bool] | None = None
) -> str | None:
    """The candidate the most documents hold (ties: code-point order), if any holds one.

    With ``in_scope``, only a candidate some document within the search's scope holds (the
    sessions its filters keep) may be chosen, the first :data:`MAX_SCOPE_CHECKS` in that
    order: a correction never names a word that only other workspaces hold."""
    held = sorted((-count, word) for word, count in candidates.items() if count > 0)
    if in_scope is None:
        return held[0][1] if held else None
    return next((word for _count, word in held[:MAX_SCOPE_CHECKS] if in_scope(word)), None)


DocumentCounts = Callable[[Sequence[str]], Mapping[str, int]]
"""``counts(words) -> {word: documents holding it}`` for the words the index holds (others
may be missing or 0)."""


def plan_relevance(
    tokens: Sequence[str],
    stats: CorpusStats,
    counts: DocumentCounts,
    in_scope: Callable[[str], bool] | None = None,
) -> RelevancePlan | None:
    """The plan for a tokenised question, or ``None`` when none of its words (or their
    corrections) is indexed (the search then matches nothing). ``in_scope`` (for a search
    with session filters) says whether a word is held within the search's scope; corrections
    are limited to such words (:func:`best_correction`)."""
    words = question_words(tokens)
    held = dict(counts(words))
    corrections: dict[str, str] = {}
    found: list[tuple[int, int, str]] = []  # (documents, position, word)
    seen: set[str] = set()
    attempts = 0
    for position, word in enumerate(words):
        documents = held.get(word, 0)
        chosen = word
        if documents <= 0:
            if not _correctable(word) or attempts >= MAX_CORRECTIONS:
                continue
            attempts += 1
            near = counts(sorted(edits(word)))
            fixed = best_correction(near, in_scope)
            if fixed is None:
                continue
            corrections[word] = chosen = fixed
            documents = near[fixed]
        if chosen in seen:
            continue
        seen.add(chosen)
        found.append((documents, position, chosen))
    if not found:
        return None
    found.sort()
    selected = found[:MAX_TERMS]
    total = stats.documents
    weights = tuple(idf(documents, total) for documents, _position, _word in selected)
    constants = (K1 + 1.0, K1 * (1.0 - B), K1 * B / stats.avgdl)
    count = len(selected)
    coverage = tuple(
        1.0 + COVERAGE_BOOST * (held - 1) / (count - 1) if count > 1 else 1.0
        for held in range(1, count + 1)
    )
    phrase = tuple(tokens) if 1 < len(tokens) <= MAX_PHRASE and not corrections else ()
    return RelevancePlan(
        terms=tuple(word for _documents, _position, word in selected),
        weights=weights,
        constants=constants,
        phrase=phrase,
        coverage=coverage,
        corrections=corrections,
    )
