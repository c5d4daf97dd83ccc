"""The importers' view of their units with the archive behind them.

:class:`ArchivedUnits` is the :class:`~sessionquery.sources.units.UnitStore` a catalog reads
once an archive is attached (:meth:`~sessionquery.sources._catalog.Catalog.use_units`): the
source's own units, plus every archived unit of the same kind and location that is gone from
it. Invariants:

* a unit the source still has is always read from the source (the archive never hides a newer
  source);
* an archived unit is served with the stamp of the source bytes it holds (raw form), so its
  sessions keep their ids (the catalog resolves ids over the same units as before the purge),
  their revisions (the search index does not index them again) and their metadata cache rows;
  a transformed (redacted) unit gets a stamp of its own, since its bytes differ;
* which units the last scan served from the archive is known (:meth:`served`), so the
  listing marks their sessions ``archived``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path

from sessionquery.archive._db import ArchiveDb, Unit
from sessionquery.sources._common import Problem
from sessionquery.sources.units import Role, SkippedFile, UnitStore
from sessionquery.sources.units import Unit as SourceUnit

__all__ = ["ArchivedUnits", "served_stamp"]


def served_stamp(unit: Unit) -> str:
    """The stamp an archived unit is served with: its source's, for raw bytes; one of its
    own for a transformed form (whose bytes differ from the source's)."""
    if unit.form == "raw":
        return unit.stamp
    digest = hashlib.sha256(f"{unit.form}\0{unit.updated_at}\0{unit.stamp}".encode()).hexdigest()
    return f"archive:{digest[:32]}"


class ArchivedUnits:
    """A source's units, with the archive's copies of the ones that are gone.

    Args:
        inner: the source's own unit store.
        db: the archive.
        source: the importer kind the archive files the units under.
        read_unit: reads one archived unit's bytes.
    """

    def __init__(
        self,
        inner: UnitStore,
        db: ArchiveDb,
        source: str,
        read_unit: Callable[[Unit], bytes],
    ) -> None:
        self._inner = inner
        self._db = db
        self._source = source
        self._read_unit = read_unit
        self._lock = threading.Lock()
        self._version: int | None = None
        self._units: dict[str, Unit] = {}
        self._served: frozenset[str] = frozenset()

    @property
    def location(self) -> Path:
        """The source's folder or database file."""
        return self._inner.location

    def _current(self) -> dict[str, Unit]:
        with self._lock:
            version = self._db.data_version()
            if version != self._version:
                units = self._db.units(self._source, str(self.location))
                self._units = {unit.rel: unit for unit in units}
                self._version = version
            return self._units

    def keeps(self) -> bool:
        """Whether the archive holds any unit of this source."""
        return bool(self._current())

    def fingerprint(self) -> str | None:
        """The source's own fingerprint while the archive holds nothing of it; else ``None``,
        so every listing scans and knows which units the archive serves."""
        return None if self._current() else self._inner.fingerprint()

    def scan(self) -> tuple[list[SourceUnit], list[Problem]]:
        """The source's units plus the archived ones gone from it, sorted by key."""
        units, problems = self._inner.scan() if _present(self._inner) else ([], [])
        present = {unit.key for unit in units}
        extra = [
            SourceUnit(key, served_stamp(unit), unit.size, _role(unit.role))
            for key, unit in self._current().items()
            if key not in present and self._inner.stat(key) is None
        ]
        with self._lock:
            self._served = frozenset(unit.key for unit in extra)
        return sorted([*units, *extra], key=lambda unit: unit.key), problems

    def stat(self, key: str) -> SourceUnit | None:
        """The unit's current stamp: the source's, else its archived copy's, else ``None``."""
        found = self._inner.stat(key)
        if found is not None:
            return found
        unit = self._current().get(key)
        if unit is None:
            return None
        return SourceUnit(key, served_stamp(unit), unit.size, _role(unit.role))

    def read(self, key: str, max_bytes: int) -> tuple[bytes, SourceUnit]:
        """The unit's bytes from the source, or from the archive when the source lost it.

        Raises:
            SkippedFile: as the source raises it, for a unit the source still has or that is
                not archived either.
        """
        try:
            return self._inner.read(key, max_bytes)
        except SkippedFile:
            unit = self._current().get(key)
            if unit is None or self._inner.stat(key) is not None:
                raise
        if unit.size > max_bytes:
            raise SkippedFile(f"archived copy is {unit.size} bytes, over the limit; skipped")
        data = self._read_unit(unit)
        return data, SourceUnit(key, served_stamp(unit), unit.size, _role(unit.role))

    def where(self, key: str) -> str:
        """What a problem about ``key`` names (the source's path for it)."""
        return self._inner.where(key)

    def served(self) -> frozenset[str]:
        """The keys the last scan served from the archive."""
        return self._served


def _present(store: UnitStore) -> bool:
    """Whether the source has anything to scan: its location exists (a store that reads more
    than its location, such as Cursor's, says so itself with ``present()``)."""
    present = getattr(store, "present", None)
    return bool(present()) if callable(present) else store.location.exists()


def _role(text: str) -> Role:
    return "side" if text == "side" else "transcript"
