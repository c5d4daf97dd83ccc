"""The relevance kernel: which words a question searches, what a typo becomes, how a
document scores (shared by both backends)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from sessionquery.search.relevance import (
    COVERAGE_BOOST,
    IDF_FLOOR,
    K1,
    MAX_CORRECTIONS,
    MAX_LOOKUP,
    MAX_PHRASE,
    MAX_TERMS,
    PHRASE_FACTOR,
    STOPWORDS,
    B,
    CorpusStats,
    edits,
    event_score,
    idf,
    plan_relevance,
    question_words,
)


def _counts(table: dict[str, int]):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def counts(words):  # type: ignore[no-untyped-def]
        calls.append(len(words))
        return {word: table.get(word, 0) for word in words}

    return counts, calls


def test_stopwords_are_left_out_of_a_question_that_has_other_words() -> None:
    words = question_words("where did we fix the failing test".split())
    assert words == ["fix", "failing", "test"]


def test_a_question_made_only_of_stopwords_searches_them_all() -> None:
    assert question_words(["where", "is", "the", "is"]) == ["where", "is", "the"]


def test_every_stopword_is_a_lower_case_token() -> None:
    assert all(word == word.lower() and word.isalpha() for word in STOPWORDS)


def test_a_long_question_looks_up_at_most_max_lookup_words_and_searches_max_terms() -> None:
    words = [f"w{i}" for i in range(5 * MAX_LOOKUP)]
    counts, calls = _counts({word: 1 + i for i, word in enumerate(words)})
    plan = plan_relevance(words, CorpusStats(10**6, 10**7), counts)
    assert plan is not None
    assert calls == [MAX_LOOKUP]
    assert len(plan.terms) == MAX_TERMS
    # the most selective (fewest documents) are kept, most selective first
    assert plan.terms == tuple(words[:MAX_TERMS])


def test_a_word_no_document_holds_is_corrected_to_the_most_common_word_one_edit_away() -> None:
    counts, _calls = _counts({"migration": 40, "migrations": 7, "prisma": 3, "migrator": 9})
    plan = plan_relevance(["prisma", "migraton"], CorpusStats(1000, 10_000), counts)
    assert plan is not None
    assert plan.corrections == {"migraton": "migration"}
    assert set(plan.terms) == {"prisma", "migration"}


def test_short_words_and_numbers_are_never_corrected_and_unknown_words_are_dropped() -> None:
    counts, _calls = _counts({"cat": 5, "1234": 2, "test": 9})
    plan = plan_relevance(["cst", "1235", "tset", "zzzzzzzq"], CorpusStats(100, 1000), counts)
    assert plan is not None
    assert plan.terms == ("test",)
    assert plan.corrections == {"tset": "test"}
    assert plan_relevance(["cst"], CorpusStats(100, 1000), counts) is None


def test_idf_is_floored_for_words_most_documents_hold() -> None:
    assert idf(90, 100) == IDF_FLOOR
    assert math.isclose(idf(1, 100), math.log(99.5 / 1.5))


def test_a_document_score_is_bm25_with_fts5_constants_and_the_boosts() -> None:
    counts, _calls = _counts({"flaky": 2, "test": 50})
    stats = CorpusStats(100, 2000)
    plan = plan_relevance(["flaky", "test"], stats, counts)
    assert plan is not None
    assert plan.phrase == ("flaky", "test")
    avgdl = 20.0

    def bm25(frequencies: tuple[int, int]) -> float:
        return sum(
            w * tf * (K1 + 1) / (tf + K1 * (1 - B + B * 30 / avgdl))
            for w, tf in zip(plan.weights, frequencies, strict=True)
        )

    both = (1 + COVERAGE_BOOST) * bm25((1, 3))
    assert math.isclose(event_score(plan, (1, 3), 30), both, rel_tol=1e-12)
    assert math.isclose(event_score(plan, (1, 3), 30, True), PHRASE_FACTOR * both, rel_tol=1e-12)
    assert math.isclose(event_score(plan, (0, 3), 30), bm25((0, 3)), rel_tol=1e-12)
    assert event_score(plan, (0, 0), 30) == 0.0


def test_a_typo_or_a_long_question_gets_no_phrase_boost() -> None:
    counts, _calls = _counts({"flaky": 2, "test": 50})
    stats = CorpusStats(100, 2000)
    typo = plan_relevance(["flaky", "tset"], stats, counts)
    assert typo is not None and typo.phrase == ()
    long = plan_relevance(["flaky"] * (MAX_PHRASE + 1), stats, counts)
    assert long is not None and long.phrase == ()
    assert plan_relevance(["flaky"], stats, counts).phrase == ()  # type: ignore[union-attr]


@given(st.text(alphabet="abcdef", min_size=1, max_size=8))
def test_every_edit_is_one_operation_away(word: str) -> None:
    for other in edits(word):
        assert other != word
        assert abs(len(other) - len(word)) <= 1
        if len(other) == len(word):
            differing = [i for i, (a, b) in enumerate(zip(word, other, strict=True)) if a != b]
            swapped = (
                len(differing) == 2
                and differing[1] == differing[0] + 1
                and word[differing[0]] == other[differing[1]]
                and word[differing[1]] == other[differing[0]]
            )
            assert len(differing) == 1 or swapped


@given(
    st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=5),
    st.integers(min_value=1, max_value=10_000),
)
def test_more_occurrences_never_lower_a_score(frequencies: list[int], length: int) -> None:
    words = [f"w{i}" for i in range(len(frequencies))]
    counts, _calls = _counts(dict.fromkeys(words, 3))
    plan = plan_relevance(words, CorpusStats(1000, 50_000), counts)
    assert plan is not None
    base = event_score(plan, frequencies, length)
    more = [tf + 1 for tf in frequencies]
    assert event_score(plan, more, length) >= base


def test_at_most_max_corrections_absent_words_are_looked_up_for_a_correction() -> None:
    counts, calls = _counts({"alpha": 3})
    words = [f"absent{i}" for i in range(3 * MAX_CORRECTIONS)] + ["alpha"]
    plan = plan_relevance(words, CorpusStats(100, 1000), counts)
    assert plan is not None and plan.terms == ("alpha",)
    assert len(calls) == 1 + MAX_CORRECTIONS  # the words, then one batch of edits each
