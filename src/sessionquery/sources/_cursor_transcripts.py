"""Cursor's agent transcripts (``~/.cursor/projects``): finding and parsing them.

Cursor keeps each agent conversation as ``projects/<project>/agent-transcripts/<id>.jsonl``
(older: ``<id>.txt``; some releases nest it as ``<id>/<id>.jsonl``); when both a ``.jsonl`` and a
``.txt`` exist for one id, the ``.jsonl`` is read. Cursor publishes no schema: the shapes below
are the observed ones (as other history tools read them; see ``docs/importers.md``).

* JSONL: one ``{"role": "user" | "assistant", "message": {"content": …}}`` per line, content a
  string or Anthropic-style blocks (``text``, ``thinking``, ``tool_use``, ``tool_result``);
* text: ``user:`` / ``assistant:`` lines start messages; the user's words sit in
  ``<user_query>…</user_query>``; an assistant message holds ``[Thinking]``, ``[Tool call]
  <name>`` (indented ``key=value`` or JSON arguments) and ``[Tool result]`` (indented output)
  sections between its text.

Transcripts carry no timestamps (a transcript read on its own is dated 0: listed last), no
lineage and no compaction; a transcript's name is its conversation's composer id, so
:mod:`.cursor` reads the database's copy of a conversation instead when there is one.
``<project>`` is the project path with ``/`` (and other characters) turned into ``-``, which
cannot be reversed by rule: the ``cwd`` is the one existing folder whose path encodes to it
(looked up on this machine, below the root folder), else ``None``.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder, call_block
from sessionquery.sources._common import Problem, derived_id
from sessionquery.sources._lines import parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, UnitInput
from sessionquery.sources.units import Role

__all__ = [
    "parse_transcript",
    "project_folder",
    "select_cursor",
    "transcript_events",
    "transcript_stem",
    "user_text",
]

_TRANSCRIPTS = "agent-transcripts"
_QUERY = re.compile(r"<user_query>(.*?)</user_query>", re.DOTALL)


def select_cursor(rel: str, is_dir: bool) -> Role | None:
    """``<project>/agent-transcripts/<id>.jsonl|txt`` (flat or ``<id>/<id>.…``)."""
    parts = rel.split("/")
    if is_dir:
        ok = len(parts) == 1 or (len(parts) >= 2 and parts[1] == _TRANSCRIPTS and len(parts) <= 3)
        return "transcript" if ok else None
    if len(parts) < 3 or parts[1] != _TRANSCRIPTS or not rel.endswith((".jsonl", ".txt")):
        return None
    stem = parts[-1].rsplit(".", 1)[0]
    if len(parts) == 4 and parts[2] != stem:
        return None
    return "transcript" if len(parts) in (3, 4) else None


# -- the project folder ---------------------------------------------------------------------


_ENCODED = re.compile(r"[^A-Za-z0-9]")


def _encode(path: str) -> str:
    return _ENCODED.sub("-", path.strip("/"))


@functools.lru_cache(maxsize=512)
def project_folder(name: str, *, base: Path = Path("/"), limit: int = 4096) -> str | None:
    """The one existing folder under ``base`` whose path Cursor encodes as ``name``, or
    ``None`` when there is none or more than one (at most ``limit`` folders are looked at).

    Answers are kept for the process's lifetime (a project folder created later is seen by the
    next process; the metadata cache keeps each transcript's answer until it changes)."""
    found: list[str] = []
    budget = [limit]

    def walk(folder: Path, rest: str) -> None:
        if budget[0] <= 0 or len(found) > 1:
            return
        try:
            with os.scandir(folder) as entries:
                names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        budget[0] -= 1
        for child in names:
            encoded = _encode(child)
            if not encoded:
                continue
            if rest == encoded:
                found.append(str(folder / child))
            elif rest.startswith(encoded + "-"):
                walk(folder / child, rest[len(encoded) + 1 :])

    walk(base, name)
    return found[0] if len(found) == 1 else None


# -- text transcripts -----------------------------------------------------------------------


@dataclass(slots=True)
class _Message:
    role: str
    line: int
    lines: list[str]


def _text_messages(text: str) -> list[_Message]:
    out: list[_Message] = []
    for number, line in enumerate(text.split("\n"), start=1):
        marker = line.strip()
        if marker in ("user:", "assistant:"):
            out.append(_Message(marker[:-1], number, []))
        elif out:
            out[-1].lines.append(line)
    return out


def _sections(lines: list[str]) -> list[tuple[str, str, list[str]]]:
    """``(kind, title, body)`` runs of an assistant message: text, thinking, call, result."""
    out: list[tuple[str, str, list[str]]] = []
    for line in lines:
        marker = line.strip()
        if marker.startswith("[Thinking]"):
            out.append(("thinking", "", [marker[len("[Thinking]") :].strip()]))
        elif marker.startswith("[Tool call] "):
            out.append(("call", marker[len("[Tool call] ") :].strip(), []))
        elif marker.startswith("[Tool result]"):
            out.append(("result", marker[len("[Tool result]") :].strip(), []))
        elif out and out[-1][0] != "text" and (not line.strip() or line[:1] in (" ", "\t")):
            out[-1][2].append(line)
        elif out and out[-1][0] == "text":
            out[-1][2].append(line)
        else:
            out.append(("text", "", [line]))
    return out


def _arguments(body: list[str]) -> str:
    raw = "\n".join(line.strip() for line in body).strip()
    try:
        json.loads(raw)
    except ValueError:
        pairs = [line.strip().partition("=") for line in body if line.strip()]
        if pairs and all(sep for _, sep, _ in pairs):
            return compact_json({k.strip(): v.strip() for k, _, v in pairs})
        return compact_json({"input": raw}) if raw else "{}"
    return raw


def user_text(text: str) -> str:
    """The words the user typed: the inside of ``<user_query>…</user_query>`` when present."""
    match = _QUERY.search(text)
    return (match.group(1) if match else text).strip()


def _text_transcript(builder: LogBuilder, text: str) -> None:
    tick = read_check()
    for index, message in enumerate(_text_messages(text)):
        tick(sum(len(line) for line in message.lines))
        if message.role == "user":
            words = user_text("\n".join(message.lines))
            prompt = [{"type": "text", "text": words}] if words else []
            builder.open_turn(message.line, None, explicit=False)
            seq = builder.user_message(f"message-{index}", prompt, "user", message.line, None)
            builder.derive_title(seq, prompt, message.line, None)
            continue
        blocks: list[dict[str, Any]] = []
        pending: list[str] = []
        for kind, title, body in _sections(message.lines):
            if kind == "text" and "\n".join(body).strip():
                blocks.append({"type": "text", "text": "\n".join(body).strip()})
            elif kind == "thinking":
                blocks.append({"type": "reasoning", "text": "\n".join(body).strip()})
            elif kind == "call":
                call_id = f"line-{message.line}-{len(blocks)}"
                blocks.append(
                    {
                        "type": "tool-call",
                        "id": call_id,
                        "name": title,
                        "arguments": _arguments(body),
                    }
                )
                pending.append(call_id)
            elif kind == "result":
                builder.assistant_message(blocks, message.line, None)
                blocks = []
                output = "\n".join(line.strip() for line in body).strip() or title
                call_id = pending.pop(0) if pending else f"unknown-call-line-{message.line}"
                content = [{"type": "text", "text": output}] if output else []
                builder.tool_result(call_id, False, content, message.line, None)
        if blocks:
            builder.assistant_message(blocks, message.line, None)


# -- JSONL transcripts ----------------------------------------------------------------------


def _jsonl_transcript(
    builder: LogBuilder, data: bytes, where: Path, problems: list[Problem]
) -> None:
    lines, found = parse_lines(where, data, "empty transcript; no session imported")
    problems.extend(found)
    tick = read_check()
    for line in lines:
        tick(len(line.raw))
        record = as_dict(line.record)
        role = record.get("role")
        content = as_dict(record.get("message")).get("content")
        blocks = (
            [{"type": "text", "text": content}] if isinstance(content, str) else as_list(content)
        )
        if role == "user":
            _jsonl_user(builder, blocks, line.number)
        elif role == "assistant":
            _jsonl_assistant(builder, blocks, line.number)
        else:
            builder.log_only(f"cursor/{role or 'unknown'}", line.raw, line.number, None)


def _jsonl_user(builder: LogBuilder, blocks: list[Any], number: int) -> None:
    texts: list[dict[str, Any]] = []
    for block in map(as_dict, blocks):
        if block.get("type") == "tool_result":
            output = block.get("content")
            content = (
                [{"type": "text", "text": output}]
                if isinstance(output, str)
                else [b for b in map(as_dict, as_list(output)) if b.get("type") == "text"]
            )
            call_id = str(block.get("tool_use_id") or f"unknown-call-line-{number}")
            builder.tool_result(call_id, block.get("is_error") is True, content, number, None)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            words = user_text(block["text"])
            if words:
                texts.append({"type": "text", "text": words})
    if texts:
        builder.open_turn(number, None, explicit=False)
        seq = builder.user_message(f"line-{number}", texts, "user", number, None)
        builder.derive_title(seq, texts, number, None)


def _jsonl_assistant(builder: LogBuilder, blocks: list[Any], number: int) -> None:
    out: list[dict[str, Any]] = []
    for index, block in enumerate(map(as_dict, blocks)):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append({"type": "text", "text": block["text"]})
        elif kind in ("thinking", "reasoning"):
            out.append(
                {"type": "reasoning", "text": str(block.get("thinking") or block.get("text") or "")}
            )
        elif kind == "tool_use":
            out.append(
                call_block(
                    block.get("id"),
                    f"line-{number}-{index}",
                    block.get("name"),
                    compact_json(block.get("input", {})),
                )
            )
    builder.assistant_message(out, number, None)


# -- the file -------------------------------------------------------------------------------


def transcript_events(
    builder: LogBuilder, key: str, data: bytes, where: Path, problems: list[Problem]
) -> None:
    """Append the events of the transcript ``key`` (``.jsonl`` or ``.txt``) to ``builder``."""
    if key.endswith(".jsonl"):
        _jsonl_transcript(builder, data, where, problems)
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(str(where), None, f"not valid UTF-8 ({exc.reason}); skipped"))
        return
    _text_transcript(builder, text)


def transcript_stem(key: str) -> str:
    """The conversation id a transcript's name holds (its composer id)."""
    return PurePosixPath(key).name.rsplit(".", 1)[0]


def parse_transcript(unit: UnitInput) -> ParsedFile:
    """Parse one agent transcript on its own into its session and problems (undated; the
    ``cwd`` is the folder its project name encodes)."""
    where = Path(unit.where)
    key = PurePosixPath(unit.key)
    problems: list[Problem] = []
    if key.suffix == ".txt" and unit.sides.find(str(key.with_suffix(".jsonl"))) is not None:
        return ParsedFile((), ())  # the .jsonl of the same conversation is read instead
    session_id = derived_id(transcript_stem(unit.key))
    project = unit.parts[0]
    cwd = project_folder(project)
    if cwd is None:
        message = f"no folder on this machine encodes as {project!r}; cwd is None"
        problems.append(Problem(str(where), None, message))
    builder = LogBuilder(file=unit.key, last_time=0)
    transcript_events(builder, unit.key, unit.data, where, problems)
    if not builder.events:
        if not any(p.message.startswith("not valid UTF-8") for p in problems):
            problems.append(Problem(str(where), None, "no messages; no session imported"))
        return ParsedFile((), tuple(problems))
    builder.finish(len(unit.data.split(b"\n")))
    header = SessionHeader(id=session_id, created_at=0, cwd=cwd)
    session = ParsedSession(header, tuple(builder.events), tuple(builder.surface), True)
    return ParsedFile((session,), tuple(problems))
