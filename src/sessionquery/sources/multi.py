"""Several persistences presented as one corpus with globally unique, stable ids.

Rule: an id that occurs in exactly one source keeps its id; an id that occurs in two or more
sources is written ``<label>:<id>`` in **every** source that has it (so no source "wins" by
order). An id that itself starts with ``<label>:`` for any label of the corpus is always
written ``<its label>:<id>``, so a literal id can never equal a prefixed one: public ids are
unique by construction (labels hold no ``:``). A prefixed id longer than 512 characters is cut
and ends with a digest of the full form. A ``parent_session`` naming a renamed id of the same
source is rewritten with it. Ids are stable across runs as long as the set of colliding ids
does not change.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace

from sessionquery.errors import PersistenceNotFound
from sessionquery.model import SessionHeader
from sessionquery.persistence.base import (
    ArchiveAware,
    DocumentLog,
    DocumentSource,
    PersistedSession,
    ProblemSource,
    ReadHandle,
    SessionPersistence,
)
from sessionquery.persistence.documents import stored_documents
from sessionquery.persistence.handles import WrappingHandle
from sessionquery.sources._catalog import Catalog
from sessionquery.sources._common import Problem, derived_id
from sessionquery.sources.registry import source_kind

__all__ = ["MultiSource"]


def _default_label(source: object, index: int) -> str:
    kind = source_kind(source.kind) if isinstance(source, Catalog) and source.kind else None
    return kind.label if kind is not None else f"source{index}"


class MultiSource:
    """One read-only ``SessionPersistence`` over several others.

    Args:
        sources: persistences, or ``(label, persistence)`` pairs. An importer's default label
            is its kind's (``claude``, ``codex``, ... see :mod:`.registry`), any other
            persistence's ``source<N>`` (0-based position).

    Raises:
        ValueError: two sources share a label, or a label is empty or holds ``:``.
    """

    def __init__(
        self, sources: Iterable[SessionPersistence | tuple[str, SessionPersistence]]
    ) -> None:
        pairs: list[tuple[str, SessionPersistence]] = []
        for index, item in enumerate(sources):
            if isinstance(item, tuple):
                pairs.append(item)
            else:
                pairs.append((_default_label(item, index), item))
        labels = [label for label, _ in pairs]
        if len(set(labels)) != len(labels):
            raise ValueError(f"source labels must be unique, got {labels}")
        for label in labels:
            if not isinstance(label, str) or not label or ":" in label:
                raise ValueError(
                    f"a source label must be a non-empty string without ':', not {label!r}"
                )
        self._prefixes = tuple(f"{label}:" for label in labels)
        self._sources: Sequence[tuple[str, SessionPersistence]] = tuple(pairs)
        self._lock = threading.Lock()
        self._routes: dict[str, tuple[int, str]] = {}
        self._owners: dict[str, set[int]] = {}

    @property
    def labels(self) -> list[str]:
        """The source labels, in order."""
        return [label for label, _ in self._sources]

    def _listing(self) -> list[PersistedSession]:
        per_source = [source.list() for _, source in self._sources]
        owners: dict[str, set[int]] = {}
        for index, listing in enumerate(per_source):
            for entry in listing:
                owners.setdefault(entry.header.id, set()).add(index)
        out: list[PersistedSession] = []
        routes: dict[str, tuple[int, str]] = {}
        for index, listing in enumerate(per_source):
            for entry in listing:
                renamed = self._renamed(entry.header, index, owners)
                routes[renamed.id] = (index, entry.header.id)
                out.append(entry if renamed is entry.header else replace(entry, header=renamed))
        with self._lock:
            self._routes, self._owners = routes, owners
        return out

    def _public(self, own: str, index: int, owners: dict[str, set[int]]) -> str:
        if len(owners.get(own, ())) > 1 or own.startswith(self._prefixes):
            return derived_id(f"{self._sources[index][0]}:{own}")
        return own

    def _renamed(
        self, header: SessionHeader, index: int, owners: dict[str, set[int]]
    ) -> SessionHeader:
        parent = header.parent_session
        public = self._public(header.id, index, owners)
        public_parent = self._public(parent, index, owners) if parent is not None else None
        if public == header.id and public_parent == parent:
            return header  # the usual case: nothing renamed, no new (validated) header
        return replace(header, id=public, parent_session=public_parent)

    def list(self) -> list[PersistedSession]:
        """Every session of every source, with collision-free ids."""
        return self._listing()

    def _route(self, session_id: str, *, relist: bool) -> tuple[int, str, dict[str, set[int]]]:
        if relist:
            self._listing()
        with self._lock:
            route, owners = self._routes.get(session_id), self._owners
        if route is None and not relist:
            return self._route(session_id, relist=True)
        if route is None:
            raise PersistenceNotFound(f"session {session_id!r} is in none of {self.labels}")
        return route[0], route[1], owners

    def origin_of(self, session_id: str) -> tuple[str, str] | None:
        """``(label, id inside that source)`` of a listed session, from the last listing
        (``None`` when the id was not in it). Reads nothing."""
        with self._lock:
            route = self._routes.get(session_id)
        return None if route is None else (self._sources[route[0]][0], route[1])

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry, or ``None``.

        A session listed before is looked up in its own source only (its source's ``stat``);
        the whole corpus is listed again when the id is unknown or no longer maps to it.
        """
        for relist in (False, True):
            try:
                index, own, owners = self._route(session_id, relist=relist)
            except PersistenceNotFound:
                return None
            entry = self._sources[index][1].stat(own)
            if entry is not None:
                header = self._renamed(entry.header, index, owners)
                if header.id == session_id:
                    return replace(entry, header=header)
        return None

    def open_read(self, session_id: str) -> ReadHandle:
        """Open one session of the combined corpus.

        Raises:
            PersistenceNotFound: no source has that id.
            PersistenceCorrupt: as raised by the owning source.
        """
        entry = self.stat(session_id)
        if entry is None:
            raise PersistenceNotFound(f"session {session_id!r} is in none of {self.labels}")
        index, own, _owners = self._route(session_id, relist=False)
        inner = self._sources[index][1].open_read(own)
        return WrappingHandle(inner, entry.header)  # the header with the combined ids

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable documents of one session, from its source's own fast path when it
        has one (else from a full read), with the header renamed as :meth:`list` names it.

        Raises:
            PersistenceNotFound: no source has that id.
            PersistenceCorrupt: as raised by the owning source.
        """
        index, own, owners = self._route(session_id, relist=False)
        source = self._sources[index][1]
        log = (
            source.read_documents(own)
            if isinstance(source, DocumentSource)
            else stored_documents(source, own)
        )
        return replace(log, header=self._renamed(log.header, index, owners))

    def archived_ids(self) -> frozenset[str]:
        """Ids (as :meth:`list` names them) of the sessions its sources' last listings read
        from an archive."""
        with self._lock:
            owners = self._owners
        out: set[str] = set()
        for index, (_label, source) in enumerate(self._sources):
            if isinstance(source, ArchiveAware):
                out.update(self._public(own, index, owners) for own in source.archived_ids())
        return frozenset(out)

    def problems(self) -> builtins.list[Problem]:
        """The problems of every source that reports them, in source order."""
        out: list[Problem] = []
        for _, source in self._sources:
            if isinstance(source, ProblemSource):
                out.extend(
                    p if isinstance(p, Problem) else Problem(p.path, p.line, p.message)
                    for p in source.problems()
                )
        return out
