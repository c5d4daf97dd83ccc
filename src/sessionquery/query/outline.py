"""The outline of a session log, and windows of its events read without the rest.

:meth:`SessionQuery.read_outline` answers what a page of a huge session needs from the whole
log — its skeletons (:class:`~sessionquery.model.skeleton.EventSkeleton`: every event's
envelope and tool calls), the surface fold, the count — and
:meth:`SessionQuery.read_window` the whole events of a few seqs. A store whose read handle can
give skeletons (:class:`~sessionquery.persistence.base.SkeletonHandle`: the JSONL store) is
then read once for the skeletons, each line validated as strictly as a whole read, and
afterwards only at the lines asked for; any other store is read whole, as
:meth:`SessionQuery.read_session` reads it, and its outline derived from those events.

Invariants: an outline and a window describe exactly what :meth:`read_session` returns for the
same revision — the same events (crash-tail closers included), the same fold — and fail
exactly when it fails, with the same code; nothing is written; an :class:`OutlinedLog` keeps
its read handle open until it is discarded (:meth:`OutlinedLog.close`).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceError,
    SurfaceFold,
    fold_surface,
    interrupted_turn_closers,
)
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.model.surface import FoldEvent, rewrite_seqs
from sessionquery.persistence.base import SkeletonHandle

__all__ = ["LogOutline", "LogWindow", "OutlinedLog", "fold_failure"]

_CALLS = operator.attrgetter("calls")


@dataclass(frozen=True, slots=True)
class LogOutline:
    """Everything about one session log except its events' data.

    Attributes:
        session: the header.
        inherited_event_count: length of the inherited (seeded) prefix.
        skeletons: one per event, in seq order (crash-tail closers included, as
            :meth:`~sessionquery.SessionQuery.read_session` returns them).
        stored_event_count: how many of them are stored (the rest were added by the read).
        fold: the surface fold of the whole log.
        calls: tool call id → tool name, from each ``tool/call`` event, else from the
            ``tool-call`` block of the assistant message that made the call (first wins).
        logged_calls: the call ids that have a ``tool/call`` event.
        revision: the stored revision read (``None`` for a live session).
    """

    session: SessionHeader
    inherited_event_count: int
    skeletons: tuple[EventSkeleton, ...]
    stored_event_count: int
    fold: SurfaceFold
    calls: Mapping[str, str]
    logged_calls: frozenset[str]
    revision: str | None

    @property
    def event_count(self) -> int:
        """Events of the log as read (closers included)."""
        return len(self.skeletons)


@dataclass(frozen=True, slots=True)
class LogWindow:
    """Some whole events of a log, read with its outline.

    Attributes:
        outline: the outline of the log these events were read from.
        events: the events asked for, in the order asked.
    """

    outline: LogOutline
    events: tuple[SessionEvent, ...]


def _call_names(skeletons: Sequence[EventSkeleton]) -> tuple[dict[str, str], frozenset[str]]:
    logged: dict[str, str] = {}
    announced: list[tuple[str, str]] = []
    for skeleton in filter(_CALLS, skeletons):  # the few events that make calls
        if skeleton.type == "tool/call":
            logged.update(skeleton.calls)
        else:
            announced.extend(skeleton.calls)
    # The first announcement of an id wins: a dict keeps the last, so build it reversed.
    return {**dict(reversed(announced)), **logged}, frozenset(logged)


def _open_turn_start(skeletons: Sequence[EventSkeleton]) -> int | None:
    """The seq of the last ``turn/start`` when no ``turn/end`` follows it (the log ends inside
    that turn, and only its events decide the closers), else ``None``."""
    for skeleton in reversed(skeletons):
        if skeleton.type == "turn/end":
            return None
        if skeleton.type == "turn/start":
            return skeleton.seq
    return None


class OutlinedLog:
    """One log ready for outlines and windows: from whole events in memory, or from a read
    handle that gives skeletons (kept open until :meth:`close`).

    Build with :meth:`of_events` or :meth:`of_handle`. Errors of the store propagate as the
    store raises them (the corpus maps them); a fold failure is ``CORRUPT_SESSION`` (stored)
    or ``INVALID_SURFACE`` (live), remembered as a prepared log remembers it.
    """

    def __init__(
        self,
        header: SessionHeader,
        inherited: int,
        stored: Sequence[EventSkeleton],
        closers: Sequence[SessionEvent],
        *,
        events: Sequence[SessionEvent] | None,
        handle: SkeletonHandle | None,
        live: bool,
        revision: str | None,
    ) -> None:
        self.header = header
        self.inherited_event_count = inherited
        self._stored = len(stored)
        self._skeletons = tuple(stored) + tuple(EventSkeleton.of(c) for c in closers)
        self._closers = tuple(closers)
        self._events = events
        self._handle = handle
        self.live = live
        self.revision = revision
        self._lock = threading.Lock()
        self._outline: LogOutline | None = None
        self._fold_error: str | None = None

    @classmethod
    def of_events(
        cls,
        header: SessionHeader,
        inherited: int,
        events: Sequence[SessionEvent],
        *,
        live: bool,
        revision: str | None,
    ) -> OutlinedLog:
        """A log whose events (closers included, as read) are all in memory."""
        skeletons = [EventSkeleton.of(event) for event in events]
        return cls(
            header, inherited, skeletons, (), events=events, handle=None, live=live,
            revision=revision,
        )  # fmt: skip

    @classmethod
    def of_handle(cls, handle: SkeletonHandle, *, revision: str) -> OutlinedLog:
        """A stored log read through ``handle`` (which it then owns): every line's skeleton
        now, the crash-tail closers from the events of the open last turn.

        Raises:
            PersistenceCorrupt: (or the store's other errors) as a whole read would.
        """
        stored = handle.skeletons()
        start = _open_turn_start(stored)
        closers = interrupted_turn_closers(handle.read(start)) if start is not None else []
        return cls(
            handle.header,
            handle.inherited_event_count,
            stored,
            closers,
            events=None,
            handle=handle,
            live=False,
            revision=revision,
        )

    @property
    def session_id(self) -> str:
        """The session id."""
        return self.header.id

    @property
    def event_count(self) -> int:
        """Events of the log as read (closers included)."""
        return len(self._skeletons)

    def events(self, seqs: Sequence[int]) -> list[SessionEvent]:
        """The whole events at ``seqs`` (each ``0 <= seq < event_count``), in that order.

        Raises:
            PersistenceCorrupt: (or the store's other errors) when the store fails.
        """
        if self._events is not None:
            return [self._events[seq] for seq in seqs]
        found: dict[int, SessionEvent] = {}
        stored = sorted({seq for seq in seqs if seq < self._stored})
        run_start = 0
        for index in range(1, len(stored) + 1):
            if index == len(stored) or stored[index] != stored[index - 1] + 1:
                first = stored[run_start]
                assert self._handle is not None
                for event in self._handle.read(first, stored[index - 1] - first + 1):
                    found[event.seq] = event
                run_start = index
        for closer in self._closers:
            found[closer.seq] = closer
        return [found[seq] for seq in seqs]

    def outline(self) -> LogOutline:
        """The outline (folded once).

        Raises:
            SessionQueryError: ``CORRUPT_SESSION`` / ``INVALID_SURFACE`` when the log breaks a
                surface rule; the store's errors when reading a rewrite's events fails.
        """
        with self._lock:
            if self._outline is None and self._fold_error is None:
                try:
                    fold = self._fold()
                except SurfaceError as error:
                    self._fold_error = str(error)
                else:
                    calls, logged = _call_names(self._skeletons)
                    self._outline = LogOutline(
                        self.header,
                        self.inherited_event_count,
                        self._skeletons,
                        self._stored,
                        fold,
                        calls,
                        logged,
                        self.revision,
                    )
            if self._outline is not None:
                return self._outline
        raise fold_failure(self.session_id, live=self.live, error=self._fold_error)

    def _fold(self) -> SurfaceFold:
        if self._events is not None:
            return fold_surface(self._events)
        skeletons = self._skeletons
        needed = sorted(seq for seq in rewrite_seqs(skeletons) if seq < len(skeletons))
        if not needed:
            return fold_surface(skeletons)
        folded: list[FoldEvent] = list(skeletons)
        for event in self.events(needed):
            folded[event.seq] = event  # the skeleton at index seq is seq's (seqs run from 0)
        return fold_surface(folded)

    def close(self) -> None:
        """Close the read handle (if any); idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()


def fold_failure(session_id: str, *, live: bool, error: str | None) -> SessionQueryError:
    """What a log that does not fold is: ``INVALID_SURFACE`` when live, ``CORRUPT_SESSION``
    when stored (SPEC §6), for a prepared log and an outline alike."""
    if live:
        return SessionQueryError(
            ErrorCode.INVALID_SURFACE, f"session {session_id!r} has an invalid surface: {error}"
        )
    return SessionQueryError(
        ErrorCode.CORRUPT_SESSION, f"stored session {session_id!r} is corrupt: {error}"
    )
