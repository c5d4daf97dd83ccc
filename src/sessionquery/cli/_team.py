"""``sessionquery push`` and ``sessionquery team``: the team database (:mod:`sessionquery.team`).

``push`` reads this machine's selected sources through the composition root, redacted
(contract 4: :class:`sessionquery.redact.RedactingPersistence`), and never the PostgreSQL
database itself: ``--postgres`` (or the config file's ``[push]`` table) names the *target*.
It shows a progress bar on a terminal and prints one summary line (``--json``: the report).
``--watch`` pushes again every ``--interval`` seconds until interrupted; ``--jobs`` sets the
reader processes (:mod:`sessionquery.team.reading`).

``team init|grant|revoke|members`` manage roles and grants (``--postgres`` names the team
database; the owner of its tables runs them).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

from sessionquery.app import App
from sessionquery.cli._parser import UsageError
from sessionquery.cli._services import EXIT_OK, Invocation, Progress, emit
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence.base import SessionPersistence

__all__ = ["cmd_push", "cmd_team", "redacted_sources"]


def _target(inv: Invocation) -> str:
    dsn = getattr(inv.args, "postgres", None) or getattr(inv.args, "pre_postgres", None)
    if not dsn:
        dsn = inv.config.settings().push.get("postgres")
    if not dsn:
        raise UsageError("name the team database with --postgres DSN (or push.postgres)")
    return str(dsn)


def redacted_sources(app: App) -> SessionPersistence:
    """This machine's sources as the push reads them: redacted (contract 4).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when the app does not redact (the text as
            stored is never pushed).
    """
    persistence = app.persistence()
    if not app.redacting or getattr(persistence, "redactor", None) is None:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG, "push reads only redacted sessions; nothing was pushed"
        )
    return persistence


def _local_app(inv: Invocation) -> App:
    """The invocation's sources without the PostgreSQL database (it is the target)."""
    app = App(inv.config, dataclasses.replace(inv.app.options, postgres=None))
    selection = dataclasses.replace(app.selection, postgres=None)
    if not selection.sources:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            "push: no local source to push (the PostgreSQL database is the target, not a "
            "source); see 'sessionquery sources'",
        )
    app._selection = selection
    return app


def cmd_push(inv: Invocation) -> int:
    """Push once, or (``--watch``) until interrupted."""
    from sessionquery.team.access import machine_of
    from sessionquery.team.push import push_sessions
    from sessionquery.team.reading import MAX_JOBS, default_jobs

    args = inv.args
    dsn = _target(inv)
    machine = args.machine or machine_of(inv.config)
    interval = args.interval or inv.config.settings().push.get("interval") or 60.0
    if float(interval) <= 0:
        raise UsageError("--interval must be a positive number of seconds")
    jobs = args.jobs if args.jobs is not None else inv.config.settings().push.get("jobs")
    jobs = default_jobs() if jobs is None else int(jobs)
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS}")
    try:
        from sessionquery.team.workspace import valid_machine

        valid_machine(machine)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    while True:
        app = _local_app(inv)
        progress = Progress(sys.stderr, "Pushing", quiet=True)
        try:
            report = push_sessions(
                redacted_sources(app), dsn, machine=machine, progress=progress, jobs=jobs
            )
        finally:
            progress.finish()
        emit(inv, _report_json(report), _lines([report.summary(), *report.problems]))
        sys.stdout.flush()
        if not args.watch:
            return EXIT_OK
        time.sleep(float(interval))


def _lines(lines: list[str]) -> Any:
    return lambda _style: lines


def _report_json(report: Any) -> dict[str, Any]:
    document = dataclasses.asdict(report)
    document["problems"] = list(report.problems)
    return document


def cmd_team(inv: Invocation) -> int:
    """``team init|grant|revoke|members``."""
    import psycopg

    from sessionquery.persistence.postgres._schema import migrate
    from sessionquery.search.postgres import schema as index_schema
    from sessionquery.team import schema

    args = inv.args
    if args.action in ("grant", "revoke") and not (args.role and args.workspace):
        raise UsageError(f"team {args.action} needs ROLE and WORKSPACE")
    if args.action in ("init", "members") and (args.role or args.workspace):
        raise UsageError(f"team {args.action} takes no ROLE or WORKSPACE")
    dsn = _target(inv)
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise SessionQueryError(
            ErrorCode.PERSISTENCE_FAILED, f"team: cannot connect to the database: {exc}"
        ) from None
    with conn:
        if args.action == "init":
            migrate(conn)
            with conn.transaction():
                index_schema.ensure_schema(conn)
            setup = schema.init_team(conn)
            return emit(inv, dataclasses.asdict(setup), lambda _s: _init_lines(setup))
        if args.action == "members":
            found = schema.members(conn)
            document = [dataclasses.asdict(member) for member in found]
            return emit(inv, document, lambda _s: _member_lines(found))
        if args.action == "grant":
            changed = schema.grant(conn, args.role, args.workspace, push=args.push)
            verb = "granted" if changed else "already granted"
        else:
            changed = schema.revoke(conn, args.role, args.workspace)
            verb = "revoked" if changed else "was not granted"
    line = f"{args.role}: {args.workspace} {verb}"
    return emit(
        inv, {"role": args.role, "workspace": args.workspace, "changed": changed}, lambda _s: [line]
    )


def _init_lines(setup: Any) -> list[str]:
    lines = ["team database ready"]
    if setup.created_roles:
        lines.append(f"created roles: {', '.join(setup.created_roles)}")
    if setup.emptied_index:
        lines.append("the search index of another corpus was emptied (pushes rebuild it)")
    if not setup.leakproof:
        lines.append(
            "warning: restricted roles' searches cannot use the full-text index until a "
            "superuser runs: ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF"
        )
    return lines


def _member_lines(found: Any) -> list[str]:
    if not found:
        return ["no members (sessionquery team grant ROLE WORKSPACE)"]
    lines = []
    for member in found:
        kind = "push" if member.pushes else "read"
        spaces = ", ".join(member.workspaces) or "(no workspace)"
        machines = f"; machines: {', '.join(member.machines)}" if member.machines else ""
        lines.append(f"{member.role} ({kind}): {spaces}{machines}")
    return lines
