"""A Claude Code home made of the real transcripts the project vendors, for archive tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TypeVar

from locations import CORPUS
from sessionquery.archive import Archive, SourceUnits
from sessionquery.sources._catalog import Catalog
from sessionquery.sources.registry import source_kind

CatalogT = TypeVar("CatalogT", bound=Catalog)

__all__ = ["CLAUDE_FOLDERS", "claude_home", "through", "transcripts", "units"]

CLAUDE_FOLDERS = ("claude-code-viewer", "episodic-memory", "agentcmd", "agent-sessions/claude")
"""Corpus folders whose ``*.jsonl`` files (other than Codex rollouts) are Claude Code's."""


def claude_home(base: Path) -> Path:
    """A ``projects`` folder under ``base`` holding every Claude Code transcript of the corpus
    (one project folder per corpus folder); returns it."""
    projects = base / "projects"
    for folder in CLAUDE_FOLDERS:
        target = projects / folder.replace("/", "-")
        target.mkdir(parents=True)
        for path in sorted((CORPUS / folder).glob("*.jsonl")):
            if not path.name.startswith("rollout-"):
                shutil.copyfile(path, target / path.name)
    return projects


def transcripts(projects: Path) -> list[Path]:
    """The transcript files under ``projects``, sorted."""
    return sorted(projects.rglob("*.jsonl"))


def units(kind: str, location: Path) -> SourceUnits:
    """What the archive copies of the ``kind`` source at ``location``."""
    found = source_kind(kind)
    assert found is not None
    store = found.units(location)
    assert store is not None
    return SourceUnits(kind, store)


def through(source: CatalogT, archive: Archive, kind: str = "claude") -> CatalogT:
    """``source`` (an importer) reading through ``archive``, as the composition root sets it."""
    source.use_units(archive.units_of(kind, source.unit_store))
    return source
