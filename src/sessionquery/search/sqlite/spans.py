"""Match spans of long documents, counted and located in time linear in the document.

SPEC §7 ranks by the number of match spans ``highlight()`` marks, and cuts the snippet around
the first one. ``highlight()`` rebuilds its output string at every marker (SQLite 3.40), so
its cost grows with *spans times length*: a 4 MB tool output repeating the searched word took
minutes. Documents up to :data:`SMALL_DOCUMENT` code points keep ``highlight()`` (there the
product is bounded and it is the fastest way); longer ones are handled here:

1. The text is cut into pieces of about :data:`PIECE_CHARS` code points, each cut placed on an
   ASCII character that is neither a letter nor a digit. Such a character is a separator for
   ``unicode61``, so no token crosses a cut and the pieces' tokens, in order, are exactly the
   document's tokens.
2. The pieces go into a connection-local contentless FTS5 table (one row each, one statement
   each, so a deadline is checked between pieces) and their token positions are read back
   through its ``instance`` vocabulary. Positions are made document-wide with each piece's
   token count (its ``docsize`` record).
3. Spans follow ``highlight()``'s rule: phrase instances in position order, an instance that
   starts at or before the end of the current span extends it. The first span is located by
   highlighting only the pieces it covers.

Nothing re-implements the tokenizer: SQLite tokenises every piece with the index's own
``unicode61``. Every object lives in the TEMP schema of the connection.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.search.sqlite.snippet import MATCH_MARK

__all__ = [
    "PIECE_CHARS",
    "SMALL_DOCUMENT",
    "SPANS_FUNCTION",
    "Matcher",
    "Phrases",
    "count_spans",
    "first_span_offset",
    "install",
    "pieces",
    "register",
]

SPANS_FUNCTION = "sq_spans"
"""SQL function ``sq_spans(rowid, live)``: the span count of one long document."""

SMALL_DOCUMENT = 8192
"""Documents up to this many code points are counted and highlighted by ``highlight()``."""

PIECE_CHARS = 4096
"""Target piece length (code points) for long documents."""

Phrases = Sequence[Sequence[str]]
"""A MATCH expression as its phrases' token lists (one phrase, or one token per word)."""

_SCRATCH = "sq_span_pieces"
_SCRATCH_TOTALS = "sq_span_pieces_totals"
_WINDOWS = "sq_span_windows"
_WINDOW_TEXT = "sq_span_window_text"
_OPEN, _CLOSE = MATCH_MARK, "\ufdd1"
_MARKS = re.compile("[\ufdd0\ufdd1]")
_WINDOW_BATCH = 64
"""Windows loaded and highlighted per statement when counting a phrase's spans."""
_SETUP = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_SCRATCH} "
    "USING fts5(text, content='', tokenize='unicode61')",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_SCRATCH_TOTALS} "
    f"USING fts5vocab(temp, {_SCRATCH}, row)",
    f"CREATE TEMP TABLE IF NOT EXISTS {_WINDOW_TEXT} (id INTEGER PRIMARY KEY, text TEXT)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WINDOWS} USING fts5(text, "
    f"content='{_WINDOW_TEXT}', content_rowid='id', tokenize='unicode61')",
)
_CUT = re.compile(r"[\s\x00-/:-@\[-`{-\x7f]")
"""Characters that are always ``unicode61`` separators: ASCII characters other than letters
and digits, and whitespace."""
_CHECK_EVERY = 65_536
"""Python loop iterations between two looks at the deadline."""
_FIRST_BATCH = 4
"""Pieces tried first when looking for the first span; each further batch is twice larger."""


def pieces(text: str, size: int = PIECE_CHARS) -> list[int]:
    """Cut offsets ``[0, c1, ..., len(text)]``; each ``text[c_i]`` (``0 < i < last``) is a
    separator, so no token crosses a cut.

    A piece is cut at the last space or newline in the second half of its ``size`` code
    points when there is one, else at the first separator after them; text without any
    separator there stays in one piece.
    """
    bounds = [0]
    start, n = 0, len(text)
    while n - start > size:
        end = start + size
        cut = max(text.rfind(" ", start + size // 2, end), text.rfind("\n", start + size // 2, end))
        if cut <= start:
            found = _CUT.search(text, end)
            if found is None:
                break
            cut = found.start()
        bounds.append(cut)
        start = cut
    bounds.append(n)
    return bounds


def install(conn: sqlite3.Connection) -> None:
    """Create the TEMP scratch tables if they are missing (idempotent, cheap)."""
    for statement in _SETUP:
        conn.execute(statement)


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (a ``docsize`` record holds one per column)."""
    value = 0
    for index, byte in enumerate(blob[:9]):
        if index == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


@dataclass(frozen=True, slots=True)
class Matcher:
    """One search's MATCH expression, its phrases and its deadline."""

    expression: str
    phrases: tuple[tuple[str, ...], ...]
    cancel: CancelToken | None


def _clear(conn: sqlite3.Connection, table: str) -> None:
    conn.execute(f"INSERT INTO temp.{table}({table}) VALUES ('delete-all')")


def _load(
    conn: sqlite3.Connection,
    table: str,
    rows: Sequence[tuple[int, str]],
    cancel: CancelToken | None,
) -> None:
    """Insert ``rows`` into a contentless scratch table in one savepoint (FTS5 then writes
    one segment, not one per row), checking the deadline between rows."""
    conn.execute("SAVEPOINT sq_spans")
    try:
        for rowid, text in rows:
            check_cancel(cancel)
            conn.execute(f"INSERT INTO temp.{table} (rowid, text) VALUES (?, ?)", (rowid, text))
    except BaseException:
        conn.execute("ROLLBACK TO sq_spans")
        conn.execute("RELEASE sq_spans")
        raise
    conn.execute("RELEASE sq_spans")


class _Scratch:
    """One long document loaded into the scratch table, one row per piece."""

    def __init__(
        self, conn: sqlite3.Connection, text: str, cancel: CancelToken | None, piece_chars: int
    ) -> None:
        self.conn = conn
        self.cancel = cancel
        bounds = pieces(text, piece_chars)
        install(conn)
        _clear(conn, _SCRATCH)
        rows = [(i, text[bounds[i] : bounds[i + 1]]) for i in range(len(bounds) - 1)]
        _load(conn, _SCRATCH, rows, cancel)
        self.count_pieces = len(rows)

    def close(self) -> None:
        _clear(self.conn, _SCRATCH)

    def total(self, tokens: Sequence[str]) -> int:
        """Instances of ``tokens`` in the document (summed by FTS5, no row per instance)."""
        marks = ", ".join("?" for _ in tokens)
        (count,) = self.conn.execute(
            f"SELECT coalesce(sum(cnt), 0) FROM temp.{_SCRATCH_TOTALS} WHERE term IN ({marks})",
            tuple(tokens),
        ).fetchone()
        return int(count)


def _window_marks(
    conn: sqlite3.Connection,
    text: str,
    expression: str,
    cancel: CancelToken | None,
    piece_chars: int,
    *,
    doubling: bool,
) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """For each window of two consecutive pieces that matches, in document order: its
    piece number and its spans as ``highlight()`` marks them there, as document offsets
    ``(start, end)``.

    Windows are loaded and highlighted in batches (``doubling``: 4, 8, 16... pieces, for a
    caller that may stop at the first span; else a fixed batch). A window starts on a
    separator, so its tokens are the document's and its instances are instances of the
    document: every instance whose text fits in two pieces is seen in the window of the
    piece it starts in.
    """
    bounds = pieces(text, piece_chars)
    last = len(bounds) - 1
    install(conn)
    start, batch = 0, (_FIRST_BATCH if doubling else _WINDOW_BATCH)
    try:
        while start < last:
            stop = min(last, start + batch)
            _clear_windows(conn)
            rows = [(i, text[bounds[i] : bounds[min(i + 2, last)]]) for i in range(start, stop)]
            _load_windows(conn, rows, cancel)
            found = conn.execute(
                f"SELECT rowid, highlight({_WINDOWS}, 0, ?, ?) FROM temp.{_WINDOWS} "
                f"WHERE {_WINDOWS} MATCH ? ORDER BY rowid",
                (_OPEN, _CLOSE, expression),
            ).fetchall()
            for rowid, marked in found:
                check_cancel(cancel)
                number, offset, spans, opened = int(rowid), bounds[int(rowid)], [], 0
                for index, mark in enumerate(_MARKS.finditer(str(marked))):
                    plain = offset + mark.start() - index  # markers before it are not text
                    if mark.group() == _OPEN:
                        opened = plain
                    else:
                        spans.append((opened, plain))
                yield number, spans
            start = stop
            if doubling:
                batch *= 2
    finally:
        _clear_windows(conn)


def _clear_windows(conn: sqlite3.Connection) -> None:
    conn.execute(f"INSERT INTO temp.{_WINDOWS}({_WINDOWS}) VALUES ('delete-all')")
    conn.execute(f"DELETE FROM temp.{_WINDOW_TEXT}")


def _load_windows(
    conn: sqlite3.Connection, rows: Sequence[tuple[int, str]], cancel: CancelToken | None
) -> None:
    conn.execute("SAVEPOINT sq_spans")
    try:
        for rowid, text in rows:
            check_cancel(cancel)
            conn.execute(f"INSERT INTO temp.{_WINDOW_TEXT} (id, text) VALUES (?, ?)", (rowid, text))
            conn.execute(f"INSERT INTO temp.{_WINDOWS} (rowid, text) VALUES (?, ?)", (rowid, text))
    except BaseException:
        conn.execute("ROLLBACK TO sq_spans")
        conn.execute("RELEASE sq_spans")
        raise
    conn.execute("RELEASE sq_spans")


def _phrase_spans(
    conn: sqlite3.Connection,
    text: str,
    expression: str,
    cancel: CancelToken | None,
    piece_chars: int,
) -> int:
    """Spans of a multi-token phrase: each window's spans that start in its first piece,
    merged across windows as ``highlight()`` merges overlapping instances (two spans
    overlap when they share a token, so when one starts before the other ends)."""
    bounds = pieces(text, piece_chars)
    count, end = 0, -1
    windows = _window_marks(conn, text, expression, cancel, piece_chars, doubling=False)
    for number, marks in windows:
        for start, stop in marks:
            if start >= bounds[number + 1]:
                break  # starts in the next piece: that piece's window has it whole
            if start >= end:
                count += 1
            end = max(end, stop)
    return count


def count_spans(
    conn: sqlite3.Connection,
    text: str,
    expression: str,
    phrases: Phrases,
    cancel: CancelToken | None,
    *,
    piece_chars: int = PIECE_CHARS,
) -> int:
    """The number of spans ``highlight()`` would mark in ``text`` for ``expression`` (whose
    phrases' tokens are ``phrases``)."""
    if not phrases or any(not phrase for phrase in phrases):
        return 0
    if any(len(phrase) > 1 for phrase in phrases):
        return _phrase_spans(conn, text, expression, cancel, piece_chars)
    # Single-token phrases: each instance is one position, distinct tokens never share one,
    # so every instance is a span of its own, and FTS5 sums them without a row each.
    scratch = _Scratch(conn, text, cancel, piece_chars)
    try:
        return scratch.total(list(dict.fromkeys(phrase[0] for phrase in phrases)))
    finally:
        scratch.close()


def first_span_offset(
    conn: sqlite3.Connection,
    text: str,
    expression: str,
    cancel: CancelToken | None,
    *,
    piece_chars: int = PIECE_CHARS,
) -> int:
    """The code-point offset in ``text`` of the first span's start (``-1`` if none).

    Windows are tried in document order, in batches that double, so a match near the start
    is found after reading little; the first window whose first span starts in its first
    piece gives the offset. A match whose text does not fit in two pieces (a phrase whose
    words are thousands of punctuation characters apart) may be passed over in favour of
    the next one.
    """
    bounds = pieces(text, piece_chars)
    for number, marks in _window_marks(conn, text, expression, cancel, piece_chars, doubling=True):
        if marks and marks[0][0] < bounds[number + 1]:
            return marks[0][0]
    return -1


def register(conn: sqlite3.Connection, matcher: Matcher) -> None:
    """Define :data:`SPANS_FUNCTION` on ``conn`` for one search.

    The function reads the document's stored text (``temp.live_rows`` when ``live`` is 1,
    else ``main.doc_rows``) and counts it with :func:`count_spans`. An expired deadline
    raises inside it, which fails the running statement; the caller maps that to
    ``ABORTED``.
    """

    def spans_of(rowid: int, live: int) -> int:
        table = "temp.live_rows" if live else "main.doc_rows"
        row = conn.execute(f"SELECT text FROM {table} WHERE id = ?", (rowid,)).fetchone()
        if row is None:
            return 0
        return count_spans(conn, str(row[0]), matcher.expression, matcher.phrases, matcher.cancel)

    conn.create_function(SPANS_FUNCTION, 2, spans_of)
