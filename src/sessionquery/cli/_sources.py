"""``sessionquery sources``: which sources a command would use, why, and what they hold.

Each source is opened and listed on its own, so one unreadable source is shown with its reason
beside the others instead of failing the command. Problems are listed in full with ``--json``
and up to :data:`PROBLEMS_SHOWN` per source in text.
"""

from __future__ import annotations

from typing import Any

from sessionquery.app import Selection, SourceEntry, open_sources, problems_of, shown_dsn
from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term
from sessionquery.cli._archive import TURN_ON
from sessionquery.cli._services import Invocation, emit
from sessionquery.errors import SessionQueryError

__all__ = ["PROBLEMS_SHOWN", "cmd_sources"]

PROBLEMS_SHOWN = 20
"""Problems per source listed in the text output."""


def _inspect(entry: SourceEntry, inv: Invocation) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": entry.kind,
        "name": entry.title,
        "label": entry.label,
        "path": str(entry.path),
        "companions": [str(path) for path in entry.companions if path.exists()],
        "from": entry.origin,
        "exists": entry.exists,
        "sessions": None,
        "problems": [],
        "error": None,
    }
    if not entry.exists and entry.origin == "default":
        return item
    try:
        source = open_sources(inv.selection.only(entry), inv.config, archive=inv.app.archive())
        item["sessions"] = len(source.list())
        item["problems"] = [
            {"path": p.path, "line": p.line, "message": p.message} for p in problems_of(source)
        ]
    except SessionQueryError as error:
        item["error"] = error.message
    except Exception as error:  # a diagnostic command: show every source's failure, go on
        item["error"] = str(error)
    return item


def _inspect_postgres(inv: Invocation, dsn: str, origin: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": "postgres",
        "name": "PostgreSQL",
        "label": "postgres",
        "path": shown_dsn(dsn),
        "companions": [],
        "from": origin,
        "exists": False,
        "sessions": None,
        "problems": [],
        "error": None,
    }
    only = Selection((), inv.selection.index, inv.selection.index_origin, postgres=dsn)
    try:
        item["sessions"] = len(open_sources(only, inv.config).list())
        item["exists"] = True
    except SessionQueryError as error:
        item["error"] = error.message
    except Exception as error:  # a diagnostic command: show the failure, go on
        item["error"] = str(error)
    return item


def _document(inv: Invocation) -> dict[str, Any]:
    selection = inv.selection
    config_file = selection.config_file
    entries = [*selection.sources, *selection.absent_defaults]
    sources = [_inspect(entry, inv) for entry in entries]
    index: dict[str, Any] = {"path": str(selection.index), "from": selection.index_origin}
    if selection.postgres:
        origin = "option" if inv.app.options.postgres else "config"
        sources.append(_inspect_postgres(inv, selection.postgres, origin))
        index = {"path": None, "postgres": shown_dsn(selection.postgres), "from": origin}
    return {
        "config_file": None if config_file is None else str(config_file),
        "config_file_exists": config_file is not None and config_file.is_file(),
        "index": index,
        "archive": _archive(inv),
        "sources": sources,
    }


def _archive(inv: Invocation) -> dict[str, Any]:
    try:
        on = inv.config.settings().archive
    except SessionQueryError:  # a broken config file is shown with the sources
        on = False
    item: dict[str, Any] = {"path": str(inv.config.archive_dir), "on": on, "files": None}
    try:
        archive = inv.app.archive()
        if archive is not None:
            item["files"] = len(archive.units())
    except SessionQueryError as error:  # shown beside the rest instead of failing the command
        item["error"] = error.message
    return item


def _count(value: object) -> str:
    return "-" if value is None else str(value)


def _text(document: dict[str, Any], style: render.Style) -> list[str]:
    rows = []
    for item in document["sources"]:
        state = ""
        if not item["exists"]:
            state = " (unreachable)" if item["kind"] == "postgres" else " (not found)"
        rows.append(
            [
                item["name"],
                item["from"],
                _count(item["sessions"]),
                "-" if item["sessions"] is None else str(len(item["problems"])),
                " + ".join(term.safe(p) for p in [item["path"], *item.get("companions", ())])
                + state,
            ]
        )
    lines = render.table(rows, ["SOURCE", "FROM", "SESSIONS", "PROBLEMS", "PATH"], style)
    index = document["index"]
    if index["path"] is None:
        where = f"the PostgreSQL database {term.safe(index['postgres'])}"
    else:
        where = term.safe(index["path"])
    lines += ["", f"Index: {where} ({index['from']})"]
    config = document["config_file"]
    if config is not None:
        used = "used" if document["config_file_exists"] else "none there"
        lines.append(f"Config file: {term.safe(config)} ({used})")
    archive = document["archive"]
    held = f"{archive['files']} file(s); " if archive["files"] else ""
    mode = "on: archived at every search" if archive["on"] else f"off: {TURN_ON}"
    lines.append(f"Archive: {term.safe(archive['path'])} ({held}{mode})")
    if archive.get("error"):
        lines.append(f"  {term.safe(archive['error'])}")
    for item in document["sources"]:
        if item["error"]:
            lines += ["", f"{item['name']} {item['label']}: {item['error']}"]
        problems = item["problems"]
        if not problems:
            continue
        lines += ["", style.bold(f"Problems in {item['label']} ({len(problems)}):")]
        for problem in problems[:PROBLEMS_SHOWN]:
            where = (
                problem["path"]
                if problem["line"] is None
                else (f"{problem['path']}:{problem['line']}")
            )
            lines.append(f"  {where}: {problem['message']}")
        if len(problems) > PROBLEMS_SHOWN:
            lines.append(f"  … and {len(problems) - PROBLEMS_SHOWN} more (--json lists all)")
    if not document["sources"]:
        lines.append("No sources selected.")
    return lines


def cmd_sources(inv: Invocation) -> int:
    """Show the sources, where each came from, its session and problem counts."""
    inv.summarise_problems = False  # this command lists them itself
    document = _document(inv)
    return emit(inv, document, lambda s: _text(document, s))
