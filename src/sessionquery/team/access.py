"""The tools' workspace rule over a team database: one repository, one workspace.

:class:`TeamWorkspaces` is a :class:`~sessionquery.tools.access.WorkspaceRule`. A caller's
workspace is the team workspace of its cwd on this machine
(:func:`~sessionquery.team.workspace.team_workspace`), or, for a caller acting as a stored
session, that session's stored workspace. A session's workspace is the one stored with it
when it was pushed; a session the team database does not hold (a local source combined with
it) gets the team workspace of its cwd on this machine. A caller without a cwd sees only its
own session, as under the exact-cwd rule.

Invariants: every answer about a session comes from the database as it is now (a cached
answer is at most :data:`CACHE_SECONDS` old); the database's row-level security applies
first, so a session hidden from the connecting role is never visible, whatever the rule says.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

import psycopg

from sessionquery.team.workspace import team_workspace
from sessionquery.tools.access import ToolCaller

__all__ = ["CACHE_SECONDS", "TeamWorkspaces"]

CACHE_SECONDS: Final = 2.0
"""How long a session's looked-up workspace is reused."""


class TeamWorkspaces:
    """Workspaces by repository identity, read from the team database at ``dsn``.

    Args:
        dsn: the team database (the same role the server reads with).
        machine: this machine's name (for cwds outside any shared checkout).
    """

    def __init__(self, dsn: str, *, machine: str) -> None:
        self._dsn = dsn
        self._machine = machine
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._sessions: dict[str, tuple[float, str | None, str | None, bool]] = {}
        self._local: dict[str, str | None] = {}
        self._cwds: dict[str, tuple[float, tuple[str, ...]]] = {}

    def close(self) -> None:
        """Hang up; idempotent (a later call connects again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = psycopg.connect(self._dsn, autocommit=True)
            return self._conn.execute(sql, params).fetchall()

    def _stored(self, session_id: str) -> tuple[str | None, str | None, bool]:
        """``(workspace, cwd, held)`` of a stored session (``held`` false when not stored)."""
        now = time.monotonic()
        cached = self._sessions.get(session_id)
        if cached is not None and now - cached[0] < CACHE_SECONDS:
            return cached[1], cached[2], cached[3]
        rows = self._query(
            "SELECT w.name, s.header_json::json->>'cwd' FROM sq_sessions AS s "
            "LEFT JOIN sq_workspaces AS w ON w.id = s.ws WHERE s.id = %s",
            (session_id,),
        )
        found = (rows[0][0], rows[0][1], True) if rows else (None, None, False)
        if len(self._sessions) > 10_000:
            self._sessions.clear()
        self._sessions[session_id] = (now, *found)
        return found

    def _of_cwd(self, cwd: str) -> str | None:
        if cwd not in self._local:
            self._local[cwd] = team_workspace(cwd, self._machine)
        return self._local[cwd]

    def workspace_of(self, session_id: str, cwd: str | None) -> str | None:
        """The team workspace of a session (stored, else computed from ``cwd`` here)."""
        workspace, stored_cwd, held = self._stored(session_id)
        if held:
            return workspace if stored_cwd == cwd else None
        return None if cwd is None else self._of_cwd(cwd)

    def caller_workspace(self, caller: ToolCaller) -> str | None:
        """The caller's workspace (``None`` without a cwd)."""
        if caller.cwd is None:
            return None
        if caller.session_id is not None:
            workspace, stored_cwd, held = self._stored(caller.session_id)
            if held and stored_cwd == caller.cwd:
                return workspace
        return self._of_cwd(caller.cwd)

    def visible(self, session_id: str, cwd: str | None, caller: ToolCaller) -> bool:
        """The rule of the module: same team workspace (the caller's own session: also
        with no cwd on either side)."""
        if session_id == caller.session_id and caller.cwd is None:
            return cwd is None
        mine = self.caller_workspace(caller)
        return mine is not None and self.workspace_of(session_id, cwd) == mine

    def cwds(self, caller: ToolCaller) -> tuple[str | None, ...]:
        """Every cwd recorded by a session of the caller's workspace (and the caller's)."""
        mine = self.caller_workspace(caller)
        found: list[str | None] = [caller.cwd]
        if mine is not None:
            now = time.monotonic()
            cached = self._cwds.get(mine)
            if cached is None or now - cached[0] >= CACHE_SECONDS:
                rows = self._query(
                    "SELECT DISTINCT s.cwd FROM sqi_sessions AS s JOIN sq_workspaces AS w "
                    "ON w.id = s.ws WHERE w.name = %s",
                    (mine,),
                )
                cached = (now, tuple(str(cwd) for (cwd,) in rows if cwd is not None))
                self._cwds[mine] = cached
            found.extend(cached[1])
        return tuple(dict.fromkeys(found))


def default_machine() -> str:
    """This machine's name: the host name up to its first dot, cut to the allowed
    characters (:func:`~sessionquery.team.workspace.valid_machine`)."""
    import re
    import socket

    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0])[:128]
    return name if name and name[0].isalnum() else f"m{name}"[:128] or "machine"


def machine_of(config: Any) -> str:
    """The machine name: the config file's ``push.machine``, else :func:`default_machine`."""
    named = config.settings().push.get("machine")
    return str(named) if named else default_machine()


def team_rule(dsn: str, config: Any) -> TeamWorkspaces | None:
    """:class:`TeamWorkspaces` when the database at ``dsn`` is a team database, else
    ``None`` (then the exact-cwd rule holds). A database that cannot be reached gives
    ``None`` too: the server's own open of it reports why."""
    from sessionquery.team.schema import is_team

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            team = is_team(conn)
    except psycopg.Error:
        return None
    return TeamWorkspaces(dsn, machine=machine_of(config)) if team else None
