"""The importer seam: every kind of session source, in one table.

A kind (``store``, ``claude``, ``codex``, ...) is a :class:`SourceKind`: its display name, its
``MultiSource`` label (the ``<label>:`` id prefix), where its producer keeps sessions by default
given a :class:`SourceEnvironment` (the environment variables and directories the one
configuration reader, ``Config.from_env``, resolved; this module never reads ``os.environ`` or
the home directory itself), and how to open a location of that kind. Adding a format is one
module, its fixtures and one entry in :data:`KINDS`. A kind may read a default location together
with others as one source (:meth:`SourceKind.companions`: Cursor's projects folder with its user
folder, so that a conversation kept in both is listed once).

For the archive, a kind also tells how to enumerate a location's raw units
(:meth:`SourceKind.units`, a :class:`~sessionquery.sources.units.UnitStore`) and how to parse
units from any store exactly as the importer parses its own
(:meth:`SourceKind.open_units`): the archive hands it a store that serves archived copies.

Importing this module is cheap: the importers themselves are imported when a kind is opened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessionquery.persistence.base import SessionPersistence
    from sessionquery.sources.units import UnitStore

__all__ = [
    "KINDS",
    "SourceEnvironment",
    "SourceKind",
    "default_locations",
    "environment_variables",
    "source_kind",
]


@dataclass(frozen=True, slots=True)
class SourceEnvironment:
    """What default locations are computed from (resolved once, by ``Config.from_env``).

    Attributes:
        environ: the environment variables the kinds honour (others may be left out).
        user_home: the user's home directory.
        data_home: sessionquery's own data directory (where the default store lives).
        platform: ``sys.platform`` of the machine (``linux``, ``darwin``, ``win32``).
    """

    environ: Mapping[str, str] = field(default_factory=dict[str, str])
    user_home: Path = Path("/")
    data_home: Path = Path("/")
    platform: str = "linux"

    def var(self, name: str) -> Path | None:
        """The variable ``name`` as an absolute path, or ``None`` when unset or empty
        (a relative value is taken relative to the user's home, never the current directory)."""
        value = self.environ.get(name, "")
        if not value:
            return None
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.user_home / path

    def config_home(self) -> Path:
        """Where desktop applications keep their user data (``~/.config`` on Linux,
        ``~/Library/Application Support`` on macOS, ``%APPDATA%`` on Windows)."""
        if self.platform == "darwin":
            return self.user_home / "Library" / "Application Support"
        if self.platform == "win32":
            return self.var("APPDATA") or self.user_home / "AppData" / "Roaming"
        return self.var("XDG_CONFIG_HOME") or self.user_home / ".config"

    def data_dir(self) -> Path:
        """``$XDG_DATA_HOME`` or ``~/.local/share`` (tools that follow XDG on every system)."""
        return self.var("XDG_DATA_HOME") or self.user_home / ".local" / "share"


Locate = Callable[[SourceEnvironment], tuple[Path, ...]]
Together = Callable[[SourceEnvironment, Path], tuple[Path, ...]]
Open = Callable[[Path, "Path | None", tuple[Path, ...]], "SessionPersistence"]
Units = Callable[[Path, tuple[Path, ...]], "UnitStore"]
FromUnits = Callable[["UnitStore", "Path | None"], "SessionPersistence"]


@dataclass(frozen=True, slots=True)
class SourceKind:
    """One kind of session source.

    Attributes:
        kind: the name used by ``--source KIND=PATH`` and the config file.
        name: the display name (``Claude Code``).
        label: the ``MultiSource`` label; its sessions' ids are prefixed ``<label>:`` where
            they collide with another source's.
        env_vars: the environment variables its default location honours, in priority order.
        where: where the producer keeps its sessions, in words (for advice and docs).
        noun: what one location of this kind is called (``Claude Code projects directory``).
        locate: the default locations (possibly several; only existing ones are used).
        opener: opens one location: ``(path, metadata_cache, also) -> SessionPersistence``
            (``also``: the locations read together with it, see ``together``).
        unit_store: the raw units of one location, or ``None`` for a kind the archive does not
            copy (the store is sessionquery's own).
        from_units: a persistence that parses any store of this kind's units as the importer
            does, or ``None``.
        together: further locations a *default* location is read with, as one source (Cursor:
            the user folder whose database holds the conversations of the default projects
            folder's transcripts), or ``None``.
    """

    kind: str
    name: str
    label: str
    env_vars: tuple[str, ...]
    where: str
    noun: str
    locate: Locate
    opener: Open
    unit_store: Units | None = None
    from_units: FromUnits | None = None
    together: Together | None = None

    def defaults(self, environment: SourceEnvironment) -> tuple[Path, ...]:
        """The default locations of this kind (absolute; they need not exist)."""
        return self.locate(environment)

    def companions(self, environment: SourceEnvironment, path: Path) -> tuple[Path, ...]:
        """The locations the default location ``path`` is read with (they need not exist)."""
        return () if self.together is None else self.together(environment, path)

    def open(
        self, path: Path, *, metadata_cache: Path | None = None, also: tuple[Path, ...] = ()
    ) -> SessionPersistence:
        """Open one location of this kind (with ``also``, the locations read with it).

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` for a metadata cache that is not ours.
        """
        return self.opener(path, metadata_cache, also)

    def units(self, path: Path, *, also: tuple[Path, ...] = ()) -> UnitStore | None:
        """The raw units of one location (for the archive), or ``None``."""
        return None if self.unit_store is None else self.unit_store(path, also)

    def open_units(
        self, units: UnitStore, *, metadata_cache: Path | None = None
    ) -> SessionPersistence | None:
        """A persistence over ``units`` parsed as this kind parses its own, or ``None``."""
        return None if self.from_units is None else self.from_units(units, metadata_cache)


# -- the kinds ---------------------------------------------------------------------------------


def _store(path: Path, _cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.persistence import JsonlPersistence

    return JsonlPersistence(path)


def _claude(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.claude import ClaudeCodeSource

    return ClaudeCodeSource(path, metadata_cache=cache)


def _claude_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.claude import claude_units

    return claude_units(path)


def _claude_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.claude import ClaudeCodeSource

    return ClaudeCodeSource.from_units(units, metadata_cache=cache)


def _codex(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.codex import CodexSource

    return CodexSource(path, metadata_cache=cache)


def _codex_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.codex import codex_units

    return codex_units(path)


def _codex_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.codex import CodexSource

    return CodexSource.from_units(units, metadata_cache=cache)


def _gemini(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.gemini import GeminiSource

    return GeminiSource(path, metadata_cache=cache)


def _gemini_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.gemini import gemini_units

    return gemini_units(path)


def _gemini_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.gemini import GeminiSource

    return GeminiSource.from_units(units, metadata_cache=cache)


def _qwen(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.qwen import QwenSource

    return QwenSource(path, metadata_cache=cache)


def _qwen_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.qwen import qwen_units

    return qwen_units(path)


def _qwen_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.qwen import QwenSource

    return QwenSource.from_units(units, metadata_cache=cache)


def _copilot(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.copilot import CopilotCliSource

    return CopilotCliSource(path, metadata_cache=cache)


def _copilot_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.copilot import copilot_units

    return copilot_units(path)


def _copilot_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.copilot import CopilotCliSource

    return CopilotCliSource.from_units(units, metadata_cache=cache)


def _vscode(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.vscode import VscodeCopilotSource

    return VscodeCopilotSource(path, metadata_cache=cache)


def _vscode_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.vscode import vscode_units

    return vscode_units(path)


def _vscode_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.vscode import VscodeCopilotSource

    return VscodeCopilotSource.from_units(units, metadata_cache=cache)


_VSCODE_FLAVOURS = ("Code", "Code - Insiders", "VSCodium")


def _vscode_homes(env: SourceEnvironment) -> tuple[Path, ...]:
    portable = env.var("VSCODE_PORTABLE")
    if portable is not None:
        return (portable / "user-data" / "User",)
    return tuple(env.config_home() / name / "User" for name in _VSCODE_FLAVOURS)


def _cursor(path: Path, cache: Path | None, also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.cursor import CursorSource

    return CursorSource(path, also=also, metadata_cache=cache)


def _cursor_units(path: Path, also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.cursor import cursor_units

    return cursor_units(path, also=also)


def _cursor_user_folder(env: SourceEnvironment, _path: Path) -> tuple[Path, ...]:
    return (env.config_home() / "Cursor" / "User",)


def _cursor_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.cursor import CursorSource

    return CursorSource.from_units(units, metadata_cache=cache)


def _opencode(path: Path, cache: Path | None, _also: tuple[Path, ...]) -> SessionPersistence:
    from sessionquery.sources.opencode import OpenCodeSource

    return OpenCodeSource(path, metadata_cache=cache)


def _opencode_units(path: Path, _also: tuple[Path, ...]) -> UnitStore:
    from sessionquery.sources.opencode import OpenCodeUnits

    return OpenCodeUnits(path)


def _opencode_from(units: UnitStore, cache: Path | None) -> SessionPersistence:
    from sessionquery.sources.opencode import OpenCodeSource

    return OpenCodeSource.from_units(units, metadata_cache=cache)


def _home_var(env: SourceEnvironment, name: str, default: str) -> Path:
    return env.var(name) or env.user_home / default


KINDS: tuple[SourceKind, ...] = (
    SourceKind(
        kind="store",
        name="sessionquery store",
        label="store",
        env_vars=("SESSIONQUERY_HOME",),
        where="<data home>/sessions",
        noun="sessionquery store",
        locate=lambda env: (env.data_home / "sessions",),
        opener=_store,
    ),
    SourceKind(
        kind="claude",
        name="Claude Code",
        label="claude",
        env_vars=("CLAUDE_CONFIG_DIR",),
        where="~/.claude/projects (or $CLAUDE_CONFIG_DIR/projects)",
        noun="Claude Code projects directory",
        locate=lambda env: (_home_var(env, "CLAUDE_CONFIG_DIR", ".claude") / "projects",),
        opener=_claude,
        unit_store=_claude_units,
        from_units=_claude_from,
    ),
    SourceKind(
        kind="codex",
        name="Codex",
        label="codex",
        env_vars=("CODEX_HOME",),
        where="~/.codex/sessions (or $CODEX_HOME/sessions)",
        noun="Codex sessions directory",
        locate=lambda env: (_home_var(env, "CODEX_HOME", ".codex") / "sessions",),
        opener=_codex,
        unit_store=_codex_units,
        from_units=_codex_from,
    ),
    SourceKind(
        kind="gemini",
        name="Gemini CLI",
        label="gemini",
        env_vars=("GEMINI_CLI_HOME",),
        where="~/.gemini (or $GEMINI_CLI_HOME/.gemini)",
        noun="Gemini CLI home",
        locate=lambda env: ((env.var("GEMINI_CLI_HOME") or env.user_home) / ".gemini",),
        opener=_gemini,
        unit_store=_gemini_units,
        from_units=_gemini_from,
    ),
    SourceKind(
        kind="qwen",
        name="Qwen Code",
        label="qwen",
        env_vars=("QWEN_RUNTIME_DIR", "QWEN_HOME"),
        where="~/.qwen (or $QWEN_RUNTIME_DIR, else $QWEN_HOME)",
        noun="Qwen Code home",
        locate=lambda env: (
            env.var("QWEN_RUNTIME_DIR") or env.var("QWEN_HOME") or env.user_home / ".qwen",
        ),
        opener=_qwen,
        unit_store=_qwen_units,
        from_units=_qwen_from,
    ),
    SourceKind(
        kind="copilot",
        name="GitHub Copilot CLI",
        label="copilot",
        env_vars=("COPILOT_HOME",),
        where="~/.copilot/session-state (or $COPILOT_HOME/session-state)",
        noun="Copilot CLI home",
        locate=lambda env: (_home_var(env, "COPILOT_HOME", ".copilot"),),
        opener=_copilot,
        unit_store=_copilot_units,
        from_units=_copilot_from,
    ),
    SourceKind(
        kind="opencode",
        name="OpenCode",
        label="opencode",
        env_vars=("XDG_DATA_HOME",),
        where="~/.local/share/opencode (or $XDG_DATA_HOME/opencode): opencode.db, storage/",
        noun="OpenCode data folder",
        locate=lambda env: (env.data_dir() / "opencode",),
        opener=_opencode,
        unit_store=_opencode_units,
        from_units=_opencode_from,
    ),
    SourceKind(
        kind="cursor",
        name="Cursor",
        label="cursor",
        env_vars=(),
        where=(
            "~/.cursor/projects (agent transcripts) and its user folder's "
            "globalStorage/state.vscdb (~/.config/Cursor/User on Linux)"
        ),
        noun="Cursor projects or user folder",
        locate=lambda env: (env.user_home / ".cursor" / "projects",),
        opener=_cursor,
        unit_store=_cursor_units,
        from_units=_cursor_from,
        together=_cursor_user_folder,
    ),
    SourceKind(
        kind="vscode",
        name="VS Code Copilot Chat",
        label="vscode",
        env_vars=("VSCODE_PORTABLE",),
        where="<VS Code user folder>/User (~/.config/Code/User on Linux)",
        noun="VS Code user folder",
        locate=_vscode_homes,
        opener=_vscode,
        unit_store=_vscode_units,
        from_units=_vscode_from,
    ),
)
"""Every kind, in the order sources are listed and combined."""

_BY_NAME = {kind.kind: kind for kind in KINDS}


def source_kind(name: str) -> SourceKind | None:
    """The kind named ``name`` (``root`` is the store's older name), or ``None``."""
    return _BY_NAME.get("store" if name == "root" else name)


def environment_variables() -> frozenset[str]:
    """Every environment variable some kind's default location honours."""
    names = {"HOME", "APPDATA", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}
    for kind in KINDS:
        names.update(kind.env_vars)
    return frozenset(names)


def default_locations(environment: SourceEnvironment) -> tuple[tuple[str, Path], ...]:
    """``(kind, location)`` for every default location of every kind, in :data:`KINDS` order."""
    return tuple((kind.kind, path) for kind in KINDS for path in kind.defaults(environment))
