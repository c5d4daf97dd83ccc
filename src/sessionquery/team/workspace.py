"""Team workspaces: one identity for the same repository on every machine.

A session's *team workspace* is computed from its recorded ``cwd`` on the machine that pushes
it (:func:`team_workspace`):

* when ``cwd`` is inside a git checkout whose configuration names a remote: the remote's
  normalised URL (:func:`normalise_remote`: host and path, lower-case host, no scheme, user,
  password, port or ``.git``), followed by ``#`` and the path inside the checkout when ``cwd``
  is not the checkout's top (``github.com/org/app``, ``github.com/org/app#src/api``);
* otherwise (no checkout, no remote, a remote that is a local path): the machine-qualified
  cwd, ``<machine>:<cwd>`` (``alice-laptop:/home/alice/notes``);
* no cwd: no workspace (``None``).

The two forms never collide: a normalised remote holds no ``:``, a machine-qualified cwd always
does.

Invariants: git is never run. The checkout is found by walking up ``cwd`` textually (no symlink
resolution, as the exact-cwd rule) and reading ``.git/config`` (or, for a linked worktree or a
submodule, the ``gitdir:`` file and the ``commondir`` it names) as text, at most
:data:`MAX_CONFIG_BYTES` of it; nothing in a configuration is executed, included or
followed beyond those two pointers. Credentials in a remote URL never reach the result.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "MAX_CONFIG_BYTES",
    "checkout_remote",
    "machine_workspace",
    "normalise_remote",
    "team_workspace",
    "valid_machine",
]

MAX_CONFIG_BYTES: Final = 256 * 1024
"""Larger ``.git/config`` files (and pointer files) are not read."""

_SECTION = re.compile(r'^\s*\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$')
_ANY_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(.*?)\s*$", re.IGNORECASE)
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_MACHINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def valid_machine(name: str) -> str:
    """``name`` when it is a usable machine name (letters, digits, ``.``, ``_``, ``-``).

    Raises:
        ValueError: any other name (a ``:`` or ``/`` would make identities ambiguous).
    """
    if not isinstance(name, str) or not _MACHINE.match(name):
        raise ValueError(
            f"machine name {name!r} must be 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def normalise_remote(url: str) -> str | None:
    """The host-and-path identity of a git remote URL, or ``None`` for a local path.

    ``git@github.com:Org/App.git``, ``https://user:token@GitHub.com/Org/App``,
    ``ssh://git@github.com:22/Org/App.git/`` all give ``github.com/Org/App``: the host is
    lower-cased (host names are case-insensitive), the path is kept as written.
    """
    text = url.strip()
    if not text or "\x00" in text:
        return None
    host: str | None
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme.lower() == "file":
            return None
        host, path = parts.hostname, parts.path
    else:
        scp = _SCP.match(text)
        if scp is None or "/" in scp.group(1) or scp.group(1).startswith("."):
            return None  # a local path (``/srv/git/app``, ``../app``)
        host, path = scp.group(1), scp.group(2)
    if not host:
        return None
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")].rstrip("/")
    segments = [s for s in path.split("/") if s and s not in (".", "..")]
    if not segments:
        return None
    identity = f"{host.lower()}/{'/'.join(segments)}"
    return identity if ":" not in identity and "#" not in identity else None


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _config_remotes(text: str) -> dict[str, str]:
    """``{remote name: url}`` from a git config's text (first url of each remote)."""
    remotes: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        section = _SECTION.match(line)
        if section is not None:
            current = section.group(1)
            continue
        if _ANY_SECTION.match(line):
            current = None
            continue
        if current is None or current in remotes:
            continue
        value = _URL.match(line)
        if value is not None:
            url = value.group(1)
            if len(url) >= 2 and url[0] == url[-1] == '"':
                url = url[1:-1]
            remotes[current] = url
    return remotes


def _git_dir(top: str) -> str | None:
    """The git directory of a checkout whose top is ``top`` (``.git`` dir or pointer)."""
    dot = os.path.join(top, ".git")
    if os.path.isdir(dot):
        return dot
    if not os.path.isfile(dot):
        return None
    text = _read_small(dot)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(top, target)) if target else None


def _config_of(git_dir: str) -> str | None:
    config = _read_small(os.path.join(git_dir, "config"))
    common = _read_small(os.path.join(git_dir, "commondir"))
    if common is not None and common.strip():
        shared = os.path.normpath(os.path.join(git_dir, common.strip()))
        config = _read_small(os.path.join(shared, "config")) or config
    return config


def checkout_remote(cwd: str) -> tuple[str, str] | None:
    """``(normalised remote, path inside the checkout)`` for a cwd in a git checkout with a
    remote (``origin`` preferred, else the first), else ``None``."""
    path = PurePosixPath(cwd)
    if not path.is_absolute():
        return None
    for top in (path, *path.parents):
        git_dir = _git_dir(str(top))
        if git_dir is None:
            continue
        text = _config_of(git_dir)
        remotes = _config_remotes(text) if text is not None else {}
        url = remotes.get("origin") or next(iter(remotes.values()), None)
        identity = normalise_remote(url) if url is not None else None
        if identity is None:
            return None  # the innermost checkout decides, even without a usable remote
        inside = path.relative_to(top).as_posix()
        return identity, "" if inside == "." else inside
    return None


def machine_workspace(machine: str, cwd: str) -> str:
    """The machine-qualified workspace of a cwd outside any shared checkout."""
    return f"{machine}:{cwd}"


def team_workspace(cwd: str | None, machine: str) -> str | None:
    """The team workspace of a session recorded in ``cwd`` on ``machine`` (module docs)."""
    if cwd is None:
        return None
    found = checkout_remote(cwd)
    if found is None:
        return machine_workspace(machine, cwd)
    remote, inside = found
    return f"{remote}#{inside}" if inside else remote
