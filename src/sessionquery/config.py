"""Where the command-line tool and the MCP server find their data, resolved in one place.

The library never reads the environment or the home directory (SPEC §2). The two entry points
(``sessionquery`` and ``sessionquery mcp``) call :meth:`Config.from_env` exactly once and pass
the resulting paths into the library explicitly. Invariants:

* every path in a :class:`Config` is absolute, so a later ``chdir`` cannot change its meaning;
* nothing is created on disk when a configuration is resolved: directories appear only when a
  command writes to them (``quickstart``, ``index``);
* resolving never fails: a broken config file is reported when a command needs its sources
  (:meth:`Config.settings`), so ``sessionquery mcp`` can still answer with the reason.

Resolution of the home directory: ``SESSIONQUERY_HOME`` when set and non-empty, else the
per-user data directory (``platformdirs.user_data_dir("sessionquery")``, e.g.
``~/.local/share/sessionquery`` on Linux). Inside the home directory:

* ``sessions/`` is the default JSONL store,
* ``index.sqlite3`` is the default search index,
* ``importer-cache.sqlite3`` is the importers' derived metadata cache,
* ``titles.sqlite3`` is the command line's derived cache of session titles,
* ``problems-shown`` remembers which problems the command line last warned about (so the
  warning is repeated only when they change),
* ``archive/`` is the archive of imported sessions (``sessionquery archive``; not derived:
  it holds copies of transcripts whose source may be gone),
* ``quickstart/`` holds the sample store and index that ``sessionquery quickstart`` builds;
  while the sample store exists it is one of the default sources (labelled ``sample``).

The default location of every kind of source (Claude Code's ``$CLAUDE_CONFIG_DIR/projects``,
else ``~/.claude/projects``; Codex's ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``; and
every other kind of :mod:`sessionquery.sources.registry`) is computed here, from the
environment variables each producer honours: :attr:`Config.default_sources`.

The optional config file is TOML: ``SESSIONQUERY_CONFIG`` when set and non-empty, else
``config.toml`` in the per-user config directory (``~/.config/sessionquery`` on Linux). Its
keys mirror the command-line options and the source kinds (a string or a list of strings
each; ``root`` and ``store`` both name sessionquery stores)::

    root = ["~/work/agent-sessions"]
    claude = "~/.claude/projects"
    codex = []
    gemini = "~/.gemini"
    index = "~/work/sessionquery-index.sqlite3"
    archive = true            # archive imported sessions on every index update
    archive_keep_days = 365   # retention; absent: keep forever

``~`` is expanded and relative paths are taken relative to the file's directory.

Known secrets (masked wherever session data is shown or indexed, SPEC §14.3): the values of the
environment variables whose names look secret (``*_KEY``, ``*_TOKEN``, ``*_SECRET``,
``*PASSWORD*``; :func:`sessionquery.redact.known_values_from_env`) are read here, with the
rest of the environment, and the optional known-secrets file is ``SESSIONQUERY_SECRETS`` when
set and non-empty, else ``secrets.txt`` beside the config file (one value per line).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.sources.registry import (
    KINDS,
    SourceEnvironment,
    default_locations,
    environment_variables,
)

__all__ = [
    "APP_NAME",
    "CLAUDE_CONFIG_ENV",
    "CODEX_HOME_ENV",
    "CONFIG_ENV",
    "HOME_ENV",
    "MAX_CONFIG_BYTES",
    "NO_COLOR_ENV",
    "SECRETS_ENV",
    "SOURCE_KINDS",
    "Config",
    "FileSettings",
    "read_settings",
]

APP_NAME = "sessionquery"
"""The application name used for the per-user data and config directories."""

HOME_ENV = "SESSIONQUERY_HOME"
"""The environment variable that overrides the home directory."""

CONFIG_ENV = "SESSIONQUERY_CONFIG"
"""The environment variable that overrides the config file's path."""

CLAUDE_CONFIG_ENV = "CLAUDE_CONFIG_DIR"
"""Claude Code's own override of ``~/.claude``; its ``projects`` folder holds transcripts."""

CODEX_HOME_ENV = "CODEX_HOME"
"""Codex's own override of ``~/.codex``; its ``sessions`` folder holds transcripts."""

NO_COLOR_ENV = "NO_COLOR"
"""Set to any non-empty value to turn off coloured terminal output (https://no-color.org)."""

SECRETS_ENV = "SESSIONQUERY_SECRETS"
"""The environment variable that overrides the known-secrets file's path."""

SOURCE_KINDS = ("root", *(kind.kind for kind in KINDS if kind.kind != "store"))
"""The kinds of session source, named as their config keys (``root`` is the store)."""

_KEYS = frozenset(
    {
        *SOURCE_KINDS,
        "store",
        "index",
        "postgres",
        "archive",
        "archive_keep_days",
        "archive_raw",
        "push",
    }
)
_PUSH_KEYS = frozenset({"postgres", "machine", "interval", "jobs"})


def _absolute(path: Path) -> Path:
    # absolute(), not resolve(): symlinks the user chose are kept, only the cwd is pinned.
    return path.expanduser().absolute()


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSettings:
    """What a config file names (every path absolute).

    Attributes:
        path: the file these settings were read from.
        sources: per kind (``root``, ``claude``, ``codex``, ...) the paths it names; a kind the
            file does not mention is absent (``store`` is read as ``root``).
        index: the index path it names, or ``None``.
        postgres: a PostgreSQL DSN used as session store and search index, or ``None``.
        archive: archive imported sessions on every index update (off by default).
        archive_keep_days: the archive's retention in days, or ``None`` to keep forever.
        archive_raw: archive the transcripts' bytes as they are even when redaction is on
            (off by default: with redaction on, the archive holds the redacted form).
        push: the ``[push]`` table (``sessionquery push``): ``postgres`` (the team database),
            ``machine`` (this machine's name there), ``interval`` (seconds between pushes of
            ``--watch``), ``jobs`` (reader processes, 1-16); empty when the file has none.
    """

    path: Path
    sources: Mapping[str, tuple[Path, ...]] = field(default_factory=dict)
    index: Path | None = None
    postgres: str | None = None
    archive: bool = False
    archive_keep_days: int | None = None
    archive_raw: bool = False
    push: Mapping[str, str | float] = field(default_factory=dict)

    @property
    def names_sources(self) -> bool:
        """Whether the file chooses the sources (then it replaces the defaults)."""
        return bool(self.sources) or self.postgres is not None


def _invalid(path: Path, message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_CONFIG, f"config file {path}: {message}")


def _paths(path: Path, key: str, value: object) -> tuple[Path, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) and item for item in items):
        raise _invalid(path, f"{key!r} must be a path or a list of paths")
    return tuple(_absolute(path.parent / Path(item).expanduser()) for item in items)


MAX_CONFIG_BYTES = 1 << 20
"""The largest config file read (1 MiB); a config file is a few lines."""


def _read_config_text(path: Path) -> str:
    """The file's text, read only when it is a regular file of at most
    :data:`MAX_CONFIG_BYTES`: a FIFO, a device or ``/dev/zero`` is refused at once instead of
    blocking or filling memory (opened without blocking, then checked on the open file).

    Raises:
        FileNotFoundError: there is no file.
        SessionQueryError: ``INVALID_CONFIG`` for anything but a small regular file.
        OSError, UnicodeDecodeError: it cannot be read as UTF-8.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _invalid(path, "is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(MAX_CONFIG_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise _invalid(path, f"is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    return data.decode("utf-8")


def read_settings(path: Path) -> FileSettings:
    """Read a config file (TOML); a missing file names nothing.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a file that cannot be read or parsed (or is
            not a regular file, or is over 1 MiB, or nests a value too deeply), an unknown key,
            or a value of the wrong type.
    """
    try:
        import tomllib  # only when there is a file to read

        data = tomllib.loads(_read_config_text(path))
    except FileNotFoundError:
        return FileSettings(path=path)
    except (OSError, UnicodeDecodeError, ValueError) as error:  # TOMLDecodeError is one
        raise _invalid(path, str(error)) from None
    except RecursionError:
        raise _invalid(path, "a value is nested too deeply") from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _invalid(path, f"unknown key(s) {', '.join(unknown)}; expected {sorted(_KEYS)}")
    sources = {kind: _paths(path, kind, data[kind]) for kind in SOURCE_KINDS if kind in data}
    if "store" in data:
        sources["root"] = (*sources.get("root", ()), *_paths(path, "store", data["store"]))
    index = None
    if "index" in data:
        value = data["index"]
        if not isinstance(value, str) or not value:
            raise _invalid(path, "'index' must be a path")
        index = _absolute(path.parent / Path(value).expanduser())
    postgres = data.get("postgres")
    if postgres is not None and (not isinstance(postgres, str) or not postgres.strip()):
        raise _invalid(path, "'postgres' must be a PostgreSQL connection string")
    archive, archive_raw = data.get("archive", False), data.get("archive_raw", False)
    for key, flag in (("archive", archive), ("archive_raw", archive_raw)):
        if not isinstance(flag, bool):
            raise _invalid(path, f"{key!r} must be true or false")
    keep = data.get("archive_keep_days")
    if keep is not None and (type(keep) is not int or keep < 1):
        raise _invalid(path, "'archive_keep_days' must be a positive number of days")
    return FileSettings(
        path=path,
        sources=sources,
        index=index,
        postgres=postgres,
        archive=archive,
        archive_keep_days=keep,
        archive_raw=archive_raw,
        push=_push_table(path, data.get("push", {})),
    )


def _push_table(path: Path, table: object) -> dict[str, str | float]:
    if not isinstance(table, dict):
        raise _invalid(path, "'push' must be a table ([push])")
    unknown = sorted(set(table) - _PUSH_KEYS)
    if unknown:
        raise _invalid(path, f"unknown key(s) push.{', push.'.join(unknown)}")
    out: dict[str, str | float] = {}
    for key in ("postgres", "machine"):
        value = table.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise _invalid(path, f"'push.{key}' must be a non-empty string")
            out[key] = value
    interval = table.get("interval")
    if interval is not None:
        if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
            raise _invalid(path, "'push.interval' must be a positive number of seconds")
        out["interval"] = float(interval)
    jobs = table.get("jobs")
    if jobs is not None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= 16:
            raise _invalid(path, "'push.jobs' must be a whole number of reader processes, 1-16")
        out["jobs"] = jobs
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Resolved locations and terminal preferences for the CLI and the MCP server.

    Attributes:
        home: the sessionquery home directory.
        store_root: the default JSONL session store, ``<home>/sessions``.
        index_path: the default SQLite search index, ``<home>/index.sqlite3``.
        quickstart_dir: where ``quickstart`` builds its sample data, ``<home>/quickstart``.
        importer_cache: the importers' metadata cache, ``<home>/importer-cache.sqlite3``.
        title_cache: the command line's cache of session titles, ``<home>/titles.sqlite3``.
        problems_shown: what the command line last warned about, ``<home>/problems-shown``.
        archive_dir: the archive of imported sessions, ``<home>/archive``.
        claude_projects: the default Claude Code transcripts directory.
        codex_sessions: the default Codex transcripts directory.
        config_file: where the optional TOML config file is looked for.
        no_color: true when the user asked for plain output (``NO_COLOR`` is set).
        environment: what default source locations are computed from.
        default_sources: ``(kind, location)`` for every default location of every kind, in
            registry order (the store first); they need not exist.
        secrets_file: where the optional known-secrets file is looked for.
        known_values: secret values read from the environment, keyed by variable name (never
            shown in ``repr``).
    """

    home: Path
    store_root: Path
    index_path: Path
    quickstart_dir: Path
    importer_cache: Path
    title_cache: Path
    problems_shown: Path
    archive_dir: Path
    claude_projects: Path
    codex_sessions: Path
    config_file: Path
    no_color: bool = False
    environment: SourceEnvironment = field(default_factory=SourceEnvironment)
    default_sources: tuple[tuple[str, Path], ...] = ()
    secrets_file: Path | None = None
    known_values: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )

    @property
    def sample_store(self) -> Path:
        """The sample store ``quickstart`` builds, ``<home>/quickstart/sessions``: a default
        source while it exists."""
        return self.quickstart_dir / "sessions"

    @property
    def sample_index(self) -> Path:
        """The index of the sample store, ``<home>/quickstart/index.sqlite3``."""
        return self.quickstart_dir / "index.sqlite3"

    @classmethod
    def for_home(
        cls,
        home: Path,
        *,
        no_color: bool = False,
        user_home: Path | None = None,
        claude_projects: Path | None = None,
        codex_sessions: Path | None = None,
        config_file: Path | None = None,
        environ: Mapping[str, str] | None = None,
        platform: str = sys.platform,
        secrets_file: Path | None = None,
        known_values: Mapping[str, str] | None = None,
    ) -> Config:
        """The configuration whose sessionquery data lives under ``home``.

        Args:
            home: the home directory; made absolute (relative to the current directory).
            no_color: turn off coloured output.
            user_home: the user's home directory, where ``.claude`` and ``.codex`` live
                (default: ``Path.home()``).
            claude_projects: the default Claude Code directory (default
                ``<user_home>/.claude/projects``).
            codex_sessions: the default Codex directory (default
                ``<user_home>/.codex/sessions``).
            config_file: the config file's path (default ``<home>/config.toml``).
            environ: the environment variables the source kinds honour (none by default).
            platform: the system whose conventions locate desktop applications' data.
            secrets_file: the known-secrets file (default ``secrets.txt`` beside the config
                file).
            known_values: secret values to mask, keyed by where they came from.
        """
        home = _absolute(home)
        user = _absolute(user_home if user_home is not None else Path.home())
        names = environment_variables()
        environment = SourceEnvironment(
            environ={k: v for k, v in (environ or {}).items() if k in names},
            user_home=user,
            data_home=home,
            platform=platform,
        )
        defaults = [(kind, _absolute(path)) for kind, path in default_locations(environment)]
        if claude_projects is not None:
            defaults = [
                (k, _absolute(claude_projects) if k == "claude" else p) for k, p in defaults
            ]
        if codex_sessions is not None:
            defaults = [(k, _absolute(codex_sessions) if k == "codex" else p) for k, p in defaults]
        located = dict(defaults)
        config_path = _absolute(config_file or home / "config.toml")
        return cls(
            home=home,
            store_root=home / "sessions",
            index_path=home / "index.sqlite3",
            quickstart_dir=home / "quickstart",
            importer_cache=home / "importer-cache.sqlite3",
            title_cache=home / "titles.sqlite3",
            problems_shown=home / "problems-shown",
            archive_dir=home / "archive",
            claude_projects=located["claude"],
            codex_sessions=located["codex"],
            config_file=config_path,
            no_color=no_color,
            environment=environment,
            default_sources=tuple(defaults),
            secrets_file=_absolute(secrets_file or config_path.parent / "secrets.txt"),
            known_values=MappingProxyType(dict(known_values or {})),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Resolve the configuration from the environment: the one place that reads it.

        Args:
            environ: the variables to read; ``os.environ`` when omitted.

        Returns:
            The configuration rooted at ``SESSIONQUERY_HOME`` or the per-user data directory.
        """
        import platformdirs  # only here: the per-user directories are needed by no other path

        env = os.environ if environ is None else environ
        raw_home = env.get(HOME_ENV, "")
        if raw_home:
            home = Path(raw_home)
        else:
            home = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
        config_file = env.get(CONFIG_ENV, "") or str(
            Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"
        )
        from sessionquery.redact import known_values_from_env

        secrets = env.get(SECRETS_ENV, "")
        user_home = env.get("HOME", "") if environ is not None else ""
        return cls.for_home(
            home,
            no_color=bool(env.get(NO_COLOR_ENV, "")),
            user_home=Path(user_home) if user_home else None,
            config_file=Path(config_file),
            secrets_file=Path(secrets) if secrets else None,
            known_values=known_values_from_env(env),
            environ=env,
        )

    def known_secrets(self) -> dict[str, str]:
        """The known values to mask: the environment's, then the known-secrets file's.

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` when the file exists but cannot be read.
        """
        from sessionquery.redact import read_known_values

        values = dict(self.known_values)
        if self.secrets_file is not None:
            values.update(read_known_values(self.secrets_file))
        return values

    def settings(self) -> FileSettings:
        """The config file's settings (empty when there is no file).

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` for a broken config file.
        """
        return read_settings(self.config_file)
