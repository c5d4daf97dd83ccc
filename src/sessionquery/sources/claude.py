"""Claude Code transcripts (``~/.claude/projects``) as read-only sessions.

Every ``*.jsonl`` file under the projects directory is a transcript. A main transcript is one
session (id = the lines' ``sessionId``, else the file name); its inline sidechain runs
(``isSidechain: true``, older Claude Code) become child sessions
``<parent>/sidechain-<root uuid>``; ``agent-<id>.jsonl`` files (beside the sessions or under
``<session>/subagents/``) become child sessions ``<parent>/agent-<id>``. Children carry
``parent_session`` and ``origin="subagent"``.

Line mapping (see ``docs/importers.md``): user prompts open a turn and become
``user/message``; assistant lines sharing one ``message.id`` merge into one
``assistant/message`` (thinking → ``reasoning`` blocks, ``tool_use`` → ``tool-call`` blocks plus
``tool/call`` events); ``tool_result`` blocks become ``tool/result``; ``summary``,
``ai-title`` and ``custom-title`` become ``session/title`` in file order (last wins);
compaction replaces the whole current surface; every other line is an ignorable log-only
``claude/<type>`` event holding the raw line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json, freeze_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder, call_block
from sessionquery.sources._catalog import Catalog
from sessionquery.sources._common import Problem, checked_id, derived_id, iso_to_ms, usable_cwd
from sessionquery.sources._files import DEFAULT_MAX_FILE_BYTES
from sessionquery.sources._lines import Line, parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, UnitInput
from sessionquery.sources.units import FileTree, Role

__all__ = ["ClaudeCodeSource"]

KNOWN_LINE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "ai-title",
        "custom-title",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "attachment",
        "permission-mode",
        "mode",
        "agent-setting",
        "agent-name",
        "last-prompt",
        "worktree-state",
        "pr-link",
        "frame-link",
        "bridge-session",
        "relocated",
        "result",
        "started",
        "atis-latch",
    }
)
"""Line types Claude Code is known to write; others are kept too but reported as problems."""

_TITLE_FIELDS = {"summary": "summary", "ai-title": "aiTitle", "custom-title": "customTitle"}


def select_claude(rel: str, is_dir: bool) -> Role | None:
    """Every ``*.jsonl`` file at any depth is a transcript."""
    return "transcript" if is_dir or rel.endswith(".jsonl") else None


def claude_units(root: Path, *, follow_outside_links: bool = False) -> FileTree:
    """The transcript files under ``root``, as raw units."""
    return FileTree(Path(root), select_claude, follow_outside_links=follow_outside_links)


# --------------------------------------------------------------------------- file level


UNDATED = 0
"""``created_at`` of a transcript without any timestamp: it is listed last, not as newest."""


def _is_agent_file(path: PurePosixPath) -> bool:
    return path.name.startswith("agent-") or path.parent.name == "subagents"


def parse_claude_file(unit: UnitInput) -> ParsedFile:
    """Parse one transcript's bytes into its sessions and problems (never raises for bad
    lines)."""
    path, rel, where = PurePosixPath(unit.key), unit.key, Path(unit.where)
    lines, problems = parse_lines(where, unit.data, "empty transcript; no session imported")
    if not lines:
        return ParsedFile((), tuple(problems))
    file_id = _first(lines, "sessionId", checked_id)
    if file_id is None:
        problems.append(Problem(str(where), None, "no sessionId; id derived from the file name"))
    stem = path.name[: -len(".jsonl")]
    if _is_agent_file(path):
        folder = path.parent.parent.name if path.parent.name == "subagents" else None
        parent = derived_id(folder) if folder else file_id
        agent = _first(lines, "agentId", checked_id) or stem.removeprefix("agent-")
        own_id = derived_id(f"{parent}/agent-{agent}" if parent else stem)
        main = _session(own_id, lines, rel, where, problems, UNDATED, parent=parent)
        return ParsedFile((main,), tuple(problems))
    own_id = file_id or derived_id(stem)
    main_lines, sidechains = _split_sidechains(lines)
    first_time = _first_time(lines) or UNDATED
    main = _session(own_id, main_lines, rel, where, problems, first_time, preferred=own_id == stem)
    sessions = [main]
    for root, chain in sidechains.items():
        suffix = f"sidechain-{root}"
        child = _session(
            derived_id(f"{own_id}/{suffix}"), chain, rel, where, problems, first_time, parent=own_id
        )
        sessions.append(replace(child, suffix=suffix))
    return ParsedFile(tuple(sessions), tuple(problems))


def _first(lines: list[Line], key: str, check: Any) -> str | None:
    for line in lines:
        assert line.record is not None
        value = check(line.record.get(key))
        if value is not None:
            return str(value)
    return None


def _first_time(lines: list[Line]) -> int | None:
    for line in lines:
        assert line.record is not None
        value = iso_to_ms(line.record.get("timestamp"))
        if value is not None:
            return value
    return None


def _split_sidechains(lines: list[Line]) -> tuple[list[Line], dict[str, list[Line]]]:
    # Inline subagent runs start at a sidechain line whose parent is not a sidechain line;
    # later lines join the run of their parentUuid (parallel runs interleave in the file).
    main: list[Line] = []
    chains: dict[str, list[Line]] = {}
    root_of: dict[str, str] = {}
    for line in lines:
        record = line.record
        assert record is not None
        if record.get("isSidechain") is not True:
            main.append(line)
            continue
        parent = record.get("parentUuid")
        uuid = record.get("uuid")
        found = root_of.get(parent) if isinstance(parent, str) else None
        if found is not None:
            root = found
        else:
            root = uuid if isinstance(uuid, str) and checked_id(uuid) else f"line-{line.number}"
            if root in chains:
                root = f"{root}-line-{line.number}"
        if isinstance(uuid, str):
            root_of[uuid] = root
        chains.setdefault(root, []).append(line)
    return main, chains


def _session(  # noqa: PLR0917 - private helper, all arguments are required context
    session_id: str,
    lines: list[Line],
    rel: str,
    path: Path,
    problems: list[Problem],
    fallback_time: int,
    *,
    parent: str | None = None,
    preferred: bool = False,
) -> ParsedSession:
    cwd = _first(lines, "cwd", lambda v: v if isinstance(v, str) and v else None)
    if cwd is not None and usable_cwd(cwd) is None:
        message = f"cwd {cwd!r} is not absolute, or not valid text; cwd is None"
        problems.append(Problem(str(path), None, message))
        cwd = None
    elif cwd is None and parent is None:
        problems.append(Problem(str(path), None, "no cwd on any line; cwd is None"))
    created = _first_time(lines) or fallback_time
    header = SessionHeader(
        id=session_id,
        created_at=created,
        cwd=cwd,
        parent_session=parent,
        origin="subagent" if parent else None,
        delegation_depth=1 if parent else 0,
    )
    stream = _Stream(LogBuilder(file=rel, last_time=created), path, problems)
    stream.convert(lines)
    builder = stream.builder
    return ParsedSession(header, tuple(builder.events), tuple(builder.surface), preferred)


# --------------------------------------------------------------------------- line level


@dataclass(slots=True)
class _Stream:
    builder: LogBuilder
    path: Path
    problems: list[Problem]
    boundary: Line | None = None
    merged: dict[str, list[Line]] = field(default_factory=dict[str, list[Line]])

    def convert(self, lines: list[Line]) -> None:
        for line in lines:
            record = line.record
            assert record is not None
            if record.get("type") == "assistant":
                message_id = _dict(record.get("message")).get("id")
                if isinstance(message_id, str):
                    self.merged.setdefault(message_id, []).append(line)
        tick = read_check()
        for line in lines:
            tick(len(line.raw))
            self.line(line)
        self.flush_boundary()
        if lines:
            self.builder.finish(lines[-1].number)

    def line(self, line: Line) -> None:
        record = line.record
        assert record is not None
        kind = record.get("type")
        time = iso_to_ms(record.get("timestamp"))
        if kind == "user":
            self.user(line, record, time)
        elif kind == "assistant":
            self.assistant(line, record, time)
        elif isinstance(kind, str) and kind in _TITLE_FIELDS:
            self.title(line, record, kind, time)
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            self.flush_boundary()
            self.boundary = line
            self.builder.log_only("claude/system", line.raw, line.number, time)
        else:
            if not isinstance(kind, str) or kind not in KNOWN_LINE_TYPES:
                message = f"unknown line type {kind!r}; kept as a log-only event"
                self.problems.append(Problem(str(self.path), line.number, message))
            name = kind if isinstance(kind, str) and kind else "unknown"
            self.builder.log_only(f"claude/{name}", line.raw, line.number, time)

    def flush_boundary(self) -> None:
        """A compact_boundary not followed by its summary still shadows the old surface."""
        line = self.boundary
        if line is None:
            return
        self.boundary = None
        record = line.record
        assert record is not None
        text = record.get("content") if isinstance(record.get("content"), str) else "compacted"
        self.builder.user_message(
            f"compact-boundary-{record.get('uuid') or line.number}",
            [{"type": "context", "text": text}],
            "compaction",
            line.number,
            iso_to_ms(record.get("timestamp")),
            replace_surface=True,
        )

    def user(self, line: Line, record: dict[str, Any], time: int | None) -> None:
        content = _dict(record.get("message")).get("content")
        blocks = _list(content) if not isinstance(content, str) else [content]
        message_id = str(record.get("uuid") or f"line-{line.number}")
        if record.get("isCompactSummary") is True:
            self.boundary = None
            self.builder.user_message(
                message_id,
                _user_blocks(blocks),
                "compaction",
                line.number,
                time,
                replace_surface=True,
            )
            return
        self.flush_boundary()
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        rest = [b for b in blocks if b not in results]
        for block in results:
            call_id = block.get("tool_use_id") or record.get("sourceToolUseID")
            self.builder.tool_result(
                str(call_id) if call_id else f"unknown-call-line-{line.number}",
                block.get("is_error") is True,
                _result_blocks(block.get("content")),
                line.number,
                time,
            )
        if not rest:
            return
        if record.get("isMeta") is True:
            context = [_as_context(b) for b in _user_blocks(rest)]
            self.builder.user_message(message_id, context, "injected", line.number, time)
        elif results:
            self.builder.user_message(message_id, _user_blocks(rest), "user", line.number, time)
        else:
            self.builder.open_turn(line.number, time, explicit=False)
            blocks = _user_blocks(rest)
            seq = self.builder.user_message(message_id, blocks, "user", line.number, time)
            self.builder.derive_title(seq, blocks, line.number, time)

    def assistant(self, line: Line, record: dict[str, Any], time: int | None) -> None:
        self.flush_boundary()
        message = _dict(record.get("message"))
        group = [line]
        message_id = message.get("id")
        if isinstance(message_id, str):
            group = self.merged.get(message_id, [line])
            if group[0] is not line:
                return  # merged into the event of its first line
        content: list[Any] = []
        seen_calls: set[str] = set()
        for part in group:
            assert part.record is not None
            blocks = _dict(part.record.get("message")).get("content")
            for index, block in enumerate(
                _list(blocks) if not isinstance(blocks, str) else [blocks]
            ):
                converted = _assistant_block(block, part.number, index)
                if converted.get("type") == "tool-call":
                    if converted["id"] in seen_calls:
                        continue
                    seen_calls.add(converted["id"])
                content.append(converted)
        last = _dict(_dict(group[-1].record).get("message"))
        extra: dict[str, Any] = {}
        if isinstance(last.get("usage"), dict):
            extra["usage"] = _storable(last["usage"])
        numbers = [part.number for part in group]
        self.builder.assistant_message(
            content, numbers if len(numbers) > 1 else line.number, time, extra
        )

    def title(self, line: Line, record: dict[str, Any], kind: str, time: int | None) -> None:
        title = record.get(_TITLE_FIELDS[kind])
        if not isinstance(title, str) or not title.strip():
            self.builder.log_only(f"claude/{kind}", line.raw, line.number, time)
            return
        data = {"title": title, "messageSeqs": [], "source": {"kind": f"claude-{kind}"}}
        self.builder.emit("session/title", data, line.number, time)


_dict, _list = as_dict, as_list


def _storable(value: object) -> object:
    """``value`` when the event model can store it, else a note saying it was dropped."""
    if isinstance(value, dict) and all(
        type(item) in _SCALARS
        for item in value.values()  # pyright: ignore[reportUnknownVariableType]
    ):
        return value  # the usual flat usage object: nothing that could fail to freeze
    try:
        freeze_json(value)
    except (ValueError, RecursionError):
        return {"dropped": "not storable as lossless JSON"}
    return value


_SCALARS = frozenset({int, str, bool, type(None)})


def _user_blocks(blocks: list[Any]) -> list[Any]:
    out: list[Any] = []
    for block in blocks:
        if isinstance(block, str):
            out.append({"type": "text", "text": block})
        elif isinstance(block, dict):
            out.append(_opaque(block))
    return out


def _opaque(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        return {"type": "image", "mediaType": _dict(block.get("source")).get("media_type")}
    # Other blocks (documents, server tools...) stay opaque; the origin pointer leads back.
    return {"type": str(kind or "unknown")}


def _as_context(block: dict[str, Any]) -> dict[str, Any]:
    # Injected text keeps its words but not the searchable "text" block type.
    if block.get("type") == "text":
        return {"type": "context", "text": block["text"]}
    return block


def _result_blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return _user_blocks(_list(content))


def _assistant_block(block: object, line: int, index: int) -> dict[str, Any]:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    data = _dict(block)
    kind = data.get("type")
    if kind == "thinking":
        return {"type": "reasoning", "text": str(data.get("thinking") or "")}
    if kind == "redacted_thinking":
        return {"type": "reasoning", "text": ""}
    if kind == "tool_use":
        return call_block(
            data.get("id"),
            f"line-{line}-{index}",
            data.get("name"),
            compact_json(data.get("input", {})),
        )
    return _opaque(data)


class ClaudeCodeSource(Catalog, kind="claude", units=claude_units, parser=parse_claude_file):
    """A read-only ``SessionPersistence`` over a Claude Code projects directory.

    Args:
        projects_dir: a ``~/.claude/projects``-style directory (project folders holding
            ``<uuid>.jsonl`` transcripts); transcripts directly inside it are read too.
        metadata_cache: a SQLite file that keeps what each transcript yields between runs
            (derived, disposable, shareable by processes), or ``None`` to keep it in memory.
        max_file_bytes: transcripts larger than this are reported and not read (256 MiB).
        follow_outside_links: follow symbolic links that lead outside ``projects_dir``.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``metadata_cache`` names a file that is not
            an importer cache (it is left untouched).
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    def __init__(
        self,
        projects_dir: str | os.PathLike[str],
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        follow_outside_links: bool = False,
    ) -> None:
        tree = claude_units(Path(projects_dir), follow_outside_links=follow_outside_links)
        super().__init__(
            tree, parse_claude_file, metadata_cache=metadata_cache, max_file_bytes=max_file_bytes
        )
