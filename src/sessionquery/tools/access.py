"""Who is calling the tools, and which sessions that caller may see.

The rule (SPEC §8, reference contract §6.4), applied to a session header:

* the caller's own session is visible iff its recorded ``cwd`` equals the caller's ``cwd``
  (both may be ``None``);
* any other session is visible iff the caller has a ``cwd`` and the header's ``cwd`` is the
  exact same string: no normalisation and no symlink resolution, so ``/a`` and ``/a/`` are
  different workspaces.

A server over a team database replaces the rule with one of workspaces
(:class:`WorkspaceRule`, e.g. :class:`sessionquery.team.TeamWorkspaces`): the same repository
on every machine is one workspace. :data:`EXACT_CWD` is the rule above.

Invariants: identity comes from the :class:`ToolCaller`, never from tool arguments; a missing
session and an invisible one produce the byte-identical :func:`unauthorized` error, so ids
outside the workspace cannot be probed; lineage projections never carry a hidden id or title,
only markers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sessionquery.errors import SessionQueryError, ToolErrorCode
from sessionquery.model import SessionEvent, SessionHeader, validate_session_id
from sessionquery.query.types import LineageNode, LineageTrace, SessionRecord

__all__ = [
    "EXACT_CWD",
    "NO_WORKSPACE_SEARCH_MESSAGE",
    "UNAUTHORIZED_MESSAGE",
    "LiveSessionView",
    "ToolCaller",
    "VisibleLineage",
    "WorkspaceRule",
    "is_authorized",
    "is_visible",
    "no_current_step",
    "project_lineage",
    "unauthorized",
]

UNAUTHORIZED_MESSAGE = "session target is outside the caller workspace"
NO_WORKSPACE_SEARCH_MESSAGE = (
    "cross-session search is unavailable because the caller has no workspace"
)


class LiveSessionView(Protocol):
    """What :meth:`ToolCaller.for_session` reads of a live session."""

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def header(self) -> SessionHeader:
        """The session header."""
        ...

    @property
    def events(self) -> Sequence[SessionEvent]:
        """The events appended so far."""
        ...


@dataclass(frozen=True, slots=True)
class ToolCaller:
    """The agent on whose behalf a tool runs; set by the agent loop, never by the model.

    Attributes:
        session_id: the caller's own session (the default target of the tools), or ``None``.
        cwd: the caller's workspace, compared verbatim with sessions' recorded ``cwd``; a
            caller without one can inspect only its own session.
        current_step_seq: seq of the ``step/start`` of the step issuing the call;
            ``session_event_search`` on the caller's own session stops before it.

    Raises:
        ValueError: on construction, for an invalid id, a non-string cwd or a negative seq.
    """

    session_id: str | None = None
    cwd: str | None = None
    current_step_seq: int | None = None

    def __post_init__(self) -> None:
        if self.session_id is not None:
            validate_session_id(self.session_id, "session_id")
        if self.cwd is not None and (not isinstance(self.cwd, str) or not self.cwd):
            raise ValueError(f"cwd must be a non-empty string or None, not {self.cwd!r}")
        seq = self.current_step_seq
        if seq is not None and (type(seq) is not int or seq < 0):
            raise ValueError(f"current_step_seq must be a non-negative integer, not {seq!r}")

    @classmethod
    def for_session(cls, session: LiveSessionView) -> ToolCaller:
        """The caller acting as a live session: its id, its recorded cwd and the seq of its
        last ``step/start`` event (``None`` when no step has started)."""
        events = session.events
        current: int | None = None
        for index in range(len(events) - 1, -1, -1):
            if events[index].type == "step/start":
                current = events[index].seq
                break
        return cls(session_id=session.id, cwd=session.header.cwd, current_step_seq=current)


def is_visible(session_id: str, cwd: str | None, caller: ToolCaller) -> bool:
    """Whether ``caller`` may see the session ``session_id`` recorded with ``cwd``.

    The workspace rule of this module, and its only statement: every check calls it.
    """
    if session_id == caller.session_id:
        return cwd == caller.cwd
    return caller.cwd is not None and cwd == caller.cwd


def is_authorized(
    header: SessionHeader, caller: ToolCaller, rule: WorkspaceRule | None = None
) -> bool:
    """Whether ``caller`` may see the session with this header (see :func:`is_visible`, or
    ``rule`` when given)."""
    if rule is None:
        return is_visible(header.id, header.cwd, caller)
    return rule.visible(header.id, header.cwd, caller)


class WorkspaceRule(Protocol):
    """Which sessions a caller's workspace holds (the tools' authorization)."""

    def visible(self, session_id: str, cwd: str | None, caller: ToolCaller) -> bool:
        """Whether ``caller`` may see the session ``session_id`` recorded in ``cwd``."""
        ...

    def cwds(self, caller: ToolCaller) -> tuple[str | None, ...]:
        """Recorded cwds that every session visible to ``caller`` has one of (searches and
        listings are narrowed to them first, then each session is checked with
        :meth:`visible`)."""
        ...


class _ExactCwd:
    """The exact-cwd rule of SPEC §8 (:func:`is_visible`)."""

    def visible(self, session_id: str, cwd: str | None, caller: ToolCaller) -> bool:
        return is_visible(session_id, cwd, caller)

    def cwds(self, caller: ToolCaller) -> tuple[str | None, ...]:
        return (caller.cwd,)


EXACT_CWD: WorkspaceRule = _ExactCwd()
"""The default rule: a workspace is one exact cwd string."""


def unauthorized() -> SessionQueryError:
    """The one error for a target that is missing or outside the caller's workspace."""
    return SessionQueryError(ToolErrorCode.UNAUTHORIZED, UNAUTHORIZED_MESSAGE)


def no_current_step() -> SessionQueryError:
    """The error for searching one's own session when no step is running."""
    return SessionQueryError(
        ToolErrorCode.NO_CURRENT_STEP,
        "the current session has no running step, so its earlier events cannot be "
        "separated from this call; pass session_id to search another session",
    )


@dataclass(frozen=True, slots=True)
class VisibleLineage:
    """A lineage trace cut down to what the caller may see.

    Attributes:
        target: the traced session.
        ancestors: visible ancestors, nearest first, up to the first hidden or missing one.
        ancestor_boundary: whether the chain continues beyond ``ancestors`` out of sight.
        descendants: depth-first rows ``(depth, record)``, depth 0 for direct children;
            ``record`` is ``None`` for a hidden subtree (its whole subtree is omitted).
    """

    target: SessionRecord
    ancestors: tuple[SessionRecord, ...]
    ancestor_boundary: bool
    descendants: tuple[tuple[int, SessionRecord | None], ...]

    def visible_ids(self) -> list[str]:
        """Target, visible ancestors and visible descendants, in display order."""
        ids = [self.target.id, *(record.id for record in self.ancestors)]
        ids.extend(record.id for _, record in self.descendants if record is not None)
        return ids


def project_lineage(
    trace: LineageTrace, caller: ToolCaller, rule: WorkspaceRule = EXACT_CWD
) -> VisibleLineage:
    """Cut ``trace`` down to what ``caller`` may see (the target must be authorized)."""
    ancestors: list[SessionRecord] = []
    boundary = not trace.complete
    for record in trace.ancestors:
        if not is_authorized(record.header, caller, rule):
            boundary = True
            break
        ancestors.append(record)
    rows: list[tuple[int, SessionRecord | None]] = []
    # An explicit stack, not recursion: lineages of any depth must not overflow.
    stack: list[tuple[int, LineageNode]] = [(0, node) for node in reversed(trace.descendants)]
    while stack:
        depth, node = stack.pop()
        if not is_authorized(node.record.header, caller, rule):
            rows.append((depth, None))
            continue
        rows.append((depth, node.record))
        stack.extend((depth + 1, child) for child in reversed(node.descendants))
    return VisibleLineage(
        target=trace.target,
        ancestors=tuple(ancestors),
        ancestor_boundary=boundary,
        descendants=tuple(rows),
    )
