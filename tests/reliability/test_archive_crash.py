"""The archive killed with SIGKILL at random points of a run.

A child (``crash_archiver.py``) archives a folder of transcripts that the parent keeps
growing (appends, new files, a rename); the parent kills it after a random number of progress
lines, then checks that the archive opens and that every archived file holds a prefix of its
source (nothing torn, nothing invented). After the last kill a run completes, and every
archived file reads back byte-identical to its source.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from archive_support import units
from reliability.child import Child
from reliability.stats import profile_examples, record
from sessionquery.archive import Archive

KILLS = max(6, profile_examples() // 8)


def _line(rng: random.Random, number: int) -> bytes:
    words = " ".join(
        rng.choice(["alpha", "beta", "gamma", "delta", "tool", "result", "fix"])
        for _ in range(rng.randint(5, 80))
    )
    record = {
        "type": "user",
        "sessionId": f"s{number}",
        "uuid": f"u{rng.random()}",
        "message": {"role": "user", "content": words},
        "noise": rng.randbytes(40).hex(),
    }
    return (json.dumps(record) + "\n").encode()


def _grow(path: Path, rng: random.Random, lines: int) -> None:
    with path.open("ab") as handle:
        handle.write(b"".join(_line(rng, rng.randrange(99)) for _ in range(lines)))


def _archived(archive: Archive, projects: Path) -> dict[str, bytes]:
    out = {}
    for unit in archive.units():
        data = archive.read("claude", projects, unit.rel)
        assert data is not None
        out[unit.rel] = data
    return out


def test_a_killed_archive_run_leaves_old_or_new_state_and_the_next_run_completes(
    tmp_path: Path,
) -> None:
    rng = random.Random(27)
    projects = tmp_path / "projects" / "p"
    projects.mkdir(parents=True)
    for number in range(6):
        _grow(projects / f"session-{number}.jsonl", rng, rng.randint(500, 4000))
    root = tmp_path / "projects"
    folder = tmp_path / "archive"
    kills = 0
    for kill in range(KILLS):
        child = Child("crash_archiver.py", str(root), str(folder))
        assert child.read_line() == "open"
        for _ in range(rng.randint(0, 6)):
            if child.read_line() in (None, "done"):
                break
        child.kill()
        kills += 1
        with Archive(folder) as archive:
            for rel, data in _archived(archive, root).items():
                source = root / rel
                if source.exists():
                    assert source.read_bytes().startswith(data), f"{rel} is not a prefix"
        # The sources move on while nobody archives: appends, a new file, now and then a rename.
        for path in rng.sample(sorted(projects.glob("*.jsonl")), 2):
            _grow(path, rng, rng.choice([1, 7, 300]))
        _grow(projects / f"late-{kill}.jsonl", rng, rng.randint(10, 1500))
        if kill % 3 == 2:
            victim = rng.choice(sorted(projects.glob("session-*.jsonl")))
            victim.rename(victim.with_name(f"renamed-{kill}.jsonl"))
    child = Child("crash_archiver.py", str(root), str(folder))
    while child.read_line() not in ("done", None):
        pass
    child.finish()
    with Archive(folder) as archive:
        archived = _archived(archive, root)
        present = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.jsonl")}
        for rel, data in present.items():
            assert archived[rel] == data, f"{rel} differs from its source"
        report = archive.run([units("claude", root)])
        assert report.stored == 0 and report.unchanged == len(present)
    record("crash-archiver", kills=kills, files_verified=len(present))
