"""One Cursor conversation (a composer's normalized document, see :mod:`._cursor_db`) as events.

* the session's id is the composer id (the name of its agent transcript too); ``createdAt``
  dates it, the workspace the document names is its ``cwd``, ``name`` its title (a
  ``session/title`` event at the end, ``source.kind: "cursor-name"``);
* ``subagentInfo.parentComposerId`` makes it a child (``origin="subagent"``);
* each bubble in order: ``type`` 1 (the user) → ``user/message`` opening a turn (``source.mode``:
  the composer's mode, ``agent``/``chat``/...); ``type`` 2 → an ``assistant/message`` of its
  thinking (``reasoning``), its text, the code blocks its text does not hold and its tool call
  (``toolFormerData``: ``tool-call`` block plus ``tool/call``), then the call's ``tool/result``
  when it completed or failed (``status: "error"``, a non-zero ``exitCode``, a rejected
  command); ``errorDetails`` ends the turn with an error; the time is the bubble's
  ``createdAt``, the model its ``modelInfo`` or else the composer's;
* a ``capabilityType`` 22 bubble (where Cursor summarized the conversation, ``/summarize`` or
  automatically) → a ``user/message`` (``source.kind: "compaction"``) replacing the whole
  surface; its text is the composer's ``latestConversationSummary`` when an older release kept
  one (current ones keep the summary on Cursor's servers: the event says so);
* a conversation whose database rows hold no message (its bubbles are gone, or unreadable) is
  read from its agent transcript instead (:func:`transcript_session`), dated, titled and placed
  by the database; one with neither is a draft: no session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder
from sessionquery.sources._common import Problem, checked_id, iso_to_ms, usable_cwd
from sessionquery.sources._cursor_db import DOCUMENT_FORMAT
from sessionquery.sources._cursor_transcripts import project_folder, transcript_events, user_text
from sessionquery.sources._parsed import ParsedFile, ParsedSession, UnitInput

__all__ = [
    "SUMMARY_ELSEWHERE",
    "ComposerFacts",
    "composer_facts",
    "parse_composer",
    "transcript_session",
]

SUMMARY_ELSEWHERE = (
    "Cursor summarized the conversation here; it keeps the summary on its servers, not on "
    "this machine"
)
"""The text of a compaction whose summary is not in the database."""

_USER, _ASSISTANT, _SUMMARIZED = 1, 2, 22


def _time(value: object) -> int | None:
    if type(value) is int and value >= 0:
        return value
    if type(value) is float and value >= 0:
        return int(value)
    return iso_to_ms(value)


def _name(*candidates: object) -> str | None:
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return user_text(value) or None
    return None


def _model(*candidates: object) -> str | None:
    for value in candidates:
        if isinstance(value, str) and value and value != "default":  # "default": the picker's
            return value
    return None


def _arguments(tool: dict[str, Any]) -> str:
    for name in ("params", "rawArgs"):
        value = tool.get(name)
        if isinstance(value, dict | list):
            return compact_json(value)
        if isinstance(value, str) and value.strip():
            try:
                json.loads(value)
            except ValueError:
                return compact_json({"input": value})
            return value
    return "{}"


def _output(tool: dict[str, Any]) -> tuple[str, bool]:
    """A tool result's text and whether it failed."""
    failed = tool.get("status") == "error"
    result = tool.get("result")
    parsed: Any = result
    if isinstance(result, str):
        try:
            parsed = json.loads(result)
        except ValueError:
            return result, failed
    found = as_dict(parsed)
    exit_code = found.get("exitCode")
    if found.get("rejected") is True or (type(exit_code) is int and exit_code != 0):
        failed = True
    for name in ("output", "contents", "content", "text", "error"):
        if isinstance(found.get(name), str):
            return found[name], failed
    if parsed is None:
        return "", failed
    return (result if isinstance(result, str) else compact_json(parsed)), failed


def _assistant_blocks(bubble: dict[str, Any], line: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    thinking = bubble.get("thinking")
    texts = [thinking] if isinstance(thinking, str) and thinking else []
    texts += [t for t in as_list(bubble.get("allThinkingBlocks")) if isinstance(t, str)]
    if texts:
        blocks.append({"type": "reasoning", "text": "\n\n".join(dict.fromkeys(texts))})
    text = bubble.get("text")
    text = text if isinstance(text, str) else ""
    if text.strip():
        blocks.append({"type": "text", "text": text})
    for code in map(as_dict, as_list(bubble.get("codeBlocks"))):
        content = code.get("content")
        if isinstance(content, str) and content.strip() and content.strip() not in text:
            language = code.get("languageId") if isinstance(code.get("languageId"), str) else ""
            blocks.append({"type": "text", "text": f"```{language}\n{content}\n```"})
    tool = as_dict(bubble.get("toolFormerData"))
    if tool:
        call_id = tool.get("toolCallId")
        bid = bubble.get("bubbleId")
        name = tool.get("name")
        blocks.append(
            {
                "type": "tool-call",
                "id": call_id if isinstance(call_id, str) and call_id else f"bubble-{bid or line}",
                "name": name if isinstance(name, str) and name else f"tool-{tool.get('tool')}",
                "arguments": _arguments(tool),
            }
        )
    return blocks


class _Conversation:
    """Builds one composer's events, bubble by bubble."""

    def __init__(self, builder: LogBuilder, document: dict[str, Any]) -> None:
        self.builder = builder
        composer = as_dict(document.get("composer"))
        head = as_dict(document.get("head"))
        self.model = _model(composer.get("modelName"))
        mode = composer.get("unifiedMode") or head.get("unifiedMode") or composer.get("forceMode")
        self.mode = mode if isinstance(mode, str) and mode else None
        summary = as_dict(as_dict(composer.get("latestConversationSummary")).get("summary"))
        text = summary.get("summary")
        self.summary = text if isinstance(text, str) and text.strip() else None
        self.anchor = summary.get("clientShouldStartSendingFromInclusiveBubbleId")
        self.after = summary.get("truncationLastBubbleIdInclusive")

    def user(self, bubble: dict[str, Any], line: int, time: int | None) -> None:
        text = bubble.get("text")
        if not isinstance(text, str) or not text.strip():
            return
        blocks = [{"type": "text", "text": text}]
        bid = str(bubble.get("bubbleId") or f"bubble-{line}")
        extra = {} if self.mode is None else {"mode": self.mode}
        self.builder.open_turn(line, time, explicit=False)
        seq = self.builder.user_message(bid, blocks, "user", line, time, extra=extra)
        self.builder.derive_title(seq, blocks, line, time)

    def assistant(self, bubble: dict[str, Any], line: int, time: int | None) -> None:
        builder = self.builder
        blocks = _assistant_blocks(bubble, line)
        if blocks:
            extra: dict[str, Any] = {}
            model = _model(as_dict(bubble.get("modelInfo")).get("modelName"), self.model)
            if model is not None:
                extra["model"] = model
            usage = as_dict(bubble.get("tokenCount"))
            if any(type(v) is int and v > 0 for v in usage.values()):
                extra["usage"] = usage
            builder.assistant_message(blocks, line, time, extra)
        tool = as_dict(bubble.get("toolFormerData"))
        call = next((b for b in blocks if b["type"] == "tool-call"), None)
        status = tool.get("status")
        done = status in ("completed", "error") or (not status and tool.get("result") is not None)
        if call is not None and done:
            output, failed = _output(tool)
            content = [{"type": "text", "text": output}] if output else []
            builder.tool_result(call["id"], failed, content, line, time)
        error = as_dict(bubble.get("errorDetails"))
        if error and builder.turn_open:
            message = error.get("message") or error.get("title") or ""
            reason = {"kind": "error", "error": {"message": str(message)}}
            builder.close_turn(reason, line, time)

    def compaction(self, line: int, time: int | None, summary: str | None) -> None:
        builder = self.builder
        builder.close_turn(builder.default_close_reason(), line, time)
        if summary is not None:
            blocks = [{"type": "text", "text": summary}]
        else:
            blocks = [{"type": "context", "text": SUMMARY_ELSEWHERE}]
        builder.user_message(
            f"summary-{line}", blocks, "compaction", line, time, replace_surface=True
        )


def _bubble_events(conversation: _Conversation, bubbles: list[dict[str, Any]]) -> None:
    markers = [i for i, b in enumerate(bubbles) if b.get("capabilityType") == _SUMMARIZED]
    ids = [b.get("bubbleId") for b in bubbles]
    placed: int | None = None  # where an older release's summary goes, without a marker
    if conversation.summary is not None and not markers:
        if conversation.anchor in ids:
            placed = ids.index(conversation.anchor)
        elif conversation.after in ids:
            placed = ids.index(conversation.after) + 1
    tick = read_check()
    last = markers[-1] if markers else None
    for index, bubble in enumerate(bubbles):
        line = index + 1
        tick(len(str(bubble.get("text") or "")))
        time = _time(bubble.get("createdAt"))
        if index == placed:
            conversation.compaction(line, time, conversation.summary)
        kind = bubble.get("type")
        if index in markers:
            conversation.compaction(line, time, conversation.summary if index == last else None)
        elif kind == _USER:
            conversation.user(bubble, line, time)
        elif kind == _ASSISTANT:
            conversation.assistant(bubble, line, time)
    if placed == len(bubbles):
        conversation.compaction(len(bubbles), None, conversation.summary)


@dataclass(frozen=True, slots=True)
class ComposerFacts:
    """What the database says of one conversation (its agent transcript takes these)."""

    id: str
    spoken: bool  # the database holds its messages: they are read from there
    created: int
    updated: int | None
    cwd: str | None
    parent: str | None
    title: str | None


def _document(data: bytes) -> dict[str, Any] | None:
    try:
        document = as_dict(json.loads(data))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return document if document.get("format") == DOCUMENT_FORMAT else None


def _build(document: dict[str, Any], key: str) -> tuple[ComposerFacts | None, LogBuilder]:
    composer, head = as_dict(document.get("composer")), as_dict(document.get("head"))
    bubbles = [as_dict(b) for b in as_list(document.get("bubbles"))]
    created = (
        _time(composer.get("createdAt"))
        or _time(head.get("createdAt"))
        or next((t for t in (_time(b.get("createdAt")) for b in bubbles) if t), 0)
    )
    builder = LogBuilder(file=key, last_time=created)
    cid = checked_id(document.get("id"))
    if cid is None:
        return None, builder
    _bubble_events(_Conversation(builder, document), bubbles)
    parent = checked_id(as_dict(composer.get("subagentInfo")).get("parentComposerId"))
    facts = ComposerFacts(
        id=cid,
        spoken=any(e.type in ("user/message", "assistant/message") for e in builder.events),
        created=created,
        updated=_time(composer.get("lastUpdatedAt")) or _time(head.get("lastUpdatedAt")),
        cwd=usable_cwd(document.get("workspace")),
        parent=parent if parent != cid else None,
        title=_name(composer.get("name"), head.get("name")),
    )
    return facts, builder


def composer_facts(data: bytes) -> ComposerFacts | None:
    """The facts of a composer's document, or ``None`` when it is not one."""
    document = _document(data)
    return None if document is None else _build(document, "")[0]


def _session(
    facts: ComposerFacts, builder: LogBuilder, line: int, cwd: str | None
) -> ParsedSession:
    if facts.title is not None:
        data = {"title": facts.title, "messageSeqs": [], "source": {"kind": "cursor-name"}}
        builder.emit("session/title", data, line, facts.updated)
    builder.finish(line)
    child = facts.parent is not None
    header = SessionHeader(
        id=facts.id,
        created_at=facts.created,
        cwd=cwd,
        parent_session=facts.parent,
        origin="subagent" if child else None,
        delegation_depth=1 if child else 0,
    )
    return ParsedSession(header, tuple(builder.events), tuple(builder.surface), True)


def parse_composer(unit: UnitInput) -> ParsedFile:
    """Parse one composer's normalized document into its session and problems (none when the
    database holds no message of it: its agent transcript, if any, is read instead)."""
    where = unit.where
    document = _document(unit.data)
    if document is None:
        return ParsedFile((), (Problem(where, None, f"{unit.key}: not a Cursor conversation"),))
    facts, builder = _build(document, unit.key)
    if facts is None:
        return ParsedFile((), (Problem(where, None, f"{unit.key}: no usable composer id"),))
    problems = tuple(
        Problem(where, None, f"composer {facts.id}: bubble {p.get('bubble')}: {p.get('message')}")
        if p.get("bubble")
        else Problem(where, None, f"composer {facts.id}: {p.get('message')}")
        for p in map(as_dict, as_list(document.get("problems")))
    )
    if not facts.spoken:
        return ParsedFile((), problems)
    line = max(len(as_list(document.get("bubbles"))), 1)
    return ParsedFile((_session(facts, builder, line, facts.cwd),), problems)


def transcript_session(unit: UnitInput, facts: ComposerFacts) -> ParsedFile:
    """An agent transcript's session, dated, titled and placed by its composer's facts."""
    where = Path(unit.where)
    problems: list[Problem] = []
    builder = LogBuilder(file=unit.key, last_time=facts.created)
    transcript_events(builder, unit.key, unit.data, where, problems)
    if not builder.events:
        problems.append(Problem(str(where), None, "no messages; no session imported"))
        return ParsedFile((), tuple(problems))
    cwd = facts.cwd or project_folder(unit.parts[0])
    session = _session(facts, builder, len(unit.data.split(b"\n")), cwd)
    return ParsedFile((session,), tuple(problems))
