"""Cursor conversations as read-only sessions: its database and its agent transcripts, joined.

Cursor keeps a conversation (a *composer*) in two places:

* its database, ``<Cursor user folder>/globalStorage/state.vscdb`` (``~/.config/Cursor/User``
  on Linux, ``~/Library/Application Support/Cursor/User`` on macOS, ``%APPDATA%/Cursor/User``
  on Windows): every conversation of the editor, with its name, dates, workspace, model, each
  message ("bubble") with its time, thinking, tool calls and their results (:mod:`._cursor_db`,
  :mod:`._cursor_composer`);
* an agent transcript, ``~/.cursor/projects/<project>/agent-transcripts/<composerId>.jsonl``
  (or ``.txt``, or ``<composerId>/<composerId>.jsonl``), written for agent runs only (the editor
  and the ``cursor-agent`` command line): the messages without results, times or names
  (:mod:`._cursor_transcripts`).

They join on the id: a transcript's name is its composer's id. A conversation is one session,
whose id is that composer id: read from the database when the database has it (dates, title,
workspace and the richer events), from its transcript when the database holds no message of
it (then dated and titled by the database), and from the transcript alone (undated) when the
database does not know it. A source reads one location of either kind, or both: the default
Cursor source reads the default projects folder *and* the default user folder (see
:mod:`.registry`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sessionquery.sources._catalog import Catalog
from sessionquery.sources._common import Problem
from sessionquery.sources._cursor_composer import composer_facts, parse_composer, transcript_session
from sessionquery.sources._cursor_db import COMPOSER_PREFIX, CursorDatabase, composer_id
from sessionquery.sources._cursor_transcripts import (
    parse_transcript,
    project_folder,
    select_cursor,
    transcript_stem,
)
from sessionquery.sources._files import DEFAULT_MAX_FILE_BYTES
from sessionquery.sources._parsed import ParsedFile, Parser, UnitInput
from sessionquery.sources.units import FileTree, SkippedFile, Unit

__all__ = ["CursorSource", "CursorUnits", "cursor_units", "parse_cursor_unit", "project_folder"]

_DATABASE = ("globalStorage", "state.vscdb")
_USER_FOLDERS = (
    (".config", "Cursor", "User"),
    ("Library", "Application Support", "Cursor", "User"),
    ("AppData", "Roaming", "Cursor", "User"),
)


def _user_folder(path: Path) -> bool:
    if (path / _DATABASE[0]).is_dir() or (path / "workspaceStorage").is_dir():
        return True
    return not path.exists() and path.name == "User"


def _locate(path: Path) -> tuple[Path | None, Path | None]:
    """``(projects folder, user folder)`` that one Cursor location stands for.

    A location is a projects folder (``~/.cursor/projects``), a ``.cursor`` folder, a user
    folder (``…/Cursor/User``) or the ``Cursor`` folder above it, a ``state.vscdb`` file, or a
    home folder holding ``.cursor`` (and a user folder where the platforms keep it).
    """
    if path.name == "state.vscdb" or path.is_file():
        parent = path.parent
        return None, parent.parent if parent.name == _DATABASE[0] else parent
    if _user_folder(path):
        return None, path
    if (path / "User" / _DATABASE[0]).is_dir():
        return None, path / "User"
    if path.name == ".cursor":
        return path / "projects", None
    if (path / ".cursor").is_dir():
        users = (path.joinpath(*parts) for parts in _USER_FOLDERS)
        return path / ".cursor" / "projects", next((u for u in users if u.is_dir()), None)
    return path, None


class CursorUnits:
    """The raw units of Cursor locations: agent transcripts (their relative paths under the
    projects folder) and composers (``composer/<composerId>``, normalized JSON documents).

    Args:
        root: the location (see :func:`_locate`); problems and the archive name it.
        also: further locations read with it (the default projects folder's user folder).
        follow_outside_links: follow symbolic links that leave the projects folder.
    """

    def __init__(
        self, root: Path, *, also: Iterable[Path] = (), follow_outside_links: bool = False
    ) -> None:
        self._root = Path(root).absolute()
        projects, user = _locate(self._root)
        self._primary_db = user is not None
        for other in (Path(p).absolute() for p in also):
            more_projects, more_user = _locate(other)
            projects = projects or more_projects
            user = user or more_user
        self._tree = None
        if projects is not None:
            self._tree = FileTree(
                projects, select_cursor, follow_outside_links=follow_outside_links
            )
        self._db = None if user is None else CursorDatabase(user.joinpath(*_DATABASE), user)

    @property
    def location(self) -> Path:
        """The location this store was opened on."""
        return self._root

    @property
    def database(self) -> Path | None:
        """The ``state.vscdb`` read, if any."""
        return None if self._db is None else self._db.path

    def present(self) -> bool:
        """Whether the transcripts folder or the database is there (the archive serves every
        unit itself when neither is)."""
        tree = self._tree is not None and self._tree.location.is_dir()
        return tree or (self._db is not None and self._db.path.is_file())

    def where(self, key: str) -> str:
        """The database (for a composer) or the transcript file a problem names."""
        if composer_id(key) is not None and self._db is not None:
            return str(self._db.path)
        return self._tree.where(key) if self._tree is not None else str(self._root / key)

    def fingerprint(self) -> str | None:
        """The database's stamp when there is no transcripts folder, else ``None``."""
        if self._db is None or (self._tree is not None and self._tree.location.is_dir()):
            return None
        return self._db.fingerprint() + ("|no transcripts" if self._tree is not None else "")

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        """Every transcript and every composer, sorted by key."""
        units: list[Unit] = []
        problems: list[Problem] = []
        tree = self._tree if self._tree is not None and self._tree.location.is_dir() else None
        if self._tree is not None and (tree is not None or self._db is None):
            found, trouble = self._tree.scan()
            units += found
            problems += trouble
        if self._db is not None and self._db.path.is_file():
            found, trouble = self._db.scan()
            units += found
            problems += trouble
        elif self._db is not None and (self._primary_db or tree is None):
            message = "no globalStorage/state.vscdb here; no Cursor conversations imported"
            problems.append(Problem(str(self._db.path), None, message))
        units.sort(key=lambda unit: unit.key)
        return units, problems

    def stat(self, key: str) -> Unit | None:
        """One unit's current stamp, or ``None`` when it is gone."""
        cid = composer_id(key)
        if cid is not None:
            return None if self._db is None else self._db.stat(cid)
        return None if self._tree is None else self._tree.stat(key)

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        """A unit's bytes and stamp.

        Raises:
            SkippedFile: the unit cannot be read now (the message says why).
        """
        cid = composer_id(key)
        if cid is not None:
            if self._db is None:
                raise SkippedFile("no Cursor database here")
            return self._db.read(cid, max_bytes)
        if self._tree is None:
            raise SkippedFile("no Cursor projects folder here")
        return self._tree.read(key, max_bytes)


def cursor_units(
    root: Path, *, also: Iterable[Path] = (), follow_outside_links: bool = False
) -> CursorUnits:
    """The raw units of a Cursor location (and the locations read with it)."""
    return CursorUnits(Path(root), also=also, follow_outside_links=follow_outside_links)


def parse_cursor_unit(unit: UnitInput) -> ParsedFile:
    """Parse one unit: a composer's document, or an agent transcript (which yields nothing when
    the database holds its conversation's messages, and takes the database's date, title and
    workspace when the database knows the conversation without them)."""
    if composer_id(unit.key) is not None:
        return parse_composer(unit)
    key = COMPOSER_PREFIX + transcript_stem(unit.key)
    if not unit.sides.has(key):
        return parse_transcript(unit)
    facts = unit.sides.memo(key, "cursor-facts", composer_facts, None)
    if facts is None or facts.id != transcript_stem(unit.key):
        return parse_transcript(unit)
    if facts.spoken:
        return ParsedFile((), ())
    if unit.key.endswith(".txt") and unit.sides.find(unit.key[:-4] + ".jsonl") is not None:
        return ParsedFile((), ())  # the .jsonl of the same conversation is read instead
    return transcript_session(unit, facts)


class CursorSource(Catalog):
    """A read-only ``SessionPersistence`` over Cursor's conversations.

    Args:
        root: a Cursor location: the projects folder ``~/.cursor/projects`` (agent
            transcripts), a Cursor user folder (``~/.config/Cursor/User``: its
            ``globalStorage/state.vscdb``), that database file, or a home folder holding both.
        also: further locations read together with ``root`` as one source (the default
            source reads the default projects folder and the default user folder).
        metadata_cache: a SQLite file that keeps what each unit yields between runs
            (derived, disposable, shareable by processes), or ``None`` to keep it in memory.
        max_file_bytes: transcripts and conversations larger than this are reported and not
            read (256 MiB).
        follow_outside_links: follow symbolic links that lead outside the projects folder.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``metadata_cache`` names a file that is not
            an importer cache (it is left untouched).
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    kind = "cursor"

    @classmethod
    def unit_parser(cls) -> Parser:
        """The parser of this kind's units."""
        return parse_cursor_unit

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        also: Iterable[str | os.PathLike[str]] = (),
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        follow_outside_links: bool = False,
    ) -> None:
        units = cursor_units(
            Path(root), also=[Path(p) for p in also], follow_outside_links=follow_outside_links
        )
        super().__init__(
            units, parse_cursor_unit, metadata_cache=metadata_cache, max_file_bytes=max_file_bytes
        )
