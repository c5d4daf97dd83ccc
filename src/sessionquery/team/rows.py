"""The rows a push writes for one session: its events and its search-index documents.

Invariants:

* The documents of a pushed log are exactly what the index's own update derives from the
  stored log (:func:`~sessionquery.persistence.documents.stored_documents`: the stored events,
  the crash-tail closers in memory, the fold, the texts, the titles), row for row
  (:func:`~sessionquery.search.postgres.sync.doc_row`), so a team index answers as an index
  built from the same store would.
* :func:`digests` hashes the canonical wire JSON of each event in seq order; equal digests of a
  prefix mean the stored prefix is unchanged.
* :func:`copy_lines` writes what psycopg's ``Copy.write_row`` would send for the same values
  (PostgreSQL's ``COPY`` text format): a reader process formats a session's rows once, and
  the process holding the connection only forwards the text.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

from sessionquery.model import SessionEvent, interrupted_turn_closers
from sessionquery.persistence.base import TextDocument
from sessionquery.persistence.documents import event_documents, title_documents
from sessionquery.persistence.postgres._schema import dumps
from sessionquery.search.postgres.sync import DocRow, doc_row
from sessionquery.search.postgres.tokens import lexeme

__all__ = [
    "Delta",
    "Docs",
    "OwnDocs",
    "changed",
    "copy_field",
    "copy_lines",
    "digests",
    "documents",
    "event_lines",
    "index_rows",
    "lexemes_of_norm",
    "own_docs",
]


def event_lines(events: Sequence[SessionEvent]) -> list[str]:
    """Each event's wire JSON as the PostgreSQL store writes it."""
    return [dumps(event.to_json()) for event in events]


def digests(lines: Sequence[str], *at: int) -> tuple[list[str], str]:
    """``([digest of the first n lines for n in at], digest of all lines)``."""
    hasher = hashlib.sha256()
    wanted = dict.fromkeys(at, "")
    if 0 in wanted:
        wanted[0] = hasher.hexdigest()
    for count, line in enumerate(lines, 1):
        hasher.update(line.encode("utf-8", "surrogatepass"))
        hasher.update(b"\n")
        if count in wanted:
            wanted[count] = hasher.hexdigest()
    return [wanted[n] for n in at], hasher.hexdigest()


Docs = dict[int, tuple[TextDocument, bool]]
"""``{seq: (document, is a title)}`` of one log."""


def documents(events: Sequence[SessionEvent]) -> Docs:
    """The index documents of a stored log, before tokenising (see the module's invariants).

    Raises:
        SurfaceError: the log does not fold.
    """
    closed = [*events, *interrupted_turn_closers(events)]
    found: Docs = {doc.seq: (doc, False) for doc in event_documents(closed)}
    found.update((doc.seq, (doc, True)) for doc in title_documents(closed))
    return found


def changed(old: Docs, new: Docs) -> tuple[Docs, Docs]:
    """``(documents of old that new lacks or changed, documents of new that old lacks or
    changed)``."""
    gone = {seq: item for seq, item in old.items() if new.get(seq) != item}
    added = {seq: item for seq, item in new.items() if old.get(seq) != item}
    return gone, added


def index_rows(session_id: str, docs: Docs) -> list[tuple[DocRow, frozenset[str]]]:
    """The ``sqi_docs`` rows of ``docs`` (tokenised) with each row's distinct lexemes."""
    rows = []
    for doc, title in docs.values():
        row, terms = doc_row(session_id, doc.seq, doc.type, doc.time, doc.surface, doc.text, title)
        rows.append((row, frozenset(terms)))
    return rows


_NULL = "\\N"


def copy_field(value: object) -> str:
    """``value`` as one field of a ``COPY … FROM STDIN`` text row (``None`` is NULL)."""
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    # str.replace scans in C at memory speed; translate looks every character up (an event's
    # JSON holds backslashes, so nearly every line is escaped).
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "\t" in text:
        text = text.replace("\t", "\\t")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if "\r" in text:
        text = text.replace("\r", "\\r")
    return text


def copy_lines(rows: Iterable[Sequence[object]]) -> str:
    """``rows`` as the text of ``COPY … FROM STDIN``, one line per row."""
    return "".join("\t".join(map(copy_field, row)) + "\n" for row in rows)


@dataclass(frozen=True, slots=True)
class OwnDocs:
    """A log's index documents as a push writes them, tokenised by the reader.

    Attributes:
        copy: the ``sqi_docs`` rows without ``ws`` and ``mid`` (:func:`copy_lines`).
        documents: how many rows.
        tokens: their tokens together.
        terms: each lexeme's number of documents holding it.
    """

    copy: str
    documents: int
    tokens: int
    terms: Mapping[str, int]


def own_docs(session_id: str, docs: Docs) -> OwnDocs:
    """The rows of ``docs`` ready to copy, with the statistics they add.

    Each row is :func:`copy_lines` of its values, formatted field by field: the normal form
    and the lexemes are tokens, which hold nothing ``COPY`` text escapes (the tokens'
    invariants), so only the other strings go through :func:`copy_field`."""
    lines, terms, tokens = [], Counter[str](), 0
    sid = copy_field(session_id)
    for doc, title in docs.values():
        row, held = doc_row(session_id, doc.seq, doc.type, doc.time, doc.surface, doc.text, title)
        _sid, seq, kind, at, surface, length, text, norm, tsv, ntokens, _title, maxtf = row
        lines.append(
            f"{sid}\t{seq}\t{copy_field(kind)}\t{at}\t{copy_field(surface)}\t{length}\t"
            f"{copy_field(text)}\t{norm}\t{_NULL if tsv is None else tsv}\t{ntokens}\t"
            f"{'t' if title else 'f'}\t{maxtf}\n"
        )
        terms.update(held)
        tokens += ntokens
    return OwnDocs("".join(lines), len(lines), tokens, terms)


def lexemes_of_norm(norm: str) -> frozenset[str]:
    """The distinct lexemes of a stored normal form (to take a row out of the statistics)."""
    return frozenset(lexeme(word) for word in norm.split(" ") if word)


@dataclass
class Delta:
    """Changes to one (workspace, machine)'s statistics within a batch.

    The documents' term sets are kept as they come and counted once, when :attr:`terms` is
    read (one pass in C over them all instead of one update per document).
    """

    documents: int = 0
    tokens: int = 0
    _added: list[Iterable[str]] = field(default_factory=list)
    _removed: list[Iterable[str]] = field(default_factory=list)
    _counted: list[Mapping[str, int]] = field(default_factory=list)

    def add(self, ntokens: int, terms: Iterable[str], sign: int) -> None:
        """Count one document in (``sign`` 1) or out (``sign`` -1)."""
        self.documents += sign
        self.tokens += sign * ntokens
        (self._added if sign > 0 else self._removed).append(terms)

    def add_own(self, own: OwnDocs) -> None:
        """Count a log's documents in, as its reader counted them."""
        self.documents += own.documents
        self.tokens += own.tokens
        self._counted.append(own.terms)

    @property
    def terms(self) -> Counter[str]:
        """Each term's change of document count (zero for a term added and removed)."""
        counts = Counter(chain.from_iterable(self._added))
        for counted in self._counted:
            counts.update(counted)
        if self._removed:
            counts.subtract(chain.from_iterable(self._removed))
        return counts
