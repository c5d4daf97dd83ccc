"""The pure event-log model: headers, events, the surface fold, titles, repair, text.

Nothing in this package does I/O. See :mod:`sessionquery.model.surface` for what the surface
is and what current, shadowed and log-only mean.
"""

from sessionquery.model.event import Replace, SessionEvent, SurfaceOp
from sessionquery.model.header import FORMAT_VERSION, SessionHeader, validate_session_id
from sessionquery.model.jsonvalue import (
    FrozenDict,
    FrozenList,
    canonical_json,
    freeze_json,
    loads_json,
    thaw,
)
from sessionquery.model.repair import interrupted_turn_closers
from sessionquery.model.surface import (
    KNOWN_EVENT_TYPES,
    SURFACE_CLASSES,
    SURFACE_ELIGIBLE_TYPES,
    SurfaceClass,
    SurfaceError,
    SurfaceFold,
    SurfaceFolder,
    fold_surface,
)
from sessionquery.model.text import extract_event_text, extract_text
from sessionquery.model.title import TitleSnapshot, fold_title

__all__ = [
    "FORMAT_VERSION",
    "KNOWN_EVENT_TYPES",
    "SURFACE_CLASSES",
    "SURFACE_ELIGIBLE_TYPES",
    "FrozenDict",
    "FrozenList",
    "Replace",
    "SessionEvent",
    "SessionHeader",
    "SurfaceClass",
    "SurfaceError",
    "SurfaceFold",
    "SurfaceFolder",
    "SurfaceOp",
    "TitleSnapshot",
    "canonical_json",
    "extract_event_text",
    "extract_text",
    "fold_surface",
    "fold_title",
    "freeze_json",
    "interrupted_turn_closers",
    "loads_json",
    "thaw",
    "validate_session_id",
]
