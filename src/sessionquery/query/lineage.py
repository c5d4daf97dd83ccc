"""Session lineage: the ancestors and descendants of one session, over one corpus listing.

A session's parent is ``header.parent_session``. Ancestors are followed outward from the
target, nearest first; a parent id that is not in the corpus ends the walk (the trace is then
incomplete and names that id), a parent id seen before is a cycle (``INVALID_LINEAGE``).
Descendants form a forest rooted at the target's direct children, each list of children
ordered by ``created_at`` then id. Both walks are iterative, so any depth works.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.corpus import not_found
from sessionquery.query.types import LineageNode, LineageTrace, SessionRecord

__all__ = ["trace_lineage"]


def trace_lineage(records: Sequence[SessionRecord], session_id: str) -> LineageTrace:
    """The lineage of ``session_id`` within ``records`` (one corpus listing).

    Raises:
        SessionQueryError: ``SESSION_NOT_FOUND`` when the target is not in ``records``,
            ``INVALID_LINEAGE`` when its parent chain contains a cycle.
    """
    by_id = {record.id: record for record in records}
    target = by_id.get(session_id)
    if target is None:
        raise not_found(session_id)
    ancestors, unresolved = _ancestors(by_id, target)
    complete = unresolved is None
    root = (ancestors[-1] if ancestors else target) if complete else None
    return LineageTrace(
        target=target,
        ancestors=tuple(ancestors),
        descendants=_descendants(records, session_id),
        complete=complete,
        root=root,
        unresolved_parent_id=unresolved,
    )


def _ancestors(
    by_id: dict[str, SessionRecord], target: SessionRecord
) -> tuple[list[SessionRecord], str | None]:
    seen = {target.id}
    ancestors: list[SessionRecord] = []
    parent_id = target.header.parent_session
    while parent_id is not None:
        if parent_id in seen:
            raise SessionQueryError(
                ErrorCode.INVALID_LINEAGE,
                f"the lineage of session {target.id!r} contains a cycle at {parent_id!r}",
            )
        parent = by_id.get(parent_id)
        if parent is None:
            return ancestors, parent_id
        seen.add(parent_id)
        ancestors.append(parent)
        parent_id = parent.header.parent_session
    return ancestors, None


def _descendants(records: Sequence[SessionRecord], session_id: str) -> tuple[LineageNode, ...]:
    children: dict[str, list[SessionRecord]] = {}
    for record in records:
        parent = record.header.parent_session
        if parent is not None:
            children.setdefault(parent, []).append(record)
    for group in children.values():
        group.sort(key=lambda record: (record.header.created_at, record.id))
    # Breadth-first discovery, then build nodes in reverse so every child exists before
    # its parent; the visited set keeps a malformed graph from looping.
    order: list[str] = [session_id]
    visited = {session_id}
    index = 0
    while index < len(order):
        for child in children.get(order[index], ()):
            if child.id not in visited:
                visited.add(child.id)
                order.append(child.id)
        index += 1
    built: dict[str, LineageNode] = {}
    by_id = {record.id: record for record in records}
    for node_id in reversed(order[1:]):
        built[node_id] = LineageNode(
            record=by_id[node_id],
            descendants=_built_children(children, built, node_id),
        )
    return _built_children(children, built, session_id)


def _built_children(
    children: dict[str, list[SessionRecord]], built: dict[str, LineageNode], parent_id: str
) -> tuple[LineageNode, ...]:
    return tuple(built[child.id] for child in children.get(parent_id, ()) if child.id in built)
