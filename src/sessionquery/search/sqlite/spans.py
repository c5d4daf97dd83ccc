"""Locating the first match span of a long document in time linear in the document.

The snippet of a hit is cut around the first span ``highlight()`` marks. ``highlight()``
rebuilds its output string at every marker, so its cost grows with *spans times length*: a
4 MB tool output repeating the searched word took minutes. Documents up to
:data:`SMALL_DOCUMENT` code points keep ``highlight()`` (there the product is bounded and it
is the fastest way); longer ones are handled here. (Span *counts*, which rank every
candidate, come from FTS5's instance data instead: :func:`.db.match_spans`.)

1. The text is cut into pieces of about :data:`PIECE_CHARS` code points, each cut placed on an
   ASCII character that is neither a letter nor a digit. Such a character is a separator for
   ``unicode61``, so no token crosses a cut and the pieces' tokens, in order, are exactly the
   document's tokens.
2. Windows of two consecutive pieces go into a connection-local FTS5 table, a few at a time
   in document order (each batch twice the last), and are highlighted there; the first
   window whose first span starts in its first piece gives the offset.

Nothing re-implements the tokenizer: SQLite tokenises every piece with the index's own
``unicode61``. Every object lives in the TEMP schema of the connection.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.search.snippet import MATCH_MARK
from sessionquery.search.sqlite import db

__all__ = [
    "PIECE_CHARS",
    "SMALL_DOCUMENT",
    "Matcher",
    "Phrases",
    "first_span_offset",
    "install",
    "pieces",
]

SMALL_DOCUMENT = 8192
"""Documents up to this many code points are highlighted by ``highlight()`` whole."""

PIECE_CHARS = 4096
"""Target piece length (code points) for long documents."""

Phrases = Sequence[Sequence[str]]
"""A MATCH expression as its phrases' token lists (one phrase, or one token per word)."""

_WINDOWS = "sq_span_windows"
_WINDOW_TEXT = "sq_span_window_text"
_OPEN, _CLOSE = MATCH_MARK, "\ufdd1"
_MARKS = re.compile("[\ufdd0\ufdd1]")
_SETUP = (
    f"CREATE TEMP TABLE IF NOT EXISTS {_WINDOW_TEXT} (id INTEGER PRIMARY KEY, text TEXT)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WINDOWS} USING fts5(text, "
    f"content='{_WINDOW_TEXT}', content_rowid='id', tokenize='unicode61')",
)
_CUT = re.compile(r"[\s\x00-/:-@\[-`{-\x7f]")
"""Characters that are always ``unicode61`` separators: ASCII characters other than letters
and digits, and whitespace."""
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


def install(conn: db.Connection) -> None:
    """Create the TEMP scratch tables if they are missing (idempotent, cheap)."""
    for statement in _SETUP:
        conn.execute(statement)


@dataclass(frozen=True, slots=True)
class Matcher:
    """One search's MATCH expression, its phrases and its deadline."""

    expression: str
    phrases: tuple[tuple[str, ...], ...]
    cancel: CancelToken | None


def _window_marks(
    conn: db.Connection,
    text: str,
    expression: str,
    cancel: CancelToken | None,
    piece_chars: int,
) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """For each window of two consecutive pieces that matches, in document order: its
    piece number and its spans as ``highlight()`` marks them there, as document offsets
    ``(start, end)``.

    Windows are loaded and highlighted in batches of 4, 8, 16... pieces, so a caller that
    stops at the first span reads little when it is near the start. A window starts on a
    separator, so its tokens are the document's and its instances are instances of the
    document: every instance whose text fits in two pieces is seen in the window of the
    piece it starts in.
    """
    bounds = pieces(text, piece_chars)
    last = len(bounds) - 1
    install(conn)
    start, batch = 0, _FIRST_BATCH
    try:
        while start < last:
            stop = min(last, start + batch)
            _clear_windows(conn)
            rows = [(i, text[bounds[i] : bounds[min(i + 2, last)]]) for i in range(start, stop)]
            _load_windows(conn, rows, cancel)
            found: list[tuple[Any, ...]] = conn.execute(
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
            start, batch = stop, batch * 2
    finally:
        _clear_windows(conn)


def _clear_windows(conn: db.Connection) -> None:
    conn.execute(f"INSERT INTO temp.{_WINDOWS}({_WINDOWS}) VALUES ('delete-all')")
    conn.execute(f"DELETE FROM temp.{_WINDOW_TEXT}")


def _load_windows(
    conn: db.Connection, rows: Sequence[tuple[int, str]], cancel: CancelToken | None
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


def first_span_offset(
    conn: db.Connection,
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
    for number, marks in _window_marks(conn, text, expression, cancel, piece_chars):
        if marks and marks[0][0] < bounds[number + 1]:
            return marks[0][0]
    return -1
