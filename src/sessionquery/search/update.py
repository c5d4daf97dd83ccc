"""What bringing a search index up to date reports, the same for every backend.

Both backends reconcile their index with the corpus before each search and on demand
(``update``); they report what they did as one :class:`IndexUpdate` and their progress through
one :data:`ProgressCallback`, so callers (the CLI's ``index`` command, its progress bar) never
depend on which backend runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["IndexUpdate", "ProgressCallback"]

ProgressCallback = Callable[[int, int], None]
"""``progress(done, total)``: persisted sessions (re)indexed so far of those found stale."""


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What one reconciliation did.

    Attributes:
        skipped: nothing could have changed (same change token, same live lengths), so nothing
            was listed or read.
        persisted_indexed: persisted sessions (re)indexed.
        persisted_removed: persisted sessions dropped from the index.
        live_indexed: live sessions whose rows were written.
        live_removed: sessions that stopped being live.
        documents_written: documents inserted or re-classified.
    """

    skipped: bool = False
    persisted_indexed: int = 0
    persisted_removed: int = 0
    live_indexed: int = 0
    live_removed: int = 0
    documents_written: int = 0
