"""Readable durations and dates, parsed at the edge."""

import datetime as dt

import pandas as pd
import pytest

from simulator.units import UnitError, format_duration, parse_duration, parse_timestamp


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90d", 90 * 86400), ("2h", 7200), ("15min", 900), ("50ms", 0.05), ("1h30min", 5400),
        ("1d12h", 129600), ("3w", 3 * 7 * 86400), ("6mo", 0.5 * 365.25 * 86400),
        ("2y", 2 * 365.25 * 86400), ("18mo", 547.875 * 86400), (3600, 3600.0),
        (dt.timedelta(hours=1), 3600.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("bad", ["1 fortnight", "", "abc", True, None, [1], float("nan"), "nan"])
def test_bad_durations(bad):
    with pytest.raises(UnitError):
        parse_duration(bad)


@pytest.mark.parametrize("seconds", [0.05, 1, 59, 60, 900, 3600, 5400, 86400, 90 * 86400, 547.875 * 86400])
def test_format_round_trips(seconds):
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, rel=1e-12)


def test_timestamps_are_naive_utc():
    assert parse_timestamp("2026-03-01") == pd.Timestamp("2026-03-01")
    assert parse_timestamp("2026-03-01T02:00+02:00") == pd.Timestamp("2026-03-01T00:00")
    assert parse_timestamp(dt.date(2026, 3, 1)) == pd.Timestamp("2026-03-01")
    with pytest.raises(UnitError):
        parse_timestamp("the first of March")
