"""A prepared session log: one loaded log plus the projections the read operations need.

A :class:`PreparedLog` wraps a header, the inherited prefix length and an immutable sequence
of events (for a persisted log: the stored events followed by the crash-tail closers added in
memory). The expensive projections — the surface fold, the semantic texts, the title and the
citation index — are computed lazily, at most once per prepared log, under a per-log lock, so
a cached persisted log is never re-folded while its revision is unchanged.

Invariants: the events are never modified; a fold failure is remembered (and re-raised as a
fresh error on every use) so a broken log is not re-folded either. A fold failure of a live
log is ``INVALID_SURFACE``; of a stored log it is ``CORRUPT_SESSION`` (SPEC §6: "a fold
failure of a stored log").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    SurfaceError,
    SurfaceFold,
    TitleSnapshot,
    extract_event_text,
    fold_surface,
    fold_title,
)
from sessionquery.query.outline import OutlinedLog, fold_failure

__all__ = ["PreparedLog"]


class PreparedLog:
    """One loaded session log with lazily computed, memoised projections.

    Args:
        header: the session header.
        inherited_event_count: length of the inherited (seeded) prefix.
        events: the whole log in seq order; never modified.
        live: whether the log comes from the live store (affects the fold error code).
    """

    __slots__ = (
        "_citations",
        "_fold",
        "_fold_error",
        "_lock",
        "_outlined",
        "_texts",
        "_title",
        "_title_done",
        "events",
        "header",
        "inherited_event_count",
        "live",
    )

    def __init__(
        self,
        header: SessionHeader,
        inherited_event_count: int,
        events: Sequence[SessionEvent],
        *,
        live: bool,
    ) -> None:
        self.header = header
        self.inherited_event_count = inherited_event_count
        self.events = events
        self.live = live
        self._lock = threading.Lock()
        self._fold: SurfaceFold | None = None
        self._fold_error: str | None = None
        self._texts: tuple[str, ...] | None = None
        self._title: TitleSnapshot | None = None
        self._title_done = False
        self._citations: dict[int, tuple[int, ...]] | None = None
        self._outlined: OutlinedLog | None = None

    @property
    def session_id(self) -> str:
        """The session id."""
        return self.header.id

    def event_at(self, seq: object) -> SessionEvent | None:
        """The event with this seq, or ``None`` (also for a non-integer ``seq``)."""
        if type(seq) is not int or not 0 <= seq < len(self.events):
            return None
        event = self.events[seq]
        return event if event.seq == seq else None

    def fold(self) -> SurfaceFold:
        """The surface fold of the whole log (computed once).

        Raises:
            SessionQueryError: ``INVALID_SURFACE`` for a live log, ``CORRUPT_SESSION`` for a
                stored one, when the log breaks a surface rule.
        """
        with self._lock:
            if self._fold is None and self._fold_error is None:
                try:
                    self._fold = fold_surface(self.events)
                except SurfaceError as error:
                    self._fold_error = str(error)
            if self._fold is not None:
                return self._fold
        raise fold_failure(self.session_id, live=self.live, error=self._fold_error)

    def texts(self) -> tuple[str, ...]:
        """The semantic text of every event, indexed by seq (computed once)."""
        with self._lock:
            if self._texts is None:
                self._texts = tuple(extract_event_text(event) for event in self.events)
            return self._texts

    def title(self) -> TitleSnapshot | None:
        """The session's title (last ``session/title`` wins), computed once."""
        with self._lock:
            if not self._title_done:
                self._title = fold_title(self.events)
                self._title_done = True
            return self._title

    def derived_of(self, seq: int) -> tuple[int, ...]:
        """Seqs of later events whose ``source_event_seqs`` cite ``seq``, in log order."""
        with self._lock:
            if self._citations is None:
                citing: dict[int, list[int]] = {}
                for event in self.events:
                    for source in event.source_event_seqs or ():
                        if source < event.seq:
                            citing.setdefault(source, []).append(event.seq)
                self._citations = {key: tuple(value) for key, value in citing.items()}
            return self._citations.get(seq, ())

    def outlined(self, revision: str | None) -> OutlinedLog:
        """This log as an :class:`~sessionquery.query.outline.OutlinedLog` (built once; its
        ``revision`` is the one given first, the revision this prepared log was read at)."""
        with self._lock:
            if self._outlined is None:
                self._outlined = OutlinedLog.of_events(
                    self.header,
                    self.inherited_event_count,
                    self.events,
                    live=self.live,
                    revision=None if self.live else revision,
                )
            return self._outlined
