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
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

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


class _ImporterClass(Protocol):
    """What the registry calls on an importer class (a :class:`~._catalog.Catalog`)."""

    def __call__(
        self, root: Path, /, *, metadata_cache: Path | None = None, **options: Any
    ) -> SessionPersistence: ...

    def from_units(
        self, units: UnitStore, *, metadata_cache: Path | None = None
    ) -> SessionPersistence: ...


class _Importer:
    """The three openers of one importer kind (``opener``, ``unit_store``, ``from_units``):
    its module, importer class and units function, imported on first use.

    Args:
        module: the importer's module under ``sessionquery.sources``.
        name: its importer class.
        units: the function (or class) that gives a location's raw units.
        also: the class and its units take the locations read with a location (``also=``);
            other kinds' openers leave them out.
    """

    __slots__ = ("_also", "_module", "_name", "_units")

    def __init__(self, module: str, name: str, units: str, *, also: bool = False) -> None:
        self._module = f"sessionquery.sources.{module}"
        self._name = name
        self._units = units
        self._also = also

    def _class(self) -> _ImporterClass:
        importer: _ImporterClass = getattr(import_module(self._module), self._name)
        return importer

    def _options(self, also: tuple[Path, ...]) -> dict[str, Any]:
        return {"also": also} if self._also else {}

    def open(self, path: Path, cache: Path | None, also: tuple[Path, ...]) -> SessionPersistence:
        """The importer over one location (the kind's ``opener``)."""
        return self._class()(path, metadata_cache=cache, **self._options(also))

    def units(self, path: Path, also: tuple[Path, ...]) -> UnitStore:
        """The raw units of one location (the kind's ``unit_store``)."""
        units: Callable[..., UnitStore] = getattr(import_module(self._module), self._units)
        return units(path, **self._options(also))

    def from_units(self, units: UnitStore, cache: Path | None) -> SessionPersistence:
        """The importer over another store of the kind's units (the kind's ``from_units``)."""
        return self._class().from_units(units, metadata_cache=cache)


_CLAUDE = _Importer("claude", "ClaudeCodeSource", "claude_units")
_CODEX = _Importer("codex", "CodexSource", "codex_units")
_GEMINI = _Importer("gemini", "GeminiSource", "gemini_units")
_QWEN = _Importer("qwen", "QwenSource", "qwen_units")
_COPILOT = _Importer("copilot", "CopilotCliSource", "copilot_units")
_OPENCODE = _Importer("opencode", "OpenCodeSource", "OpenCodeUnits")
_CURSOR = _Importer("cursor", "CursorSource", "cursor_units", also=True)
_VSCODE = _Importer("vscode", "VscodeCopilotSource", "vscode_units")

_VSCODE_FLAVOURS = ("Code", "Code - Insiders", "VSCodium")


def _vscode_homes(env: SourceEnvironment) -> tuple[Path, ...]:
    portable = env.var("VSCODE_PORTABLE")
    if portable is not None:
        return (portable / "user-data" / "User",)
    return tuple(env.config_home() / name / "User" for name in _VSCODE_FLAVOURS)


def _cursor_user_folder(env: SourceEnvironment, _path: Path) -> tuple[Path, ...]:
    return (env.config_home() / "Cursor" / "User",)


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
        opener=_CLAUDE.open,
        unit_store=_CLAUDE.units,
        from_units=_CLAUDE.from_units,
    ),
    SourceKind(
        kind="codex",
        name="Codex",
        label="codex",
        env_vars=("CODEX_HOME",),
        where="~/.codex/sessions (or $CODEX_HOME/sessions)",
        noun="Codex sessions directory",
        locate=lambda env: (_home_var(env, "CODEX_HOME", ".codex") / "sessions",),
        opener=_CODEX.open,
        unit_store=_CODEX.units,
        from_units=_CODEX.from_units,
    ),
    SourceKind(
        kind="gemini",
        name="Gemini CLI",
        label="gemini",
        env_vars=("GEMINI_CLI_HOME",),
        where="~/.gemini (or $GEMINI_CLI_HOME/.gemini)",
        noun="Gemini CLI home",
        locate=lambda env: ((env.var("GEMINI_CLI_HOME") or env.user_home) / ".gemini",),
        opener=_GEMINI.open,
        unit_store=_GEMINI.units,
        from_units=_GEMINI.from_units,
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
        opener=_QWEN.open,
        unit_store=_QWEN.units,
        from_units=_QWEN.from_units,
    ),
    SourceKind(
        kind="copilot",
        name="GitHub Copilot CLI",
        label="copilot",
        env_vars=("COPILOT_HOME",),
        where="~/.copilot/session-state (or $COPILOT_HOME/session-state)",
        noun="Copilot CLI home",
        locate=lambda env: (_home_var(env, "COPILOT_HOME", ".copilot"),),
        opener=_COPILOT.open,
        unit_store=_COPILOT.units,
        from_units=_COPILOT.from_units,
    ),
    SourceKind(
        kind="opencode",
        name="OpenCode",
        label="opencode",
        env_vars=("XDG_DATA_HOME",),
        where="~/.local/share/opencode (or $XDG_DATA_HOME/opencode): opencode.db, storage/",
        noun="OpenCode data folder",
        locate=lambda env: (env.data_dir() / "opencode",),
        opener=_OPENCODE.open,
        unit_store=_OPENCODE.units,
        from_units=_OPENCODE.from_units,
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
        opener=_CURSOR.open,
        unit_store=_CURSOR.units,
        from_units=_CURSOR.from_units,
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
        opener=_VSCODE.open,
        unit_store=_VSCODE.units,
        from_units=_VSCODE.from_units,
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
