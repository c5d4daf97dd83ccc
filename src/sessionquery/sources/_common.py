"""Small values and helpers shared by the importers: problems, ids, times, workspaces (the
JSON helpers they share are the model's: :mod:`sessionquery.model.jsonvalue`).

Invariants every importer keeps (the modules beside this one implement them):

* an imported log is a valid event log: seqs contiguous from 0, and :func:`fold_surface`
  succeeds on it (the builder only ever appends or replaces the *whole* current surface);
* every event's ``data`` carries ``origin = {"file": <path relative to the source root>,
  "line": <1-based line>}`` (plus ``"lines"`` when several lines were merged into one event);
* a damaged line never stops the rest of a file from being read, and a damaged file never stops
  the rest of the source: each becomes a :class:`Problem`;
* public ids are unique within a source by construction (see :mod:`._catalog`).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from urllib.parse import unquote, urlparse

from sessionquery.model import validate_session_id
from sessionquery.model.header import MAX_ID_LENGTH
from sessionquery.model.jsonvalue import as_dict
from sessionquery.model.timestamp import TimestampError, parse_iso_timestamp

__all__ = ["Problem"]

ORIGIN_KEY = "origin"
"""The ``data`` key that holds an event's source pointer (not a SPEC field, so no clash)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing an importer could not read as expected.

    Attributes:
        path: absolute path of the file (or directory) concerned.
        line: 1-based physical line number, or ``None`` for a whole-file problem.
        message: what is wrong and what the importer did about it.
    """

    path: str
    line: int | None
    message: str


def is_absolute_path(value: str) -> bool:
    """Whether ``value`` is an absolute POSIX or Windows path."""
    return PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()


def usable_cwd(value: object) -> str | None:
    """``value`` if it can be a header's ``cwd`` (absolute, no NUL, valid Unicode), else None."""
    if not isinstance(value, str) or not value or "\x00" in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value if is_absolute_path(value) else None


def file_uri_path(uri: object) -> str | None:
    """The path of a ``file://`` URI (``file:///C:/x`` is ``C:/x``) if it is a usable ``cwd``,
    else ``None``."""
    if not isinstance(uri, str) or len(uri) > 8192:
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":
        path = path[1:]
    return usable_cwd(path)


def workspace_json_folder(data: bytes) -> str | None:
    """The folder a VS Code-style ``workspace.json`` names (``folder``, or the folder of a
    ``.code-workspace`` file), or ``None``."""
    try:
        manifest = as_dict(json.loads(data.decode("utf-8")))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    folder, workspace = manifest.get("folder"), manifest.get("workspace")
    if isinstance(folder, str) and folder:
        return file_uri_path(folder)
    path = file_uri_path(workspace)
    return None if path is None else usable_cwd(path.rsplit("/", 1)[0] or "/")


def iso_to_ms(value: object) -> int | None:
    """An ISO-8601 timestamp (``Z`` or offset) as exact epoch milliseconds, or ``None`` for
    anything else (including instants before 1970)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        millis = parse_iso_timestamp(value.strip()).floor_ms
    except TimestampError:
        return None
    return millis if millis >= 0 else None


def checked_id(value: object) -> str | None:
    """``value`` if it is a usable session id, else ``None``."""
    try:
        return validate_session_id(value)
    except ValueError:
        return None


def derived_id(text: str) -> str:
    """A valid session id made from ``text`` (a file name, or a parent id plus a suffix).

    ``text`` itself when it is valid; otherwise control characters and lone surrogates become
    ``?`` and an over-long result is cut, and a digest of the original text is appended so two
    different texts never end up with the same id by this cleaning.
    """
    if checked_id(text) is not None:
        return text
    cleaned = "".join("?" if unicodedata.category(char) in ("Cc", "Cs") else char for char in text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    keep = MAX_ID_LENGTH - len(digest) - 1
    return f"{cleaned[:keep] or '?'}#{digest}"
