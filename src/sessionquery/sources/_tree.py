"""The importers whose location is one folder tree of transcript files, declared in one line.

A kind that reads a folder tree names three things when it subclasses :class:`TreeSource`:
its registry ``kind``, how its location becomes raw units (``units``, a function of the root
and ``follow_outside_links`` returning a :class:`~.units.FileTree`) and how one unit is parsed
(``parser``). The constructor, its arguments and its errors are this class's, the same for
every such kind, so a further format adds no constructor of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from sessionquery.sources._catalog import Catalog, UnitsAt
from sessionquery.sources._files import DEFAULT_MAX_FILE_BYTES

__all__ = ["TreeSource", "UnitsAt"]


class TreeSource(Catalog):
    """A read-only ``SessionPersistence`` over one location of a folder-tree kind.

    Subclasses declare ``class GeminiSource(TreeSource, kind="gemini", units=gemini_units,
    parser=parse_gemini_unit)`` (the keywords of :class:`~._catalog.Catalog`); their
    docstring says what ``root`` is.

    Args:
        root: the kind's folder (each importer's docstring names it).
        metadata_cache: a SQLite file that keeps what each file yields between runs (derived,
            disposable, shareable by processes), or ``None`` to keep it in memory.
        max_file_bytes: files larger than this are reported and not read (256 MiB).
        follow_outside_links: follow symbolic links that lead outside ``root``.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``metadata_cache`` names a file that is not
            an importer cache (it is left untouched).
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        follow_outside_links: bool = False,
    ) -> None:
        units, parser = self._declared()
        tree = units(Path(root), follow_outside_links=follow_outside_links)
        super().__init__(tree, parser, metadata_cache=metadata_cache, max_file_bytes=max_file_bytes)
