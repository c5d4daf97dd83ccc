"""Reconciliation: bring the shared index up to date with the corpus before a search.

One reconciliation is durable passes (:mod:`.durable`, under the cross-process write lock)
followed by the live overlay (:mod:`.overlay`, this process only). Invariants:

* Durable rows mirror the persistence: a session is (re)indexed only when its revision differs
  from the indexed one, vanished sessions are deleted. A session live in this process is not
  read from persistence at all (its overlay rows shadow its durable rows, :mod:`.overlay`); it
  is remembered as *deferred* and checked again once it stops being live.
* **O(changed).** With an unchanged change token nothing is listed or read. When the token
  moved, a :class:`~sessionquery.persistence.base.ChangeJournal` names the changed ids and only
  those are looked up (``stat``) and re-read; a full listing happens only when the journal
  cannot answer, the store has no token, or this process has no base token yet and the index
  holds none that is complete.
* **Shared.** Durable writes happen only while holding the index's cross-process write lock
  (:class:`~.schema.WriteLock`), so one process indexes a change and every other one finds it
  indexed (equal revisions) instead of re-reading it. What must be shared lives in
  ``search_state``: the generation (cursors), the token of the last complete reconciliation
  and the progress of the current build.
* **Batched and resumable.** Documents are read outside any lock on the connection and
  written in batches (a few thousand documents, some megabytes of text, a quarter
  megabyte under a deadline, or a fraction of a second of reading), each batch one short
  ``BEGIN IMMEDIATE`` transaction that also records its sessions' revisions, so a committed
  session is always complete. An interrupt, a crash or a deadline keeps every committed
  batch, and the next reconciliation continues with what is still stale; searches in between
  see the committed part.
* **Deadlines hold.** Reading checks the deadline inside a log, and a batch write runs under
  the SQLite progress handler: on a deadline the batch under way (or the one read so far) may
  still commit within :data:`~.durable.WRITE_GRACE_SECONDS`, else it is rolled back whole and
  read again by the next reconciliation. So a reconciliation returns ``ABORTED`` within about
  100 ms of its deadline; what cannot be split is one document (FTS5 tokenises it in one
  step).
* A read that fails (``PERSISTENCE_FAILED``, ``CORRUPT_SESSION``...) discards the batch it was
  part of and raises; nothing half-written is ever committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sessionquery.persistence.base import PersistedSession
from sessionquery.query.backend import Corpus, LiveSnapshot, StatCorpus
from sessionquery.query.cancel import CancelToken
from sessionquery.query.corpus import busy, settle_attempts
from sessionquery.search.sqlite.durable import (
    BATCH_DOCUMENTS,
    BATCH_SECONDS,
    BATCH_TEXT,
    UNBOUND,
    DurablePass,
    IndexAccess,
    IndexState,
    keyed_token,
)
from sessionquery.search.sqlite.overlay import LiveOverlay, live_unchanged
from sessionquery.search.update import IndexUpdate, ProgressCallback

__all__ = [
    "BATCH_DOCUMENTS",
    "BATCH_SECONDS",
    "BATCH_TEXT",
    "CATCH_UP_PASSES",
    "IndexAccess",
    "IndexState",
    "reconcile",
]

CATCH_UP_PASSES: Final = 3
"""Durable passes one reconciliation makes while the store keeps changing under it."""


class _Lookup:
    """The persisted entry of each live id, for the overlay (compatibility, ``persisted``)."""

    def __init__(
        self,
        corpus: Corpus,
        state: IndexState,
        listing: dict[str, PersistedSession] | None,
        *,
        reuse: bool,
        cancel: CancelToken | None,
    ) -> None:
        self.corpus = corpus
        self.state = state
        self.listing = listing
        self.reuse = reuse
        self.cancel = cancel

    def __call__(self, sid: str) -> PersistedSession | None:
        if self.corpus.persistence is None:
            return None
        old = self.state.live.get(sid)
        if self.reuse and old is not None:  # nothing persisted changed since it was looked up
            return PersistedSession(old.header, "") if old.persisted else None
        corpus = self.corpus
        if isinstance(corpus, StatCorpus) and self.listing is None:
            return corpus.stat_persisted(sid, self.cancel)
        if self.listing is None:
            self.listing = {p.header.id: p for p in self.corpus.list_persisted(self.cancel)}
        return self.listing.get(sid)


def _durable(
    access: IndexAccess,
    state: IndexState,
    corpus: Corpus,
    *,
    cancel: CancelToken | None,
    progress: ProgressCallback | None,
    live_ids: frozenset[str],
    swapped: bool,
) -> list[DurablePass]:
    """Durable passes until the store held still during one.

    With a change token, a pass that ends at another token than it started from is followed
    by catch-up passes (each O(changed)), at most :data:`CATCH_UP_PASSES` in all; later changes
    are left to the next reconciliation, so a steady writer never fails a search. Without a
    token, passes repeat with growing pauses while the listing keeps changing, within the
    deadline (:func:`~sessionquery.query.corpus.settle_attempts`), then ``BUSY``.
    """
    passes: list[DurablePass] = []
    attempts = 0
    for attempts in settle_attempts(cancel):  # noqa: B007 - counted for the BUSY error
        with access.writing(cancel):
            work = DurablePass(
                access,
                state,
                corpus,
                cancel=cancel,
                progress=progress,
                live_ids=live_ids,
                swapped=swapped,
            )
            work.run()
        passes.append(work)
        state.token, swapped = work.token, False
        if work.raw_token is None:
            if work.settled:
                return passes
            swapped = True  # list again
        elif len(passes) >= CATCH_UP_PASSES or corpus.change_token() == work.raw_token:
            return passes
    if passes and passes[-1].raw_token is not None:
        return passes
    raise busy("the session store", attempts)


def reconcile(
    access: IndexAccess,
    state: IndexState,
    corpus: Corpus,
    cancel: CancelToken | None = None,
    progress: ProgressCallback | None = None,
) -> IndexUpdate:
    """Bring the index up to date with ``corpus``.

    A store that changes while it is reconciled is caught up with by further passes (each
    O(changed) with a change journal), at most :data:`CATCH_UP_PASSES` in all; what changes
    after that is left to the next reconciliation, so a steady writer never fails a search.
    A store without a change token whose listing keeps changing is observed again with
    growing pauses within the deadline, then ``BUSY``.

    Raises:
        SessionQueryError: ``BUSY`` (retryable: a store without a change token kept
            changing), ``PERSISTENCE_FAILED`` (storage errors), ``CORRUPT_SESSION``,
            ``SOURCE_CONFLICT``, ``ABORTED``, or ``INDEX_FAILED`` when a write fails
            (committed batches stay; the next search continues).
    """
    persistence = corpus.persistence
    rebound = persistence is not state.binding
    snapshots: Sequence[LiveSnapshot] = corpus.live_snapshots()
    live_ids = frozenset(snapshot.header.id for snapshot in snapshots)
    token = None if persistence is None else keyed_token(persistence, corpus.change_token())
    due = any(sid not in live_ids for sid in state.deferred)
    current = persistence is None or (
        not rebound and token is not None and token == state.token and not due
    )
    if current and not rebound and live_unchanged(state.live, state.live_dirty, snapshots):
        return IndexUpdate(skipped=True)
    passes: list[DurablePass] = []
    if not current:
        passes = _durable(
            access,
            state,
            corpus,
            cancel=cancel,
            progress=progress,
            live_ids=live_ids,
            swapped=rebound and state.binding is not UNBOUND,
        )
    listing = passes[-1].plan.listing if passes else None
    lookup = _Lookup(corpus, state, listing, reuse=current and not rebound, cancel=cancel)
    overlay = _overlay(access, state, snapshots, lookup, cancel)
    if rebound:
        state.epoch += 1
        state.binding = persistence
    if persistence is None:
        state.token = None
        state.deferred = frozenset()
    return IndexUpdate(
        persisted_indexed=sum(work.indexed for work in passes),
        persisted_removed=sum(len(work.plan.removed) for work in passes),
        live_indexed=overlay.indexed,
        live_removed=overlay.removed,
        documents_written=overlay.documents + sum(work.documents for work in passes),
    )


def _overlay(
    access: IndexAccess,
    state: IndexState,
    snapshots: Sequence[LiveSnapshot],
    lookup: _Lookup,
    cancel: CancelToken | None,
) -> LiveOverlay:
    with access.hold(cancel) as conn:
        overlay = LiveOverlay(
            conn, state.live, dirty=state.live_dirty, generation=state.live_generation + 1
        )
        try:
            overlay.run(snapshots, lookup, cancel)
            overlay.commit()
        except BaseException:
            state.live_dirty = True
            if conn.in_transaction:
                conn.set_progress_handler(None, 0)
                conn.execute("ROLLBACK")
            raise
    if overlay.begun:
        state.live_generation += 1
    state.live = overlay.live
    state.live_dirty = False
    return overlay
