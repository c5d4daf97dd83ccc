"""Child program: archive a Claude Code projects folder until done or killed.

Usage: ``crash_archiver.py PROJECTS ARCHIVE_DIR``. Prints ``open``, then ``unit <done>
<total>`` after each file the run has looked at (so a parent can kill it in the middle of a
run), then ``done`` and waits for stdin to close.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sessionquery.archive import Archive, SourceUnits
from sessionquery.sources.registry import source_kind


def _progress(done: int, total: int) -> None:
    print(f"unit {done} {total}", flush=True)


def main() -> None:
    projects, folder = Path(sys.argv[1]), Path(sys.argv[2])
    archive = Archive(folder)
    print("open", flush=True)
    claude = source_kind("claude")
    assert claude is not None
    store = claude.units(projects)
    assert store is not None
    archive.run([SourceUnits("claude", store)], progress=_progress)
    print("done", flush=True)
    sys.stdin.read()
    archive.close()


if __name__ == "__main__":
    main()
