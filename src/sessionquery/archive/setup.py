"""How the entry points set the archive up: where it is, what form it stores, what it copies.

Used by the composition root (:mod:`sessionquery.app`); the archive itself takes explicit
arguments and never reads a config file.
"""

from __future__ import annotations

from sessionquery.archive._archive import ARCHIVE_FILE, Archive
from sessionquery.archive._redacted import LineRedactor, redacted_form
from sessionquery.archive._segments import RAW, Form
from sessionquery.config import Config, FileSettings
from sessionquery.errors import SessionQueryError

__all__ = ["archive_form", "open_archive"]


def open_archive(
    config: Config, *, create: bool, redactor: LineRedactor | None = None
) -> Archive | None:
    """The archive under the data home, or ``None`` when there is none and ``create`` is
    false (then nothing touches its folder).

    Args:
        config: where data lives.
        create: create the archive when it is missing.
        redactor: the redactor every read path applies, when redaction is on: the archive
            then stores what it would show (see :func:`archive_form`).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a file there that is not an archive.
    """
    if not create and not (config.archive_dir / ARCHIVE_FILE).is_file():
        return None
    try:
        settings = config.settings()
    except SessionQueryError:  # a broken config file is reported where sources are chosen
        settings = FileSettings(path=config.config_file)
    return Archive(
        config.archive_dir,
        keep_days=settings.archive_keep_days,
        form=archive_form(settings, redactor),
    )


def archive_form(settings: FileSettings, redactor: LineRedactor | None) -> Form:
    """What the archive stores: with redaction on (a ``redactor``), the redacted form, unless
    the config file asks for the raw bytes (``archive_raw = true``); else the raw bytes. See
    ``docs/archive.md``, "Secrets"."""
    if redactor is None or settings.archive_raw:
        return RAW
    return redacted_form(redactor)
