"""Readable durations and dates, parsed at the edge."""

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.units import Seconds, UnitError, format_duration, parse_duration, parse_timestamp


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90d", 90 * 86400), ("2h", 7200), ("15min", 900), ("50ms", 0.05), ("1h30min", 5400),
        ("1d12h", 129600), ("3w", 3 * 7 * 86400), ("6mo", 0.5 * 365.25 * 86400),
        ("2y", 2 * 365.25 * 86400), ("18mo", 547.875 * 86400), (Seconds(3600), 3600.0),
        (dt.timedelta(hours=1), 3600.0), (0, 0.0), ("0", 0.0), (0.0, 0.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("bad", ["1 fortnight", "", "abc", True, None, [1], float("nan"), "nan", 3600, 151.5, "3600",
                                 " 151 "])
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


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
@settings(max_examples=2000, deadline=None)
def test_format_duration_round_trips_to_the_same_float(seconds):
    # A resolved scenario writes its durations with format_duration; reading the file back
    # must give the same seconds to the bit (a lead time of 1000.5 s was written as
    # '1.0005e+06ms', which the reader refused).
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(("seconds", "text"), [(1000.5, "1000.5s"), (17255236.023712, "17255236.023712s"),
                                               (7776000.0, "90d"), (5400.0, "90min"), (0.05, "50ms"), (0.0015, "0.0015s"),
                                               (1e20, "27777777777777776h")])
def test_durations_no_whole_unit_holds_are_written_as_exact_seconds(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("lead_time", ["1000.5s", "16.5d", "0.3h", "123456.789s"])
def test_a_resolved_scenario_with_a_non_round_duration_loads_back_equal(lead_time):
    import yaml

    import simulator
    from simulator.scenario import dump_scenario
    from tests.helpers import base_scenario

    data = base_scenario(horizon={"start": "2026-01-01", "duration": "30d", "step": "1h"})
    data["fleet"]["pools"][0]["orders"] = [{"at": "2026-01-02", "count": 8, "lead_time": lead_time}]
    scenario = simulator.load_scenario(data)
    again = simulator.load_scenario(yaml.safe_load(dump_scenario(scenario)))
    assert again.fleet.pools[0].orders[0].lead_time == scenario.fleet.pools[0].orders[0].lead_time
    assert again == scenario


def test_validate_says_a_month_step_in_days_not_in_exponent_notation():
    # "36 steps of 2.6298e+06s" became "36 steps of 30 days 10:30:00".
    from click.testing import CliRunner

    from simulator.cli import main
    from simulator.units import readable_duration

    assert [readable_duration(s) for s in (3600, 900, 1.5, 0.05, 2629800.0)] == [
        "1h", "15min", "1.5s", "50ms", "30 days 10:30:00"]
    growth = Path(__file__).parents[1] / "scenarios" / "growth.yaml"
    result = CliRunner().invoke(main, ["validate", str(growth), "--set", "horizon.step=1mo", "--set",
                                       "horizon.duration=36mo", "--set", "variants={}"])
    assert result.exit_code == 0, result.output
    assert "ok: growth: 36 steps of 30 days 10:30:00," in result.stderr
