"""VS Code Copilot Chat sessions (``<Code user folder>/User``) as read-only sessions.

VS Code stores each chat of a workspace under ``workspaceStorage/<hash>/chatSessions/`` (chats
of an empty window under ``globalStorage/emptyWindowChatSessions/``), as a JSON snapshot
``<id>.json`` or, in current releases, an operation log ``<id>.jsonl`` whose first entry holds
the whole state (``{"kind": 0, "v": …}``) and whose later entries set (``kind 1``, path ``k``,
value ``v``), push or splice (``kind 2``: truncate the array at ``i``, then append ``v``) or
delete (``kind 3``) parts of it (``objectMutationLog.ts`` and ``chatSessionOperationLog.ts``
in microsoft/vscode). ``workspace.json`` beside ``chatSessions`` names the workspace folder,
the sessions' ``cwd``.

The state (``ISerializableChatData`` version 3: ``sessionId``, ``creationDate``,
``customTitle``, ``requests``) is replayed to its final form; each request is one turn:

* ``message.text`` → ``user/message``; the ``response`` parts in order → ``assistant/message``
  events (markdown → text, ``thinking`` → ``reasoning``), one per run of text between tool
  invocations; each ``toolInvocationSerialized`` → a ``tool-call`` block plus ``tool/call``
  and a ``tool/result`` (its result details, terminal output or past-tense message; an error
  when it reports ``resultError`` or was denied);
* a ``runSubagent`` invocation (``toolSpecificData.kind == "subagent"``) → a child session
  ``<id>/subagent-<toolCallId>`` (``origin="subagent"``) holding the subagent's prompt, the tool
  invocations that name it in ``subAgentInvocationId``, and its result;
* requests an operation log removes again (undo, restoring a checkpoint) stay in the log,
  shadowed by a ``user/message`` (``source.kind: "rewind"``);
* ``customTitle`` → ``session/title``; ``result.errorDetails`` ends the turn with an error.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder
from sessionquery.sources._common import Problem, checked_id, derived_id, workspace_json_folder
from sessionquery.sources._lines import parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, Sides, UnitInput
from sessionquery.sources._tree import TreeSource
from sessionquery.sources.units import FileTree, Role

__all__ = ["VscodeCopilotSource", "parse_vscode_unit", "vscode_units"]

_WORKSPACES, _EMPTY = "workspaceStorage", ("globalStorage", "emptyWindowChatSessions")


def select_vscode(rel: str, is_dir: bool) -> Role | None:
    """Chat sessions under ``workspaceStorage`` and ``globalStorage`` and each workspace's
    ``workspace.json``."""
    parts = rel.split("/")
    chat = rel.endswith((".json", ".jsonl"))
    if parts[0] == _WORKSPACES:
        if is_dir:
            return "transcript" if len(parts) <= 2 or parts[2:] == ["chatSessions"] else None
        if len(parts) == 3 and parts[2] == "workspace.json":
            return "side"
        return "transcript" if len(parts) == 4 and parts[2] == "chatSessions" and chat else None
    if parts[0] == _EMPTY[0]:
        if is_dir:
            return "transcript" if len(parts) == 1 or parts[1] == _EMPTY[1] else None
        return "transcript" if len(parts) == 3 and parts[1] == _EMPTY[1] and chat else None
    return None


def vscode_units(root: Path, *, follow_outside_links: bool = False) -> FileTree:
    """The chat session files (and workspace manifests) under a VS Code ``User`` folder."""
    return FileTree(Path(root), select_vscode, follow_outside_links=follow_outside_links)


# -- replaying the operation log ------------------------------------------------------------


@dataclass(slots=True)
class _History:
    """Requests in the order they first appeared, and which a later entry removed."""

    order: list[str] = field(default_factory=list[str])
    removed: dict[str, tuple[int, dict[str, Any]]] = field(
        default_factory=dict[str, tuple[int, dict[str, Any]]]
    )  # request id -> (entry line that removed it, its last state)
    lines: dict[str, int] = field(default_factory=dict[str, int])  # request id -> first line

    def observe(self, candidates: list[tuple[int, Any]], after: list[Any], line: int) -> None:
        """Note the requests an entry removed (of ``candidates``: ``(index, copy before the
        entry)``) and the ones it added."""
        now = [_request_id(r, i) for i, r in enumerate(after)]
        present = set(now)
        for index, request in candidates:
            request_id = _request_id(request, index)
            if request_id not in present and request_id not in self.removed:
                self.removed[request_id] = (line, as_dict(request))
        for request_id in now:
            if request_id not in self.lines:
                self.lines[request_id] = line
                self.order.append(request_id)


def _removable(entry: dict[str, Any], requests: list[Any]) -> list[tuple[int, Any]]:
    """The requests an entry can remove, with their indexes (copies: the entry mutates them)."""
    kind, path = entry.get("kind"), as_list(entry.get("k"))
    found: list[tuple[int, Any]] = []
    if kind == 0 or path == ["requests"]:
        start = entry.get("i") if kind == 2 else 0
        if kind != 2 or (type(start) is int and start >= 0):
            found = list(enumerate(requests))[start if type(start) is int else 0 :]
    elif len(path) == 2 and path[0] == "requests" and kind in (1, 3):
        index = path[1]
        if type(index) is int and 0 <= index < len(requests):
            found = [(index, requests[index])]
    return [(index, copy.deepcopy(request)) for index, request in found]


def _request_id(request: object, index: int) -> str:
    value = as_dict(request).get("requestId")
    return value if isinstance(value, str) and value else f"request-{index}"


def _walk(state: Any, path: list[Any]) -> Any:
    for step in path:
        state = state[step]
    return state


def _apply(state: Any, entry: dict[str, Any]) -> Any:
    kind, path = entry.get("kind"), as_list(entry.get("k"))
    if kind == 0:
        return entry.get("v")
    if not path:
        return entry.get("v") if kind == 1 else state
    parent = _walk(state, path[:-1])
    last = path[-1]
    if kind == 1:
        parent[last] = entry.get("v")
    elif kind == 3:
        if isinstance(parent, dict):
            parent.pop(last, None)
        else:
            parent[last] = None
    elif kind == 2:
        current = parent.get(last) if isinstance(parent, dict) else parent[last]
        items = current if isinstance(current, list) else []
        index = entry.get("i")
        if isinstance(index, int) and index >= 0:
            del items[index:]
        items.extend(as_list(entry.get("v")))
        parent[last] = items
    return state


def replay(unit: UnitInput, where: Path) -> tuple[dict[str, Any], _History, list[Problem]]:
    """The session's final state, its request history and the problems met on the way."""
    history = _History()
    if unit.key.endswith(".json"):
        try:
            snapshot = json.loads(unit.data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return {}, history, [Problem(str(where), None, f"not a JSON session ({exc}); skipped")]
        history.observe([], as_list(as_dict(snapshot).get("requests")), 1)
        return as_dict(snapshot), history, []
    lines, problems = parse_lines(where, unit.data, "empty session log; no session imported")
    state: Any = None
    tick = read_check()
    for line in lines:
        tick(len(line.raw))
        entry = as_dict(line.record)
        path = as_list(entry.get("k"))
        watched = entry.get("kind") == 0 or (path[:1] == ["requests"] and len(path) <= 2)
        candidates = _removable(entry, as_list(as_dict(state).get("requests"))) if watched else []
        try:
            state = _apply(state, entry)
        except (KeyError, IndexError, TypeError) as exc:
            message = f"operation does not apply to the session state ({exc!r}); skipped"
            problems.append(Problem(str(where), line.number, message))
            continue
        if watched:
            history.observe(candidates, as_list(as_dict(state).get("requests")), line.number)
    if state is not None and not isinstance(state, dict):
        problems.append(Problem(str(where), None, "the session state is not an object"))
    return as_dict(state), history, problems


# -- the events -----------------------------------------------------------------------------


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    data = as_dict(value)
    text = data.get("value", data.get("content"))
    return text if isinstance(text, str) else ""


def _arguments(part: dict[str, Any]) -> str:
    data = as_dict(part.get("toolSpecificData"))
    if data.get("kind") == "terminal":
        command = as_dict(data.get("commandLine")).get("original", data.get("command"))
        return compact_json({"command": command})
    if data.get("kind") == "input":
        return compact_json(data.get("rawInput"))
    if data.get("kind") == "subagent":
        return compact_json({"description": data.get("description"), "prompt": data.get("prompt")})
    return compact_json({"invocation": _text(part.get("invocationMessage"))})


def _outcome(part: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    data = as_dict(part.get("toolSpecificData"))
    texts: list[str] = []
    output = as_dict(data.get("terminalCommandOutput")).get("text")
    if isinstance(output, str):
        texts.append(output)
    if data.get("kind") == "subagent" and isinstance(data.get("result"), str):
        texts.append(data["result"])
    for item in as_list(as_dict(part.get("resultDetails")).get("output")):
        value = as_dict(item).get("value")
        if isinstance(value, str):
            texts.append(value)
    if not texts:
        texts.append(_text(part.get("pastTenseMessage")) or _text(part.get("invocationMessage")))
    error = part.get("resultError")
    confirmed = part.get("isConfirmed")
    denied = confirmed is False or as_dict(confirmed).get("type") == 0
    if isinstance(error, str) and error:
        texts.append(error)
    return [{"type": "text", "text": t} for t in texts if t], bool(error) or denied


@dataclass(slots=True)
class _Turn:
    """One request's response, emitted as assistant messages split at tool invocations."""

    builder: LogBuilder
    line: int
    time: int | None
    blocks: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def flush(self, extra: dict[str, Any]) -> None:
        if self.blocks:
            self.builder.assistant_message(self.blocks, self.line, self.time, extra)
            self.blocks = []

    def part(self, part: object, extra: dict[str, Any]) -> None:
        data = as_dict(part)
        kind = data.get("kind")
        if isinstance(part, str) or kind in (None, "markdownContent"):
            text = _text(part) or _text(data.get("content"))
            if text:
                self.blocks.append({"type": "text", "text": text})
        elif kind == "thinking":
            value = data.get("value")
            text = "\n".join(value) if isinstance(value, list) else _text(value)
            self.blocks.append({"type": "reasoning", "text": text})
        elif kind == "toolInvocationSerialized":
            call_id = str(data.get("toolCallId") or f"line-{self.line}-{len(self.builder.events)}")
            call = {
                "type": "tool-call",
                "id": call_id,
                "name": str(data.get("toolId") or "unknown"),
                "arguments": _arguments(data),
            }
            self.blocks.append(call)
            self.flush(extra)
            blocks, failed = _outcome(data)
            self.builder.tool_result(call_id, failed, blocks, self.line, self.time)
        elif kind == "inlineReference":
            reference = as_dict(data.get("inlineReference"))
            name = reference.get("fsPath", reference.get("path", data.get("name")))
            if isinstance(name, str) and name:
                self.blocks.append({"type": "text", "text": name})


def _request_events(
    builder: LogBuilder, request: dict[str, Any], line: int, parts: list[Any]
) -> int:
    """The events of one request; the seq of its user message."""
    timestamp = request.get("timestamp")
    time = timestamp if type(timestamp) is int and timestamp >= 0 else None
    text = _text(as_dict(request.get("message")).get("text"))
    blocks = [{"type": "text", "text": text}] if text else []
    builder.open_turn(line, time, explicit=True)
    seq = builder.user_message(_request_id(request, 0), blocks, "user", line, time)
    builder.derive_title(seq, blocks, line, time)
    extra = {"model": request["modelId"]} if isinstance(request.get("modelId"), str) else {}
    turn = _Turn(builder, line, time)
    for part in parts:
        turn.part(part, extra)
    turn.flush(extra)
    error = as_dict(as_dict(request.get("result")).get("errorDetails"))
    reason: dict[str, Any] = {"kind": "completed"}
    if error:
        reason = {"kind": "error", "error": {"message": str(error.get("message") or "")}}
    elif request.get("isCanceled") is True:
        reason = {"kind": "aborted", "reason": {"kind": "user"}}
    builder.close_turn(reason, line, time)
    return seq


def _split(parts: list[Any]) -> tuple[list[Any], dict[str, list[Any]], dict[str, dict[str, Any]]]:
    """A response's own parts, the parts each subagent run produced, and the subagents' data."""
    own: list[Any] = []
    runs: dict[str, list[Any]] = {}
    agents: dict[str, dict[str, Any]] = {}
    for part in parts:
        data = as_dict(part)
        owner = data.get("subAgentInvocationId")
        if isinstance(owner, str) and owner:
            runs.setdefault(owner, []).append(part)
            continue
        own.append(part)
        specific = as_dict(data.get("toolSpecificData"))
        if data.get("kind") == "toolInvocationSerialized" and specific.get("kind") == "subagent":
            agents[str(data.get("toolCallId"))] = specific
    return own, runs, agents


# -- the file -------------------------------------------------------------------------------


def workspace_folder(sides: Sides, key: str) -> str | None:
    """The folder ``workspace.json`` beside a workspace's ``chatSessions`` names."""
    parts = key.split("/")
    if parts[0] != _WORKSPACES or len(parts) < 4:
        return None
    return sides.memo(
        f"{_WORKSPACES}/{parts[1]}/workspace.json", "folder", workspace_json_folder, None
    )


def parse_vscode_unit(unit: UnitInput) -> ParsedFile:
    """Parse one chat session file into its sessions and problems."""
    where = Path(unit.where)
    state, history, problems = replay(unit, where)
    if not state:
        return ParsedFile((), tuple(problems))
    stem = unit.name.rsplit(".", 1)[0]
    own = checked_id(state.get("sessionId"))
    session_id = own or derived_id(stem)
    created = state.get("creationDate")
    requests = {_request_id(r, i): as_dict(r) for i, r in enumerate(as_list(state.get("requests")))}
    times = [t for t in (r.get("timestamp") for r in requests.values()) if type(t) is int]
    created_at = created if type(created) is int and created >= 0 else min(times, default=0)
    cwd = workspace_folder(unit.sides, unit.key)
    if cwd is None and unit.parts[0] == _WORKSPACES:
        problems.append(
            Problem(str(where), None, "no workspace folder in workspace.json; cwd is None")
        )
    header = SessionHeader(id=session_id, created_at=created_at, cwd=cwd)
    builder = LogBuilder(file=unit.key, last_time=created_at)
    children: list[tuple[str, dict[str, Any], list[Any], int]] = []
    started: dict[str, int] = {}  # request id -> seq of its user message
    rewound: dict[int, list[str]] = {}
    for request_id, (line, _) in history.removed.items():
        rewound.setdefault(line, []).append(request_id)
    pending = sorted(rewound)
    for request_id in history.order:
        line = history.lines[request_id]
        while pending and pending[0] <= line:
            at = pending.pop(0)
            _rewind(builder, started, rewound[at], at)
        removed = history.removed.get(request_id)
        request = removed[1] if removed is not None else requests.get(request_id, {})
        own_parts, runs, agents = _split(as_list(request.get("response")))
        started[request_id] = _request_events(builder, request, line, own_parts)
        for call_id, data in agents.items():
            children.append((call_id, data, runs.get(call_id, []), line))
    for at in pending:
        _rewind(builder, started, rewound[at], at)
    title = state.get("customTitle")
    if isinstance(title, str) and title.strip():
        data = {"title": title, "messageSeqs": [], "source": {"kind": "vscode-custom-title"}}
        builder.emit("session/title", data, max(history.lines.values(), default=1))
    preferred = own is None or own == stem
    main = ParsedSession(header, tuple(builder.events), tuple(builder.surface), preferred)
    sessions = [main]
    for call_id, data, parts, line in children:
        sessions.append(_subagent(session_id, header, call_id, data, parts, unit.key, line))
    return ParsedFile(tuple(sessions), tuple(problems))


def _rewind(builder: LogBuilder, started: dict[str, int], removed: list[str], line: int) -> None:
    seqs = [started[r] for r in removed if r in started and started[r] in builder.current]
    if not seqs:
        return
    builder.user_message(
        f"rewind-line-{line}",
        [{"type": "context", "text": f"{len(seqs)} request(s) removed from the chat"}],
        "rewind",
        line,
        None,
        replace_surface=True,
        replace_from=min(seqs, key=builder.current.index),
    )


def _subagent(  # noqa: PLR0917 - one child's context
    parent: str,
    header: SessionHeader,
    call_id: str,
    data: dict[str, Any],
    parts: list[Any],
    key: str,
    line: int,
) -> ParsedSession:
    suffix = f"subagent-{call_id}"
    child = replace(
        header,
        id=derived_id(f"{parent}/{suffix}"),
        parent_session=parent,
        origin="subagent",
        delegation_depth=1,
    )
    started = data.get("startedAt")
    time = started if type(started) is int and started >= 0 else header.created_at
    child = replace(child, created_at=time)
    builder = LogBuilder(file=key, last_time=time)
    request: dict[str, Any] = {
        "requestId": f"{call_id}-prompt",
        "message": {"text": data.get("prompt") or data.get("description") or ""},
        "timestamp": time,
    }
    if isinstance(data.get("modelId"), str):
        request["modelId"] = data["modelId"]
    result = data.get("result")
    closing = [{"value": result}] if isinstance(result, str) and result else []
    _request_events(builder, request, line, [*parts, *closing])
    return replace(
        ParsedSession(child, tuple(builder.events), tuple(builder.surface), True), suffix=suffix
    )


class VscodeCopilotSource(TreeSource, kind="vscode", units=vscode_units, parser=parse_vscode_unit):
    """A read-only ``SessionPersistence`` over a VS Code user folder's Copilot Chat sessions.

    ``root`` is the ``User`` folder (``~/.config/Code/User`` on Linux, ``~/Library/Application
    Support/Code/User`` on macOS, ``%APPDATA%/Code/User`` on Windows). Arguments and errors:
    :class:`~._tree.TreeSource`.
    """
