"""Reading a traffic history (issue 32, item 1): dates read one way, ambiguity refused, gaps named."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.scenario.history_read import DateReading, load_history
from tests.helpers import base_scenario

# 12 months growing 11.9% a month, written on the 5th of each month, day first: 05/01/2025 is
# 5 January. Read month first row by row, the first twelve dates would become 1 May, 1 June …
# (and 13/… invalid), which is how the growth came out 7.2% instead.
RATE = 0.119


def _dayfirst(path, months: int = 12):
    index = pd.date_range("2025-01-05", periods=months, freq=pd.DateOffset(months=1))
    values = [50 * (1 + RATE) ** k for k in range(months)]
    path.write_text("date,rps\n" + "".join(f"{d:%d/%m/%Y},{v:.4f}\n" for d, v in zip(index, values, strict=True)))
    return path


def test_a_day_first_file_is_read_right_with_dayfirst(tmp_path):
    history = load_history(_dayfirst(tmp_path / "t.csv"), DateReading(dayfirst=True))
    assert history.cadence == "monthly"
    assert list(history.starts[:3]) == [pd.Timestamp("2025-01-05"), pd.Timestamp("2025-02-05"),
                                        pd.Timestamp("2025-03-05")]
    assert history.rps.iloc[-1] == pytest.approx(50 * 1.119**11, rel=1e-6)
    same = load_history(tmp_path / "t.csv", DateReading(format="%d/%m/%Y"))
    assert same.rps.equals(history.rps)


def test_the_ambiguous_file_is_refused_naming_the_column_and_a_row(tmp_path):
    path = _dayfirst(tmp_path / "t.csv")
    result = CliRunner().invoke(main, ["fit-demand", str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "date column is ambiguous" in lines[0] and "line 2 ('05/01/2025')" in lines[0]
    assert "2025-05-01 month-first and 2025-01-05 day-first" in lines[0] and "date_order: day_first|month_first" in lines[0]
    fine = CliRunner().invoke(main, ["fit-demand", str(path), "--dayfirst"])
    assert fine.exit_code == 0, fine.output
    assert "12 points, monthly, 2025-01-05 to 2025-12-05" in fine.output


def test_a_day_above_twelve_settles_the_reading_and_says_so(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("date,rps\n" + "".join(f"{d:%d/%m/%Y},{10 + k}\n" for k, d in enumerate(
        pd.date_range("2025-03-10", periods=20, freq="D"))))
    history = load_history(path)
    assert history.starts[0] == pd.Timestamp("2025-03-10") and history.cadence == "daily"
    assert "dates read day-first (the only reading valid for every row)" in history.notes


def test_a_missing_month_is_named_with_its_line(tmp_path):
    path = tmp_path / "t.csv"
    months = [d for d in pd.date_range("2025-01-01", periods=12, freq="MS") if d.month != 5]
    path.write_text("date,rps\n" + "".join(f"{d:%Y-%m-%d},{10 + k}\n" for k, d in enumerate(months)))
    with pytest.raises(ValueError) as caught:
        load_history(path)
    # line 2 is January, so April is line 5 and June line 6
    assert str(caught.value).endswith("line 6: a gap in the monthly history after line 5 (2025-04-01): 2025-05 is "
                                      "missing; add it, or give the history a regular cadence")
    data = base_scenario()
    data["models"][0]["demand"] = {"history": str(path)}
    with pytest.raises(simulator.ScenarioError) as scenario_error:
        simulator.load_scenario(data)
    assert scenario_error.value.path == "models[0].demand.history" and "2025-05 is missing" in str(scenario_error.value)


@pytest.mark.parametrize("rows, message", [
    ("2025-01-01,5\n2025-01-02,6\n2025-01-02,7\n2025-01-03,8\n", "line 4: the date 2025-01-02 repeats line 3's"),
    ("2025-01-01,5\n2025-01-02,0\n2025-01-03,8\n", "line 3: rps must be a positive number, got 0"),
    ("2025-01-01,5\n2025-01-02,-1\n2025-01-03,8\n", "line 3: rps must be a positive number, got -1"),
    ("2025-01-01,5\n2025-01-02,many\n2025-01-03,8\n", "line 3: rps 'many' is not a number"),
    ("2025-01-01,5\nsoon,6\n2025-01-03,8\n", "line 3: 'soon' is not a date as ISO 8601"),
    ("2025-01-01,5\n2025-01-02,6\n2025-01-03,7\n2025-01-05,8\n", "line 5: a gap in the daily history after line 4"),
])
def test_repeats_non_positive_values_bad_cells_and_gaps_are_named_with_their_line(tmp_path, rows, message):
    path = tmp_path / "t.csv"
    path.write_text("date,rps\n" + rows)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_history(path)


@pytest.mark.parametrize("freq, cadence", [("h", "hourly"), ("D", "daily"), ("7D", "weekly"), ("MS", "monthly"),
                                           ("6h", "every 6 hours"), ("15min", "every 15 minutes")])
def test_the_cadence_is_detected_and_said(tmp_path, freq, cadence):
    path = tmp_path / "t.csv"
    index = pd.date_range("2025-01-01", periods=30, freq=freq)
    path.write_text("date,rps\n" + "".join(f"{d.isoformat()},{5 + k}\n" for k, d in enumerate(index)))
    history = load_history(path)
    assert history.cadence == cadence
    assert history.notes[0] == f"30 points, {cadence}, 2025-01-01 to {index[-1]:%Y-%m-%d}"


def test_requests_per_period_become_mean_rates(tmp_path):
    # 86,400 requests a day is 1 req/s; a calendar month of 2,678,400 requests (31 days) too.
    path = tmp_path / "t.csv"
    path.write_text("date,requests\n" + "".join(f"2025-01-{d:02d},86400\n" for d in range(1, 11)))
    assert load_history(path).rps.to_numpy() == pytest.approx(np.ones(10))
    path.write_text("date,requests\n2025-01-01,2678400\n2025-02-01,2419200\n2025-03-01,2678400\n")
    history = load_history(path)
    assert history.rps.to_numpy() == pytest.approx(np.ones(3))
    assert history.rps.index[0] == pd.Timestamp("2025-01-16 12:00")  # the middle of January


def test_with_dayfirst_the_founders_growth_is_the_true_one(tmp_path):
    """The issue's case: the same file read right gives 11.9% a month (the fit's growth)."""
    from simulator.scenario.forecast_spec import HistorySpec
    from simulator.scenario.history_forecast import history_forecast

    path = _dayfirst(tmp_path / "t.csv")
    fitted = history_forecast(HistorySpec(file=str(path), date_order="day_first", change="off"), tmp_path)
    assert fitted.growth_per_month == pytest.approx(RATE, abs=0.002)
    assert math.isfinite(fitted.trend_sd)


def test_edge_cases_of_dates_and_cadence(tmp_path):
    """Month-end dates are monthly; a byte-order mark, two-digit years, basic ISO dates and ISO
    offsets across a clock change read right; a stray date in a daily history, a date off the
    month's day and a row read the other way round under date_order are refused with their line."""
    def write(name, rows, encoding="utf-8"):
        path = tmp_path / name
        path.write_text("date,rps\n" + "".join(f"{d},{10 + k}\n" for k, d in enumerate(rows)), encoding=encoding)
        return path

    ends = write("ends.csv", [f"{d:%Y-%m-%d}" for d in pd.date_range("2025-01-31", periods=12, freq="ME")])
    assert load_history(ends).cadence == "monthly"
    days = pd.date_range("2025-01-02", periods=20)
    assert load_history(write("bom.csv", [f"{d:%Y-%m-%d}" for d in days], "utf-8-sig")).cadence == "daily"
    assert load_history(write("yy.csv", [f"{d:%d/%m/%y}" for d in days])).starts[0] == pd.Timestamp("2025-01-02")
    assert load_history(write("basic.csv", [f"{d:%Y%m%d}" for d in days])).starts[-1] == pd.Timestamp("2025-01-21")
    clock = [f"{d:%Y-%m-%dT%H:%M}+0{1 if d < pd.Timestamp('2025-03-30') else 2}:00"
             for d in pd.date_range("2025-03-20T12:00", periods=20)]
    history = load_history(write("tz.csv", clock))
    assert history.cadence == "daily" and history.starts[0] == pd.Timestamp("2025-03-20T11:00")
    stray = [f"{d:%Y-%m-%d}" for d in days]
    stray.insert(5, "2025-01-06T12:00")
    with pytest.raises(ValueError, match=r"line 7: 2025-01-06 12:00:00 is only 12 hours after line 6, in a daily"):
        load_history(write("stray.csv", stray))
    months = [f"{d:%Y-%m-%d}" for d in pd.date_range("2025-01-01", periods=12, freq="MS")]
    months.insert(3, "2025-03-15")
    with pytest.raises(ValueError, match=r"line 5: 2025-03-15 is not on day 1 of its month"):
        load_history(write("month.csv", months))
    mixed = [f"{d:%d/%m/%Y}" for d in pd.date_range("2025-01-10", periods=3)] + ["01/13/2025"]
    mixed += [f"{d:%d/%m/%Y}" for d in pd.date_range("2025-01-14", periods=5)]
    with pytest.raises(ValueError, match=r"line 5: '01/13/2025' is not a date day-first"):
        load_history(write("mixed.csv", mixed), DateReading(dayfirst=True))
