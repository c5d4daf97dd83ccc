"""The live store: sessions being recorded in this process.

A :class:`SessionStore` holds the sessions that are *live*: created (or forked) here and not
yet closed. Each :class:`Session` is an append-only event log with these invariants:

* seqs are contiguous from 0 and assigned by :meth:`Session.append`; times come from the
  store's clock and never decrease;
* every event is validated before it is recorded (lossless JSON, and the surface rules via one
  incremental :class:`~sessionquery.model.SurfaceFolder` per session, amortised O(1) per
  append), so ``fold_surface(session.events)`` always succeeds; a refused append changes
  nothing;
* :attr:`Session.events` is an immutable snapshot: an O(1) read-only view of the log cut at
  its length when taken. Later appends never change a snapshot already handed out;
* with a persistence, events are written behind: each append hands the event to the session's
  write handle (buffered), and :meth:`SessionStore.flush`, :meth:`SessionStore.close` and every
  ``turn/end`` append return only once every event up to that point is on disk. A write
  failure is raised from the flush that hits it; the events stay buffered in the handle and in
  memory, and a later flush retries.

Subscribers (:meth:`SessionStore.subscribe`) receive a :class:`StoreChange` for every created,
appended and closed session, in order per session, always after the store's locks are
released; an exception in a subscriber is logged and never breaks the operation that caused it.

The package is split by concept, and its public API is exactly ``__all__`` below: ``_view``
(:class:`EventLogView`), ``_changes`` (:class:`StoreChange` and in-order delivery),
``_session`` (:class:`Session`) and ``_store`` (:class:`SessionStore`).
"""

from sessionquery.live._changes import StoreChange, StoreChangeKind
from sessionquery.live._session import Session, SessionClosed
from sessionquery.live._store import SessionStore, WritablePersistence
from sessionquery.live._view import EventLogView

__all__ = [
    "EventLogView",
    "Session",
    "SessionClosed",
    "SessionStore",
    "StoreChange",
    "StoreChangeKind",
    "WritablePersistence",
]
