"""The search modes: one record per ``match`` value, read by both backends and every surface.

A mode (``"phrase"``, ``"words"``, ``"relevance"``; SPEC §13.3, §14.1) is declared here once,
as a :class:`SearchMode`: its name, what people and models are told about it (the viewer's
label, the CLI's flag and summary, the tools' description, whether a model may choose it), the
mode the tools retry in when it finds nothing, and its :class:`SearchPlan`, the steps a backend
executes: which documents are candidates (:class:`Words`) and in which order they come
(:class:`Order`).

Invariants:

* The kernel (``search/``) and both backends (``search/sqlite/``, ``search/postgres/``) read a
  request's plan, never its mode's name; the CLI's flags and summaries, the viewer's labels and
  the tools' ``match`` enum and descriptions derive from :data:`SEARCH_MODES`. Outside this
  module a mode's name is written only as a default (a parameter's, or an annotated
  constant's), which ``tests/test_match_modes.py`` checks in those modules.
* :data:`SearchMatch` spells the names of :data:`SEARCH_MODES` in their order, and
  :data:`ToolMatch` those offered to models in :data:`TOOL_MATCHES` order (a ``Literal`` must
  be written out for the type checker; the test checks both against the records).
* The defaults of each surface (:data:`SERVICE_MATCH`, :data:`TOOLS_MATCH`,
  :data:`PEOPLE_MATCH`) are SPEC §14.1's and are declared here too.
* Every plan is one that both backends execute (:data:`EXECUTED_PLANS`); a mode needing a new
  combination needs a new step in each backend (``docs/development.md``, *Adding a search
  mode*).
* A leaf module: it imports only :mod:`sessionquery.errors`. So the seam
  (:mod:`sessionquery.query.backend`) re-exports its names, the kernel and both backends read
  it, and the CLI's parser builds its flags from it without importing the query service
  (``--help`` stays cheap).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final, Literal, NamedTuple, cast

from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = [
    "EXECUTED_PLANS",
    "PEOPLE_MATCH",
    "PHRASE",
    "RELEVANCE",
    "SEARCH_MATCHES",
    "SEARCH_MODES",
    "SERVICE_MATCH",
    "TOOLS_MATCH",
    "TOOL_MATCHES",
    "WORDS",
    "CliFlag",
    "ModelOffer",
    "Order",
    "SearchMatch",
    "SearchMode",
    "SearchPlan",
    "ToolMatch",
    "Words",
    "search_mode",
    "validate_match",
]

SearchMatch = Literal["phrase", "words", "relevance"]
"""How a search query matches an event (SPEC §13.3, §14.1): ``"phrase"`` (the default) is the
query as one literal phrase (SPEC §7); ``"words"`` is every word of the query somewhere in the
event, in any order; ``"relevance"`` is any of its words, events ranked by BM25 and each
session by its best event and its titles (:mod:`sessionquery.search.relevance`)."""

ToolMatch = Literal["relevance", "phrase"]
"""How the two search tools match a query: ``"relevance"`` (any of its words, best answers
first) or ``"phrase"`` (the literal phrase)."""

SERVICE_MATCH: Final[SearchMatch] = "phrase"
"""The mode of ``SessionQuery.search_*`` and of a ``SearchBackend`` when ``match`` is not
given (SPEC §14.1)."""

TOOLS_MATCH: Final[ToolMatch] = "relevance"
"""The search tools' mode when neither the model nor ``SessionQueryTools(match=...)`` chooses
one (SPEC §14.1)."""

PEOPLE_MATCH: Final[SearchMatch] = "relevance"
"""The mode of the CLI's searches and of the viewer's search page unless a flag or the form
chooses another (SPEC §14.1)."""


class Words(Enum):
    """Which documents are candidates: how the query's tokens (the index's ``unicode61``
    tokens, :mod:`sessionquery.search.bounded`) must appear in one."""

    AS_PHRASE = "all of them, adjacent and in query order (one phrase)"
    EVERY = "every distinct one, anywhere, in any order"
    ANY = "any of the searched words (stopwords left out, typos corrected)"


class Order(Enum):
    """How candidates are ordered, and each session's best event chosen."""

    SPANS = "most match spans, then shorter text, newer event, session id, higher seq (§7)"
    RELEVANCE = "BM25 with the phrase and coverage boosts, a session's titles counting"


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """The steps a backend executes for a mode.

    Attributes:
        words: which documents are candidates.
        order: how they are ordered. :attr:`Order.RELEVANCE` also reports
            ``corrections`` and searches titles (:mod:`sessionquery.search.relevance`).

    Raises:
        ValueError: for a combination the backends do not execute (:data:`EXECUTED_PLANS`).
    """

    words: Words
    order: Order

    def __post_init__(self) -> None:
        if (self.words, self.order) not in EXECUTED_PLANS:
            raise ValueError(
                f"no backend executes {self.words.name} candidates in {self.order.name} order"
            )

    @property
    def ranked(self) -> bool:
        """Whether this is a relevance search (:mod:`sessionquery.search.relevance`)."""
        return self.order is Order.RELEVANCE


EXECUTED_PLANS: Final = frozenset(
    {
        (Words.AS_PHRASE, Order.SPANS),
        (Words.EVERY, Order.SPANS),
        (Words.ANY, Order.RELEVANCE),
    }
)
"""The ``(words, order)`` combinations both backends execute: span order over the tokens as a
phrase or as every word (the bounded path of :mod:`sessionquery.search.bounded` included),
relevance over any word."""


class CliFlag(NamedTuple):
    """The CLI flag that chooses a mode on ``search`` and ``search-events``, with its help."""

    name: str
    help: str


class ModelOffer(NamedTuple):
    """What the two search tools tell a model about a mode it may choose: what the mode
    ``finds`` (``{what}`` standing for "sessions" or "events") and what a ``query`` is in it
    (in the ``query`` argument's description)."""

    finds: str
    query: str


@dataclass(frozen=True, slots=True)
class SearchMode:
    """One ``match`` value and everything that reads it."""

    name: SearchMatch
    """The ``match`` value."""
    plan: SearchPlan
    """The steps a backend executes."""
    flag: CliFlag | None
    """The CLI flag choosing it, or ``None`` (the CLI's default needs none)."""
    model: ModelOffer | None
    """What the tools say of it, or ``None`` when models may not choose it."""
    fallback: SearchMatch | None
    """The mode the tools retry in when a query of several words finds nothing."""
    label: str
    """The viewer's name for it (its search form's choice)."""
    summary: str
    """The CLI's words for it, after a search's count ("as a phrase")."""


PHRASE = SearchMode(
    name="phrase",
    plan=SearchPlan(Words.AS_PHRASE, Order.SPANS),
    flag=CliFlag(
        "--phrase", "only events holding QUERY as one literal phrase (words adjacent, in order)"
    ),
    model=ModelOffer(
        finds="only {what} holding the exact phrase",
        query="an exact phrase whose words must appear adjacent and in this order",
    ),
    fallback="words",
    label="Exact phrase",
    summary="as a phrase",
)
"""The query as one literal phrase (SPEC §7), the library's default; a model's phrase of
several words that finds nothing is answered with the events holding all of them."""

WORDS = SearchMode(
    name="words",
    plan=SearchPlan(Words.EVERY, Order.SPANS),
    flag=CliFlag("--all-words", "only events holding every word of QUERY, in any order"),
    model=None,
    fallback=None,
    label="All words",
    summary="all words, any order",
)
"""Every word of the query somewhere in the event, in any order (SPEC §13.3); people choose
it, models reach it only as the phrase's fallback."""

RELEVANCE = SearchMode(
    name="relevance",
    plan=SearchPlan(Words.ANY, Order.RELEVANCE),
    flag=None,
    model=ModelOffer(
        finds="{what} holding any of its words, best answers first",
        query="a question or some words",
    ),
    fallback=None,
    label="Best match",
    summary="any of its words",
)
"""Any of the query's words, best answers first (SPEC §14.1): the default of the CLI, the
viewer and the tools."""

SEARCH_MODES: Final[tuple[SearchMode, ...]] = (PHRASE, WORDS, RELEVANCE)
"""Every search mode, in the order :data:`SearchMatch` spells them."""

_BY_NAME: Final = {mode.name: mode for mode in SEARCH_MODES}

SEARCH_MATCHES: Final = cast(tuple[SearchMatch, ...], tuple(_BY_NAME))
"""The accepted ``match`` values; anything else is ``INVALID_QUERY``."""

TOOL_MATCHES: Final = cast(
    tuple[ToolMatch, ...],
    tuple(
        sorted(
            (mode.name for mode in SEARCH_MODES if mode.model is not None),
            key=lambda name: name != TOOLS_MATCH,
        )
    ),
)
"""The ``match`` values a model may choose: :data:`TOOLS_MATCH` first, then the others in
:data:`SEARCH_MODES` order (the order :data:`ToolMatch` spells them)."""


def _listed(names: tuple[str, ...]) -> str:
    quoted = [f"'{name}'" for name in names]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def validate_match(match: object) -> SearchMatch:
    """``match`` if it is one of :data:`SEARCH_MATCHES`.

    Raises:
        SessionQueryError: ``INVALID_QUERY`` naming the accepted values.
    """
    if type(match) is str and match in _BY_NAME:
        return _BY_NAME[match].name
    raise SessionQueryError(
        ErrorCode.INVALID_QUERY,
        f"session-search match must be {_listed(SEARCH_MATCHES)}, not {match!r}",
    )


def search_mode(match: object) -> SearchMode:
    """The record of the mode named ``match``.

    Raises:
        SessionQueryError: ``INVALID_QUERY`` naming the accepted values.
    """
    return _BY_NAME[validate_match(match)]
