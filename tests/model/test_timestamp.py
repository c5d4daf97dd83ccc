"""ISO 8601 timestamps as exact instants (sessionquery.model.timestamp)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.model.timestamp import Instant, TimestampError, parse_iso_timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BASE = 1_738_315_800_000  # 2025-01-31T09:30:00.000Z


def test_offsets_and_optional_seconds_give_the_same_instant() -> None:
    for text in (
        "2025-01-31T09:30Z",
        "2025-01-31T09:30:00Z",
        "2025-01-31T10:30:00+01:00",
        "2025-01-31T04:00:00.000-05:30",
    ):
        assert parse_iso_timestamp(text) == Instant(BASE)


def test_digits_below_the_millisecond_are_kept_exactly_without_trailing_zeros() -> None:
    instant = parse_iso_timestamp("2025-01-31T09:30:00.1234500Z")
    assert instant == Instant(BASE + 123, "45")
    assert (instant.floor_ms, instant.ceil_ms, instant.is_whole_ms) == (
        BASE + 123,
        BASE + 124,
        False,
    )
    whole = parse_iso_timestamp("2025-01-31T09:30:00.1230000Z")
    assert (whole.floor_ms, whole.ceil_ms, whole.is_whole_ms) == (BASE + 123, BASE + 123, True)


def test_instants_order_exactly_whatever_their_number_of_digits() -> None:
    texts = [
        "2025-01-31T09:30:00.0005Z",
        "2025-01-31T09:30:00.00049999999999999Z",
        "2025-01-31T09:30:00.0009Z",
        "2025-01-31T09:30:00.001Z",
        "2025-01-31T09:30:00.00100000001Z",
    ]
    instants = [parse_iso_timestamp(text) for text in texts]
    assert sorted(instants) == [instants[1], instants[0], instants[2], instants[3], instants[4]]


def test_a_fraction_of_thousands_of_digits_parses_in_linear_time_without_int_limits() -> None:
    instant = parse_iso_timestamp("2025-01-31T09:30:00." + "7" * 100_000 + "Z")
    assert instant.floor_ms == BASE + 777
    assert instant.sub_ms_digits == "7" * (100_000 - 3)


def test_times_before_the_epoch_floor_towards_the_past() -> None:
    instant = parse_iso_timestamp("1969-12-31T23:59:59.9995Z")
    assert (instant.floor_ms, instant.ceil_ms) == (-1, 0)


@pytest.mark.parametrize(
    "text",
    [
        "2025-01-31",
        "2025-01-31 09:30:00Z",
        "2025-01-31T09:30:00",
        "2025-01-31T09:30:00+0100",
        "2025-01-31t09:30:00z",
        "\uff12025-01-31T09:30:00Z",
        "2025-01-31T09:30:00.\u0661Z",
        "1738315800000",
    ],
)
def test_other_shapes_are_refused_as_wrong_shape(text: str) -> None:
    with pytest.raises(TimestampError) as caught:
        parse_iso_timestamp(text)
    assert caught.value.wrong_shape


@pytest.mark.parametrize(
    "text",
    [
        "2025-02-30T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "2025-01-01T24:00:00Z",
        "2025-01-01T00:00:60Z",
        "2025-01-01T00:00:00+24:00",
        "2025-01-01T00:00:00+01:60",
    ],
)
def test_impossible_dates_times_and_offsets_are_refused(text: str) -> None:
    with pytest.raises(TimestampError) as caught:
        parse_iso_timestamp(text)
    assert not caught.value.wrong_shape
    assert isinstance(caught.value, ValueError)


def test_options_accept_a_missing_offset_as_utc_and_a_bare_date_as_midnight() -> None:
    assert parse_iso_timestamp("2025-01-31T09:30:00", naive_utc=True) == Instant(BASE)
    midnight = int((datetime(2025, 1, 31, tzinfo=UTC) - EPOCH) / timedelta(milliseconds=1))
    assert parse_iso_timestamp("2025-01-31", allow_date=True) == Instant(midnight)
    with pytest.raises(TimestampError):
        parse_iso_timestamp("2025-01-31+01:00", allow_date=True)


def test_a_non_text_value_is_refused() -> None:
    with pytest.raises(TimestampError):
        parse_iso_timestamp(1738315800000)  # type: ignore[arg-type]


@given(
    st.datetimes(
        min_value=datetime(1, 1, 1),  # noqa: DTZ001 - hypothesis bounds are naive
        max_value=datetime(9999, 12, 31),  # noqa: DTZ001
        timezones=st.just(UTC),
    ),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_any_moment_in_any_offset_parses_to_its_exact_epoch_milliseconds(
    moment: datetime, offset_minutes: int
) -> None:
    local = moment + timedelta(minutes=offset_minutes)
    if not datetime(1, 1, 1, tzinfo=UTC) <= local.replace(tzinfo=UTC) or local.year > 9999:
        return
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    text = (
        f"{local.year:04d}"
        + local.strftime("-%m-%dT%H:%M:%S.%f")
        + f"{sign}{hours:02d}:{minutes:02d}"
    )
    instant = parse_iso_timestamp(text)
    exact_us = (moment - EPOCH) // timedelta(microseconds=1)
    assert instant.floor_ms == exact_us // 1000
    assert instant.ceil_ms == -(-exact_us // 1000)
