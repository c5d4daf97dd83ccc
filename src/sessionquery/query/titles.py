"""Title snapshots of many sessions at once, with per-id failures kept per id.

Ids are deduplicated keeping their first occurrence; the result has one entry per unique id
in that order. Live ids fold their title from memory. The others share **one** persistence
listing and are read cold by a pool of at most ``concurrency`` worker threads; each worker
folds the title and lets go of the log before it takes the next id. A log in the prepared
cache gives its title from there; otherwise a persistence with its own title read
(:class:`~sessionquery.persistence.base.TitleSource`: the JSONL store) reads only the title
events, in bounded memory however large the log or one of its events; other persistences
are read whole. A failure of one id
(not found, corrupt, conflicting headers, a failed read) becomes that id's ``error``; a
failed listing becomes the error of every id it was needed for. Cancellation is the one
failure that is not per id: queued ids never start, started ones settle, then the whole call
raises ``ABORTED``.

A :class:`TitleMemo` remembers the title read of each persisted session for the revision it
was read at (and the persistence object it came from), so a long-running service (an MCP
server, a viewer) reads each transcript's title once per change instead of once per call: a
memo hit is observably identical to a fresh read of that revision, as a prepared-cache hit
is. Failures are never remembered.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence.base import PersistedSession
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.corpus import ServiceCorpus, not_found
from sessionquery.query.prepared import PreparedLog
from sessionquery.query.types import TitleResult

__all__ = ["TitleMemo", "read_titles", "unique_ids"]

MEMO_CAPACITY = 4096
"""Titles a :class:`TitleMemo` keeps by default (a header and a title each: a few MB)."""


class TitleMemo:
    """A thread-safe LRU of successful persisted title reads, by id, persistence and revision.

    Args:
        capacity: the number of sessions remembered (≥ 1).
    """

    def __init__(self, capacity: int = MEMO_CAPACITY) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[object, str, TitleResult]] = OrderedDict()

    def get(self, owner: object, listed: PersistedSession) -> TitleResult | None:
        """The remembered read of ``listed``'s session at its revision, if any."""
        session_id = listed.header.id
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is None or entry[0] is not owner or entry[1] != listed.revision:
                return None
            self._entries.move_to_end(session_id)
            return entry[2]

    def put(self, owner: object, listed: PersistedSession, result: TitleResult) -> None:
        """Remember ``result``, read from ``owner`` at ``listed``'s revision."""
        with self._lock:
            self._entries[result.session_id] = (owner, listed.revision, result)
            self._entries.move_to_end(result.session_id)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)


def unique_ids(ids: Iterable[str]) -> list[str]:
    """``ids`` without repeats, in first-occurrence order.

    Raises:
        TypeError: when ``ids`` is a bare string, not iterable, or holds a non-string.
    """
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise TypeError(f"ids must be an iterable of session id strings, not {ids!r}")
    seen: dict[str, None] = {}
    for item in ids:
        if not isinstance(item, str):
            raise TypeError(f"session ids must be strings, not {item!r}")
        seen.setdefault(item, None)
    return list(seen)


def _title_of(log: PreparedLog) -> TitleResult:
    return TitleResult(log.session_id, log.header, log.title(), None)


def _failed(session_id: str, error: SessionQueryError) -> TitleResult:
    return TitleResult(session_id, None, None, error)


def read_titles(
    corpus: ServiceCorpus,
    ids: Iterable[str],
    *,
    concurrency: int,
    cancel: CancelToken | None = None,
    memo: TitleMemo | None = None,
) -> list[TitleResult]:
    """One :class:`TitleResult` per unique id, in first-seen order (``memo``: the reads to
    reuse and to add to).

    Raises:
        SessionQueryError: ``ABORTED`` only; every other failure is reported per id.
        TypeError: for a malformed ``ids`` argument.
    """
    order = unique_ids(ids)
    check_cancel(cancel)
    results: dict[str, TitleResult] = {}
    cold: list[str] = []
    for session_id in order:
        live = corpus.live_log(session_id)
        if live is not None:
            results[session_id] = _title_of(live)
        else:
            cold.append(session_id)
    if cold:
        if corpus.persistence is None:
            for session_id in cold:
                results[session_id] = _failed(session_id, not_found(session_id))
        else:
            results.update(_read_cold(corpus, cold, concurrency, cancel, memo))
    check_cancel(cancel)
    return [results[session_id] for session_id in order]


def _read_cold(
    corpus: ServiceCorpus,
    ids: list[str],
    concurrency: int,
    cancel: CancelToken | None,
    memo: TitleMemo | None,
) -> dict[str, TitleResult]:
    try:
        listing = {entry.header.id: entry for entry in corpus.persisted_entries(ids, cancel)}
    except SessionQueryError as error:
        if error.code is ErrorCode.ABORTED:
            raise
        return {session_id: _failed(session_id, error) for session_id in ids}
    aborted: list[SessionQueryError] = []

    def work(session_id: str) -> TitleResult | None:
        if aborted or (cancel is not None and cancel.expired):
            return None
        try:
            return _read_one(corpus, session_id, listing.get(session_id), cancel, memo)
        except SessionQueryError as error:
            if error.code is ErrorCode.ABORTED:
                aborted.append(error)
                return None
            return _failed(session_id, error)

    workers = max(1, min(concurrency, len(ids)))
    from concurrent.futures import ThreadPoolExecutor  # only when titles are read in parallel

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sessionquery-title") as pool:
        outcomes = list(pool.map(work, ids))
    if aborted:
        raise aborted[0]
    check_cancel(cancel)
    return {
        session_id: outcome
        for session_id, outcome in zip(ids, outcomes, strict=True)
        if outcome is not None
    }


def _read_one(
    corpus: ServiceCorpus,
    session_id: str,
    listed: PersistedSession | None,
    cancel: CancelToken | None,
    memo: TitleMemo | None,
) -> TitleResult:
    if listed is None:
        # Not stored: it may have gone live since we looked.
        live = corpus.live_log(session_id)
        if live is None:
            raise not_found(session_id)
        return _title_of(live)
    owner = corpus.persistence
    remembered = None if memo is None else memo.get(owner, listed)
    if remembered is not None:
        live = corpus.live_log(session_id)
        return remembered if live is None else _title_of(live)
    header, title = corpus.persisted_title(session_id, listed, cancel)
    live = corpus.live_log(session_id)  # gone live while it was read: live wins
    if live is not None:
        return _title_of(live)
    result = TitleResult(session_id, header, title, None)
    if memo is not None and header.id == session_id:
        memo.put(owner, listed, result)
    return result
