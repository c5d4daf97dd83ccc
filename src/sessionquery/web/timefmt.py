"""Times as the viewer shows them: UTC, ISO 8601, from epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso_time"]


def iso_time(ms: int, *, short: bool = False) -> str:
    """``ms`` (epoch milliseconds) as ``2025-03-07T09:00:00.000Z`` (``short``:
    ``2025-03-07 09:00``); out-of-range values are shown as the number."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    if short:
        return moment.strftime("%Y-%m-%d %H:%M")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
