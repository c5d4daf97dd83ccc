"""A document's phrase occurrences read back from FTS5's ``bm25()``, without its text.

For a query of **one phrase whose tokens are all different**, two occurrences of the phrase
can never overlap (the second would have to start on one of the first's later tokens, which
would then equal its first token), so ``highlight()`` marks one span per occurrence and the
span count is the phrase's occurrence count ``f`` in the document. FTS5 computes ``bm25()``
in C from exactly that count, the document's token count ``D`` (its ``docsize`` record) and
table-wide constants (SQLite's ``fts5_aux.c``)::

    score = -idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl))
    k1 = 1.2, b = 0.75, avgdl = tokens / rows,
    idf = log((rows - hits + 0.5) / (hits + 0.5)), or 1e-6 when that is not positive

so ``f = K * s / (k1 + 1 - s)`` with ``s = -score / idf`` and ``K = k1 * (1 - b + b * D /
avgdl)``, rounded to the nearest integer. ``rows`` and ``tokens`` come from the FTS5
averages record, ``hits`` (documents matching the phrase) from one count. This reads no
document text, which is what ``highlight()`` spends its time on; results are compared with
``highlight()``'s in the tests, and were equal for every matching document of the 1M-event
benchmark corpus. Anything else (several phrases, a phrase with a repeated token) keeps
``highlight()``.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

from sessionquery.search.sqlite.query import TF_FUNCTION

__all__ = ["TableStats", "register", "table_stats"]

K1 = 1.2
B = 0.75


def _varint(blob: bytes, at: int = 0) -> tuple[int, int]:
    """The SQLite varint of ``blob`` at ``at`` and the offset after it."""
    value = 0
    for index in range(9):
        byte = blob[at]
        at += 1
        if index == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value, at


@dataclass(frozen=True, slots=True)
class TableStats:
    """What ``bm25()`` used for one FTS5 table and one phrase."""

    idf: float
    avgdl: float


def table_stats(conn: sqlite3.Connection, schema: str, fts: str, expression: str) -> TableStats:
    """The idf and average document length ``bm25()`` uses for ``expression`` on ``fts``."""
    row = conn.execute(f"SELECT block FROM {schema}.{fts}_data WHERE id = 1").fetchone()
    rows = tokens = 0
    if row is not None and row[0]:
        blob = bytes(row[0])
        rows, at = _varint(blob)
        tokens, _at = _varint(blob, at)
    (hits,) = conn.execute(
        f"SELECT count(*) FROM {schema}.{fts} WHERE {fts} MATCH ?", (expression,)
    ).fetchone()
    idf = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows else 0.0
    if idf <= 0.0:
        idf = 1e-6
    return TableStats(idf=idf, avgdl=tokens / rows if rows else 1.0)


def register(conn: sqlite3.Connection, persisted: TableStats, live: TableStats) -> None:
    """Define :data:`~sessionquery.search.sqlite.query.TF_FUNCTION` for one search."""

    def occurrences(score: float, docsize: bytes | None, is_live: int) -> int:
        stats = live if is_live else persisted
        size = _varint(bytes(docsize))[0] if docsize else 0
        k = K1 * (1 - B + B * size / stats.avgdl)
        ratio = -score / stats.idf
        return max(1, round(k * ratio / (K1 + 1 - ratio)))

    conn.create_function(TF_FUNCTION, 3, occurrences)
