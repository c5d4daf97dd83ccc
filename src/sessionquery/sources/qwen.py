"""Qwen Code chat records (``~/.qwen``) as read-only sessions.

Qwen Code writes one ``projects/<sanitized project path>/chats/<session id>.jsonl`` per session
(older releases: Gemini CLI recordings under ``tmp/<hash>/chats/``, read with
:mod:`.gemini`'s parser). Each line is a ``ChatRecord`` (producer type in
``packages/core/src/services/chatRecordingService.ts`` of QwenLM/qwen-code): ``uuid``,
``parentUuid`` (the records form a tree; the current conversation is the chain the latest
record hangs from), ``sessionId``, ``timestamp``, ``cwd``, ``type`` (user / assistant /
tool_result / system with a ``subtype``), ``message`` (a GenAI ``Content``: role and parts),
``model``, ``usageMetadata``, ``toolCallResult``, ``systemPayload``, and for subagent work
``isSidechain`` with ``agentId``, for a ``/branch`` copy ``forkedFrom``.

* user records open a turn (``user/message``); assistant records (role ``model``) are one
  ``assistant/message`` each (``thought`` parts → ``reasoning``, ``functionCall`` parts →
  ``tool-call`` blocks plus ``tool/call``); tool_result records' ``functionResponse`` parts →
  ``tool/result``;
* a record whose ``parentUuid`` is an earlier record than the last one (a rewind, or a branch
  taken back) → a ``user/message`` (``source.kind: "rewind"``) replacing what came after that
  record on the surface;
* ``system`` ``chat_compression`` → a ``user/message`` (``source.kind: "compaction"``) holding
  the compressed history's text, replacing the whole surface; ``custom_title`` →
  ``session/title``; ``parent_session`` → ``parent_session`` (``origin="subagent"``);
* sidechain records (``isSidechain`` + ``agentId``) → a child session ``<id>/agent-<agentId>``;
* records copied from the parent by ``/branch`` (``forkedFrom``) → one ignorable
  ``qwen/inherited`` event (the parent holds them), the session a fork of that parent;
* every other record → an ignorable ``qwen/<type>[/<subtype>]`` event holding the raw line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list
from sessionquery.persistence.documents import read_check
from sessionquery.sources import _genai as genai
from sessionquery.sources._builder import LogBuilder
from sessionquery.sources._common import Problem, checked_id, derived_id, iso_to_ms, usable_cwd
from sessionquery.sources._lines import Line, parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, UnitInput
from sessionquery.sources._tree import TreeSource
from sessionquery.sources.gemini import parse_gemini_unit, select_gemini
from sessionquery.sources.units import FileTree, Role

__all__ = ["QwenSource", "parse_qwen_unit", "qwen_units"]

_LEGACY = select_gemini("tmp/")


def select_qwen(rel: str, is_dir: bool) -> Role | None:
    """``projects/<project>/chats/*.jsonl`` (and the legacy ``tmp`` recordings)."""
    parts = rel.split("/")
    if parts[0] == "tmp":
        role = _LEGACY(rel, is_dir)
        return role if role == "transcript" or is_dir else None
    if parts[0] != "projects":
        return None
    if is_dir:
        return (
            "transcript" if len(parts) <= 2 or (len(parts) == 3 and parts[2] == "chats") else None
        )
    ok = len(parts) == 4 and parts[2] == "chats" and rel.endswith(".jsonl")
    return "transcript" if ok else None


def qwen_units(root: Path, *, follow_outside_links: bool = False) -> FileTree:
    """The chat records under a Qwen Code home."""
    return FileTree(Path(root), select_qwen, follow_outside_links=follow_outside_links)


# -- lines to events ------------------------------------------------------------------------


@dataclass(slots=True)
class _Stream:
    builder: LogBuilder
    # uuid -> how many surface nodes were current right after that record
    after: dict[str, int] = field(default_factory=dict[str, int])
    last: str | None = None
    inherited: list[Line] = field(default_factory=list[Line])

    def record(self, line: Line) -> None:
        record = line.record
        assert record is not None
        time = iso_to_ms(record.get("timestamp"))
        parent = record.get("parentUuid")
        if isinstance(parent, str) and parent in self.after and parent != self.last:
            self.rewind(parent, line, time)
        kind, subtype = record.get("type"), record.get("subtype")
        message = as_dict(record.get("message"))
        parts = genai.parts_of(message.get("parts"))
        if kind == "user" and not subtype:
            self.user(record, parts, line, time)
        elif kind == "assistant":
            self.assistant(record, parts, line, time)
        elif kind == "tool_result":
            self.results(record, parts, line, time)
        elif kind == "system" and subtype == "chat_compression":
            self.compression(record, line, time)
        elif kind == "system" and subtype == "custom_title":
            title = as_dict(record.get("systemPayload")).get("customTitle")
            if isinstance(title, str) and title.strip():
                data = {"title": title, "messageSeqs": [], "source": {"kind": "qwen-custom-title"}}
                self.builder.emit("session/title", data, line.number, time)
            else:
                self.builder.log_only("qwen/system/custom_title", line.raw, line.number, time)
        else:
            name = f"qwen/{kind or 'unknown'}" + (f"/{subtype}" if isinstance(subtype, str) else "")
            self.builder.log_only(name, line.raw, line.number, time)
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            self.after[uuid] = len(self.builder.current)
            self.last = uuid

    def rewind(self, parent: str, line: Line, time: int | None) -> None:
        keep = self.after[parent]
        current = self.builder.current
        if keep >= len(current):
            return
        self.builder.rewound(f"Rewound to after record {parent}", line.number, time, current[keep])

    def user(
        self, record: dict[str, Any], parts: list[dict[str, Any]], line: Line, time: int | None
    ) -> None:
        if genai.function_responses(parts):
            self.results(record, parts, line, time)
            return
        blocks = genai.text_blocks(parts, reasoning=False)
        message_id = str(record.get("uuid") or f"line-{line.number}")
        self.builder.open_turn(line.number, time, explicit=False)
        seq = self.builder.user_message(message_id, blocks, "user", line.number, time)
        self.builder.derive_title(seq, blocks, line.number, time)

    def assistant(
        self, record: dict[str, Any], parts: list[dict[str, Any]], line: Line, time: int | None
    ) -> None:
        blocks = genai.text_blocks(parts) + genai.call_blocks(parts, f"line-{line.number}")
        extra: dict[str, Any] = {}
        if isinstance(record.get("model"), str):
            extra["model"] = record["model"]
        if isinstance(record.get("usageMetadata"), dict):
            extra["usage"] = record["usageMetadata"]
        self.builder.assistant_message(blocks, line.number, time, extra)

    def results(
        self, record: dict[str, Any], parts: list[dict[str, Any]], line: Line, time: int | None
    ) -> None:
        outcome = as_dict(record.get("toolCallResult"))
        failed = outcome.get("status") in ("error", "cancelled") or bool(outcome.get("error"))
        responses = genai.function_responses(parts)
        if not responses:
            call_id = outcome.get("callId")
            display = outcome.get("resultDisplay")
            blocks = [{"type": "text", "text": display}] if isinstance(display, str) else []
            if isinstance(call_id, str) and call_id:
                self.builder.tool_result(call_id, failed, blocks, line.number, time)
            else:
                self.builder.log_only("qwen/tool_result", line.raw, line.number, time)
            return
        for index, (call_id, response) in enumerate(responses):
            blocks, is_error = genai.response_blocks(response)
            fallback = outcome.get("callId") if isinstance(outcome.get("callId"), str) else None
            known = call_id or fallback or f"unknown-call-line-{line.number}-{index}"
            self.builder.tool_result(known, failed or is_error, blocks, line.number, time)

    def compression(self, record: dict[str, Any], line: Line, time: int | None) -> None:
        # The compressed history starts with the summary; the retained tail after it is
        # already in the log (it stays shadowed, as Claude Code's preserved messages do).
        history = as_list(as_dict(record.get("systemPayload")).get("compressedHistory"))
        summary = genai.parts_of(as_dict(history[0]).get("parts")) if history else []
        blocks = genai.text_blocks(summary, reasoning=False)
        message_id = str(record.get("uuid") or f"line-{line.number}")
        self.builder.user_message(
            message_id, blocks, "compaction", line.number, time, replace_surface=True
        )


# -- the file ------------------------------------------------------------------------------


def _first(lines: list[Line], key: str) -> Any:
    for line in lines:
        value = as_dict(line.record).get(key)
        if value is not None:
            return value
    return None


def _lineage(lines: list[Line]) -> tuple[str | None, str | None]:
    for line in lines:
        record = as_dict(line.record)
        if record.get("subtype") == "parent_session":
            parent = checked_id(as_dict(record.get("systemPayload")).get("parentSessionId"))
            if parent:
                return parent, "subagent"
    forked = checked_id(as_dict(_first(lines, "forkedFrom")).get("sessionId"))
    return (forked, "fork") if forked else (None, None)


def _session(
    session_id: str, lines: list[Line], key: str, *, parent: str | None, origin: str | None
) -> ParsedSession:
    copied = {ln.number for ln in lines if isinstance(as_dict(ln.record).get("forkedFrom"), dict)}
    if origin != "fork":
        copied = set()
    own = [ln for ln in lines if ln.number not in copied] or lines
    created = next(
        (t for t in (iso_to_ms(as_dict(ln.record).get("timestamp")) for ln in own) if t), 0
    )
    header = SessionHeader(
        id=session_id,
        created_at=created,
        cwd=usable_cwd(_first(lines, "cwd")),
        parent_session=parent if parent != session_id else None,
        origin=origin if parent else None,
        delegation_depth=1 if origin == "subagent" and parent else 0,
    )
    stream = _Stream(LogBuilder(file=key, last_time=created))
    if copied:
        data = {"parent": parent, "records": len(copied), "lines": [min(copied), max(copied)]}
        stream.builder.emit("qwen/inherited", data, min(copied), None, ignorable=True)
    tick = read_check()
    for line in lines:
        tick(len(line.raw))
        if line.number not in copied:
            stream.record(line)
    if lines:
        stream.builder.finish(lines[-1].number)
    builder = stream.builder
    return ParsedSession(header, tuple(builder.events), tuple(builder.surface), True)


def parse_qwen_unit(unit: UnitInput) -> ParsedFile:
    """Parse one chat record file into its sessions and problems (legacy ``tmp`` recordings go
    to the Gemini CLI parser)."""
    if unit.parts and unit.parts[0] == "tmp":
        return parse_gemini_unit(unit)
    where = Path(unit.where)
    lines, problems = parse_lines(where, unit.data, "empty chat file; no session imported")
    if not lines:
        return ParsedFile((), tuple(problems))
    own = checked_id(_first(lines, "sessionId"))
    stem = unit.name[: -len(".jsonl")]
    if own is None:
        problems.append(Problem(str(where), None, "no sessionId; id derived from the file name"))
    session_id = own or derived_id(stem)
    if usable_cwd(_first(lines, "cwd")) is None:
        problems.append(Problem(str(where), None, "no usable cwd on any record; cwd is None"))
    main_lines = [ln for ln in lines if as_dict(ln.record).get("isSidechain") is not True]
    agents: dict[str, list[Line]] = {}
    for line in lines:
        record = as_dict(line.record)
        if record.get("isSidechain") is True:
            agent = record.get("agentId")
            agents.setdefault(agent if isinstance(agent, str) and agent else "unknown", []).append(
                line
            )
    parent, origin = _lineage(main_lines)
    main = _session(session_id, main_lines, unit.key, parent=parent, origin=origin)
    sessions = [replace(main, preferred=session_id == stem)]
    for agent, chain in agents.items():
        suffix = f"agent-{agent}"
        child = _session(
            derived_id(f"{session_id}/{suffix}"),
            chain,
            unit.key,
            parent=session_id,
            origin="subagent",
        )
        sessions.append(replace(child, suffix=suffix))
    return ParsedFile(tuple(sessions), tuple(problems))


class QwenSource(TreeSource, kind="qwen", units=qwen_units, parser=parse_qwen_unit):
    """A read-only ``SessionPersistence`` over a Qwen Code home.

    ``root`` is ``~/.qwen`` (``$QWEN_RUNTIME_DIR`` or ``$QWEN_HOME`` when set). Arguments and
    errors: :class:`~._tree.TreeSource`.
    """
