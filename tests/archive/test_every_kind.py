"""The archive for every importer of the seam: after each agent's data is gone (files, or the
agent's database for OpenCode and Cursor), every session is still listed and read, marked
archived."""

from __future__ import annotations

import shutil
from pathlib import Path

from formats_support import fixture_home
from sessionquery.app import App
from sessionquery.config import Config


def _listing(app: App) -> dict[str, tuple[bool, int]]:
    with app.service() as query:
        return {
            record.id: (record.archived, len(query.read_session(record.id).events))
            for record in query.list_sessions()
        }


def test_every_kinds_sessions_outlive_their_source(tmp_path: Path) -> None:
    home = fixture_home(tmp_path)
    config = Config.for_home(tmp_path / "sq", user_home=home.home)
    app = App(config)
    kinds = {entry.kind for entry in app.selection.sources}
    assert {"codex", "gemini", "qwen", "copilot", "opencode", "cursor"} <= kinds
    before = _listing(app)
    report = App(config).archive_now()
    assert report.stored > 0 and not report.problems
    for entry in app.selection.sources:
        for path in (entry.path, *entry.companions):  # Cursor's user folder too
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    after = _listing(App(config))
    assert after.keys() == before.keys()
    assert all(archived for archived, _count in after.values())
    assert {k: n for k, (_a, n) in after.items()} == {k: n for k, (_a, n) in before.items()}


def test_a_database_source_with_archived_units_is_scanned_at_every_listing(
    tmp_path: Path,
) -> None:
    """A database's cheap fingerprint would let a listing skip the scan that tells which
    sessions the archive serves; with archived units it is not offered."""
    from sessionquery.archive import Archive, SourceUnits
    from sessionquery.sources.registry import source_kind

    home = fixture_home(tmp_path)
    opencode = source_kind("opencode")
    assert opencode is not None
    location = home.home / ".local" / "share" / "opencode"
    store = opencode.units(location)
    assert store is not None and store.fingerprint() is not None
    with Archive(tmp_path / "archive") as archive:
        assert archive.units_of("opencode", store).fingerprint() == store.fingerprint()
        archive.run([SourceUnits("opencode", store)])
        assert archive.units_of("opencode", store).fingerprint() is None
