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


DAY = 86_400.0
MONTH = 365.25 * DAY / 12  # a planning month, 30.4375 days


@pytest.mark.parametrize(("seconds", "text"), [
    (4 * MONTH, "4mo"),  # was "2922h"
    (MONTH, "1mo"),  # a monthly step was "43830min"
    (18 * MONTH, "18mo"), (365.25 * DAY, "1y"), (2 * 365.25 * DAY, "2y"),
    (90 * DAY, "90d"), (365 * DAY, "365d"),  # not a whole number of weeks or months
    (42 * DAY, "6w"), (14 * DAY, "2w"), (7 * DAY, "1w"), (12 * 3600.0, "12h"), (1800.0, "30min"), (45.0, "45s"),
    (-MONTH, "-1mo"), (-7 * DAY, "-1w"),
])
def test_durations_print_in_their_largest_whole_unit(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds  # and read back to the same float


@pytest.mark.parametrize(("seconds", "text"), [(4 * MONTH, "2922h"), (MONTH, "43830min"), (365.25 * DAY, "8766h"),
                                               (42 * DAY, "6w"), (90 * DAY, "90d")])
def test_a_fixed_length_where_months_mean_calendar_months_is_written_without_them(seconds, text):
    assert format_duration(seconds, months=False) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("written", "dumped", "end"), [
    ("2922h", "2922h", "2026-05-02T18:00"),  # a fixed 121.75 days: not "4mo", which would end on 2026-05-01
    ("4mo", "4mo", "2026-05-01"),  # calendar months
    ("12mo", "12mo", "2027-01-01"), ("1y", "1y", "2027-01-01"), ("6w", "6w", "2026-02-12"),
])
def test_a_horizon_length_round_trips_with_its_meaning(written, dumped, end):
    import yaml

    import simulator
    from simulator.scenario import dump_scenario
    from tests.helpers import base_scenario

    scenario = simulator.load_scenario(base_scenario(horizon={"start": "2026-01-01", "duration": written, "step": "1h"}))
    text = dump_scenario(scenario)
    assert yaml.safe_load(text)["horizon"]["duration"] == dumped
    again = simulator.load_scenario(yaml.safe_load(text))
    assert again == scenario and again.horizon.end_time == pd.Timestamp(end)


def test_a_resolved_scenario_writes_month_and_week_durations_in_those_units():
    import yaml

    import simulator
    from simulator.scenario import dump_scenario
    from tests.helpers import base_scenario

    data = base_scenario(horizon={"start": "2026-01-01", "duration": "24mo", "step": "1mo"})
    data["fleet"]["pools"][0]["orders"] = [{"at": "2026-01-02", "count": 8, "lead_time": "4mo",
                                            "slip": {"dist": "exponential", "mean": "3w"}}]
    scenario = simulator.load_scenario(data)
    written = yaml.safe_load(dump_scenario(scenario))
    order = written["fleet"]["pools"][0]["orders"][0]
    assert (written["horizon"]["step"], order["lead_time"], order["slip"]["mean"]) == ("1mo", "4mo", "3w")
    assert simulator.load_scenario(written) == scenario


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
    # "36 steps of 2.6298e+06s" became "36 steps of 30 days 10:30:00", then "36 steps of 1mo".
    from click.testing import CliRunner

    from simulator.cli import main
    from simulator.units import readable_duration

    assert [readable_duration(s) for s in (3600, 900, 1.5, 0.05, 2629800.0, 600_060.0)] == [
        "1h", "15min", "1.5s", "50ms", "1mo", "6 days 22:41:00"]  # 10001min: no count of 10,000 or more
    growth = Path(__file__).parents[1] / "scenarios" / "growth.yaml"
    result = CliRunner().invoke(main, ["validate", str(growth), "--set", "horizon.step=1mo", "--set",
                                       "horizon.duration=36mo", "--set", "variants={}"])
    assert result.exit_code == 0, result.output
    assert "ok: growth: 36 steps of 1mo," in result.stderr
