"""The SQLite binding of the index: APSW, with the few helpers the index modules share.

The index runs on `APSW <https://rogerbinns.github.io/apsw/>`_ rather than the standard
``sqlite3`` module for one reason: SPEC §7 ranks by each document's number of match spans,
and APSW exposes FTS5's extension API to Python, so that count comes from the index's own
position lists (:func:`match_spans`), without reading or re-tokenising any text. With
``sqlite3`` the only ways were ``highlight()`` (re-tokenises every matching document; its
cost grows with spans times length) or grouping the ``fts5vocab`` instance rows per document
(a sort of every occurrence). On the 1M-event benchmark corpus counting the commonest word
in its 278,263 documents takes 47 ms this way against 243 ms and 886 ms (docs/search.md).
APSW also bundles a current SQLite, so every installation runs the same FTS5.

Everything else stays plain SQL. Differences from ``sqlite3`` that the index relies on:
there are no implicit transactions (every ``BEGIN`` is explicit, as the index always did);
an exception raised by a Python function inside a statement propagates as itself; an
interrupted statement raises :class:`apsw.InterruptError`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import apsw
import apsw.fts5

__all__ = [
    "Connection",
    "Damaged",
    "Error",
    "connect",
    "install_functions",
    "match_spans",
    "one",
    "spans_of",
]

Connection = apsw.Connection
Bindings = Sequence[Any] | Mapping[str, Any]
"""Statement parameters, positional or named."""
Error = apsw.Error
"""Every error the binding raises (the ``sqlite3.Error`` of this module)."""


class Damaged(apsw.CorruptError):
    """Raised by the index itself when a structure it reads is not what it wrote."""


MATCH_SPANS = "sq_match_spans"
"""FTS5 auxiliary function ``sq_match_spans(fts_table, overlapping)``: the number of match
spans ``highlight()`` would mark in the current row. ``overlapping`` is 0 when no two
instances of the query's phrases can share a token (every phrase's tokens are distinct and
the phrases are single tokens or a single phrase), which makes the count the number of
instances; 1 merges overlapping instances as ``highlight()`` does."""


BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another connection's lock before ``BusyError``."""


def connect(path: str) -> apsw.Connection:
    """A connection to ``path`` (created if missing) with the index's functions installed.

    The FTS5 functions are installed by a first statement (SQLite hands out its FTS5 API
    through a query), so a file that is not a database fails here with SQLite's own
    "file is not a database"."""
    conn = apsw.Connection(path)
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)  # before the first statement reads the file
        conn.execute("PRAGMA main.schema_version").fetchall()
        install_functions(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def spans_of(instances: Sequence[tuple[int, int]]) -> int:
    """Spans marked over ``instances`` (``(first, last)`` token positions of each phrase
    instance): sorted by start, an instance that starts at or before the end of the current
    span extends it, any other starts a new one (FTS5's ``highlight()`` rule)."""
    count, end = 0, -1
    for first, last in sorted(instances):
        if first > end:
            count += 1
            end = last
        elif last > end:
            end = last
    return count


def match_spans(api: apsw.FTS5ExtensionApi, *args: apsw.SQLiteValue) -> int:
    """The FTS5 auxiliary function :data:`MATCH_SPANS` (see there)."""
    if args and not args[0]:
        return api.inst_count
    phrases = api.phrases
    if len(phrases) == 1:
        # One phrase: its instances in a column come in position order and all have the
        # same width, so an instance starts a new span exactly when it starts after the
        # previous one ends.
        width = len(phrases[0]) - 1
        count = 0
        for offsets in api.phrase_locations(0):
            if offsets:
                count += 1 + sum(1 for a, b in itertools.pairwise(offsets) if b - a > width)
        return count
    instances: list[tuple[int, int]] = []
    for number, tokens in enumerate(phrases):
        width = len(tokens) - 1
        for column in api.phrase_locations(number):
            instances.extend((offset, offset + width) for offset in column)
    return spans_of(instances)


def install_functions(conn: apsw.Connection) -> None:
    """Register the index's FTS5 auxiliary functions on ``conn`` (every FTS5 table of the
    connection, TEMP ones included, can use them)."""
    conn.register_fts5_function(MATCH_SPANS, match_spans)


def overlapping(phrases: Sequence[Sequence[str]]) -> int:
    """``1`` when instances of ``phrases`` may overlap (see :data:`MATCH_SPANS`), else ``0``.

    Single-token phrases of distinct tokens never share a position. A single phrase whose
    tokens are all distinct cannot overlap itself: a second instance starting inside the
    first would need the phrase's first token at a later position of the phrase."""
    if all(len(phrase) == 1 for phrase in phrases):
        return int(len({phrase[0] for phrase in phrases}) != len(phrases))
    if len(phrases) == 1:
        return int(len(set(phrases[0])) != len(phrases[0]))
    return 1


def one(conn: apsw.Connection, sql: str, params: Bindings = ()) -> tuple[Any, ...]:
    """The first row of ``sql`` (a statement that always yields one, such as an aggregate).

    Raises:
        Damaged: it yielded none (a table of the index lost its row).
    """
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise Damaged(f"the index returned no row for {sql.split(' FROM ', maxsplit=1)[0]!r}")
    return tuple(row)
