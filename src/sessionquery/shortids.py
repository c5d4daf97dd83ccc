"""Short session ids and the one resolver of what a person types for a session.

A person reads ids in ``list`` and types them back into any command (and into
``sessionquery mcp --session`` and the viewer's URLs). :class:`SessionIds` names every
session of one listing by a short id that names exactly it, and resolves what is typed: a
full id, a short id, or a unique start. Invariants: every short id resolves to its own
session; a start that names several sessions is :class:`AmbiguousId`, never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sessionquery.errors import ErrorCode, SessionQueryError

if TYPE_CHECKING:
    from sessionquery.model import SessionHeader

__all__ = ["SHORT_ID_MIN", "AmbiguousId", "SessionIds"]

SHORT_ID_MIN = 8
"""The fewest characters of a root session's id its short id shows (the whole id if shorter)."""

_CANDIDATES_SHOWN = 10


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


def _unique_prefixes(ids: Sequence[str], minimum: int) -> dict[str, str]:
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for position, value in enumerate(ordered):
        need = minimum
        for other in (position - 1, position + 1):
            if 0 <= other < len(ordered):
                need = max(need, _common(value, ordered[other]) + 1)
        out[value] = value[:need]
    return out


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

    def __init__(self, headers: Iterable[SessionHeader]) -> None:
        self._headers = {header.id: header for header in headers}
        self._ids = sorted(self._headers)
        self._roots = sorted(
            session_id
            for session_id, header in self._headers.items()
            if header.parent_session is None or header.parent_session not in self._headers
        )
        self._short = self._short_ids()
        self._by_short = {short: session_id for session_id, short in self._short.items()}

    @classmethod
    def of(cls, records: Iterable[Any]) -> SessionIds:
        """From anything carrying a ``header`` (session records, persisted sessions)."""
        return cls(record.header for record in records)

    def _children(self) -> dict[str, list[str]]:
        children: dict[str, list[str]] = {}
        for session_id, header in self._headers.items():
            parent = header.parent_session
            if parent is not None and parent in self._headers:
                children.setdefault(parent, []).append(session_id)
        for siblings in children.values():
            siblings.sort(key=lambda i: (self._headers[i].created_at, i))
        return children

    def _short_ids(self) -> dict[str, str]:
        starts = _unique_prefixes(self._roots, SHORT_ID_MIN)
        short = {root: _readable(root, start) for root, start in starts.items()}
        children = self._children()
        pending = list(self._roots)
        while pending:
            parent = pending.pop()
            for number, child in enumerate(children.get(parent, ()), start=1):
                short[child] = f"{short[parent]}/{number}"
                pending.append(child)
        for session_id in self._ids:
            value = short.get(session_id)
            # A parent cycle leaves no root to number from; a clash with a real id is refused.
            if value is None or (value != session_id and value in self._headers):
                short[session_id] = session_id
        return short

    def short(self, session_id: str) -> str:
        """The short id of ``session_id`` (the id itself when it is not in the listing)."""
        return self._short.get(session_id, session_id)

    def resolve(self, text: str) -> str:
        """The full id that ``text`` names.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND`` when it names no session.
            AmbiguousId: when it starts several ids and names none of them otherwise.
        """
        if text in self._headers:
            return text
        if text in self._by_short:
            return self._by_short[text]
        if text:
            roots = [value for value in self._roots if value.startswith(text)]
            if len(roots) == 1:
                return roots[0]
            matches = [value for value in self._ids if value.startswith(text)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise AmbiguousId(text, matches)
        raise SessionQueryError(
            ErrorCode.SESSION_NOT_FOUND, f"no session id is or starts with {text!r}"
        )
