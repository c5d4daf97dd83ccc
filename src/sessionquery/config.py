"""Where the command-line tool and the MCP server keep their data, resolved in one place.

The library never reads the environment or the home directory (SPEC §2). The two entry points
(``sessionquery`` and ``sessionquery mcp``) call :meth:`Config.from_env` exactly once and pass
the resulting paths into the library explicitly. Invariants:

* every path in a :class:`Config` is absolute, so a later ``chdir`` cannot change its meaning;
* nothing is created on disk when a configuration is resolved: directories appear only when a
  command writes to them (``quickstart``, ``index``).

Resolution order for the home directory: ``SESSIONQUERY_HOME`` when set and non-empty, else the
per-user data directory (``platformdirs.user_data_dir("sessionquery")``, e.g.
``~/.local/share/sessionquery`` on Linux). Inside the home directory:

* ``sessions/`` is the default JSONL store (``--root``),
* ``index.sqlite3`` is the default search index (``--index``),
* ``quickstart/`` holds the sample store and index that ``sessionquery quickstart`` builds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

__all__ = ["APP_NAME", "HOME_ENV", "NO_COLOR_ENV", "Config"]

APP_NAME = "sessionquery"
"""The application name used for the per-user data directory."""

HOME_ENV = "SESSIONQUERY_HOME"
"""The environment variable that overrides the home directory."""

NO_COLOR_ENV = "NO_COLOR"
"""Set to any non-empty value to turn off coloured terminal output (https://no-color.org)."""


def _absolute(path: Path) -> Path:
    # absolute(), not resolve(): symlinks the user chose are kept, only the cwd is pinned.
    return path.expanduser().absolute()


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Resolved locations and terminal preferences for the CLI and the MCP server.

    Attributes:
        home: the sessionquery home directory.
        store_root: the default JSONL session store, ``<home>/sessions``.
        index_path: the default SQLite search index, ``<home>/index.sqlite3``.
        quickstart_dir: where ``quickstart`` builds its sample data, ``<home>/quickstart``.
        no_color: true when the user asked for plain output (``NO_COLOR`` is set).
    """

    home: Path
    store_root: Path
    index_path: Path
    quickstart_dir: Path
    no_color: bool = False

    @classmethod
    def for_home(cls, home: Path, *, no_color: bool = False) -> Config:
        """The configuration whose every default lives under ``home``.

        Args:
            home: the home directory; made absolute (relative to the current directory).
            no_color: turn off coloured output.
        """
        home = _absolute(home)
        return cls(
            home=home,
            store_root=home / "sessions",
            index_path=home / "index.sqlite3",
            quickstart_dir=home / "quickstart",
            no_color=no_color,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Resolve the configuration from the environment: the one place that reads it.

        Args:
            environ: the variables to read; ``os.environ`` when omitted.

        Returns:
            The configuration rooted at ``SESSIONQUERY_HOME`` or the per-user data directory.
        """
        env = os.environ if environ is None else environ
        raw_home = env.get(HOME_ENV, "")
        if raw_home:
            home = Path(raw_home)
        else:
            home = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
        return cls.for_home(home, no_color=bool(env.get(NO_COLOR_ENV, "")))
