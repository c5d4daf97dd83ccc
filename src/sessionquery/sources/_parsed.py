"""What a parser receives for one unit and what it gives back.

A parser is a pure function of one unit's bytes plus the *side* units it chose to read (a
project registry, a parent transcript...). :class:`Sides` records every side unit a parse read
(or looked for and did not find), with its stamp, so the catalog can tell when a cached parse
went stale because its context changed, not only its own bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, TypeVar

from sessionquery.model import SessionHeader
from sessionquery.model.surface import SurfaceClass
from sessionquery.sources._builder import Draft
from sessionquery.sources._common import Problem
from sessionquery.sources.units import SkippedFile, Unit, UnitStore

__all__ = ["ParsedFile", "ParsedSession", "Parser", "Sides", "UnitInput"]

T = TypeVar("T")

MISSING_PREFIX = "*"
"""A dependency key ``*<suffix>`` records that no unit ending with ``<suffix>`` existed."""

PRESENT = "\x00present"
"""A dependency's recorded stamp when only the unit's presence matters (not its bytes)."""


@dataclass(frozen=True, slots=True)
class ParsedSession:
    """One imported session: its header (own, unresolved ids) and its unfrozen log.

    ``suffix`` marks a child stored inside its parent's unit (an inline sidechain): its public
    id is ``<public id of the unit's first session>/<suffix>``, whatever its header says.
    """

    header: SessionHeader
    events: tuple[Draft, ...]
    surface: tuple[SurfaceClass, ...]
    preferred: bool = False  # keeps its id when another unit claims the same one
    suffix: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """Everything one unit yields (``depends``: the side units its parse read, by stamp)."""

    sessions: tuple[ParsedSession, ...]
    problems: tuple[Problem, ...]
    depends: Mapping[str, str | None] = field(default_factory=dict[str, str | None])


class Sides:
    """Read access to the other units of the store during one parse, recording what is used.

    Derived values (:meth:`memo`) are shared across parses through ``memo_cache``, keyed by the
    side unit's key and stamp, so a registry read by every transcript is decoded once.
    """

    def __init__(
        self,
        store: UnitStore,
        units: Mapping[str, Unit],
        max_bytes: int,
        memo_cache: OrderedDict[tuple[str, str, str], Any] | None = None,
    ) -> None:
        self._store = store
        self._units = units
        self._max_bytes = max_bytes
        self._memo = memo_cache if memo_cache is not None else OrderedDict()
        self.used: dict[str, str | None] = {}

    def keys(self) -> list[str]:
        """Every unit key of the store (transcripts and side units)."""
        return list(self._units)

    def find(self, suffix: str) -> str | None:
        """The first key (in key order) ending with ``suffix``, else ``None`` (recorded, so the
        parse is redone when such a unit appears, or the one found disappears)."""
        for key in self._units:
            if key.endswith(suffix):
                self.used.setdefault(key, PRESENT)
                return key
        self.used[MISSING_PREFIX + suffix] = None
        return None

    def where(self, key: str) -> str:
        """The absolute path problems about unit ``key`` name."""
        return self._store.where(key)

    def has(self, key: str) -> bool:
        """Whether unit ``key`` exists (recorded: the parse is redone when that changes; a
        constant-time check, unlike :meth:`find`)."""
        if key in self._units:
            self.used.setdefault(key, PRESENT)
            return True
        self.used[key] = None
        return False

    def read(self, key: str) -> bytes | None:
        """The bytes of unit ``key``, or ``None`` when it is absent or unreadable."""
        unit = self._units.get(key)
        if unit is None:
            self.used[key] = None
            return None
        try:
            data, current = self._store.read(key, self._max_bytes)
        except SkippedFile:
            self.used[key] = None
            return None
        self.used[key] = current.stamp
        return data

    def memo(
        self,
        key: str,
        name: str,
        derive: Callable[[bytes], T],
        default: T,
        *,
        presence_only: bool = False,
    ) -> T:
        """``derive(bytes of key)``, computed once per stamp of ``key``; ``default`` when the
        unit is absent (the lookup is recorded as a dependency either way). With
        ``presence_only`` the parse depends on the unit being there, not on its bytes (a value
        that later bytes cannot change, such as the turns a parent had when it was copied)."""
        unit = self._units.get(key)
        if unit is None:
            self.used[key] = None
            return default
        memo_key = (key, unit.stamp, name)
        if memo_key in self._memo:
            self.used[key] = PRESENT if presence_only else unit.stamp
            self._memo.move_to_end(memo_key)
            return self._memo[memo_key]  # type: ignore[no-any-return]
        data = self.read(key)
        if presence_only and data is not None:
            self.used[key] = PRESENT
        if data is None:
            return default
        value = derive(data)
        self._memo[memo_key] = value
        while len(self._memo) > 64:
            self._memo.popitem(last=False)
        return value


@dataclass(frozen=True, slots=True)
class UnitInput:
    """One unit handed to a parser.

    Attributes:
        key: the unit's key (a ``/`` path relative to the source root for files).
        where: the absolute path problems name.
        data: the unit's bytes.
        sides: the store's other units, read on demand.
    """

    key: str
    where: str
    data: bytes
    sides: Sides

    @property
    def name(self) -> str:
        """The last path component of the key (a file name)."""
        return PurePosixPath(self.key).name

    @property
    def parts(self) -> tuple[str, ...]:
        """The key's path components."""
        return PurePosixPath(self.key).parts


Parser = Callable[[UnitInput], ParsedFile]
"""Turns one unit into its sessions and problems; never raises for bad content (any exception
becomes a problem of that unit)."""
