"""The value types of the command line's options: each turns one argument into a checked
value, or raises ``argparse.ArgumentTypeError`` with the words the usage error prints (the
same words for every bad integer: ``--limit 0`` and ``--limit abc`` read alike).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessionquery.model.timestamp import Instant

__all__ = [
    "WINDOW_MAX",
    "non_negative",
    "port",
    "positive",
    "since",
    "until",
    "window",
    "workspace",
]


def _integer(text: str, minimum: int, wanted: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {wanted}, not {text!r}")
    return value


def non_negative(text: str) -> int:
    return _integer(text, 0, "a non-negative integer")


def positive(text: str) -> int:
    return _integer(text, 1, "a positive integer")


WINDOW_MAX = 50
"""The most neighbours ``read --before/--after`` shows on each side (the service's limit)."""


def window(text: str) -> int:
    value = _integer(text, 0, f"a number of events from 0 to {WINDOW_MAX}")
    if value > WINDOW_MAX:
        raise argparse.ArgumentTypeError(
            f"expected a number of events from 0 to {WINDOW_MAX}, not {text!r}"
        )
    return value


def _instant(text: str) -> Instant:
    """An ISO 8601 date or date-time (UTC when it has no offset), exactly."""
    from sessionquery.model.timestamp import TimestampError, parse_iso_timestamp

    try:
        return parse_iso_timestamp(text, naive_utc=True, allow_date=True)
    except TimestampError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 date or time such as 2025-03-07 or 2025-03-07T09:30Z, "
            f"not {text!r}"
        ) from None


def workspace(text: str) -> str:
    """A workspace filter as sessions record their cwd: absolute, ``.``/``..`` and a trailing
    ``/`` resolved away (symlinks are kept: a recorded cwd keeps them too)."""
    return os.path.normpath(os.path.abspath(os.path.expanduser(text)))


def since(text: str) -> int:
    """The first epoch millisecond at or after the instant (inclusive lower bound)."""
    return _instant(text).ceil_ms


def until(text: str) -> int:
    """The last epoch millisecond at or before the instant (inclusive upper bound)."""
    return _instant(text).floor_ms


def port(text: str) -> int:
    value = non_negative(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number up to 65535, not {text!r}")
    return value
