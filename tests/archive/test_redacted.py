"""The redacted form: with redaction on, no secret reaches the archive, and a transcript
without secrets is still archived byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from archive_support import through, units
from sessionquery.archive import ARCHIVE_FILE, Archive, redacted_form
from sessionquery.sources import ClaudeCodeSource

SECRET = "sk-live-0123456789abcdefABCDEF"
_PATTERN = re.compile(r"sk-live-[0-9A-Za-z]{10,}")


class ToyRedactor:
    """Masks one kind of key, as ``sessionquery.redact`` masks many."""

    def __init__(self, version: str = "1") -> None:
        self.fingerprint = f"toy-{version}"

    def redact(self, text: str) -> str:
        return _PATTERN.sub("[REDACTED:toy-key]", text)

    def redact_json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self.redact_json(item) for item in value]
        if isinstance(value, dict):
            return {key: self.redact_json(item) for key, item in value.items()}
        return value


def _line(uuid: str, text: str) -> bytes:
    record = {
        "type": "user",
        "sessionId": "s-1",
        "uuid": uuid,
        "cwd": "/w",
        "timestamp": "2025-03-07T10:00:00.000Z",
        "message": {"role": "user", "content": text},
    }
    return (json.dumps(record) + "\n").encode()


def test_with_redaction_the_archive_never_holds_the_secret(tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "p"
    projects.mkdir(parents=True)
    leaky = projects / "s-1.jsonl"
    leaky.write_bytes(
        _line("u1", "deploy with key " + SECRET) + b"not json " + SECRET.encode() + b"\n"
    )
    clean = projects / "s-2.jsonl"
    clean.write_bytes(_line("u2", "nothing to hide"))
    root = tmp_path / "projects"
    with Archive(tmp_path / "archive", form=redacted_form(ToyRedactor())) as archive:
        archive.run([units("claude", root)])
        stored = archive.read("claude", root, "p/s-1.jsonl")
        assert stored is not None and SECRET.encode() not in stored
        assert b"[REDACTED:toy-key]" in stored
        assert archive.read("claude", root, "p/s-2.jsonl") == clean.read_bytes()
        assert SECRET.encode() not in (tmp_path / "archive" / ARCHIVE_FILE).read_bytes()
        # A partial last line waits: only whole lines are redacted and stored.
        with leaky.open("ab") as handle:
            handle.write(_line("u3", "another " + SECRET)[:-20])
        archive.run([units("claude", root)])
        assert archive.read("claude", root, "p/s-1.jsonl") == stored
        leaky.unlink()
        source = through(ClaudeCodeSource(root), archive)
        (entry,) = [e for e in source.list() if e.header.id == "s-1"]
        assert entry.archived
        with source.open_read("s-1") as handle:
            events = handle.read()
        text = json.dumps([event.to_json() for event in events])
        assert SECRET not in text and "[REDACTED:toy-key]" in text


def test_a_new_ruleset_stores_the_units_whose_source_exists_again(tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "p"
    projects.mkdir(parents=True)
    (projects / "s-1.jsonl").write_bytes(_line("u1", "key " + SECRET))
    root = tmp_path / "projects"
    with Archive(tmp_path / "archive", form=redacted_form(ToyRedactor("1"))) as first:
        assert first.run([units("claude", root)]).stored == 1
        assert first.run([units("claude", root)]).stored == 0
    with Archive(tmp_path / "archive", form=redacted_form(ToyRedactor("2"))) as second:
        assert second.run([units("claude", root)]).stored == 1
        (unit,) = second.units()
        assert unit.form == "redacted:toy-2"
