"""An archive of imported histories: nothing is lost when an agent purges its transcripts.

:class:`Archive` keeps, under the data home, each imported session's raw source units (a
transcript file; a database-backed store's per-session rows as one normalised file): copied
once, then extended as the source grows (a transcript that grows by one line costs one line
written), compressed with standard-library codecs, content-addressed (a renamed or copied
file is stored once) and written crash-safely (a killed run leaves every unit as it was or
fully updated). :meth:`Archive.units_of` gives an importer the view of its units with the
archive behind it: when a source file is gone, its archived copy is listed, searched and read
as before, and its sessions are marked ``archived``. See ``docs/archive.md``.
"""

from sessionquery.archive._archive import (
    ARCHIVE_FILE,
    Archive,
    ArchiveReport,
    ArchiveStatus,
    RescuedUnit,
    SourceUnits,
)
from sessionquery.archive._redacted import LineRedactor, redacted_form
from sessionquery.archive._segments import RAW, SEGMENT_MAX, Form
from sessionquery.archive._units import ArchivedUnits

__all__ = [
    "ARCHIVE_FILE",
    "RAW",
    "SEGMENT_MAX",
    "Archive",
    "ArchiveReport",
    "ArchiveStatus",
    "ArchivedUnits",
    "Form",
    "LineRedactor",
    "RescuedUnit",
    "SourceUnits",
    "redacted_form",
]
