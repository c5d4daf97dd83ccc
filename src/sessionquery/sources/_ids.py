"""Public ids of one source's sessions, unique by construction.

Every *literal* id (a transcript's own session id, or one derived from its unit's name) is
claimed first; one claimed by several units stays with the unit named after it (``preferred``),
else with the first by key. Every *derived* id (a duplicate's ``<id>@<unit key>``, an in-unit
child's ``<public parent id>/<suffix>``, a cleaned or shortened id) is checked against all
claimed and assigned ids and, if taken, gets ``#2``, ``#3``... so it can never displace or
shadow another session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.sources._common import derived_id

__all__ = ["Summary", "resolve_ids"]


@dataclass(frozen=True, slots=True)
class Summary:
    """What the listing keeps of one parsed session (own header, event count, id claim)."""

    header: SessionHeader
    count: int
    preferred: bool
    suffix: str | None

    def to_json(self) -> dict[str, Any]:
        """The cache form."""
        return {
            "header": self.header.to_json(),
            "count": self.count,
            "preferred": self.preferred,
            "suffix": self.suffix,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Summary:
        """Read the cache form.

        Raises:
            ValueError, KeyError, TypeError: the form is damaged.
        """
        suffix = obj["suffix"]
        if suffix is not None and not isinstance(suffix, str):
            raise ValueError("bad suffix")
        count = obj["count"]
        if type(count) is not int:
            raise ValueError("bad count")
        return cls(SessionHeader.from_json(obj["header"]), count, obj["preferred"] is True, suffix)


Routes = dict[str, tuple[str, int]]
"""Public id -> (unit key, index of the session in its unit)."""


def resolve_ids(
    units: Mapping[str, Sequence[Summary]],
) -> tuple[Routes, dict[str, SessionHeader]]:
    """The public id of every session of ``units`` and its header (renamed where needed)."""
    claims: dict[str, list[tuple[bool, str, int]]] = {}
    children: list[tuple[str, int]] = []
    for key in sorted(units):
        for index, summary in enumerate(units[key]):
            if summary.suffix is None:
                claims.setdefault(summary.header.id, []).append((not summary.preferred, key, index))
            else:
                children.append((key, index))
    ids: Routes = {}
    headers: dict[str, SessionHeader] = {}
    main_of: dict[str, str] = {}  # unit -> public id of its first session
    duplicates: list[tuple[str, str, int]] = []
    for own, found in claims.items():
        found.sort()
        _, key, index = found[0]
        ids[own] = (key, index)
        duplicates.extend((own, k, i) for _, k, i in found[1:])

    def assign(candidate: str, key: str, index: int, parent: str | None, *, literal: bool) -> None:
        public, attempt = candidate, 1
        while not literal and (public in ids or public in claims):
            attempt += 1
            public = derived_id(f"{candidate}#{attempt}")
        ids[public] = (key, index)
        summary = units[key][index]
        header = summary.header
        if summary.suffix is not None:
            header = replace(header, id=public, parent_session=parent)
        elif header.id != public:
            header = replace(header, id=public)
        headers[public] = header
        if index == 0:
            main_of[key] = public

    for own in claims:
        key, index = ids.pop(own)
        assign(own, key, index, None, literal=True)
    for own, key, index in duplicates:
        assign(derived_id(f"{own}@{key}"), key, index, None, literal=False)
    for key, index in children:
        parent = main_of.get(key)
        suffix = units[key][index].suffix
        if parent is None or suffix is None:
            continue
        assign(derived_id(f"{parent}/{suffix}"), key, index, parent, literal=False)
    return ids, _inherit_workspaces(headers)


def _inherit_workspaces(headers: dict[str, SessionHeader]) -> dict[str, SessionHeader]:
    """A subagent works in its root session's workspace: its ``cwd`` becomes the root's.

    Subagents often start in a sub-folder of the project (and record it); the project is what
    authorizes them. A subagent whose ancestors are not all in this source, or whose root has
    no ``cwd``, keeps its own.
    """
    out = dict(headers)
    for public, header in headers.items():
        if header.origin != "subagent" or header.parent_session is None:
            continue
        root, seen = header, {public}
        while root.parent_session is not None and root.parent_session in headers:
            if root.parent_session in seen:
                break  # a cycle: leave it to the lineage trace to report
            seen.add(root.parent_session)
            root = headers[root.parent_session]
        if root is header or root.parent_session is not None or root.cwd is None:
            continue
        if root.cwd != header.cwd:
            out[public] = replace(header, cwd=root.cwd)
    return out
