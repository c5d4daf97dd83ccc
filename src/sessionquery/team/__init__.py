"""Team history (SPEC §14.6): every machine's sessions in one PostgreSQL database.

* :func:`push_sessions` (``sessionquery push``): this machine's sessions, redacted, into the
  team database (:mod:`.push`);
* :func:`team_workspace`: the identity of a repository that is the same on every machine
  (:mod:`.workspace`);
* :func:`init_team`, :func:`grant`, :func:`revoke`, :func:`members` (``sessionquery team``):
  roles and row-level security (:mod:`.schema`);
* :class:`TeamWorkspaces`: the tools' workspace rule over a team database (:mod:`.access`).

Needs the ``postgres`` extra; importing this package imports psycopg.
"""

from sessionquery.team.access import TeamWorkspaces
from sessionquery.team.push import PushReport, push_sessions
from sessionquery.team.schema import (
    PUSH_ROLE,
    READ_ROLE,
    Member,
    TeamSetup,
    grant,
    init_team,
    is_team,
    members,
    revoke,
)
from sessionquery.team.workspace import normalise_remote, team_workspace, valid_machine

__all__ = [
    "PUSH_ROLE",
    "READ_ROLE",
    "Member",
    "PushReport",
    "TeamSetup",
    "TeamWorkspaces",
    "grant",
    "init_team",
    "is_team",
    "members",
    "normalise_remote",
    "push_sessions",
    "revoke",
    "team_workspace",
    "valid_machine",
]
