"""The session header: who a session is, where it ran and where it came from.

A header is fixed when the session is created and never changes. ``cwd`` is the workspace
identity used for authorization: it is stored and compared **verbatim** (no normalisation,
no symlink resolution), so ``/a``, ``/a/`` and ``/a/../a`` are three different workspaces.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

__all__ = ["FORMAT_VERSION", "MAX_ID_LENGTH", "HeaderedLog", "SessionHeader", "validate_session_id"]

FORMAT_VERSION = 3
"""The version of the event-log format this library reads and writes."""

MAX_ID_LENGTH = 512


def validate_session_id(value: object, field: str = "id") -> str:
    """Return ``value`` if it is a valid session id, else raise ``ValueError``.

    Valid ids are non-empty strings of at most 512 characters with no control characters.
    ``/``, ``..`` and non-ASCII text are valid; storage escapes them safely.
    """
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{field} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"{field} is {len(value)} characters long; the limit is {MAX_ID_LENGTH}")
    if not value.isprintable():
        for char in value:
            if unicodedata.category(char) in ("Cc", "Cs"):
                raise ValueError(
                    f"{field} must not contain control characters (found U+{ord(char):04X})"
                )
    return value


def _is_absolute(path: str) -> bool:
    # A POSIX path is absolute exactly when it starts with "/" (PurePosixPath's rule); the
    # check is on every header a listing parses, so the paths are built only otherwise.
    return (
        path.startswith("/")
        or PurePosixPath(path).is_absolute()
        or PureWindowsPath(path).is_absolute()
    )


def _check_int(value: object, field: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{field} must be a non-negative integer, not {value!r}")
    if value > 2**63 - 1:  # the search index stores it as a 64-bit SQLite INTEGER
        raise ValueError(f"{field} must be at most 2**63 - 1, not {value!r}")
    return value


def _check_optional_str(value: object, field: str) -> None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{field} must be a string or None, not {type(value).__name__}")
    if isinstance(value, str) and not value.isascii():
        # The header is stored as UTF-8 JSON: text with lone surrogates cannot be written.
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{field} is not valid Unicode (lone surrogate)") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionHeader:
    """The immutable identity of a session.

    Raises:
        ValueError: on construction, naming the first invalid field.
    """

    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    is_seeded: bool = False
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        validate_session_id(self.id, "id")
        _check_int(self.created_at, "created_at")
        if self.cwd is not None:
            if not isinstance(self.cwd, str) or not self.cwd:
                raise ValueError(f"cwd must be an absolute path string, not {self.cwd!r}")
            if "\x00" in self.cwd or not _is_absolute(self.cwd):
                raise ValueError(f"cwd must be an absolute path without NUL, not {self.cwd!r}")
            _check_optional_str(self.cwd, "cwd")
        if self.parent_session is not None:
            validate_session_id(self.parent_session, "parent_session")
        if type(self.is_seeded) is not bool:
            raise ValueError(f"is_seeded must be a bool, not {self.is_seeded!r}")
        _check_optional_str(self.origin, "origin")
        _check_optional_str(self.agent_preset, "agent_preset")
        _check_int(self.delegation_depth, "delegation_depth")
        if self.version != FORMAT_VERSION or type(self.version) is not int:
            raise ValueError(
                f"unsupported format version {self.version!r}; this library reads version "
                f"{FORMAT_VERSION}"
            )

    def is_compatible(self, other: SessionHeader) -> bool:
        """Whether two observations of one session agree (``origin``/``agent_preset`` aside)."""
        return (
            self.id == other.id
            and self.created_at == other.created_at
            and self.cwd == other.cwd
            and self.parent_session == other.parent_session
            and self.is_seeded == other.is_seeded
            and self.delegation_depth == other.delegation_depth
        )

    def to_json(self) -> dict[str, Any]:
        """The wire form (camelCase keys; optional keys only when set)."""
        record: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "createdAt": self.created_at,
            "isSeeded": self.is_seeded,
            "delegationDepth": self.delegation_depth,
        }
        for key, value in (
            ("cwd", self.cwd),
            ("parentSession", self.parent_session),
            ("origin", self.origin),
            ("agentPreset", self.agent_preset),
        ):
            if value is not None:
                record[key] = value
        return record

    @classmethod
    def from_json(cls, obj: object) -> SessionHeader:
        """Parse the wire form written by :meth:`to_json`.

        Raises:
            ValueError: for unknown keys, missing keys or invalid values.
        """
        if not isinstance(obj, dict):
            raise ValueError(f"a session header must be a JSON object, not {type(obj).__name__}")
        unknown = set(obj) - _HEADER_KEYS  # pyright: ignore[reportUnknownArgumentType]
        if unknown:
            raise ValueError(f"unknown session header keys: {', '.join(sorted(map(str, unknown)))}")
        version = obj.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ValueError(
                f"unsupported format version {version!r}; this library reads version "
                f"{FORMAT_VERSION}"
            )
        for key in ("id", "createdAt"):
            if key not in obj:
                raise ValueError(f"session header is missing {key!r}")
        return cls(
            id=obj["id"],
            created_at=obj["createdAt"],
            cwd=obj.get("cwd"),
            parent_session=obj.get("parentSession"),
            is_seeded=obj.get("isSeeded", False),
            origin=obj.get("origin"),
            delegation_depth=obj.get("delegationDepth", 0),
            agent_preset=obj.get("agentPreset"),
            version=version,
        )


_HEADER_KEYS = frozenset(
    {
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "isSeeded",
        "origin",
        "delegationDepth",
        "agentPreset",
    }
)


class HeaderedLog:
    """Mixin of an open session log (a live session, a stored log's handle): its ``header``
    and ``inherited_event_count``, both fixed when it was opened. The subclass sets
    ``_header`` and ``_inherited`` once, in its constructor."""

    __slots__ = ()

    _header: SessionHeader
    _inherited: int

    @property
    def header(self) -> SessionHeader:
        """The session header (it never changes)."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """How many leading events were inherited from a seed (0 when not seeded)."""
        return self._inherited
