"""ISO 8601 timestamps as exact instants, in integer epoch milliseconds.

The one parser for timestamps given as text. Invariants:

* arithmetic is exact and integer: no float ever touches a timestamp, so a millisecond is
  never lost to rounding;
* digits below the millisecond are kept (as text, with trailing zeros dropped), so two
  instants compare exactly however many digits they carry, and a text of any length is
  parsed in linear time (Python's limit on converting long digit strings to ``int`` never
  applies);
* the accepted shape is ``YYYY-MM-DDTHH:MM[:SS[.fraction]]`` followed by ``Z`` or a
  ``±HH:MM`` offset, digits 0-9 only; leap seconds (``:60``) are refused. Options widen it for
  callers that need more (a missing offset meaning UTC, a bare date).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["Instant", "TimestampError", "parse_iso_timestamp"]

_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?"
    r"(Z|[+-]\d{2}:\d{2})?",
    re.ASCII,  # ISO 8601 digits are 0-9; Python's \d would also take other scripts' digits
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS_PER_MINUTE = 60_000


class TimestampError(ValueError):
    """A timestamp text that cannot be parsed.

    Attributes:
        wrong_shape: ``True`` when the text does not have an accepted shape at all, ``False``
            when it has one but names an impossible date, time or offset.
    """

    def __init__(self, message: str, *, wrong_shape: bool) -> None:
        super().__init__(message)
        self.wrong_shape = wrong_shape


@dataclass(frozen=True, slots=True, order=True)
class Instant:
    """An exact instant: whole epoch milliseconds plus the digits below the millisecond.

    Instants order as the moments they name.

    Attributes:
        floor_ms: the instant rounded down to the millisecond (epoch ms, may be negative).
        sub_ms_digits: the decimal digits after the millisecond, without trailing zeros;
            empty when the instant falls exactly on a millisecond.
    """

    floor_ms: int
    sub_ms_digits: str = ""

    @property
    def ceil_ms(self) -> int:
        """The instant rounded up to the millisecond."""
        return self.floor_ms + (1 if self.sub_ms_digits else 0)

    @property
    def is_whole_ms(self) -> bool:
        """Whether the instant falls exactly on a millisecond."""
        return not self.sub_ms_digits


def parse_iso_timestamp(text: str, *, naive_utc: bool = False, allow_date: bool = False) -> Instant:
    """Parse an ISO 8601 timestamp into an exact :class:`Instant`.

    Args:
        text: ``YYYY-MM-DDTHH:MM[:SS[.fraction]]`` with ``Z`` or ``±HH:MM``.
        naive_utc: accept a date-time without offset, as UTC.
        allow_date: accept a bare date ``YYYY-MM-DD``, as midnight UTC (a bare date takes
            no offset).

    Raises:
        TimestampError: (a ``ValueError``) when the text has another shape or names an
            impossible date, time or offset. The message never repeats the text.
    """
    if not isinstance(text, str):
        raise TimestampError("a timestamp must be text", wrong_shape=True)
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise _shape_error("not an ISO 8601 timestamp of the form 2025-01-31T09:30:00Z")
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    if hour is None:
        if not allow_date:
            raise _shape_error("a timestamp needs a time after a T, e.g. 2025-01-31T09:30:00Z")
        if offset is not None:
            raise _shape_error("a bare date takes no offset")
    elif offset is None and not naive_utc:
        raise _shape_error("a timestamp needs Z or a numeric offset such as +01:00")
    if second is not None and int(second) > 59:
        raise _impossible("leap seconds are not accepted")
    try:
        moment = datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
            tzinfo=UTC,
        )  # fmt: skip
    except ValueError:
        raise _impossible("the timestamp names an impossible date or time") from None
    delta = moment - _EPOCH
    whole_ms = (delta.days * 86_400 + delta.seconds) * 1000
    digits = fraction or ""
    floor_ms = whole_ms + int(digits[:3].ljust(3, "0")) - _offset_minutes(offset) * _MS_PER_MINUTE
    return Instant(floor_ms, digits[3:].rstrip("0"))


def _offset_minutes(offset: str | None) -> int:
    if offset is None or offset == "Z":
        return 0
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        raise _impossible("the timestamp's offset is out of range")
    total = hours * 60 + minutes
    return -total if offset[0] == "-" else total


def _shape_error(message: str) -> TimestampError:
    return TimestampError(message, wrong_shape=True)


def _impossible(message: str) -> TimestampError:
    return TimestampError(message, wrong_shape=False)
