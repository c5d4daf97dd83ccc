"""Cursor's ``state.vscdb`` databases, read-only, as one raw unit per conversation (composer).

Cursor (a VS Code fork) publishes no schema; these are the observed shapes (see
``docs/importers.md``). ``<user folder>/globalStorage/state.vscdb`` has a key-value table
``cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)`` holding, per composer,
``composerData:<composerId>`` (its state: ``name``, ``createdAt``, ``lastUpdatedAt`` in epoch
ms, ``modelConfig``, ``unifiedMode``, the ordered ``fullConversationHeadersOnly``, older
releases an inline ``conversation``) and one ``bubbleId:<composerId>:<bubbleId>`` row per
message ("bubble"). The composer index is a ``composerHeaders`` table (Cursor 3.16+) or the
``ItemTable`` key ``composer.composerHeaders`` (``{"allComposers": [...]}``); an entry's
``workspaceIdentifier`` names the workspace (``uri.fsPath``, or an id of
``workspaceStorage/<id>/workspace.json``). Older releases list each workspace's composers in
that workspace's own ``state.vscdb`` (``ItemTable`` key ``composer.composerData``).

Invariants:

* nothing is written and only these keys are read (see :mod:`._sqlite`): never another
  ``ItemTable`` key (that table also holds Cursor's login tokens), and of a composer only the
  fields the importer uses enter its document (never its encryption keys);
* listing reads no value: a composer's stamp comes from index-only scans of its rows' keys and
  rowids (a rewritten row is a new row, with a new rowid, under ``ON CONFLICT REPLACE``) and
  from its index entry;
* a unit's bytes are a normalized JSON document (``{"format": "cursor-composer/1", ...}``),
  never the database: the archive copies that, and the parser reads only that;
* a value that is too big, not UTF-8 or not JSON is a problem of its bubble (listed in the
  document), the rest of the conversation is read; an unreadable database is a problem of the
  source, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionquery.model.jsonvalue import as_dict, as_list
from sessionquery.sources._common import (
    Problem,
    checked_id,
    file_uri_path,
    iso_to_ms,
    usable_cwd,
    workspace_json_folder,
)
from sessionquery.sources._files import read_regular
from sessionquery.sources._sqlite import (
    DatabaseUnavailable,
    database_stamp,
    read_database,
    read_unit,
)
from sessionquery.sources.units import SkippedFile, Unit

__all__ = ["COMPOSER_PREFIX", "DOCUMENT_FORMAT", "CursorDatabase", "composer_id"]

DOCUMENT_FORMAT = "cursor-composer/1"
"""The ``format`` of a composer's normalized document (the bytes of its unit)."""

COMPOSER_PREFIX = "composer/"
"""Unit keys of composers: ``composer/<composerId>``."""

_KV, _ITEMS = "cursorDiskKV", "ItemTable"
_COMPOSERS = (
    "SELECT key, rowid FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'"
)
_BUBBLES = "SELECT key, rowid FROM cursorDiskKV WHERE key >= 'bubbleId:' AND key < 'bubbleId;'"
_RANGE = "SELECT key, rowid FROM cursorDiskKV WHERE key >= ? AND key < ? ORDER BY rowid"
_ONE = "SELECT rowid FROM cursorDiskKV WHERE key = ?"
_ITEM = "SELECT CAST(value AS BLOB) FROM ItemTable WHERE key = ?"
_HEAD_COLUMNS = ("workspaceId", "createdAt", "lastUpdatedAt", "isSubagent")
_HEAD_FIELDS = (
    "name", "createdAt", "lastUpdatedAt", "unifiedMode", "forceMode", "workspaceIdentifier",
    "workspaceId", "isSubagent", "isArchived",
)  # fmt: skip
_COMPOSER_FIELDS = (
    "composerId", "name", "createdAt", "lastUpdatedAt", "unifiedMode", "forceMode",
    "isAgentic", "status", "workspaceIdentifier", "subagentInfo", "subagentComposerIds",
    "latestConversationSummary",
)  # fmt: skip
_BUBBLE_FIELDS = (
    "bubbleId", "type", "createdAt", "text", "capabilityType", "modelInfo", "tokenCount",
    "errorDetails", "workspaceUris",
)  # fmt: skip
_TOOL_FIELDS = ("tool", "name", "toolCallId", "status", "params", "rawArgs", "result")
_EMPTY_WINDOW = "empty-window"


def composer_id(key: str) -> str | None:
    """The composer id of a composer unit key, or ``None`` for another key."""
    if not key.startswith(COMPOSER_PREFIX) or "/" in key[len(COMPOSER_PREFIX) :]:
        return None
    return key[len(COMPOSER_PREFIX) :]


# -- reading values -----------------------------------------------------------------------------


class _NotCursor(Exception):
    """A database without Cursor's key-value table."""


class _TooBig(Exception):
    """A value larger than the room left in the document."""


def _value(conn: sqlite3.Connection, table: str, rowid: int, cap: int) -> tuple[Any, str | None]:
    """The JSON value of one row (``None`` for SQL NULL), or ``(None, problem)``.

    Raises:
        _TooBig: the value alone is larger than ``cap`` bytes.
    """
    try:
        blob = conn.blobopen(table, "value", rowid, readonly=True)
    except sqlite3.OperationalError as exc:
        if "null" in str(exc):
            return None, None
        return None, f"cannot read its value ({exc}); skipped"
    with blob:
        size = len(blob)
        if size > cap:
            raise _TooBig(size)
        data = blob.read()
    try:
        return json.loads(data.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        return None, f"value is not valid UTF-8 ({exc.reason}); skipped"
    except (ValueError, RecursionError):
        return None, "value is not JSON; skipped"


def _pick(value: object, fields: tuple[str, ...]) -> dict[str, Any]:
    found = as_dict(value)
    return {name: found[name] for name in fields if name in found}


def _lift(out: dict[str, Any], found: dict[str, Any], outer: str, inner: str, key: str) -> None:
    """``found[outer][inner]`` as ``out[key]`` when it is a string."""
    text = as_dict(found.get(outer)).get(inner)
    if isinstance(text, str):
        out[key] = text


def _bubble(value: object) -> dict[str, Any]:
    """The fields of a bubble the importer reads (large UI state left out)."""
    found = as_dict(value)
    out = _pick(found, _BUBBLE_FIELDS)
    _lift(out, found, "thinking", "text", "thinking")
    blocks = [
        b.get("thinking") or b.get("text")
        for b in map(as_dict, as_list(found.get("allThinkingBlocks")))
    ]
    if any(isinstance(b, str) and b for b in blocks):
        out["allThinkingBlocks"] = [b for b in blocks if isinstance(b, str) and b]
    tool = _pick(found.get("toolFormerData"), _TOOL_FIELDS)
    if tool:
        out["toolFormerData"] = tool
    code = [_pick(block, ("content", "languageId")) for block in as_list(found.get("codeBlocks"))]
    if any(isinstance(block.get("content"), str) for block in code):
        out["codeBlocks"] = [block for block in code if isinstance(block.get("content"), str)]
    return out


def _composer(value: object) -> dict[str, Any]:
    found = as_dict(value)
    out = _pick(found, _COMPOSER_FIELDS)
    _lift(out, found, "modelConfig", "modelName", "modelName")
    return out


def _time(value: object) -> int:
    if type(value) is int and value >= 0:
        return value
    return iso_to_ms(value) or 0


# -- the composer index -------------------------------------------------------------------------


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _loads(raw: object) -> Any:
    if not isinstance(raw, bytes):
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _heads(conn: sqlite3.Connection, tables: set[str]) -> dict[str, dict[str, Any]]:
    """Every composer's index entry (only the fields used), by composer id."""
    heads: dict[str, dict[str, Any]] = {}
    if "composerHeaders" in tables:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(composerHeaders)")}
        if "composerId" in columns:
            extra = [name for name in _HEAD_COLUMNS if name in columns]
            value = "CAST(value AS BLOB)" if "value" in columns else "NULL"
            select = ", ".join(["composerId", value, *extra])
            for row in conn.execute(f"SELECT {select} FROM composerHeaders"):
                cid, raw, *cells = row
                if not isinstance(cid, str):
                    continue
                head = _pick(_loads(raw), _HEAD_FIELDS)
                for name, cell in zip(extra, cells, strict=True):
                    if cell is not None and name not in head:
                        head[name] = cell
                heads[cid] = head
        return heads
    if _ITEMS in tables:
        row = conn.execute(_ITEM, ("composer.composerHeaders",)).fetchone()
        if row is not None:
            value = _loads(row[0])
            for entry in map(as_dict, as_list(as_dict(value).get("allComposers"))):
                cid = entry.get("composerId")
                if isinstance(cid, str):
                    heads[cid] = _pick(entry, _HEAD_FIELDS)
    return heads


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class _Rows:
    """What listing knows of one composer without reading a value."""

    data_rowid: int
    bubbles: int
    bubble_max: int
    bubble_sum: int
    head: str  # digest of its index entry ("-" without one)

    def stamp(self) -> str:
        rows = f"db:{self.data_rowid}:{self.bubbles}:{self.bubble_max}:{self.bubble_sum}"
        return f"{rows}:{self.head}"


def _head_digest(head: Mapping[str, Any] | None) -> str:
    if head is None:
        return "-"
    return _digest({k: v for k, v in head.items() if k != "lastUpdatedAt"})


@dataclass(slots=True)
class _Listing:
    rows: dict[str, _Rows]
    heads: dict[str, dict[str, Any]]
    problems: list[Problem]


def _bubble_counts(conn: sqlite3.Connection) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for key, rowid in conn.execute(_BUBBLES):
        cid = key[9:].partition(":")[0]
        found = counts.get(cid)
        if found is None:
            counts[cid] = [1, rowid, rowid]
        else:
            found[0] += 1
            found[1] = max(found[1], rowid)
            found[2] += rowid
    return counts


# -- workspaces ---------------------------------------------------------------------------------


class _Workspaces:
    """Workspace folders of a user folder's ``workspaceStorage`` (kept per process, by stat)."""

    def __init__(self, user_dir: Path | None) -> None:
        self._root = None if user_dir is None else user_dir / "workspaceStorage"
        self._folders: dict[str, tuple[str, str | None]] = {}  # id -> (stamp, folder)
        self._members: dict[str, tuple[str, frozenset[str]]] = {}  # id -> (db stamp, ids)
        self._members_checked = -1
        self.generation = 0

    def stamp(self) -> str:
        """The ``workspaceStorage`` folder's stat (a workspace added or removed changes it)."""
        if self._root is None:
            return "-"
        try:
            info = os.stat(self._root)
        except OSError:
            return "-"
        return f"{info.st_ino}:{info.st_mtime_ns}"

    def folder(self, workspace: str) -> str | None:
        """The folder ``workspaceStorage/<workspace>/workspace.json`` names."""
        if self._root is None or not workspace or "/" in workspace or workspace in (".", ".."):
            return None
        path = self._root / workspace / "workspace.json"
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return None
        stamp = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
        known = self._folders.get(workspace)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            data, _ = read_regular(path, 1 << 20)
        except SkippedFile:
            return None
        folder = workspace_json_folder(data)
        self._folders[workspace] = (stamp, folder)
        return folder

    def owner(self, cid: str) -> str | None:
        """The workspace whose own database lists composer ``cid`` (older releases)."""
        if self._root is None:
            return None
        if self._members_checked != self.generation:
            self._refresh()
            self._members_checked = self.generation
        return next((w for w, (_, ids) in self._members.items() if cid in ids), None)

    def _refresh(self) -> None:
        assert self._root is not None
        try:
            with os.scandir(self._root) as entries:
                names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            names = []
        members: dict[str, tuple[str, frozenset[str]]] = {}
        for name in names:
            db = self._root / name / "state.vscdb"
            if not db.is_file():
                continue
            stamp = database_stamp(db)
            known = self._members.get(name)
            if known is not None and known[0] == stamp:
                members[name] = known
                continue
            try:
                ids = read_database(db, _listed_composers)
            except (DatabaseUnavailable, sqlite3.Error):
                continue  # only a workspace folder is looked for here: no problem to report
            members[name] = (stamp, ids)
        self._members = members


def _listed_composers(conn: sqlite3.Connection) -> frozenset[str]:
    row = conn.execute(_ITEM, ("composer.composerData",)).fetchone()
    value = None if row is None else _loads(row[0])
    ids = (
        as_dict(entry).get("composerId") for entry in as_list(as_dict(value).get("allComposers"))
    )
    return frozenset(i for i in ids if isinstance(i, str))


# -- the database -------------------------------------------------------------------------------


class CursorDatabase:
    """The composers of one Cursor user folder's global ``state.vscdb``.

    Args:
        db: the global database (``<user folder>/globalStorage/state.vscdb``).
        user_dir: the user folder (for ``workspaceStorage``), or ``None``.
    """

    def __init__(self, db: Path, user_dir: Path | None) -> None:
        self.path = db
        self._workspaces = _Workspaces(user_dir)
        self._last: tuple[str, _Listing] | None = None

    def fingerprint(self) -> str:
        """The database's (and its ``-wal`` file's) stat and ``workspaceStorage``'s."""
        return f"{database_stamp(self.path)}|{self._workspaces.stamp()}"

    def _listing(self) -> _Listing:
        stamp = database_stamp(self.path)
        if self._last is not None and self._last[0] == stamp:
            return self._last[1]
        self._workspaces.generation += 1
        try:
            listing = read_database(self.path, _list_composers)
        except DatabaseUnavailable as exc:
            listing = _Listing({}, {}, [Problem(str(self.path), None, str(exc))])
        except sqlite3.Error as exc:
            message = f"unexpected schema ({exc}); its conversations are not listed"
            listing = _Listing({}, {}, [Problem(str(self.path), None, message)])
        except _NotCursor:
            message = "no cursorDiskKV table (not a Cursor database?); nothing listed"
            listing = _Listing({}, {}, [Problem(str(self.path), None, message)])
        if not listing.problems:
            self._last = (stamp, listing)
        return listing

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        """One unit per composer."""
        listing = self._listing()
        problems = list(listing.problems)
        units = []
        for cid, rows in listing.rows.items():
            if checked_id(cid) is None:
                message = f"composer id {cid[:80]!r} is not a usable session id; skipped"
                problems.append(Problem(str(self.path), None, message))
                continue
            key = COMPOSER_PREFIX + cid
            units.append(Unit(key, rows.stamp()))
        return units, problems

    def stat(self, cid: str) -> Unit | None:
        """One composer's current stamp (a few indexed lookups), or ``None`` when it is gone."""
        heads = self._listing().heads
        try:
            rows = read_database(self.path, lambda c: _rows_of(c, cid, heads.get(cid)))
        except (DatabaseUnavailable, sqlite3.Error):
            return None
        return None if rows is None else Unit(COMPOSER_PREFIX + cid, rows.stamp())

    def read(self, cid: str, max_bytes: int) -> tuple[bytes, Unit]:
        """A composer's normalized document and its stamp.

        Raises:
            SkippedFile: the composer is gone, too big, or the database cannot be read now.
        """
        head = self._listing().heads.get(cid)
        found = read_unit(self.path, lambda c: _document(c, cid, head, max_bytes))
        if found is None:
            raise SkippedFile(f"composer {cid!r} is no longer in the database")
        document, rows = found
        document["workspace"] = self._workspace(cid, document)
        data = json.dumps(document, ensure_ascii=False).encode("utf-8")
        if len(data) > max_bytes:
            raise SkippedFile(
                f"conversation is {len(data)} bytes, over the {max_bytes}-byte limit; skipped"
            )
        return data, Unit(COMPOSER_PREFIX + cid, rows.stamp(), len(data))

    def _workspace(self, cid: str, document: dict[str, Any]) -> str | None:
        head, composer = as_dict(document.get("head")), as_dict(document.get("composer"))
        identifiers = [
            as_dict(head.get("workspaceIdentifier")),
            as_dict(composer.get("workspaceIdentifier")),
        ]
        for identifier in identifiers:
            path = usable_cwd(as_dict(identifier.get("uri")).get("fsPath"))
            if path is not None:
                return path
        ids = [identifier.get("id") for identifier in identifiers] + [head.get("workspaceId")]
        named = [i for i in ids if isinstance(i, str) and i and i != _EMPTY_WINDOW]
        for workspace in named:
            folder = self._workspaces.folder(workspace)
            if folder is not None:
                return folder
        if not named and not any(i == _EMPTY_WINDOW for i in ids):
            owner = self._workspaces.owner(cid)
            folder = None if owner is None else self._workspaces.folder(owner)
            if folder is not None:
                return folder
        for bubble in map(as_dict, as_list(document.get("bubbles"))):
            for uri in as_list(bubble.get("workspaceUris"))[:1]:
                path = file_uri_path(uri)
                if path is not None:
                    return path
        if named:
            document["problems"].append(
                {"bubble": None, "message": f"workspace {named[0]!r} names no folder; cwd is None"}
            )
        return None


def _list_composers(conn: sqlite3.Connection) -> _Listing:
    tables = _tables(conn)
    if _KV not in tables:
        raise _NotCursor
    heads = _heads(conn, tables)
    counts = _bubble_counts(conn)
    rows: dict[str, _Rows] = {}
    for key, rowid in conn.execute(_COMPOSERS):
        cid = key[len("composerData:") :]
        n, top, total = counts.get(cid, (0, 0, 0))
        rows[cid] = _Rows(rowid, n, top, total, _head_digest(heads.get(cid)))
    return _Listing(rows, heads, [])


def _rows_of(conn: sqlite3.Connection, cid: str, head: Mapping[str, Any] | None) -> _Rows | None:
    found = conn.execute(_ONE, (f"composerData:{cid}",)).fetchone()
    if found is None:
        return None
    n = top = total = 0
    for _key, rowid in conn.execute(_RANGE, (f"bubbleId:{cid}:", f"bubbleId:{cid};")):
        n, top, total = n + 1, max(top, rowid), total + rowid
    return _Rows(found[0], n, top, total, _head_digest(head))


def _document(
    conn: sqlite3.Connection, cid: str, head: dict[str, Any] | None, max_bytes: int
) -> tuple[dict[str, Any], _Rows] | None:
    rows = _rows_of(conn, cid, head)
    if rows is None:
        return None
    problems: list[dict[str, Any]] = []

    def value(rowid: int, bubble: str | None) -> Any:
        try:
            found, problem = _value(conn, _KV, rowid, max_bytes)
        except _TooBig as big:
            problem = f"value is {big.args[0]} bytes, over the {max_bytes}-byte limit; skipped"
            found = None
        if problem is not None:
            problems.append({"bubble": bubble, "message": problem})
        return found

    raw = value(rows.data_rowid, None)
    if raw is not None and not isinstance(raw, dict):
        problems.append({"bubble": None, "message": "composer data is not a JSON object"})
    data = as_dict(raw)
    bubbles: dict[str, dict[str, Any]] = {}
    created: dict[str, tuple[int, int]] = {}
    size = 0
    for key, rowid in conn.execute(_RANGE, (f"bubbleId:{cid}:", f"bubbleId:{cid};")).fetchall():
        bid = key[len(f"bubbleId:{cid}:") :]
        found = value(rowid, bid)
        if found is None:
            continue
        if not isinstance(found, dict):
            problems.append({"bubble": bid, "message": "bubble is not a JSON object; skipped"})
            continue
        bubble = _bubble(found)
        size += len(json.dumps(bubble, ensure_ascii=False))
        if size > max_bytes:
            raise SkippedFile(f"conversation is over the {max_bytes}-byte limit; skipped")
        bubbles[bid] = bubble
        created[bid] = (_time(bubble.get("createdAt")), rowid)
    ordered: list[dict[str, Any]] = []
    for header in map(as_dict, as_list(data.get("fullConversationHeadersOnly"))):
        bid = header.get("bubbleId")
        if isinstance(bid, str) and bid in bubbles:
            ordered.append({"bubbleId": bid, **bubbles.pop(bid)})
    for bid in sorted(bubbles, key=lambda b: created[b]):  # rows the ordered list leaves out
        ordered.append({"bubbleId": bid, **bubbles[bid]})
    if not ordered:  # older releases keep the conversation inside the composer
        ordered = [_bubble(b) for b in as_list(data.get("conversation")) if isinstance(b, dict)]
    document = {
        "format": DOCUMENT_FORMAT,
        "id": cid,
        "composer": _composer(data),
        "head": None if head is None else dict(head),
        "bubbles": ordered,
        "problems": problems,
    }
    return document, rows
