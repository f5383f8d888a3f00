"""Go-style duration strings in, compact report strings out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from choragos.durations import format_duration, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("45m", 2700.0),
    ("1h30m", 5400.0),
    ("90s", 90.0),
    ("1h", 3600.0),
    ("500ms", 0.5),
    ("2h0m10s", 7210.0),
    ("1.5h", 5400.0),
    (".5s", 0.5),
    ("1m30s250ms", 90.25),
    ("100us", 1e-4),
    ("100µs", 1e-4),
    ("10ns", 1e-8),
    ("0", 0.0),
    ("0s", 0.0),
    ("+5s", 5.0),
])
def test_parse_accepts_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "message"), [
    ("45x", '"45x" is not a duration (use 45m, 1h30m, 90s)'),
    ("", "an empty string is not a duration"),
    ("-5m", '"-5m" is negative'),
    ("45", '"45" has no unit'),
    ("1.5", '"1.5" has no unit'),
    ("h", '"h" is not a duration'),
    ("1h 30m", '"1h 30m" is not a duration'),
    ("m5", '"m5" is not a duration'),
    ("+", '"+" is not a duration'),
    ("5 m", '"5 m" is not a duration'),
    ("1e3s", '"1e3s" is not a duration'),
])
def test_parse_rejects_with_a_plain_message(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    assert message in str(caught.value)


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(ValueError):
        parse_duration(45)  # type: ignore[arg-type]


@pytest.mark.parametrize(("seconds", "text"), [
    (4320, "1h12m"),
    (4359.9, "1h12m"),
    (7200, "2h"),
    (523, "8m43s"),
    (300, "5m"),
    (52, "52s"),
    (52.4, "52s"),
    (0, "0s"),
    (0.25, "250ms"),
    (0.9999, "1s"),
    (90000, "25h"),
    (-52, "-52s"),
])
def test_format_for_reports(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_format_refuses_nan() -> None:
    with pytest.raises(ValueError):
        format_duration(float("nan"))


@given(st.integers(min_value=0, max_value=10**7))
def test_whole_minutes_and_seconds_round_trip(seconds: int) -> None:
    # Hours drop seconds on purpose, so only the sub-hour part is exact.
    shown = format_duration(seconds)
    expected = seconds if seconds < 3600 else seconds - seconds % 60
    assert parse_duration(shown) == expected
