"""Placeholder: the JSONL store is being written."""

from __future__ import annotations


class JsonlPersistence:  # pragma: no cover - replaced by the real store
    """Placeholder."""

    def __init__(self, root: object) -> None:
        raise NotImplementedError("JsonlPersistence is not written yet")
