"""The public API is exactly the sorted ``__all__`` of ``sessionquery``."""

from __future__ import annotations

import sessionquery

# Every public name SPEC.md §2 requires the package to re-export.
SPEC_NAMES = {
    "SessionHeader", "SessionEvent", "Replace", "FORMAT_VERSION", "SurfaceFold", "SurfaceError",
    "fold_surface", "fold_title", "TitleSnapshot", "interrupted_turn_closers",
    "extract_event_text", "SessionStore", "Session", "SessionPersistence", "PersistedSession",
    "PersistenceNotFound", "PersistenceCorrupt", "JsonlPersistence", "SessionQuery",
    "SessionQueryError", "ErrorCode", "CancelToken", "SessionRecord", "SessionLog",
    "EventDocument", "TitleResult", "EventRecord", "SurfaceSnapshot", "EventWindow",
    "LineageTrace", "LineageNode", "EventTrace", "SessionSearchPage", "SessionSearchHit",
    "EventSearchPage", "EventSearchHit", "IdIn", "CwdIn", "CreatedBetween", "ParentIn",
    "AvailabilityIn", "SeqBetween", "TimeBetween", "TypeIn", "SurfaceIn", "TextContains",
    "SearchBackend", "SessionQueryTools", "ToolCaller", "ToolDefinition", "ToolResult",
}  # fmt: skip


def test_all_is_sorted_and_unique() -> None:
    assert sessionquery.__all__ == sorted(set(sessionquery.__all__), key=_sort_key)


def _sort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: SCREAMING_CASE constants first, then the rest, each alphabetical.
    return (0 if name.isupper() else 1, name)


def test_every_spec_name_is_exported() -> None:
    assert SPEC_NAMES - set(sessionquery.__all__) == set()


def test_every_exported_name_exists_and_belongs_to_the_package() -> None:
    for name in sessionquery.__all__:
        value = getattr(sessionquery, name)
        module = getattr(value, "__module__", "sessionquery")
        assert module.startswith("sessionquery"), (name, module)


def test_no_public_name_is_exported_without_being_listed() -> None:
    for name in sessionquery.__all__:  # names are imported on first use
        getattr(sessionquery, name)
    public = {
        name
        for name, value in vars(sessionquery).items()
        if not name.startswith("_") and not isinstance(value, type(sessionquery))
    }
    assert public == set(sessionquery.__all__)


def test_importing_the_package_imports_no_backend() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sessionquery; "
        "print(sorted(m for m in sys.modules if m.startswith('sessionquery.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert sessionquery.SqliteSearch.__module__ == "sessionquery.search.sqlite.index"
