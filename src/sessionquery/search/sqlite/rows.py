"""Index rows: how one session's documents become rows of a document table and its FTS5 index.

A row id is ``session_key << SEQ_BITS | seq``, so every row of one session lies in one id
range (:func:`key_range`). Text is sanitised (:func:`~.snippet.sanitize_text`) before it is
stored and its length is the code-point count of the stored text. The durable tables
(``main.doc_rows``/``doc_fts``), the titles (``main.title_rows``/``title_fts``) and their
connection-local live twins share this layout (:data:`DURABLE`, :data:`LIVE`,
:data:`TITLES`, :data:`LIVE_TITLES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionEvent, SurfaceFolder, extract_event_text
from sessionquery.persistence.base import TextDocument
from sessionquery.persistence.documents import title_documents
from sessionquery.search.snippet import sanitize_text
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.query import SEQ_BITS, SEQ_MASK

__all__ = [
    "DURABLE",
    "LIVE",
    "LIVE_TITLES",
    "TITLES",
    "DocTables",
    "Row",
    "document_rows",
    "event_rows",
    "key_range",
    "title_rows",
]

Row = tuple[int, str, str, int, str, int]
"""``(rowid, text, type, time, surface, length)``."""


def key_range(key: int) -> tuple[int, int]:
    """The first and last row id of session ``key``."""
    return key << SEQ_BITS, (key << SEQ_BITS) | SEQ_MASK


class DocTables:
    """The SQL of one document table pair (rows + external-content FTS5 index)."""

    __slots__ = ("delete_id", "delete_range", "insert_fts", "insert_rows", "rows")

    def __init__(self, schema: str, rows: str, fts: str) -> None:
        self.rows = f"{schema}.{rows}"
        self.insert_rows = (
            f"INSERT INTO {schema}.{rows} (id, text, type, time, surface, length) "
            "VALUES (?,?,?,?,?,?)"
        )
        self.insert_fts = f"INSERT INTO {schema}.{fts} (rowid, text) VALUES (?,?)"
        forget = f"INSERT INTO {schema}.{fts} ({fts}, rowid, text) SELECT 'delete', id, text "
        self.delete_range = (
            forget + f"FROM {schema}.{rows} WHERE id BETWEEN ? AND ?",
            f"DELETE FROM {schema}.{rows} WHERE id BETWEEN ? AND ?",
        )
        self.delete_id = (
            forget + f"FROM {schema}.{rows} WHERE id = ?",
            f"DELETE FROM {schema}.{rows} WHERE id = ?",
        )

    def insert(self, conn: db.Connection, rows: list[Row]) -> None:
        """Insert ``rows`` into the table and its FTS5 index."""
        conn.executemany(self.insert_rows, rows)
        conn.executemany(self.insert_fts, [(row[0], row[1]) for row in rows])

    def delete_key(self, conn: db.Connection, key: int) -> None:
        """Delete every row of session ``key``."""
        bounds = key_range(key)
        for statement in self.delete_range:
            conn.execute(statement, bounds)

    def delete_ids(self, conn: db.Connection, ids: list[tuple[int]]) -> None:
        """Delete the rows with these ids."""
        for statement in self.delete_id:
            conn.executemany(statement, ids)


DURABLE = DocTables("main", "doc_rows", "doc_fts")
LIVE = DocTables("temp", "live_rows", "live_fts")
TITLES = DocTables("main", "title_rows", "title_fts")
LIVE_TITLES = DocTables("temp", "live_title_rows", "live_title_fts")


def _beyond(seq: int) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INDEX_FAILED, f"event seq {seq} is beyond the index's range")


def document_rows(key: int, documents: Iterable[TextDocument]) -> list[Row]:
    """The rows of session ``key`` for ``documents`` (non-empty text, seq order).

    Raises:
        SessionQueryError: ``INDEX_FAILED`` for a seq beyond the row-id range.
    """
    base = key << SEQ_BITS
    rows: list[Row] = []
    append = rows.append
    for doc in documents:
        seq = doc.seq
        if seq > SEQ_MASK:
            raise _beyond(seq)
        text = sanitize_text(doc.text)
        append((base | seq, text, doc.type, doc.time, doc.surface, len(text)))
    return rows


def title_rows(key: int, events: Sequence[SessionEvent]) -> list[Row]:
    """The title rows of session ``key`` for the ``session/title`` events among ``events``.

    Raises:
        SessionQueryError: ``INDEX_FAILED`` for a seq beyond the row-id range.
    """
    return document_rows(key, title_documents(events))


def event_rows(key: int, events: Sequence[SessionEvent], folder: SurfaceFolder) -> list[Row]:
    """The rows of session ``key`` for ``events`` classified by ``folder`` (live sessions).

    Raises:
        SessionQueryError: ``INDEX_FAILED`` for a seq beyond the row-id range.
    """
    base = key << SEQ_BITS
    rows: list[Row] = []
    for event in events:
        text = extract_event_text(event)
        if not text:
            continue
        if event.seq > SEQ_MASK:
            raise _beyond(event.seq)
        text = sanitize_text(text)
        surface = folder.surface_class(event.seq)
        rows.append((base | event.seq, text, event.type, event.time, surface, len(text)))
    return rows
