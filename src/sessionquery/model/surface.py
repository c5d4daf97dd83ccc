"""The surface fold: which events make up the model-visible history.

A session log is append-only, but what the model sees is not: a compaction replaces a run of
earlier messages with a summary, a tool result can be rewritten. The *surface* is the ordered
list of event seqs that currently form the model's history. Every surface-eligible event
(``user/message``, ``assistant/message``, ``tool/result``, ``system/message``) carries a
``surface_op``:

* ``"append"`` puts the event at the tail of the surface;
* ``Replace(start_seq, end_seq)`` removes the run of surface nodes from ``start_seq`` to
  ``end_seq`` (both inclusive, both currently on the surface) and puts the event in its place.

Folding the whole log classifies every seq as **current** (on the final surface),
**shadowed** (removed by a replace and not current) or **log-only** (never on the surface:
turn and step boundaries, tool calls, titles...).

The fold is incremental (:class:`SurfaceFolder`): appending one event costs O(1), a replace
costs O(number of removed nodes), so a live session validates each append without re-folding.
A failing :meth:`SurfaceFolder.apply` leaves the folder unchanged.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from sessionquery.model.event import Replace, SurfaceOp
from sessionquery.model.jsonvalue import JsonValue, thaw

__all__ = [
    "KNOWN_EVENT_TYPES",
    "SURFACE_CLASSES",
    "SURFACE_ELIGIBLE_TYPES",
    "FoldEvent",
    "SurfaceClass",
    "SurfaceError",
    "SurfaceFold",
    "SurfaceFolder",
    "fold_surface",
    "rewrite_seqs",
    "surface_class_of",
]

SurfaceClass = Literal["current", "shadowed", "log-only"]

SURFACE_CLASSES: tuple[SurfaceClass, ...] = get_args(SurfaceClass)
"""Every surface class, in the order the documentation lists them: the one list that
filters, tool schemas and the CLI offer."""

SURFACE_ELIGIBLE_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/result", "system/message"}
)
"""Event types that produce model-visible messages and must carry a ``surface_op``."""


def surface_class_of(seq: int, current: Container[int], removed: Container[int]) -> SurfaceClass:
    """The class of ``seq`` in a fold whose current surface holds ``current`` and whose
    replaces removed ``removed``: ``"current"``, ``"shadowed"``, else ``"log-only"``."""
    if seq in current:
        return "current"
    if seq in removed:
        return "shadowed"
    return "log-only"


KNOWN_EVENT_TYPES = SURFACE_ELIGIBLE_TYPES | {
    "tool/call",
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "session/title",
    "todo/write",
    "session/end-seed",
}
"""Types with a meaning in this library (SPEC §3.3); an ``ignorable`` event of any other
type is skipped by the fold whatever it carries."""


class FoldEvent(Protocol):
    """What the fold reads of an event: a :class:`~sessionquery.model.SessionEvent`, or an
    :class:`~sessionquery.model.skeleton.EventSkeleton` (whose ``data`` is ``None``: only a
    ``tool/result`` rewrite and the result it rewrites need theirs, see
    :func:`rewrite_seqs`)."""

    @property
    def type(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def data(self) -> JsonValue: ...

    @property
    def surface_op(self) -> SurfaceOp | None: ...

    @property
    def source_event_seqs(self) -> tuple[int, ...] | None: ...

    @property
    def ignorable(self) -> bool: ...


class SurfaceError(ValueError):
    """An event log that violates a surface rule; the message says which rule and where."""


@dataclass(frozen=True, slots=True)
class SurfaceFold:
    """The result of folding a whole log.

    Attributes:
        nodes: current surface seqs, in surface (model history) order.
        surface_of: every seq of the log mapped to its class.
        replaced_by: each removed seq mapped to the seq of the replace that removed it.
        replaced: each replace event's seq mapped to the seqs it removed, in surface order.
    """

    nodes: tuple[int, ...]
    surface_of: Mapping[int, SurfaceClass]
    replaced_by: Mapping[int, int]
    replaced: Mapping[int, tuple[int, ...]]


class SurfaceFolder:
    """Incremental surface fold over a log that grows one event at a time."""

    __slots__ = ("_events", "_head", "_next", "_prev", "_removed", "_replaced", "_tail", "length")

    def __init__(self) -> None:
        self.length = 0
        self._head: int | None = None
        self._tail: int | None = None
        self._next: dict[int, int | None] = {}
        self._prev: dict[int, int | None] = {}
        self._events: dict[int, FoldEvent] = {}
        self._removed: dict[int, int] = {}
        self._replaced: dict[int, tuple[int, ...]] = {}

    def apply(self, event: FoldEvent) -> None:
        """Validate ``event`` as the next event of the log and fold it in.

        Raises:
            SurfaceError: naming the violated rule; the folder is unchanged.
        """
        seq = event.seq
        if seq != self.length:
            raise SurfaceError(f"seq {seq} is out of order; expected seq {self.length}")
        op = event.surface_op
        if event.type not in SURFACE_ELIGIBLE_TYPES:
            if event.ignorable and event.type not in KNOWN_EVENT_TYPES:
                self.length += 1
                return
            if op is not None or event.source_event_seqs is not None:
                raise SurfaceError(
                    f"seq {seq}: {event.type!r} is not surface-eligible and must carry neither "
                    "a surface operation nor source seqs"
                )
            self.length += 1
            return
        if op is None:
            raise SurfaceError(f"seq {seq}: {event.type!r} must carry a surface operation")
        self._check_sources(event)
        if op == "append":
            self._link_tail(seq)
        else:
            assert isinstance(op, Replace)
            removed = self._check_replace(event, op)
            self._splice(seq, removed)
        self._events[seq] = event
        self.length += 1

    def extend(self, events: Iterable[FoldEvent]) -> None:
        """:meth:`apply` each of ``events`` in order (one loop for a whole log).

        The events :meth:`apply` accepts without a replace — a boundary, call or title
        without a surface operation, an ignorable event of an unknown type, an append — are
        folded here as it folds them; any other event is handed to :meth:`apply` itself, so
        every rule is checked and worded there.

        Raises:
            SurfaceError: for the first event that breaks a surface rule; the folder then
                holds every event before it.
        """
        eligible, known = SURFACE_ELIGIBLE_TYPES, KNOWN_EVENT_TYPES
        nexts, prevs, kept = self._next, self._prev, self._events
        check_sources, apply = self._check_sources, self.apply
        length, tail = self.length, self._tail
        try:
            for event in events:
                seq, kind, op = event.seq, event.type, event.surface_op
                if seq == length:
                    if kind not in eligible:
                        if (op is None and event.source_event_seqs is None) or (
                            event.ignorable and kind not in known
                        ):
                            length += 1
                            continue
                    elif op == "append":
                        if event.source_event_seqs is not None:
                            check_sources(event)
                        prevs[seq] = tail
                        nexts[seq] = None
                        if tail is None:
                            self._head = seq
                        else:
                            nexts[tail] = seq
                        tail = seq
                        kept[seq] = event
                        length += 1
                        continue
                self.length, self._tail = length, tail
                apply(event)
                length, tail = self.length, self._tail
        finally:
            self.length, self._tail = length, tail

    def _check_sources(self, event: FoldEvent) -> None:
        sources = event.source_event_seqs
        if sources is None:
            return
        seq = event.seq
        if event.type == "assistant/message":
            raise SurfaceError(f"seq {seq}: assistant/message must not carry source seqs")
        if not sources:
            raise SurfaceError(f"seq {seq}: source seqs must not be empty when present")
        if len(set(sources)) != len(sources):
            raise SurfaceError(f"seq {seq}: source seqs must be unique")
        for source in sources:
            if source >= seq:
                raise SurfaceError(f"seq {seq}: source seq {source} is not an earlier event")

    def _check_replace(self, event: FoldEvent, op: Replace) -> list[int]:
        seq = event.seq
        start, end = op.start_seq, op.end_seq
        for endpoint in (start, end):
            if endpoint >= seq:
                raise SurfaceError(f"seq {seq}: replace endpoint {endpoint} is not earlier")
            if endpoint not in self._next:
                raise SurfaceError(
                    f"seq {seq}: replace endpoint {endpoint} is not on the current surface"
                )
        removed: list[int] = []
        node: int | None = start
        while node is not None:
            removed.append(node)
            if node == end:
                break
            node = self._next[node]
        else:
            raise SurfaceError(
                f"seq {seq}: replace start {start} comes after end {end} on the surface"
            )
        if event.type == "tool/result":
            self._check_tool_result_rewrite(event, removed)
        if start == self._head and self._events[start].type == "system/message":
            if event.type != "system/message" or len(removed) != 1:
                raise SurfaceError(
                    f"seq {seq}: the system message at the head of the surface can only be "
                    "replaced by one system/message replacing exactly that node"
                )
        sources = event.source_event_seqs
        if sources is not None:
            cited = set(sources)
            missing = [node for node in removed if node not in cited]
            if missing:
                raise SurfaceError(
                    f"seq {seq}: replace sources must include every removed seq "
                    f"(missing {', '.join(map(str, missing))})"
                )
        return removed

    def _check_tool_result_rewrite(self, event: FoldEvent, removed: list[int]) -> None:
        seq = event.seq
        if len(removed) != 1 or self._events[removed[0]].type != "tool/result":
            raise SurfaceError(f"seq {seq}: a tool/result may only replace one tool/result")
        if _without_output(event.data) != _without_output(self._events[removed[0]].data):
            raise SurfaceError(
                f"seq {seq}: a replacing tool/result may change only the output of its first "
                "content block"
            )

    def _link_tail(self, seq: int) -> None:
        self._prev[seq] = self._tail
        self._next[seq] = None
        if self._tail is None:
            self._head = seq
        else:
            self._next[self._tail] = seq
        self._tail = seq

    def _splice(self, seq: int, removed: list[int]) -> None:
        before = self._prev[removed[0]]
        after = self._next[removed[-1]]
        nexts, prevs = self._next, self._prev
        for node in removed:
            del nexts[node]
            del prevs[node]
        self._removed.update(dict.fromkeys(removed, seq))
        self._replaced[seq] = tuple(removed)
        self._prev[seq] = before
        self._next[seq] = after
        if before is None:
            self._head = seq
        else:
            self._next[before] = seq
        if after is None:
            self._tail = seq
        else:
            self._prev[after] = seq

    def nodes(self) -> tuple[int, ...]:
        """The current surface seqs in surface order."""
        out: list[int] = []
        node = self._head
        while node is not None:
            out.append(node)
            node = self._next[node]
        return tuple(out)

    def is_current(self, seq: int) -> bool:
        """Whether ``seq`` is on the current surface."""
        return seq in self._next

    def surface_class(self, seq: int) -> SurfaceClass:
        """The class of ``seq`` as of the events folded so far."""
        return surface_class_of(seq, self._next, self._removed)

    def snapshot(self) -> SurfaceFold:
        """The fold of everything applied so far, as a detached value."""
        # Every seq log-only, then the removed ones shadowed, then the current ones current:
        # surface_class_of's precedence, built in C rather than one call per seq.
        surface_of: dict[int, SurfaceClass] = dict.fromkeys(range(self.length), "log-only")
        surface_of.update(dict.fromkeys(self._removed, "shadowed"))
        surface_of.update(dict.fromkeys(self._next, "current"))
        return SurfaceFold(
            nodes=self.nodes(),
            surface_of=surface_of,
            replaced_by=dict(self._removed),
            replaced=dict(self._replaced),
        )


def _without_output(data: object) -> object:
    plain = thaw(data)
    try:
        plain["message"]["content"][0]["content"] = None
    except (KeyError, IndexError, TypeError):
        pass
    return plain


def rewrite_seqs(events: Iterable[FoldEvent]) -> set[int]:
    """The seqs whose data the fold compares: every ``tool/result`` that replaces, and the
    start of the run it replaces (a valid rewrite removes exactly that one node). Folding
    skeletons, these must be whole events; the fold reads no other event's data."""
    needed: set[int] = set()
    for event in events:
        op = event.surface_op
        if event.type == "tool/result" and isinstance(op, Replace):
            needed.add(event.seq)
            needed.add(op.start_seq)
    return needed


def fold_surface(events: Iterable[FoldEvent]) -> SurfaceFold:
    """Fold a whole log (seqs contiguous from 0) into its surface.

    Raises:
        SurfaceError: for the first event that breaks a surface rule.
    """
    folder = SurfaceFolder()
    folder.extend(events)
    return folder.snapshot()
