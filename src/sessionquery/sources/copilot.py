"""GitHub Copilot CLI session logs (``~/.copilot/session-state``) as read-only sessions.

Copilot CLI writes each session's events to ``session-state/<session id>/events.jsonl`` (or,
in some releases, ``session-state/<session id>.jsonl``); a resumed session appends to the same
file. Every line is one event ``{type, id, parentId, timestamp, data, agentId?}`` whose types
and data shapes the Copilot SDK publishes (``session-events.schema.json``, generated as
``nodejs/src/generated/session-events.ts`` in github/copilot-sdk). Events a sub-agent
produced carry its ``agentId``.

* ``session.start`` gives the header (``sessionId``, ``startTime``, ``context.cwd``;
  ``detachedFromSpawningParentSessionId`` → ``parent_session``, ``origin="detached"``);
* ``user.message`` opens a turn (``user/message``; ``skill-…`` injections are on the surface as
  unsearchable context); ``assistant.message`` → ``assistant/message`` (``reasoningText`` →
  ``reasoning``, ``toolRequests`` → ``tool-call`` blocks plus ``tool/call``);
  ``tool.execution_complete`` → ``tool/result`` (``success: false`` or ``error`` → an error);
* events with an ``agentId`` → the child session ``<session id>/agent-<agentId>``
  (``origin="subagent"``), whose spawning call is ``subagent.started``'s ``toolCallId``;
* ``session.compaction_complete`` → a ``user/message`` (``source.kind: "compaction"``) holding
  ``summaryContent``, replacing the whole surface; ``session.context_cleared`` the same with
  ``source.kind: "clear"``; ``session.snapshot_rewind`` → a ``user/message``
  (``source.kind: "rewind"``) replacing the events from ``upToEventId`` on;
* ``session.title_changed`` → ``session/title``; ``abort`` ends the turn as aborted; every other
  event → an ignorable ``copilot/<type>`` event holding the raw line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder, call_block
from sessionquery.sources._common import Problem, checked_id, derived_id, iso_to_ms, usable_cwd
from sessionquery.sources._lines import Line, parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, UnitInput
from sessionquery.sources._tree import TreeSource
from sessionquery.sources.units import FileTree, Role

__all__ = ["CopilotCliSource", "copilot_units", "parse_copilot_unit"]

_STATE = "session-state"


def select_copilot(rel: str, is_dir: bool) -> Role | None:
    """``session-state/<id>/events.jsonl`` and ``session-state/<id>.jsonl``."""
    parts = rel.split("/")
    if parts[0] != _STATE:
        return None
    if is_dir:
        return "transcript" if len(parts) <= 2 else None
    if len(parts) == 2 and rel.endswith(".jsonl"):
        return "transcript"
    return "transcript" if len(parts) == 3 and parts[2] == "events.jsonl" else None


def copilot_units(root: Path, *, follow_outside_links: bool = False) -> FileTree:
    """The session event logs under a Copilot CLI home."""
    return FileTree(Path(root), select_copilot, follow_outside_links=follow_outside_links)


# -- events --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Stream:
    builder: LogBuilder
    before: dict[str, int] = field(default_factory=dict[str, int])  # event id -> surface size

    def event(self, line: Line) -> None:
        record = line.record
        assert record is not None
        kind = record.get("type")
        data = as_dict(record.get("data"))
        time = iso_to_ms(record.get("timestamp"))
        event_id = record.get("id")
        if isinstance(event_id, str):
            self.before.setdefault(event_id, len(self.builder.current))
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None or not handler(self, data, line, time):
            name = kind if isinstance(kind, str) and kind else "unknown"
            self.builder.log_only(f"copilot/{name}", line.raw, line.number, time)

    def user(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        content = data.get("content")
        if not isinstance(content, str):
            return False
        blocks = [{"type": "text", "text": content}]
        message_id = str(data.get("interactionId") or f"line-{line.number}")
        source = data.get("source")
        if isinstance(source, str) and source.startswith("skill-"):
            context = [{"type": "context", "text": content}]
            extra = {"copilotSource": source}
            self.builder.user_message(
                message_id, context, "injected", line.number, time, extra=extra
            )
            return True
        self.builder.open_turn(line.number, time, explicit=False)
        seq = self.builder.user_message(message_id, blocks, "user", line.number, time)
        self.builder.derive_title(seq, blocks, line.number, time)
        return True

    def assistant(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        blocks: list[dict[str, Any]] = []
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
            blocks.append({"type": "reasoning", "text": data["reasoningText"]})
        if isinstance(data.get("content"), str) and data["content"]:
            blocks.append({"type": "text", "text": data["content"]})
        for index, request in enumerate(map(as_dict, as_list(data.get("toolRequests")))):
            raw = request.get("arguments", {})
            blocks.append(
                call_block(
                    request.get("toolCallId"),
                    f"line-{line.number}-{index}",
                    request.get("name"),
                    raw if isinstance(raw, str) else compact_json(raw),
                )
            )
        extra: dict[str, Any] = {}
        if isinstance(data.get("model"), str):
            extra["model"] = data["model"]
        if isinstance(data.get("outputTokens"), int):
            extra["usage"] = {"outputTokens": data["outputTokens"]}
        self.builder.assistant_message(blocks, line.number, time, extra)
        return True

    def result(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        call_id = data.get("toolCallId")
        if not isinstance(call_id, str) or not call_id:
            return False
        outcome = as_dict(data.get("result"))
        text = outcome.get("content")
        if not isinstance(text, str) or not text:
            text = outcome.get("detailedContent")
        blocks = [{"type": "text", "text": text}] if isinstance(text, str) and text else []
        error = as_dict(data.get("error"))
        if isinstance(error.get("message"), str):
            blocks.append({"type": "text", "text": error["message"]})
        failed = data.get("success") is False or bool(error)
        self.builder.tool_result(call_id, failed, blocks, line.number, time)
        return True

    def replace_all(self, kind: str, text: str, line: Line, time: int | None) -> None:
        builder = self.builder
        builder.close_turn(builder.default_close_reason(), line.number, time)
        blocks = [{"type": "text", "text": text}] if kind == "compaction" and text else []
        if not blocks:
            blocks = [{"type": "context", "text": text or kind}]
        builder.user_message(
            f"{kind}-line-{line.number}", blocks, kind, line.number, time, replace_surface=True
        )

    def compaction(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        if data.get("success") is not True:
            return False
        summary = data.get("summaryContent")
        self.replace_all("compaction", summary if isinstance(summary, str) else "", line, time)
        return True

    def cleared(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        initial = data.get("initialMessage")
        self.replace_all("clear", initial if isinstance(initial, str) else "", line, time)
        return True

    def rewind(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        target = data.get("upToEventId")
        current = self.builder.current
        start = self.before.get(target) if isinstance(target, str) else None
        if start is None or start >= len(current):
            return False
        self.builder.rewound(f"Rewound to before event {target}", line.number, time, current[start])
        return True

    def title(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        title = data.get("title")
        if not isinstance(title, str) or not title.strip():
            return False
        payload = {"title": title, "messageSeqs": [], "source": {"kind": "copilot-title"}}
        self.builder.emit("session/title", payload, line.number, time)
        return True

    def abort(self, data: dict[str, Any], line: Line, time: int | None) -> bool:
        self.builder.log_only("copilot/abort", line.raw, line.number, time)
        reason = {
            "kind": "aborted",
            "reason": {"kind": "user"},
            "copilotReason": data.get("reason"),
        }
        self.builder.close_turn(reason, line.number, time)
        return True


_HANDLERS = {
    "user.message": _Stream.user,
    "assistant.message": _Stream.assistant,
    "tool.execution_complete": _Stream.result,
    "session.compaction_complete": _Stream.compaction,
    "session.context_cleared": _Stream.cleared,
    "session.snapshot_rewind": _Stream.rewind,
    "session.title_changed": _Stream.title,
    "abort": _Stream.abort,
}


# -- the file ------------------------------------------------------------------------------


def _start(lines: list[Line]) -> dict[str, Any]:
    for line in lines:
        record = as_dict(line.record)
        if record.get("type") == "session.start":
            return as_dict(record.get("data"))
    return {}


def _created(start: dict[str, Any], lines: list[Line]) -> int:
    created = iso_to_ms(start.get("startTime"))
    if created is None:
        created = next(
            (t for t in (iso_to_ms(as_dict(ln.record).get("timestamp")) for ln in lines) if t), 0
        )
    return created


def _session(session_id: str, lines: list[Line], key: str, header: SessionHeader) -> ParsedSession:
    stream = _Stream(LogBuilder(file=key, last_time=header.created_at))
    tick = read_check()
    for line in lines:
        tick(len(line.raw))
        stream.event(line)
    if lines:
        stream.builder.finish(lines[-1].number)
    builder = stream.builder
    return ParsedSession(
        replace(header, id=session_id), tuple(builder.events), tuple(builder.surface), True
    )


def parse_copilot_unit(unit: UnitInput) -> ParsedFile:
    """Parse one event log into its sessions and problems (never raises for bad lines)."""
    where = Path(unit.where)
    lines, problems = parse_lines(where, unit.data, "empty event log; no session imported")
    if not lines:
        return ParsedFile((), tuple(problems))
    parts = unit.parts
    stem = parts[-2] if unit.name == "events.jsonl" and len(parts) >= 2 else unit.name[:-6]
    start = _start(lines)
    own = checked_id(start.get("sessionId"))
    if own is None:
        problems.append(Problem(str(where), None, "no session.start; id from the file name"))
    session_id = own or derived_id(stem)
    cwd = as_dict(start.get("context")).get("cwd")
    if usable_cwd(cwd) is None:
        problems.append(Problem(str(where), None, "no usable context.cwd; cwd is None"))
    parent = checked_id(start.get("detachedFromSpawningParentSessionId"))
    created = _created(start, lines)
    header = SessionHeader(
        id=session_id,
        created_at=created,
        cwd=usable_cwd(cwd),
        parent_session=parent if parent != session_id else None,
        origin="detached" if parent and parent != session_id else None,
    )
    main_lines: list[Line] = []
    agents: dict[str, list[Line]] = {}
    for line in lines:
        agent = as_dict(line.record).get("agentId")
        if isinstance(agent, str) and agent:
            agents.setdefault(agent, []).append(line)
        else:
            main_lines.append(line)
    main = _session(session_id, main_lines, unit.key, header)
    sessions = [replace(main, preferred=session_id == stem)]
    for agent, chain in agents.items():
        suffix = f"agent-{agent}"
        child_header = SessionHeader(
            id=derived_id(f"{session_id}/{suffix}"),
            created_at=_created({}, chain) or created,
            cwd=header.cwd,
            parent_session=session_id,
            origin="subagent",
            delegation_depth=1,
        )
        child = _session(child_header.id, chain, unit.key, child_header)
        sessions.append(replace(child, suffix=suffix))
    return ParsedFile(tuple(sessions), tuple(problems))


class CopilotCliSource(TreeSource, kind="copilot", units=copilot_units, parser=parse_copilot_unit):
    """A read-only ``SessionPersistence`` over a GitHub Copilot CLI home.

    ``root`` is ``~/.copilot`` (``$COPILOT_HOME`` when set); its ``session-state`` folder is
    read. Arguments and errors: :class:`~._tree.TreeSource`.
    """
