"""Shared hypothesis strategies and a small log builder for sessionquery tests.

* :func:`json_values` — lossless JSON (unicode, nested containers, finite floats).
* :func:`session_ids`, :func:`absolute_paths`, :func:`valid_headers` — header values.
* :func:`valid_events` — any single valid :class:`SessionEvent` (not necessarily foldable in
  a log: use it for envelope round trips).
* :func:`valid_logs` — whole, realistic, fold-valid logs: turns and steps, user/assistant
  messages, ``tool/call`` + ``tool/result`` pairs with matching call ids, compactions
  (replaces carrying the removed seqs as sources), tool-result rewrites, system-prompt
  replacements, titles, todos and ignorable unknown events. ``open_tail=True`` may cut the log
  inside a turn, as a crash would.
* :class:`LogBuilder` — the same vocabulary for hand-written examples.

Every log produced here folds with :func:`sessionquery.model.fold_surface`; tests rely on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from sessionquery.model import (
    KNOWN_EVENT_TYPES,
    SURFACE_ELIGIBLE_TYPES,
    Replace,
    SessionEvent,
    SessionHeader,
    SurfaceOp,
    messages,
)

__all__ = [
    "LogBuilder",
    "absolute_paths",
    "json_values",
    "session_ids",
    "tool_result_data",
    "valid_events",
    "valid_headers",
    "valid_logs",
]

# Surrogates are excluded: they cannot be stored as UTF-8 (the model rejects them).
_TEXT_ALPHABET = st.characters(exclude_categories=["Cs"])
_ID_ALPHABET = st.characters(exclude_categories=["Cc", "Cs"])

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_TEXT_ALPHABET, max_size=12)
)


def json_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """Plain (mutable) lossless JSON values, including unicode and nested containers."""
    return st.recursive(
        _json_scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(_TEXT_ALPHABET, max_size=8), children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def session_ids() -> st.SearchStrategy[str]:
    """Valid session ids, biased towards the awkward-but-legal ones."""
    return st.one_of(
        st.sampled_from(["s1", "a/b", "..", "../x", "sess-ü-日本", "x" * 512, " lead space"]),
        st.text(_ID_ALPHABET, min_size=1, max_size=24),
    )


def absolute_paths() -> st.SearchStrategy[str]:
    """Absolute POSIX paths, including trailing slashes and ``..`` segments (kept verbatim)."""
    segment = st.text(
        st.characters(exclude_categories=["Cs"], exclude_characters="/\x00"),
        min_size=1,
        max_size=8,
    )
    return st.builds(
        lambda parts, slash: "/" + "/".join(parts) + ("/" if slash and parts else ""),
        st.lists(segment | st.just(".."), max_size=4),
        st.booleans(),
    )


@st.composite
def valid_headers(draw: st.DrawFn, id: str | None = None) -> SessionHeader:
    """Any valid :class:`SessionHeader` (``id`` fixed when given)."""
    return SessionHeader(
        id=id if id is not None else draw(session_ids()),
        created_at=draw(st.integers(min_value=0, max_value=2**53)),
        cwd=draw(st.none() | absolute_paths()),
        parent_session=draw(st.none() | session_ids()),
        is_seeded=draw(st.booleans()),
        origin=draw(st.none() | st.sampled_from(["subagent", "fork"]) | st.text(max_size=5)),
        delegation_depth=draw(st.integers(min_value=0, max_value=20)),
        agent_preset=draw(st.none() | st.text(max_size=10)),
    )


_EVENT_TYPES = st.sampled_from(
    [
        "user/message",
        "assistant/message",
        "tool/result",
        "system/message",
        "tool/call",
        "turn/start",
        "session/title",
    ]
) | st.text(_TEXT_ALPHABET, min_size=1, max_size=20)


_SIMPLE_OPS: list[SurfaceOp | None] = [None, "append"]


@st.composite
def valid_events(draw: st.DrawFn) -> SessionEvent:
    """Any envelope-valid event: arbitrary type, data, surface op, sources and flag."""
    seq = draw(st.integers(min_value=0, max_value=2**40))
    op: SurfaceOp | None = draw(
        st.sampled_from(_SIMPLE_OPS)
        | st.builds(Replace, st.integers(0, 2**40), st.integers(0, 2**40))
    )
    sources = draw(st.none() | st.lists(st.integers(0, 2**40), max_size=4).map(tuple))
    return SessionEvent(
        type=draw(_EVENT_TYPES),
        seq=seq,
        time=draw(st.integers(min_value=0, max_value=2**53)),
        data=draw(json_values()),
        surface_op=op,
        source_event_seqs=sources,
        ignorable=draw(st.booleans()),
    )


# ---------------------------------------------------------------------------------------------
# Realistic logs


def tool_result_data(
    turn: int, step: int, call_id: str, output: str, *, is_error: bool = False
) -> dict[str, Any]:
    """The data of a ``tool/result`` event answering ``call_id`` (failures carry an error)."""
    error = ("ToolFailedError", "TOOL_FAILED") if is_error else None
    return dict(
        messages.tool_result(
            output, call_id=call_id, turn=turn, step=step, is_error=is_error, error=error
        )
    )


@dataclass
class LogBuilder:
    """Builds a fold-valid log one event at a time, numbering seqs from 0.

    The builder tracks the current surface so that replaces can be expressed by surface
    position and stay valid. ``time`` advances by one millisecond per event from ``start``.
    """

    start: int = 1_700_000_000_000
    events: list[SessionEvent] = field(default_factory=list)
    surface: list[int] = field(default_factory=list)
    turn: int = 0
    step: int = 0
    _call_counter: int = 0

    # -- low level ------------------------------------------------------------------------
    def add(
        self,
        type: str,
        data: Any = None,
        *,
        surface_op: SurfaceOp | None = None,
        sources: Sequence[int] | None = None,
        ignorable: bool = False,
    ) -> SessionEvent:
        """Append an event with the next seq and track its effect on the surface."""
        seq = len(self.events)
        event = SessionEvent(
            type=type,
            seq=seq,
            time=self.start + seq,
            data=data,
            surface_op=surface_op,
            source_event_seqs=tuple(sources) if sources is not None else None,
            ignorable=ignorable,
        )
        self.events.append(event)
        if ignorable and type not in SURFACE_ELIGIBLE_TYPES | KNOWN_EVENT_TYPES:
            return event  # the fold skips it, whatever it carries
        if surface_op == "append":
            self.surface.append(seq)
        elif isinstance(surface_op, Replace):
            # A deliberately invalid replace (for refusal tests) leaves the surface as it is.
            if surface_op.start_seq in self.surface and surface_op.end_seq in self.surface:
                lo = self.surface.index(surface_op.start_seq)
                hi = self.surface.index(surface_op.end_seq)
                if lo <= hi:
                    self.surface[lo : hi + 1] = [seq]
        return event

    @property
    def next_seq(self) -> int:
        """The seq the next event will get."""
        return len(self.events)

    def type_of(self, seq: int) -> str:
        """The type of the event at ``seq``."""
        return self.events[seq].type

    # -- vocabulary -----------------------------------------------------------------------
    def system(self, text: str = "You are a helpful agent.") -> SessionEvent:
        """Append a system message."""
        data = messages.system_message(text, turn=self.turn, step=self.step)
        return self.add("system/message", data, surface_op="append")

    def replace_system_head(self, text: str) -> SessionEvent:
        """Replace the system message at the head of the surface (a prompt update)."""
        head = self.surface[0]
        data = messages.system_message(text, turn=self.turn, step=self.step)
        return self.add("system/message", data, surface_op=Replace(head, head), sources=[head])

    def turn_start(self) -> SessionEvent:
        """Open the next turn."""
        self.turn += 1
        self.step = 0
        return self.add("turn/start", messages.turn_start(self.turn))

    def turn_end(self, kind: str = "completed", **extra: Any) -> SessionEvent:
        """Close the current turn with the given reason kind."""
        return self.add("turn/end", messages.turn_end(self.turn, kind, **extra))

    def step_start(self) -> SessionEvent:
        """Open the next step of the current turn."""
        self.step += 1
        return self.add("step/start", messages.step_start(self.turn, self.step))

    def step_end(self) -> SessionEvent:
        """Close the current step."""
        return self.add("step/end", messages.step_end(self.turn, self.step))

    def user(self, text: str, *, kind: str = "user") -> SessionEvent:
        """Append a user message."""
        data = messages.user_message(text, id=f"msg-{self.next_seq}", source=kind)
        return self.add("user/message", data, surface_op="append")

    def new_call_id(self) -> str:
        """A fresh tool call id."""
        self._call_counter += 1
        return f"call-{self._call_counter}"

    def assistant(
        self,
        text: str | None = "ok",
        *,
        calls: Sequence[tuple[str, str, str]] = (),
        reasoning: str | None = None,
    ) -> SessionEvent:
        """Append an assistant message; ``calls`` are ``(call_id, name, arguments)``."""
        data = messages.assistant_message(
            text,
            turn=self.turn,
            step=self.step,
            tool_calls=[messages.tool_call_block(*call) for call in calls],
            reasoning=reasoning,
            usage={"inputTokens": 10, "outputTokens": 5},
        )
        return self.add("assistant/message", data, surface_op="append")

    def tool_call(self, call_id: str, name: str, arguments: str) -> SessionEvent:
        """Log that a tool call started."""
        block = messages.tool_call_block(call_id, name, arguments)
        return self.add("tool/call", messages.tool_call(block, turn=self.turn, step=self.step))

    def tool_result(
        self, call_id: str, output: str, *, is_error: bool = False, call_seq: int | None = None
    ) -> SessionEvent:
        """Append the result of ``call_id`` (citing its ``tool/call`` when given)."""
        return self.add(
            "tool/result",
            tool_result_data(self.turn, self.step, call_id, output, is_error=is_error),
            surface_op="append",
            sources=[call_seq] if call_seq is not None else None,
        )

    def rewrite_tool_result(self, seq: int, output: str) -> SessionEvent:
        """Replace the tool result at ``seq`` with one whose output text differs."""
        old = json.loads(json.dumps(self.events[seq].data))
        old["message"]["content"][0]["content"] = [messages.text_block(output)]
        return self.add("tool/result", old, surface_op=Replace(seq, seq), sources=[seq])

    def compact(self, lo: int, hi: int, summary: str = "summary") -> SessionEvent:
        """Replace surface positions ``lo..hi`` (inclusive) with a summary user message."""
        removed = self.surface[lo : hi + 1]
        data = messages.user_message(summary, id=f"msg-{self.next_seq}", source="compaction")
        return self.add(
            "user/message",
            data,
            surface_op=Replace(removed[0], removed[-1]),
            sources=removed,
        )

    def title(
        self, title: str, message_seqs: Sequence[int] = (), kind: str = "fallback"
    ) -> SessionEvent:
        """Log a session title."""
        return self.add("session/title", messages.session_title(title, message_seqs, source=kind))

    def todo(self, todos: Sequence[tuple[str, str]]) -> SessionEvent:
        """Log a todo list of ``(status, content)``."""
        data = messages.todo_write((content, status) for status, content in todos)
        return self.add("todo/write", data)

    def unknown_ignorable(self, data: Any = None, *, with_surface_op: bool = False) -> SessionEvent:
        """Log an ignorable event of a type this library does not know."""
        return self.add(
            "x-plugin/telemetry",
            data if data is not None else {"note": "ignored"},
            surface_op="append" if with_surface_op else None,
            ignorable=True,
        )


# Real texts and titles are normalised, non-blank strings; mostly words, sometimes any unicode.
_WORDS = ["fix the parser", "needle", "run tests", "größe", "日本語のテキスト", "ok", "done 🙂"]
_words = st.sampled_from(_WORDS) | st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=10
).filter(lambda text: text.strip() != "")


_maybe_words = st.none() | _words
_tool_names = st.sampled_from(["read", "grep", "shell"])
_step_counts = st.integers(1, 3)
_call_counts = st.integers(0, 2)
_ignorable_data = json_values(max_leaves=3)
_turn_end_kinds = st.sampled_from(["completed", "aborted", "error", "max-tokens"])
_title_kinds = st.sampled_from(["fallback", "user"])
_maintenance_actions = st.lists(
    st.sampled_from(["compact", "compact", "rewrite", "system", "todo", "none"]), max_size=2
)
_log_starts = st.integers(0, 2**41)
_mostly_true = st.sampled_from([True, True, False])


def _turn(draw: st.DrawFn, log: LogBuilder) -> None:
    log.turn_start()
    user_seq = log.user(draw(_words)).seq
    for _ in range(draw(_step_counts)):
        log.step_start()
        calls = [
            (log.new_call_id(), draw(_tool_names), '{"path":"a"}')
            for _ in range(draw(_call_counts))
        ]
        reasoning = draw(_maybe_words)
        log.assistant(draw(_maybe_words), calls=calls, reasoning=reasoning)
        for call_id, name, arguments in calls:
            call_seq = log.tool_call(call_id, name, arguments).seq
            cite = draw(st.booleans())
            log.tool_result(
                call_id,
                draw(_words),
                is_error=draw(st.booleans()),
                call_seq=call_seq if cite else None,
            )
        if draw(st.booleans()):
            log.unknown_ignorable(draw(_ignorable_data), with_surface_op=draw(st.booleans()))
        log.step_end()
    reason = draw(_turn_end_kinds)
    if reason == "error":
        log.turn_end("error", error={"message": draw(_words), "code": "E"})
    else:
        log.turn_end(reason)
    if draw(st.booleans()):
        log.title(draw(_words), [user_seq], kind=draw(_title_kinds))


def _between_turns(draw: st.DrawFn, log: LogBuilder) -> None:
    for action in draw(_maintenance_actions):
        _maintenance(draw, log, action)


def _maintenance(draw: st.DrawFn, log: LogBuilder, action: str) -> None:
    surface = log.surface
    first = 1 if surface and log.type_of(surface[0]) == "system/message" else 0
    if action == "compact" and len(surface) > first:
        lo = draw(st.integers(first, len(surface) - 1))
        hi = draw(st.integers(lo, len(surface) - 1))
        log.compact(lo, hi, draw(_words))
    elif action == "rewrite":
        results = [seq for seq in surface if log.type_of(seq) == "tool/result"]
        if results:
            log.rewrite_tool_result(draw(st.sampled_from(results)), "[output pruned]")
    elif action == "system" and first == 1:
        log.replace_system_head(draw(_words))
    elif action == "todo":
        log.todo([("pending", draw(_words)), ("completed", draw(_words))])


@st.composite
def valid_logs(
    draw: st.DrawFn, *, min_turns: int = 0, max_turns: int = 3, open_tail: bool = False
) -> list[SessionEvent]:
    """A realistic, fold-valid session log.

    Args:
        min_turns: fewest complete turns.
        max_turns: most complete turns.
        open_tail: when true, the log may be cut anywhere (every prefix of a valid log is
            valid), usually leaving a turn open as a crash would.
    """
    log = LogBuilder(start=draw(_log_starts))
    if draw(_mostly_true):
        log.system()
    for _ in range(draw(st.integers(min_turns, max_turns))):
        _turn(draw, log)
        _between_turns(draw, log)
    events = log.events
    if open_tail and events:
        events = events[: draw(st.integers(0, len(events)))]
    return list(events)
