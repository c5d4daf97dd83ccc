"""A session persistence whose every event, title and search document is redacted.

:class:`RedactingPersistence` wraps any :class:`~sessionquery.persistence.SessionPersistence`
(a JSONL store, an importer, a :class:`~sessionquery.sources.MultiSource`, PostgreSQL). It is
how redaction happens *once, where data leaves the source*: whatever reads through it — the
query service's exact reads, the search index's documents, a push to a team database, an
archive — only ever sees masked data, and nothing is written back: the wrapped store is only
read.

Invariants:

* every event returned by :meth:`open_read` has its data redacted
  (:meth:`~sessionquery.redact.Redactor.redact_json`), and a title an importer derived from a
  prompt that held a secret is derived again from the redacted prompt (a title is a cut
  prompt, and a cut secret is no longer recognisable); every document of
  :meth:`read_documents` has its text redacted (:meth:`~sessionquery.redact.Redactor.redact`),
  titles too (a title derived from a prompt is derived again from the redacted prompt, as
  the events' are);
  event types, seqs, times, surface operations and headers (ids, ``cwd``) are identifiers and
  are passed through unchanged;
* every revision (listing, ``stat``, documents) and the change token carry the redactor's
  :attr:`~sessionquery.redact.Redactor.fingerprint`, so anything derived under another
  ruleset sees every session as changed, and a change token of another ruleset is never
  answered by the change journal;
* the read handle passes skeletons through (``SkeletonHandle``: outlines and windows of a
  huge log read through it stay windowed), with call ids and names redacted as the events'
  are;
* the optional capabilities are always offered, falling back to what the protocol allows:
  documents are folded from the redacted events when the wrapped store has no fast path, the
  change token is ``None`` and ``changed_since`` cannot tell when it keeps none,
  ``problems()`` is empty when it reports none, and so is ``archived_ids()``.
"""

from __future__ import annotations

import bisect
import builtins
import operator
from collections.abc import Sequence
from dataclasses import replace

from sessionquery.model import SessionEvent
from sessionquery.model.skeleton import EventSkeleton
from sessionquery.model.title import TitleSnapshot
from sessionquery.persistence.base import (
    ArchiveAware,
    ChangeJournal,
    ChangeTokenSource,
    DocumentLog,
    DocumentSource,
    ListingKey,
    NewestListing,
    OutlineListing,
    PersistedSession,
    Problem,
    ProblemSource,
    ReadHandle,
    SessionOutline,
    SessionPersistence,
    SkeletonHandle,
    TextDocument,
    outline_of,
)
from sessionquery.persistence.documents import stored_documents
from sessionquery.persistence.handles import WrappingHandle
from sessionquery.query.filters import SessionFilter
from sessionquery.query.listing import newest_entries
from sessionquery.redact._redactor import Redactor
from sessionquery.sources._builder import title_from_prompt

__all__ = ["RedactingPersistence", "redacted_event", "redacted_events"]


def redacted_event(event: SessionEvent, redactor: Redactor) -> SessionEvent:
    """``event`` with its data redacted; ``event`` itself when it holds no secret."""
    data = redactor.redact_json(event.data)
    return event if data is event.data else replace(event, data=data)


def redacted_events(events: Sequence[SessionEvent], redactor: Redactor) -> list[SessionEvent]:
    """Every event of ``events`` redacted (:func:`redacted_event`)."""
    return [redacted_event(event, redactor) for event in events]


def _same(found: list[str], given: list[str]) -> bool:
    """Whether :meth:`Redactor.redact_all` gave every string back as it was."""
    return all(map(operator.is_, found, given))


def _derived_from(event: SessionEvent) -> int | None:
    """The seq of the prompt a derived ``session/title`` was cut from, else ``None``."""
    data = event.data
    if event.type != "session/title" or not isinstance(data, dict):
        return None
    source, seqs = data.get("source"), data.get("messageSeqs")
    if not isinstance(source, dict) or source.get("kind") != "derived":
        return None
    if not isinstance(seqs, list) or len(seqs) != 1 or type(seqs[0]) is not int:
        return None
    return seqs[0] if seqs[0] < event.seq else None


def _retitled(title: SessionEvent, prompt: SessionEvent, redactor: Redactor) -> SessionEvent:
    content = prompt.data.get("content") if isinstance(prompt.data, dict) else None
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    text = title_from_prompt(blocks)
    if text is None:
        return title
    return replace(title, data={**title.data, "title": redactor.redact(text)})


def _derived_title(prompt: str) -> str | None:
    return title_from_prompt([{"type": "text", "text": prompt}])


def _redacted_title(
    title: TitleSnapshot | None, titles: Sequence[TextDocument], redactor: Redactor
) -> TitleSnapshot | None:
    """The log's current title as the redacted events give it: the text of its redacted title
    document (derived again from a redacted prompt where it was derived from one)."""
    if title is None:
        return None
    by_seq = {document.seq: document.text for document in titles}
    text = by_seq.get(title.event_seq)
    if text is None:
        text = redactor.redact(title.title)
    return title if text == title.title else replace(title, title=text)


def _redacted_titles(
    log: DocumentLog, documents: Sequence[TextDocument], redactor: Redactor
) -> list[TextDocument]:
    """The title documents of ``log`` redacted; one an importer derived from the prompt just
    before it (its text is what that prompt gives) is derived again from the redacted prompt."""
    prompts = [
        (stored.seq, stored, masked)
        for stored, masked in zip(log.documents, documents, strict=True)
        if stored.type == "user/message"
    ]
    seqs = [seq for seq, _stored, _masked in prompts]
    titles: list[TextDocument] = []
    for title in log.titles:
        at = bisect.bisect_left(seqs, title.seq) - 1
        text = None
        if at >= 0:
            _seq, stored, masked = prompts[at]
            if masked is not stored and _derived_title(stored.text) == title.text:
                text = _derived_title(masked.text)
        text = redactor.redact(text if text is not None else title.text)
        titles.append(title if text == title.text else replace(title, text=text))
    return titles


class _RedactingHandle(WrappingHandle):
    """A read handle whose events come out redacted."""

    def __init__(self, inner: ReadHandle, redactor: Redactor) -> None:
        super().__init__(inner)
        self._redactor = redactor

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        stored = self._inner.read(offset, length)
        events = redacted_events(stored, self._redactor)
        for index, event in enumerate(events):
            prompt = _derived_from(event)
            if prompt is None:
                continue
            at = prompt - offset
            if 0 <= at < len(stored):
                changed = events[at] is not stored[at]
                redacted = events[at]
            else:
                (original,) = self._inner.read(prompt, 1) or [event]
                redacted = redacted_event(original, self._redactor)
                changed = redacted is not original
            if changed:
                events[index] = _retitled(event, redacted, self._redactor)
        return events

    def skeletons(self) -> list[EventSkeleton]:
        """The inner handle's skeletons with their call ids and names redacted exactly as the
        events' data is (types, seqs, times and surface operations are identifiers and pass
        through); skeletons of the redacted events when the inner handle gives none."""
        inner = self._inner
        if not isinstance(inner, SkeletonHandle):
            return super().skeletons()  # those of the redacted events
        skeletons = inner.skeletons()
        # Each id under the key the event stores it under (a key rule masks it as it masks
        # the event's): ``callId`` of a ``tool/call``, ``id`` of an assistant's block. Each
        # distinct string is redacted once (a log names a few tools thousands of times).
        calling = [skeleton for skeleton in skeletons if skeleton.calls]
        logged = {c: c for sk in calling if sk.type == "tool/call" for c, _name in sk.calls}
        blocks = {c: c for sk in calling if sk.type != "tool/call" for c, _name in sk.calls}
        names = {name: name for sk in calling for _c, name in sk.calls}
        changed = False
        for texts, key in ((logged, "callId"), (blocks, "id"), (names, "name")):
            given = list(texts)
            found = self._redactor.redact_all(given, key)
            if not _same(found, given):
                texts.update(zip(given, found, strict=True))
                changed = True
        if not changed:
            return skeletons  # the usual case: no call id or name holds a secret
        for index, skeleton in enumerate(skeletons):
            if skeleton.calls:
                ids = logged if skeleton.type == "tool/call" else blocks
                calls = tuple((ids[c], names[name]) for c, name in skeleton.calls)
                if calls != skeleton.calls:
                    skeletons[index] = skeleton._replace(calls=calls)
        return skeletons


class RedactingPersistence:
    """``inner`` as seen through ``redactor``: read-only, every secret masked.

    Args:
        inner: the persistence to read (never written to).
        redactor: what masks its events and documents.
    """

    def __init__(self, inner: SessionPersistence, redactor: Redactor) -> None:
        self._inner = inner
        self._redactor = redactor
        self._suffix = f"#{redactor.fingerprint}"
        self._token_prefix = f"{redactor.fingerprint}\n"

    @property
    def inner(self) -> SessionPersistence:
        """The wrapped persistence."""
        return self._inner

    @property
    def redactor(self) -> Redactor:
        """The redactor applied to everything read."""
        return self._redactor

    @property
    def root(self) -> str:
        """Names the wrapped store (its kind and root or store id), so an index bound to one
        wrapped store never takes another's change token for its own."""
        inner = self._inner
        kind = f"{type(inner).__module__}.{type(inner).__qualname__}"
        where = getattr(inner, "store_id", None) or getattr(inner, "root", None) or ""
        return f"{kind}:{where}"

    # -- the SessionPersistence protocol -------------------------------------------------

    def _entry(self, entry: PersistedSession) -> PersistedSession:
        return replace(entry, revision=entry.revision + self._suffix)

    def list(self) -> builtins.list[PersistedSession]:
        """The wrapped listing, each revision carrying the redactor's fingerprint."""
        return [self._entry(entry) for entry in self._inner.list()]

    def list_newest(
        self, filters: Sequence[SessionFilter], *, after: ListingKey | None, limit: int
    ) -> builtins.list[PersistedSession]:
        """A page of the listing in the listing order (as :meth:`list`): the wrapped store's
        own ``list_newest`` when it has one, else its listing sorted and cut."""
        inner = self._inner
        if isinstance(inner, NewestListing):
            entries = inner.list_newest(filters, after=after, limit=limit)
        else:
            entries = newest_entries(inner.list(), filters, after=after, limit=limit)
        return [self._entry(entry) for entry in entries]

    def list_outline(self) -> builtins.list[SessionOutline]:
        """The wrapped store's outline when it has one (``OutlineListing``; redaction changes
        no header), else the outline of its listing."""
        inner = self._inner
        if isinstance(inner, OutlineListing):
            return inner.list_outline()
        return [outline_of(entry.header) for entry in inner.list()]

    def stat(self, session_id: str) -> PersistedSession | None:
        """One listing entry (as :meth:`list`), or ``None``."""
        entry = self._inner.stat(session_id)
        return None if entry is None else self._entry(entry)

    def open_read(self, session_id: str) -> ReadHandle:
        """A read handle whose events are redacted.

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: as the wrapped store raises it.
        """
        return _RedactingHandle(self._inner.open_read(session_id), self._redactor)

    # -- optional capabilities -----------------------------------------------------------

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable documents of one log, texts redacted (the wrapped store's fast path
        when it has one, else folded from the redacted events).

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the log is damaged or does not fold.
        """
        inner = self._inner
        if not isinstance(inner, DocumentSource):
            return stored_documents(self, session_id)
        log = inner.read_documents(session_id)
        redact = self._redactor.redact
        documents = [
            document
            if (text := redact(document.text)) is document.text
            else replace(document, text=text)
            for document in log.documents
        ]
        titles = _redacted_titles(log, documents, self._redactor)
        return replace(
            log,
            revision=log.revision + self._suffix,
            documents=documents,
            titles=titles,
            title=_redacted_title(log.title, titles, self._redactor),
        )

    def change_token(self) -> str | None:
        """The wrapped store's change token prefixed with the fingerprint, or ``None`` when it
        keeps none."""
        inner = self._inner
        if not isinstance(inner, ChangeTokenSource):
            return None
        token = inner.change_token()
        return None if token is None else self._token_prefix + str(token)

    def changed_since(self, token: str) -> frozenset[str] | None:
        """The wrapped store's answer for a token of this fingerprint; ``None`` (cannot tell)
        for any other token or when the wrapped store keeps no journal."""
        inner = self._inner
        if not token.startswith(self._token_prefix) or not isinstance(inner, ChangeJournal):
            return None
        return inner.changed_since(token[len(self._token_prefix) :])

    def origin_of(self, session_id: str) -> tuple[str, str] | None:
        """``(source label, id inside that source)`` when the wrapped store is a
        :class:`~sessionquery.sources.MultiSource` that listed the id (identifiers only,
        nothing is read); else ``None``."""
        origin = getattr(self._inner, "origin_of", None)
        found = origin(session_id) if callable(origin) else None
        return found if isinstance(found, tuple) else None

    def archived_ids(self) -> frozenset[str]:
        """The ids the wrapped store read from an archive (empty when it has none)."""
        inner = self._inner
        return inner.archived_ids() if isinstance(inner, ArchiveAware) else frozenset()

    def problems(self) -> builtins.list[Problem]:
        """The wrapped store's problems (empty when it reports none)."""
        inner = self._inner
        return builtins.list(inner.problems()) if isinstance(inner, ProblemSource) else []

    def __repr__(self) -> str:
        return f"RedactingPersistence({self._inner!r}, {self._redactor!r})"
