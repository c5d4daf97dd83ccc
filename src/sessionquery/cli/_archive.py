"""``sessionquery archive``: copy the agents' transcripts into the archive, show it, prune it.

* ``sessionquery archive`` archives every selected importer source (every agent) now,
  waiting for a run another process holds, with progress on stderr;
* ``--status`` shows what the archive holds (files, sessions, sizes, the oldest, what was
  rescued) without changing it;
* ``--prune-older-than DAYS`` removes the copies of sessions whose source last changed more
  than DAYS days ago.

The store of sessionquery's own sessions (``--root``) and PostgreSQL are not archived: no
agent purges them.
"""

from __future__ import annotations

import sys
from typing import Any

from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term
from sessionquery.cli._services import Invocation, Progress, emit
from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = ["RESCUED_SHOWN", "TURN_ON", "cmd_archive", "turn_on_hint"]

RESCUED_SHOWN = 20
"""Rescued files listed in the text output of ``--status``."""


TURN_ON = "run 'sessionquery archive' to keep what the agents delete, or set archive = true"
"""How to turn the archive on, in the words ``sources`` and ``quickstart`` use."""


def turn_on_hint(inv: Invocation) -> str:
    """One sentence saying how to keep the agents' history when they purge it."""
    where = term.safe(str(inv.config.config_file))
    return (
        "Claude Code and Codex delete old transcripts: 'sessionquery archive' keeps them, "
        f"and 'archive = true' in {where} does it on every search"
    )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"  # pragma: no cover - the loop always returns


def _run(inv: Invocation) -> int:
    app = inv.app
    if not app.archive_units():
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            "no agent's source is selected, so there is nothing to archive (the archive keeps "
            "the agents' transcripts; choose them with --claude, --codex or --source KIND=PATH)",
        )
    progress = Progress(sys.stderr, "Archiving", noun="files")
    progress.start()
    try:
        report = app.archive_now(progress=progress)
    finally:
        progress.finish()
    archive = app.archive()
    assert archive is not None
    document: dict[str, Any] = {
        "archive": str(archive.folder),
        "files": report.units,
        "stored": report.stored,
        "unchanged": report.unchanged,
        "gone": report.gone,
        "bytes_written": report.written,
        "pruned": report.pruned,
        "problems": [
            {"path": p.path, "line": p.line, "message": p.message} for p in report.problems
        ],
    }

    def text(style: render.Style) -> list[str]:
        lines = [
            f"Archive {style.bold(term.safe(str(archive.folder)))}: {report.units} file(s) "
            f"looked at, {report.stored} stored or extended ({_size(report.written)} written), "
            f"{report.unchanged} unchanged."
        ]
        if report.gone:
            lines.append(f"{report.gone} file(s) gone from their source: read from the archive.")
        if report.pruned:
            lines.append(f"{report.pruned} file(s) pruned (older than the retention).")
        lines += [f"  {term.safe(p.path)}: {term.safe(p.message)}" for p in report.problems]
        return lines

    return emit(inv, document, text)


def _rescued_sessions(inv: Invocation) -> int | None:
    """How many listed sessions are read from the archive (``None`` when the sources cannot
    be listed)."""
    try:
        return sum(1 for entry in inv.persistence().list() if entry.archived)
    except Exception:  # a diagnostic command: the archive's own figures still count
        return None


def _status(inv: Invocation) -> int:
    archive = inv.app.archive()
    if archive is None:
        document: dict[str, Any] = {"archive": str(inv.config.archive_dir), "exists": False}
        return emit(inv, document, lambda _s: ["No archive yet.", turn_on_hint(inv)])
    status = archive.status()
    sessions = _rescued_sessions(inv)
    document = {
        "archive": str(archive.folder),
        "exists": True,
        "files": status.units,
        "source_bytes": status.source_bytes,
        "stored_bytes": status.stored_bytes,
        "file_bytes": status.file_bytes,
        "oldest": status.oldest,
        "rescued_sessions": sessions,
        "rescued": [
            {
                "source": unit.source,
                "root": unit.root,
                "path": unit.rel,
                "bytes": unit.size,
                "modified_at": unit.modified_at,
                "gone_at": unit.gone_at,
            }
            for unit in status.rescued
        ],
    }

    def text(style: render.Style) -> list[str]:
        ratio = status.source_bytes / status.stored_bytes if status.stored_bytes else 0.0
        oldest = "-" if status.oldest is None else render.time_text(status.oldest)[:10]
        lines = [
            f"Archive {style.bold(term.safe(str(archive.folder)))}",
            f"  files     {status.units}",
            f"  bytes     {_size(status.source_bytes)} of transcripts stored in "
            f"{_size(status.stored_bytes)} ({ratio:.1f}x; {_size(status.file_bytes)} on disk)",
            f"  oldest    {oldest} (last change of its source)",
        ]
        counted = "" if sessions is None else f" ({sessions} session(s))"
        lines.append(f"  rescued   {len(status.rescued)} file(s) whose source is gone{counted}")
        for unit in status.rescued[:RESCUED_SHOWN]:
            when = render.time_text(unit.modified_at)[:10]
            lines.append(f"    {unit.source}  {term.safe(unit.rel)}  {_size(unit.size)}  {when}")
        if len(status.rescued) > RESCUED_SHOWN:
            more = len(status.rescued) - RESCUED_SHOWN
            lines.append(f"    … and {more} more (--json lists all)")
        return lines

    return emit(inv, document, text)


def _prune(inv: Invocation, days: int) -> int:
    archive = inv.app.archive()
    if archive is None:
        return emit(inv, {"pruned": 0}, lambda _s: ["No archive yet: nothing to prune."])
    pruned = archive.prune(days)
    return emit(
        inv,
        {"pruned": pruned},
        lambda _s: [f"Pruned {pruned} file(s) whose source last changed over {days} days ago."],
    )


def cmd_archive(inv: Invocation) -> int:
    """Archive the importer sources, or show (``--status``) or prune the archive."""
    args = inv.args
    if args.status:
        return _status(inv)
    if args.prune_older_than is not None:
        return _prune(inv, args.prune_older_than)
    return _run(inv)
