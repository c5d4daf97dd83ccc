"""Atheris harness: arbitrary bytes as one JSONL event line and as a header line.

Run: ``.venv/bin/python fuzz/fuzz_event.py -max_total_time=60``. Any exception other than
``ValueError`` (from the model) is a finding; so is an event that does not round-trip.
"""

from __future__ import annotations

import json
import sys

import atheris  # type: ignore[import-untyped]  # no stubs published

with atheris.instrument_imports():
    from sessionquery.model import SessionEvent, SessionHeader


def test_one_input(data: bytes) -> None:
    try:
        obj = json.loads(data.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return
    try:
        event = SessionEvent.from_json(obj)
    except ValueError:
        pass
    else:
        assert SessionEvent.from_json(event.to_json()) == event
    try:
        header = SessionHeader.from_json(obj)
    except ValueError:
        pass
    else:
        assert SessionHeader.from_json(header.to_json()) == header


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
