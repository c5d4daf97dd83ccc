"""``sessionquery secrets``: where secrets occur in the selected history, never what they are.

Every session is read as stored and scanned with the same redactor that masks every other
output (the bundled rules and the known secrets of the environment and the known-secrets
file). Each finding names the session, the event's seq and type, the rule, the place in the
event's data, the length and a preview of the first and last characters. The exit status
says whether any were found: :data:`EXIT_SECRETS_FOUND` if so, 0 if not.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, Final

from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term
from sessionquery.cli._services import EXIT_OK, Invocation, Progress, emit
from sessionquery.redact import RULES_VERSION, SecretSighting, UnreadableSession, scan_sessions

__all__ = ["EXIT_SECRETS_FOUND", "cmd_secrets"]

EXIT_SECRETS_FOUND: Final = 3
"""The exit status when at least one secret was found (1 stays an error, 2 a usage error)."""


def _sighting(item: SecretSighting) -> dict[str, Any]:
    finding = item.finding
    return {
        "session_id": item.session_id,
        "seq": item.seq,
        "type": item.event_type,
        "rule": finding.rule,
        "path": finding.path,
        "length": finding.length,
        "preview": finding.preview,
        "known_as": finding.known_as,
    }


def _document(inv: Invocation) -> dict[str, Any]:
    redactor = inv.redactor
    progress = Progress(sys.stderr, "Scanning", quiet=True)
    sightings: list[dict[str, Any]] = []
    unreadable: list[dict[str, str]] = []
    try:
        for item in scan_sessions(inv.sources(), redactor, progress=progress):
            if isinstance(item, UnreadableSession):
                message = redactor.redact(item.message)
                unreadable.append({"session_id": item.session_id, "message": message})
            else:
                sightings.append(_sighting(item))
    finally:
        progress.finish()
    return {
        "rules_version": RULES_VERSION,
        "known_values": len(redactor.known_labels),
        "total": len(sightings),
        "sessions": len({s["session_id"] for s in sightings}),
        "by_rule": dict(sorted(Counter(s["rule"] for s in sightings).items())),
        "findings": sightings,
        "unreadable": unreadable,
    }


def _text(document: dict[str, Any], style: render.Style) -> list[str]:
    lines: list[str] = []
    for item in document["findings"]:
        rule = item["rule"] if item["known_as"] is None else f"{item['rule']} ({item['known_as']})"
        lines.append(
            f"{term.safe(item['session_id'])}  seq {item['seq']}  {style.bold(rule)}  "
            f"{term.safe(item['preview'])} ({item['length']} chars)  {style.dim(item['path'])}"
        )
    for item in document["unreadable"]:
        lines.append(f"{term.safe(item['session_id'])}: not scanned: {term.safe(item['message'])}")
    total, sessions = document["total"], document["sessions"]
    if not total:
        lines.append(f"No secrets found (rules version {document['rules_version']}).")
        return lines
    rules = ", ".join(f"{name} {count}" for name, count in document["by_rule"].items())
    lines.append(
        f"{total} secret(s) in {sessions} session(s): {rules}. Every output of sessionquery "
        "shows them as [REDACTED:<rule>]; rotate the credentials they belong to."
    )
    return lines


def cmd_secrets(inv: Invocation) -> int:
    """List where secrets occur; exit :data:`EXIT_SECRETS_FOUND` when any were found."""
    document = _document(inv)
    emit(inv, document, lambda s: _text(document, s))
    return EXIT_SECRETS_FOUND if document["total"] else EXIT_OK
