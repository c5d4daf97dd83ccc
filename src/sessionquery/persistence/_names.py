"""File names for stored sessions: an injective, filesystem-safe escape of a session id.

Invariants of :func:`session_file_name` (tested property-based):

* **Injective, also under case-folding.** Distinct ids give distinct names, and the names
  stay distinct on case-insensitive filesystems because every name is lowercase ASCII.
* **Safe.** A name contains only ``[a-z0-9._~-]``, never starts with ``.``, is never ``.`` or
  ``..``, contains no separator or NUL and is at most :data:`MAX_NAME_BYTES` bytes, so joining
  it to the store root always names a direct child of the root.
* **Recognisable.** Every name ends in :data:`SUFFIX`; store-internal files start with ``.``.

Scheme: the id's UTF-8 bytes ``a-z 0-9 - _ .`` are kept (except a leading ``.``); every other
byte, including uppercase letters and ``~``, becomes ``~xx`` (two lowercase hex digits). As a
kept ``~`` never occurs, ``~`` always starts an escape and decoding is unambiguous. When the
escape is too long for a file name, the name becomes a readable prefix of it, then ``~~`` (which
no short name contains), then the SHA-256 of the exact id; the store keeps the exact id in the
header line, so listings still return exact ids.
"""

from __future__ import annotations

import hashlib

__all__ = ["MAX_NAME_BYTES", "SUFFIX", "is_session_file_name", "session_file_name"]

SUFFIX = ".jsonl"
"""The extension of every session file."""

MAX_NAME_BYTES = 255
"""The longest file name common filesystems accept (ext4, APFS, NTFS, tmpfs)."""

_MAX_ESCAPED = 180
"""Escapes longer than this are hashed; leaves room for the suffix and the digest."""

_PREFIX_KEPT = 100
"""How much of a long escape stays readable in front of the digest."""

_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_.")


def _escape(session_id: str) -> str:
    raw = session_id.encode("utf-8")
    parts: list[str] = []
    for index, byte in enumerate(raw):
        # A leading dot would make a hidden file (and "." / ".." would name directories).
        if byte in _SAFE and not (index == 0 and byte == 0x2E):
            parts.append(chr(byte))
        else:
            parts.append(f"~{byte:02x}")
    return "".join(parts)


def session_file_name(session_id: str) -> str:
    """The file name (not a path) under which ``session_id`` is stored.

    Args:
        session_id: a valid session id (see :func:`sessionquery.model.validate_session_id`).

    Returns:
        A name of at most 255 bytes made of ``[a-z0-9._~-]``, ending in ``.jsonl``.
    """
    escaped = _escape(session_id)
    if len(escaped) <= _MAX_ESCAPED:
        return escaped + SUFFIX
    # Cut the readable prefix before a partial escape so the prefix stays well-formed.
    prefix = escaped[:_PREFIX_KEPT]
    tilde = prefix.rfind("~", len(prefix) - 2)
    if tilde != -1:
        prefix = prefix[:tilde]
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()
    return f"{prefix}~~{digest}{SUFFIX}"


def is_session_file_name(name: str) -> bool:
    """Whether a directory entry can be a session file (store-internal files are not)."""
    return name.endswith(SUFFIX) and not name.startswith(".") and len(name) > len(SUFFIX)
