"""Short session ids and the one resolver of what a person types for a session.

A person reads ids in ``list`` and types them back into any command (and into
``sessionquery mcp --session`` and the viewer's URLs). :class:`SessionIds` names every
session of one listing by a short id that names exactly it, and resolves what is typed: a
full id, a short id, or a unique start. Invariants: every short id resolves to its own
session; a start that names several sessions is :class:`AmbiguousId`, never a guess.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = ["SHORT_ID_MIN", "AmbiguousId", "Placed", "SessionIds"]

SHORT_ID_MIN = 8
"""The fewest characters of a root session's id its short id shows (the whole id if shorter)."""

_CANDIDATES_SHOWN = 10


class Placed(Protocol):
    """What short ids are found from: a session header, or an outline of one
    (:class:`~sessionquery.persistence.base.SessionOutline`)."""

    @property
    def id(self) -> str: ...

    @property
    def parent_session(self) -> str | None: ...

    @property
    def created_at(self) -> int: ...


class AmbiguousId(SessionQueryError):
    """Text that starts several session ids (code ``INVALID_CONFIG``).

    The command line reports it as a usage error; ``sessionquery mcp --session`` as the
    server's configuration problem.

    Attributes:
        text: what was typed.
        candidates: every id it starts, sorted.
    """

    def __init__(self, text: str, candidates: Sequence[str]) -> None:
        shown = ", ".join(candidates[:_CANDIDATES_SHOWN])
        extra = len(candidates) - _CANDIDATES_SHOWN
        more = f" and {extra} more" if extra > 0 else ""
        super().__init__(
            ErrorCode.INVALID_CONFIG,
            f"{text!r} is the start of {len(candidates)} session ids: {shown}{more}",
        )
        self.text = text
        self.candidates = tuple(candidates)


def _common(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def _unique_start(value: str, before: str | None, after: str | None, minimum: int) -> str:
    """The shortest start of ``value``, at least ``minimum`` long, that starts neither of its
    neighbours in sorted order (``None``: no neighbour on that side)."""
    need = minimum
    for other in (before, after):
        if other is not None:
            need = max(need, _common(value, other) + 1)
    return value[:need]


def _unique_prefixes(ids: Sequence[str], minimum: int) -> dict[str, str]:
    ordered = sorted(set(ids))
    last = len(ordered) - 1
    return {
        value: _unique_start(
            value,
            ordered[i - 1] if i > 0 else None,
            ordered[i + 1] if i < last else None,
            minimum,
        )
        for i, value in enumerate(ordered)
    }


_SEPARATORS = frozenset("-_.:/ ")
_WORD_EXTENSION = 8


def _readable(session_id: str, prefix: str) -> str:
    """``prefix`` of ``session_id`` grown to end at a word's end when that is cheap.

    A start ending in a separator (``billing-``) takes the next word; one ending inside a
    word takes the rest of it when that adds at most :data:`_WORD_EXTENSION` characters.
    Growing a unique start keeps it unique.
    """
    end = len(prefix)
    if prefix and prefix[-1] in _SEPARATORS:
        while end < len(session_id) and session_id[end] in _SEPARATORS:
            end += 1
        limit = len(session_id)
    else:
        limit = end + _WORD_EXTENSION
    stop = end
    while stop < len(session_id) and session_id[stop] not in _SEPARATORS:
        stop += 1
    return session_id[:stop] if stop <= limit else prefix


class SessionIds:
    """The session ids of one listing: a short id for each, and what typed text names.

    A **root** (a session without a parent in the listing) is shown by the shortest start of
    its id, at least :data:`SHORT_ID_MIN` characters, that no other root shares (grown to the
    end of a word when that is cheap: ``billing-rounding``, not ``billing-``); a session
    with a parent by its parent's short id, ``/`` and its number among that parent's children
    (oldest first, from 1): ``fe5e1c67``, ``fe5e1c67/2``, ``fe5e1c67/2/1``. A short id that
    would equal another session's full id is replaced by the full id, so every short id names
    exactly its session.

    :meth:`resolve` accepts, in this order: a full id; a short id; the start of exactly one
    root's id; the start of exactly one id.
    """

    def __init__(self, headers: Iterable[Placed]) -> None:
        self._headers = {header.id: header for header in headers}
        self._roots = sorted(
            session_id
            for session_id, header in self._headers.items()
            if header.parent_session is None or header.parent_session not in self._headers
        )
        self._root_set = frozenset(self._roots)
        self._siblings: dict[str, list[str]] | None = None
        self._memo: dict[str, str] = {}
        # What resolve() needs beyond full ids, built on its first use: a listing shows the
        # short ids of its page only, each found from its neighbours among the roots.
        self._ids: list[str] | None = None
        self._by_short: dict[str, str] | None = None

    @classmethod
    def of(cls, records: Iterable[Any]) -> SessionIds:
        """From anything carrying a ``header`` (session records, persisted sessions)."""
        return cls(record.header for record in records)

    def _children(self) -> dict[str, list[str]]:
        if self._siblings is None:
            children: dict[str, list[str]] = {}
            for session_id, header in self._headers.items():
                parent = header.parent_session
                if parent is not None and parent in self._headers:
                    children.setdefault(parent, []).append(session_id)
            for siblings in children.values():
                siblings.sort(key=lambda i: (self._headers[i].created_at, i))
            self._siblings = children
        return self._siblings

    def _root_short(self, root: str) -> str:
        roots = self._roots
        at = bisect.bisect_left(roots, root)
        before = roots[at - 1] if at > 0 else None
        after = roots[at + 1] if at + 1 < len(roots) else None
        return _readable(root, _unique_start(root, before, after, SHORT_ID_MIN))

    def _numbered(self, session_id: str) -> str | None:
        """The short id before clashes are checked: the root's start and each ancestor's
        number below it; ``None`` for a session whose parents never reach a root (a cycle)."""
        chain: list[str] = []
        current = session_id
        while current not in self._root_set:
            if current in chain:
                return None
            chain.append(current)
            parent = self._headers[current].parent_session
            assert parent is not None  # a session that is no root has a listed parent
            current = parent
        value = self._root_short(current)
        children = self._children()
        for child in reversed(chain):
            parent = self._headers[child].parent_session
            assert parent is not None
            value = f"{value}/{children[parent].index(child) + 1}"
        return value

    def short(self, session_id: str) -> str:
        """The short id of ``session_id`` (the id itself when it is not in the listing)."""
        known = self._memo.get(session_id)
        if known is not None:
            return known
        if session_id not in self._headers:
            return session_id
        value = self._numbered(session_id)
        # A parent cycle leaves no root to number from; a clash with a real id is refused.
        if value is None or (value != session_id and value in self._headers):
            value = session_id
        self._memo[session_id] = value
        return value

    def _every_short(self) -> dict[str, str]:
        """Every session's short id, found from the roots down (what :meth:`short` finds
        one at a time)."""
        starts = _unique_prefixes(self._roots, SHORT_ID_MIN)
        short = {root: _readable(root, start) for root, start in starts.items()}
        children = self._children()
        pending = list(self._roots)
        while pending:
            parent = pending.pop()
            for number, child in enumerate(children.get(parent, ()), start=1):
                short[child] = f"{short[parent]}/{number}"
                pending.append(child)
        for session_id in sorted(self._headers):
            value = short.get(session_id)
            if value is None or (value != session_id and value in self._headers):
                short[session_id] = session_id
        return short

    def _resolver(self) -> tuple[list[str], dict[str, str]]:
        if self._ids is None or self._by_short is None:
            every = self._every_short()
            self._memo = every
            self._ids = sorted(self._headers)
            self._by_short = {short: session_id for session_id, short in every.items()}
        return self._ids, self._by_short

    def resolve(self, text: str) -> str:
        """The full id that ``text`` names.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND`` when it names no session.
            AmbiguousId: when it starts several ids and names none of them otherwise.
        """
        if text in self._headers:
            return text
        ids, by_short = self._resolver()
        if text in by_short:
            return by_short[text]
        if text:
            roots = [value for value in self._roots if value.startswith(text)]
            if len(roots) == 1:
                return roots[0]
            matches = [value for value in ids if value.startswith(text)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise AmbiguousId(text, matches)
        raise SessionQueryError(
            ErrorCode.SESSION_NOT_FOUND, f"no session id is or starts with {text!r}"
        )
