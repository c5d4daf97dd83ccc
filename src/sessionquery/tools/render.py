"""The plain-text results the five tools hand back to the model.

Invariants (SPEC §8, reference contract §6.7):

* one plain-text block per call, starting with one header line;
* numbered hits start at column 0 as ``<k>. ``, their detail lines are indented by 3 spaces;
* every event reference is written ``seq <n>``; times are UTC ISO 8601 with milliseconds
  (``2025-01-31T09:30:00.000Z``); an em dash (U+2014) separates an id from its title; a
  session without a title is ``untitled``;
* an answer from an index still being built is headed by one line saying how much is
  indexed (:func:`partial_index_line`);
* nothing is truncated; titles and snippets are printed on one line (runs of whitespace,
  including newlines, become one space) so stored text can never forge a line of structure;
* markers for sessions outside the workspace contain the word ``outside`` and never an id or
  a title.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from sessionquery.model import SessionEvent, TitleSnapshot, extract_event_text
from sessionquery.model.textmatch import is_blank
from sessionquery.query.types import (
    EventRecord,
    EventSearchHit,
    EventTrace,
    EventWindow,
    SessionRecord,
    SessionSearchHit,
)
from sessionquery.tools.access import VisibleLineage

__all__ = [
    "ANCESTOR_BOUNDARY_MARKER",
    "NO_EVENT_MATCHES",
    "NO_SESSION_MATCHES",
    "OUTSIDE_PARENT_MARKER",
    "SUBTREE_MARKER",
    "UNTITLED",
    "WORDS_FALLBACK_LINE",
    "availability_text",
    "corrections_line",
    "display_title",
    "event_cap_sentence",
    "format_time",
    "one_line",
    "partial_index_line",
    "render_event_read",
    "render_event_search",
    "render_event_trace",
    "render_session_search",
    "render_trace",
    "session_cap_sentence",
    "title_unavailable",
]

UNTITLED = "untitled"
NO_SESSION_MATCHES = "No prior session matches found."
NO_EVENT_MATCHES = "No prior event matches found."
WORDS_FALLBACK_LINE = (
    "The exact phrase was not found; these results contain all of its words, in any order."
)
"""Heads search results answered with ``match="words"`` after the phrase found nothing."""
OUTSIDE_PARENT_MARKER = "[outside workspace]"
ANCESTOR_BOUNDARY_MARKER = "[outside workspace boundary]"
SUBTREE_MARKER = "[outside workspace subtree]"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DASH = "\u2014"
_INDENT = "   "


def format_time(epoch_ms: int) -> str:
    """``epoch_ms`` as UTC ISO 8601 with milliseconds, e.g. ``2025-01-31T09:30:00.000Z``.

    A time past the year 9999 has no ISO 8601 form of this shape; it is shown as the raw
    number (``epoch-ms 253402300800000``) rather than failing the whole call.
    """
    try:
        moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    except OverflowError:
        return f"epoch-ms {epoch_ms}"
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{epoch_ms % 1000:03d}Z"


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) turned into one space."""
    return " ".join(text.split())


def display_title(snapshot: TitleSnapshot | None) -> str:
    """The title shown for a session: its title, or ``untitled`` when it has none or the
    last title event set a blank one."""
    if snapshot is None or is_blank(snapshot.title):
        return UNTITLED
    return snapshot.title


def title_unavailable(code: str) -> str:
    """The title shown when a session's title could not be read."""
    return f"{UNTITLED} (title unavailable: {code})"


def availability_text(record: SessionRecord) -> str:
    """``live``, ``persisted``, ``live, persisted`` or ``unavailable``."""
    flags = [name for name, on in (("live", record.live), ("persisted", record.persisted)) if on]
    return ", ".join(flags) or "unavailable"


def session_cap_sentence(cap: int) -> str:
    """The closing sentence of a session search that hit the result cap."""
    return (
        f"Result cap reached: these are the {cap} best matching sessions, and more match. "
        "Narrow the query or add filters to find the others."
    )


def event_cap_sentence(cap: int) -> str:
    """The closing sentence of an event search that hit the result cap."""
    return (
        f"Result cap reached: these are the {cap} best matching events, and more match. "
        "Narrow the query or add filters to find the others."
    )


def corrections_line(corrections: Mapping[str, str]) -> str:
    """Heads a relevance search that searched some words instead of the typed ones."""
    pairs = ", ".join(
        f"\u201c{one_line(searched)}\u201d instead of \u201c{one_line(typed)}\u201d"
        for typed, searched in corrections.items()
    )
    return f"Showing results for {pairs}."


def _head(
    partial: tuple[int, int | None] | None, corrections: Mapping[str, str], words_fallback: bool
) -> list[str]:
    lines = [] if partial is None else [partial_index_line(*partial)]
    if corrections:
        lines.append(corrections_line(corrections))
    if words_fallback:
        lines.append(WORDS_FALLBACK_LINE)
    return lines


def partial_index_line(sessions_indexed: int, sessions_total: int | None) -> str:
    """Heads a search answered from an index that is still being built (``sessions_total``
    is ``None`` while the history is still being listed)."""
    done = (
        f"{sessions_indexed} sessions indexed so far"
        if sessions_total is None
        else f"{sessions_indexed} of {sessions_total} sessions indexed"
    )
    return (
        f"The history index is still being built ({done}): these results come from the "
        "indexed sessions only; search again later for complete results."
    )


def _heading(session_id: str, title: str) -> str:
    return f"Session {session_id} {_DASH} {one_line(title)}"


def _event_line(record: EventRecord | EventSearchHit) -> str:
    return f"seq {record.seq} | {record.type} | {record.surface} | {format_time(record.time)}"


def _seqs(seqs: Sequence[int]) -> str:
    return ", ".join(f"seq {seq}" for seq in seqs) or "none"


def render_session_search(
    hits: Sequence[tuple[SessionSearchHit, str, str]],
    *,
    capped: bool,
    cap: int,
    words_fallback: bool = False,
    partial: tuple[int, int | None] | None = None,
    corrections: Mapping[str, str] | None = None,
) -> str:
    """Render ``session_search`` results.

    Args:
        hits: ``(hit, title, parent)`` in rank order; ``parent`` is ``root``, a visible
            parent id or :data:`OUTSIDE_PARENT_MARKER`.
        capped: whether more hits existed beyond ``cap``.
        cap: the configured result cap.
        words_fallback: the hits contain the query's words, not its exact phrase; the
            results are headed by :data:`WORDS_FALLBACK_LINE`.
        partial: ``(sessions_indexed, sessions_total)`` when the answer comes from an index
            still being built; the answer is headed by :func:`partial_index_line`.
        corrections: typed word → word searched instead (relevance); the answer is headed
            by :func:`corrections_line`.
    """
    if not hits:
        return "\n".join([*_head(partial, {}, False), NO_SESSION_MATCHES])
    lines = _head(partial, corrections or {}, words_fallback)
    lines.append(f"Session search results ({len(hits)}):")
    for number, (hit, title, parent) in enumerate(hits, start=1):
        record, best = hit.record, hit.best_match
        lines += [
            "",
            f"{number}. {_heading(record.id, title)}",
            f"{_INDENT}Created: {format_time(record.header.created_at)}",
            f"{_INDENT}Parent: {parent}",
            f"{_INDENT}Availability: {availability_text(record)}",
            f"{_INDENT}Best match: {_event_line(best)}",
            f"{_INDENT}Snippet: {one_line(best.snippet)}",
        ]
    if capped:
        lines += ["", session_cap_sentence(cap)]
    return "\n".join(lines)


def render_event_search(
    session_id: str,
    title: str,
    hits: Sequence[EventSearchHit],
    *,
    capped: bool,
    cap: int,
    words_fallback: bool = False,
    corrections: Mapping[str, str] | None = None,
    partial: tuple[int, int | None] | None = None,
) -> str:
    """Render ``session_event_search`` results for one session (``words_fallback``,
    ``corrections`` and ``partial`` as in :func:`render_session_search`)."""
    lines = [_heading(session_id, title), ""]
    if not hits:
        lines += [*_head(partial, {}, False), NO_EVENT_MATCHES]
        return "\n".join(lines)
    lines += _head(partial, corrections or {}, words_fallback)
    lines.append(f"Event search results ({len(hits)}):")
    for number, hit in enumerate(hits, start=1):
        lines += [f"{number}. {_event_line(hit)}", f"{_INDENT}Snippet: {one_line(hit.snippet)}"]
    if capped:
        lines += ["", event_cap_sentence(cap)]
    return "\n".join(lines)


def _lineage_entry(record: SessionRecord, titles: Mapping[str, str]) -> str:
    created = format_time(record.header.created_at)
    title = one_line(titles.get(record.id, UNTITLED))
    return f"{record.id} {_DASH} {title} | {created} | {availability_text(record)}"


def render_trace(lineage: VisibleLineage, titles: Mapping[str, str]) -> str:
    """Render ``session_trace``: target, visible ancestors, visible descendant tree."""
    target = lineage.target
    lines = [
        _heading(target.id, titles.get(target.id, UNTITLED)),
        f"Created: {format_time(target.header.created_at)}",
        f"Availability: {availability_text(target)}",
        "",
        "Ancestors (nearest first):",
    ]
    if not lineage.ancestors and not lineage.ancestor_boundary:
        lines.append("- none (target is a root session)")
    lines += [f"- {_lineage_entry(record, titles)}" for record in lineage.ancestors]
    if lineage.ancestor_boundary:
        lines.append(f"- {ANCESTOR_BOUNDARY_MARKER}")
    lines += ["", "Descendants:"]
    if not lineage.descendants:
        lines.append("- none")
    for depth, record in lineage.descendants:
        entry = SUBTREE_MARKER if record is None else _lineage_entry(record, titles)
        lines.append(f"{'  ' * depth}- {entry}")
    return "\n".join(lines)


def render_event_trace(trace: EventTrace, title: str) -> str:
    """Render ``session_event_trace``: seven lines of direct relationships."""
    replaced_by = "none" if trace.replaced_by is None else f"seq {trace.replaced_by}"
    return "\n".join(
        [
            _heading(trace.session.id, title),
            f"Target: {_event_line(trace.target)}",
            f"Replaced by: {replaced_by}",
            f"Replacement chain: {_seqs(trace.replacement_chain)}",
            f"Events replaced by target: {_seqs(trace.replaced_event_seqs)}",
            f"Events cited directly as sources: {_seqs(trace.source_event_seqs)}",
            f"Direct derived events: {_seqs(trace.derived_event_seqs)}",
        ]
    )


def _neighbour(event: SessionEvent) -> list[str]:
    line = f"- seq {event.seq} | {event.type} | {format_time(event.time)}"
    text = extract_event_text(event)
    if not text:
        return [f"{line} | (no semantic text)"]
    return [line, *(f"  {part}" for part in text.split("\n"))]


def render_event_read(window: EventWindow, title: str) -> str:
    """Render ``session_event_read``: the whole target as JSON, then neighbour summaries."""
    target = window.target
    body = json.dumps(target.to_json(), indent=2, ensure_ascii=False)
    lines = [
        _heading(window.session.id, title),
        f"Target event seq {target.seq}:",
        "```json",
        body,
        "```",
    ]
    before = [event for event in window.events if event.seq < target.seq]
    after = [event for event in window.events if event.seq > target.seq]
    for label, events in (("Before:", before), ("After:", after)):
        if events:
            lines += ["", label]
            for event in events:
                lines += _neighbour(event)
    return "\n".join(lines)
