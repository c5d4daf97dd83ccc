"""The team database: roles, row-level security and workspace grants.

:func:`init_team` (run by the owner of the tables) turns a PostgreSQL session store and its
index into a team database:

* two group roles, :data:`READ_ROLE` (read the granted workspaces) and :data:`PUSH_ROLE`
  (also push this machine's sessions; a member of :data:`READ_ROLE`);
* row-level security on every table that holds session data (``sq_sessions``, ``sq_events``,
  ``sq_changes``, ``sq_workspaces``, ``sqi_sessions``, ``sqi_docs``, ``sqi_terms``,
  ``sqi_team_terms``, ``sqi_team_counts``) with one rule: a row is visible when its workspace is
  granted to a role the current role is a member of (``*`` grants every workspace), or when it
  was pushed from a machine the current role owns; a pushing role writes only rows of its own
  machines. The owner of the tables is not subject to these policies (PostgreSQL's rule); a
  superuser neither;
* the index is marked as a team index (pushes write it; searches never synchronise it) and an
  index of another corpus that was there is emptied.

Grants (:func:`grant`, :func:`revoke`, :func:`members`) are rows of ``sq_grants``; the policies
read them through views that name ``current_user``, so a role sees only its own grants.

Invariants: every statement of :func:`init_team` runs in one transaction, and running it again
changes nothing; identifiers are quoted by psycopg (never formatted into SQL by hand); role
and workspace values are bound parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.search.postgres import schema as index_schema

__all__ = [
    "PUSH_ROLE",
    "READ_ROLE",
    "Member",
    "TeamSetup",
    "grant",
    "init_team",
    "is_team",
    "members",
    "revoke",
]

READ_ROLE: Final = "sessionquery_read"
PUSH_ROLE: Final = "sessionquery_push"

_TEAM_TABLES: Final = (
    "sq_sessions",
    "sq_events",
    "sq_changes",
    "sqi_sessions",
    "sqi_docs",
    "sqi_team_terms",
    "sqi_team_counts",
)
"""Tables whose rows carry ``ws`` and ``mid`` and follow the one visibility rule."""

_READ_TABLES: Final = (
    "sq_store",
    "sq_migrations",
    "sq_workspaces",
    "sq_machines",
    "sqi_migrations",
    "sqi_state",
    "sqi_terms",
    *_TEAM_TABLES,
    "sq_my_grants",
    "sq_my_ws",
    "sq_my_machines",
)

_VIEWS: Final = (
    "CREATE OR REPLACE VIEW sq_my_grants AS SELECT g.workspace FROM sq_grants AS g "
    "JOIN pg_roles AS r ON r.rolname = g.role WHERE pg_has_role(current_user, r.oid, 'MEMBER')",
    "CREATE OR REPLACE VIEW sq_my_ws AS SELECT w.id FROM sq_workspaces AS w WHERE EXISTS "
    "(SELECT 1 FROM sq_my_grants AS g WHERE g.workspace = '*' OR g.workspace = w.name "
    "OR starts_with(w.name, g.workspace || '#'))",
    "CREATE OR REPLACE VIEW sq_my_machines AS SELECT id FROM sq_machines "
    "WHERE owner = current_user",
)

_VISIBLE: Final = (
    "ws = ANY (CAST((SELECT sq_my_ws_ids()) AS integer[])) OR "
    "mid = ANY (CAST((SELECT sq_my_machine_ids()) AS integer[])) OR "
    "((ws IS NULL OR ws = -1) AND (SELECT sq_sees_all()))"
)
"""The rule of :data:`_TEAM_TABLES`' reads. The caller's workspaces, machines and ``*`` grant
are read by the functions of :data:`_VISIBILITY_FUNCTIONS`, each once a statement (an
``InitPlan``): written as subqueries of the views, they were planned and run again for every
table a statement reads, about half a millisecond each (a search's small statements took
twice as long under the rule as without it)."""

_VISIBILITY_FUNCTIONS: Final = (
    ("sq_my_ws_ids", "integer[]", "RETURN ARRAY(SELECT id FROM sq_my_ws);"),
    ("sq_my_machine_ids", "integer[]", "RETURN ARRAY(SELECT id FROM sq_my_machines);"),
    ("sq_sees_all", "boolean", "RETURN EXISTS (SELECT 1 FROM sq_my_grants WHERE workspace = '*');"),
)
"""``(name, result, body)`` of the rule's functions: plain functions of the caller's rights
(what the views say of ``current_user``), ``STABLE``, their plans kept by the session."""
_OWN: Final = "mid IN (SELECT id FROM sq_my_machines)"


@dataclass(frozen=True, slots=True)
class TeamSetup:
    """What :func:`init_team` did.

    Attributes:
        created_roles: group roles it created (empty when they existed).
        leakproof: whether PostgreSQL's full-text match operator is marked leakproof (needed
            for restricted roles' searches to use the full-text index; only a superuser can
            mark it).
        emptied_index: whether an index of another corpus was emptied.
    """

    created_roles: tuple[str, ...]
    leakproof: bool
    emptied_index: bool


@dataclass(frozen=True, slots=True)
class Member:
    """One role's grants."""

    role: str
    workspaces: tuple[str, ...]
    pushes: bool
    machines: tuple[str, ...]


def _team_error(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_CONFIG, f"team database: {message}")


def is_team(conn: psycopg.Connection[Any]) -> bool:
    """Whether the database (the connection's schema) has been made a team database."""
    row = conn.execute(
        "SELECT to_regclass('sqi_state') IS NOT NULL AND to_regclass('sq_my_ws') IS NOT NULL"
    ).fetchone()
    if not row or not row[0]:
        return False
    state = conn.execute("SELECT source FROM sqi_state").fetchone()
    return bool(state and state[0] == "team")


def _ensure_role(conn: psycopg.Connection[Any], name: str) -> bool:
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
        return False
    try:
        with conn.transaction():
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(name)))
    except psycopg.errors.DuplicateObject:
        return False
    except psycopg.errors.InsufficientPrivilege as exc:
        raise _team_error(
            f"role {name!r} does not exist and this role may not create it ({exc}); "
            f"create it once as a superuser: CREATE ROLE {name} NOLOGIN"
        ) from None
    return True


def _policies(conn: psycopg.Connection[Any], table: str) -> None:
    ident = sql.Identifier(table)
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(ident))
    for name in ("sq_read", "sq_insert", "sq_update", "sq_delete"):
        conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(sql.Identifier(name), ident))
    push = sql.Identifier(PUSH_ROLE)
    conn.execute(
        sql.SQL("CREATE POLICY sq_read ON {} FOR SELECT USING ({})").format(
            ident, sql.SQL(_VISIBLE)
        )
    )
    conn.execute(
        sql.SQL("CREATE POLICY sq_insert ON {} FOR INSERT TO {} WITH CHECK ({})").format(
            ident, push, sql.SQL(_OWN)
        )
    )
    conn.execute(
        sql.SQL("CREATE POLICY sq_update ON {} FOR UPDATE TO {} USING ({}) WITH CHECK ({})").format(
            ident, push, sql.SQL(_OWN), sql.SQL(_OWN)
        )
    )
    conn.execute(
        sql.SQL("CREATE POLICY sq_delete ON {} FOR DELETE TO {} USING ({})").format(
            ident, push, sql.SQL(_OWN)
        )
    )


def _special_policies(conn: psycopg.Connection[Any]) -> None:
    push = sql.Identifier(PUSH_ROLE)
    statements = [
        "ALTER TABLE sq_workspaces ENABLE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS sq_read ON sq_workspaces",
        "CREATE POLICY sq_read ON sq_workspaces FOR SELECT USING (id IN (SELECT id FROM "
        "sq_my_ws) OR id IN (SELECT ws FROM sq_sessions WHERE mid IN (SELECT id FROM "
        "sq_my_machines)))",
        "ALTER TABLE sq_machines ENABLE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS sq_read ON sq_machines",
        "DROP POLICY IF EXISTS sq_insert ON sq_machines",
        "CREATE POLICY sq_read ON sq_machines FOR SELECT USING (owner = current_user OR "
        "EXISTS (SELECT 1 FROM sq_my_grants WHERE workspace = '*'))",
        # No policy for roles: the index's own statistics stay empty in a team database.
        "ALTER TABLE sqi_terms ENABLE ROW LEVEL SECURITY",
    ]
    for statement in statements:
        conn.execute(statement)
    conn.execute(
        sql.SQL(
            "CREATE POLICY sq_insert ON sq_machines FOR INSERT TO {} "
            "WITH CHECK (owner = current_user)"
        ).format(push)
    )


def _workspace_function(conn: psycopg.Connection[Any]) -> None:
    row = conn.execute("SELECT current_schema()").fetchone()
    if row is None or row[0] is None:
        raise _team_error("the connection has no current schema (check search_path)")
    schema_name = str(row[0])
    conn.execute(
        sql.SQL(
            "CREATE OR REPLACE FUNCTION sq_workspace_id(wanted text) RETURNS integer "
            "LANGUAGE plpgsql SECURITY DEFINER SET search_path = {}, pg_temp AS $$ "
            "DECLARE found integer; BEGIN "
            "SELECT id INTO found FROM sq_workspaces WHERE name = wanted; "
            "IF found IS NULL THEN "
            "INSERT INTO sq_workspaces (name) VALUES (wanted) ON CONFLICT DO NOTHING "
            "RETURNING id INTO found; "
            "IF found IS NULL THEN SELECT id INTO found FROM sq_workspaces WHERE name = wanted; "
            "END IF; END IF; RETURN found; END $$"
        ).format(sql.Identifier(schema_name))
    )
    conn.execute("REVOKE ALL ON FUNCTION sq_workspace_id(text) FROM PUBLIC")
    conn.execute(
        sql.SQL("GRANT EXECUTE ON FUNCTION sq_workspace_id(text) TO {}").format(
            sql.Identifier(PUSH_ROLE)
        )
    )


def _visibility_functions(conn: psycopg.Connection[Any]) -> None:
    for name, result, body in _VISIBILITY_FUNCTIONS:
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {}() RETURNS {} LANGUAGE plpgsql STABLE "
                "SET search_path = {}, pg_temp AS $$ BEGIN {} END $$"
            ).format(sql.Identifier(name), sql.SQL(result), _schema_ident(conn), sql.SQL(body))
        )
        revoke = sql.SQL("REVOKE ALL ON FUNCTION {}() FROM PUBLIC")
        conn.execute(revoke.format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT EXECUTE ON FUNCTION {}() TO {}").format(
                sql.Identifier(name), sql.Identifier(READ_ROLE)
            )
        )


def _clean_function(conn: psycopg.Connection[Any]) -> None:
    """``sq_clean_pending()``: move the full-text indexes' pending entries into the indexes.

    A GIN index takes new rows into a pending list that every search of it reads through
    (about 60 microseconds a page: a 10 MB list added 78 ms to each search of a team history
    measured); only the owner of an index may empty it (``gin_clean_pending_list``), so a
    push calls this function, which runs as the owner and does nothing else."""
    conn.execute(
        sql.SQL(
            "CREATE OR REPLACE FUNCTION sq_clean_pending() RETURNS bigint "
            "LANGUAGE sql SECURITY DEFINER SET search_path = {}, pg_temp AS $$ "
            "SELECT coalesce(sum(gin_clean_pending_list(i.indexrelid)), 0)::bigint "
            "FROM pg_catalog.pg_index AS i JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid "
            "JOIN pg_catalog.pg_am AS a ON a.oid = c.relam "
            "WHERE i.indrelid = 'sqi_docs'::regclass AND a.amname = 'gin' $$"
        ).format(_schema_ident(conn))
    )
    conn.execute("REVOKE ALL ON FUNCTION sq_clean_pending() FROM PUBLIC")
    conn.execute(
        sql.SQL("GRANT EXECUTE ON FUNCTION sq_clean_pending() TO {}").format(
            sql.Identifier(PUSH_ROLE)
        )
    )


def _privileges(conn: psycopg.Connection[Any]) -> None:
    read, push = sql.Identifier(READ_ROLE), sql.Identifier(PUSH_ROLE)
    conn.execute(sql.SQL("GRANT {} TO {}").format(read, push))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(_schema_ident(conn), read))
    for table in _READ_TABLES:
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), read))
    for table in _TEAM_TABLES:
        conn.execute(
            sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(sql.Identifier(table), push)
        )
    conn.execute(sql.SQL("GRANT UPDATE ON sq_store, sqi_state TO {}").format(push))
    conn.execute(sql.SQL("GRANT SELECT, INSERT ON sq_machines TO {}").format(push))
    conn.execute(sql.SQL("GRANT USAGE ON SEQUENCE sq_machines_id_seq TO {}").format(push))


def _schema_ident(conn: psycopg.Connection[Any]) -> sql.Identifier:
    row = conn.execute("SELECT current_schema()").fetchone()
    assert row is not None
    return sql.Identifier(str(row[0]))


def _leakproof(conn: psycopg.Connection[Any]) -> bool:
    """Mark ``tsvector @@ tsquery`` leakproof when allowed; whether it is.

    Row-level security keeps a restricted role's own conditions from running before its
    policy unless they are leakproof, which rules out the full-text index for those roles.
    The operator reveals nothing but its boolean answer, so marking it is safe; only a
    superuser may.
    """
    row = conn.execute(
        "SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq(tsvector,tsquery)'::regprocedure"
    ).fetchone()
    if row and row[0]:
        return True
    try:
        with conn.transaction():
            conn.execute("ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF")
    except psycopg.errors.InsufficientPrivilege:
        return False
    return True


def _mark_index(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT source FROM sqi_state FOR UPDATE").fetchone()
    if row is not None and row[0] == "team":
        return False
    conn.execute("TRUNCATE sqi_docs, sqi_sessions, sqi_terms, sqi_team_terms, sqi_team_counts")
    conn.execute(
        "UPDATE sqi_state SET source = 'team', token = NULL, documents = 0, tokens = 0, "
        "generation = generation + 1"
    )
    return row is not None and row[0] is not None


def init_team(conn: psycopg.Connection[Any]) -> TeamSetup:
    """Make the store and index in the connection's schema a team database (idempotent).

    The caller must own the tables (the role that created them) and have created them with
    :class:`~sessionquery.persistence.postgres.PostgresPersistence` and
    :class:`~sessionquery.search.postgres.PostgresSearch` first.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when the role may not do it (not the owner; the
            group roles are missing and it may not create them).
    """
    created = tuple(name for name in (READ_ROLE, PUSH_ROLE) if _ensure_role(conn, name))
    leakproof = _leakproof(conn)
    try:
        with conn.transaction():
            for statement in _VIEWS:
                conn.execute(statement)
            _workspace_function(conn)
            _visibility_functions(conn)
            _clean_function(conn)
            for table in _TEAM_TABLES:
                _policies(conn, table)
            _special_policies(conn)
            _privileges(conn)
            emptied = _mark_index(conn)
            index_schema.tune_impact(conn)  # keyed for what was pushed since
    except psycopg.errors.InsufficientPrivilege as exc:
        raise _team_error(
            f"only the owner of the tables can set the team database up: {exc}"
        ) from None
    return TeamSetup(created, leakproof, emptied)


def _check_role(conn: psycopg.Connection[Any], role: str) -> None:
    if not isinstance(role, str) or not role or "\x00" in role:
        raise _team_error(f"invalid role name {role!r}")
    if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        raise _team_error(f"role {role!r} does not exist (CREATE ROLE {role} LOGIN first)")


def _check_workspace(workspace: str) -> None:
    if not isinstance(workspace, str) or not workspace.strip() or "\x00" in workspace:
        raise _team_error(f"invalid workspace {workspace!r}")


def _require_team(conn: psycopg.Connection[Any]) -> None:
    if not is_team(conn):
        raise _team_error("not set up yet: run `sessionquery team init` as the owner first")


def grant(conn: psycopg.Connection[Any], role: str, workspace: str, *, push: bool = False) -> bool:
    """Let ``role`` (and its members) read ``workspace`` (``*``: every workspace; a repository's
    workspace also covers its sub-folders' ``<repo>#<path>``); with ``push`` also make it a
    pushing role. Returns whether anything changed.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for an unknown role, a database not set up, or a
            role that may not manage grants.
    """
    _require_team(conn)
    _check_role(conn, role)
    _check_workspace(workspace)
    try:
        with conn.transaction():
            added = conn.execute(
                "INSERT INTO sq_grants (role, workspace) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (role, workspace),
            ).rowcount
            group = PUSH_ROLE if push else READ_ROLE
            member = conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (role, group)).fetchone()
            if not (member and member[0]):
                conn.execute(
                    sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(role))
                )
                added = 1
    except psycopg.errors.InsufficientPrivilege as exc:
        raise _team_error(f"this role may not manage grants: {exc}") from None
    return bool(added)


def revoke(conn: psycopg.Connection[Any], role: str, workspace: str) -> bool:
    """Take ``workspace`` away from ``role``; whether it had it. Group memberships stay
    (``REVOKE sessionquery_read FROM role`` in SQL removes them).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` as :func:`grant`.
    """
    _require_team(conn)
    _check_workspace(workspace)
    try:
        with conn.transaction():
            removed = conn.execute(
                "DELETE FROM sq_grants WHERE role = %s AND workspace = %s", (role, workspace)
            ).rowcount
    except psycopg.errors.InsufficientPrivilege as exc:
        raise _team_error(f"this role may not manage grants: {exc}") from None
    return bool(removed)


def members(conn: psycopg.Connection[Any]) -> list[Member]:
    """Every role that has grants or belongs to a team group, with its workspaces."""
    _require_team(conn)
    try:
        grants = conn.execute(
            "SELECT role, workspace FROM sq_grants ORDER BY role, workspace"
        ).fetchall()
        machines = conn.execute("SELECT owner, name FROM sq_machines ORDER BY name").fetchall()
        rows = conn.execute(
            "SELECT r.rolname, pg_has_role(r.oid, %s, 'MEMBER') FROM pg_roles AS r "
            "WHERE pg_has_role(r.oid, %s, 'MEMBER') AND r.rolname NOT IN (%s, %s) "
            "AND NOT r.rolsuper",
            (PUSH_ROLE, READ_ROLE, READ_ROLE, PUSH_ROLE),
        ).fetchall()
    except psycopg.errors.InsufficientPrivilege as exc:
        raise _team_error(f"this role may not list the grants: {exc}") from None
    names = {str(role) for role, _ in grants} | {str(name) for name, _ in rows}
    pushes = {str(name) for name, flag in rows if flag}
    return [
        Member(
            role=name,
            workspaces=_of(grants, name),
            pushes=name in pushes,
            machines=_of(machines, name),
        )
        for name in sorted(names)
    ]


def _of(rows: Sequence[tuple[Any, Any]], name: str) -> tuple[str, ...]:
    return tuple(str(value) for key, value in rows if str(key) == name)
