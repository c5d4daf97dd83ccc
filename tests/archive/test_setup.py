"""The archive in the composition root: App opens it only when it exists, every importer
source reads through it, a gone default folder stays open, and the form follows the config."""

from __future__ import annotations

import shutil
from pathlib import Path

from archive_support import claude_home
from sessionquery.app import App
from sessionquery.archive import ARCHIVE_FILE, RAW
from sessionquery.archive.setup import archive_form
from sessionquery.config import Config, FileSettings


def _config(tmp_path: Path) -> Config:
    user = tmp_path / "user"
    claude_home(user / ".claude")  # ~/.claude/projects
    return Config.for_home(tmp_path / "sq", user_home=user)


def test_without_an_archive_nothing_touches_its_folder(tmp_path: Path) -> None:
    config = _config(tmp_path)
    app = App(config)
    assert app.persistence().list()
    assert app.archive() is None
    assert app.archive_on_update() is None  # archive = true is not set
    assert not config.archive_dir.exists()


def test_after_an_archive_run_a_gone_default_folder_is_still_read(tmp_path: Path) -> None:
    config = _config(tmp_path)
    app = App(config)
    before = {e.header.id for e in app.persistence().list()}
    report = app.archive_now()
    assert report.stored > 0 and (config.archive_dir / ARCHIVE_FILE).is_file()
    shutil.rmtree(config.claude_projects)
    later = App(config)
    assert not later.selection.sources  # the default folder is gone...
    listed = later.persistence().list()
    assert {e.header.id for e in listed} == before  # ...and read from the archive
    assert all(e.archived for e in listed)
    assert later.archive_units()[0].root == config.claude_projects


def test_archive_true_archives_before_the_index_is_updated(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.config_file.parent.mkdir(parents=True, exist_ok=True)
    config.config_file.write_text("archive = true\n", encoding="utf-8")
    app = App(config)
    app.persistence()
    report = app.archive_on_update()
    assert report is not None and report.stored > 0
    assert app.archive_on_update() is not None  # the second run finds nothing new
    archive = app.archive()
    assert archive is not None and len(archive.units()) == report.stored


def test_the_form_is_redacted_with_a_redactor_unless_raw_bytes_are_asked_for(
    tmp_path: Path,
) -> None:
    from archive.test_redacted import ToyRedactor

    plain = FileSettings(path=tmp_path / "config.toml")
    raw = FileSettings(path=tmp_path / "config.toml", archive_raw=True)
    assert archive_form(plain, None) is RAW
    assert archive_form(raw, ToyRedactor()) is RAW
    assert archive_form(plain, ToyRedactor()).name == "redacted:toy-1"


def test_the_app_archives_what_its_redactor_would_show(tmp_path: Path) -> None:
    app = App(_config(tmp_path))
    archive = app.archive(create=True)
    assert archive is not None
    expected = f"redacted:{app.redactor.fingerprint}"
    app.archive_now()
    assert {unit.form for unit in archive.units()} == {expected}
