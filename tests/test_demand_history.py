"""Demand from the history a user has (issues 17 and 32): the forecast a history gives in a
scenario, ``fleetcast fit-demand``, and piecewise curves that must say what follows their last point."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.scenario.history import read_history
from simulator.units import SECONDS_PER_MONTH
from tests.helpers import base_scenario, run

MONTHLY = [9, 11, 12, 14, 17, 19, 22, 25, 28, 31, 35, 40]


def _monthly(values, start: str = "2025-01-01") -> pd.Series:
    return pd.Series(values, index=pd.date_range(start, periods=len(values), freq="MS"), dtype=float)


def _write(path, values, column: str = "rps", start: str = "2025-01-01"):
    series = _monthly(values, start)
    path.write_text(f"date,{column}\n" + "".join(f"{d:%Y-%m-%d},{v}\n" for d, v in series.items()))
    return path


def _forecast(path, **options):
    from simulator.scenario.forecast_spec import HistorySpec
    from simulator.scenario.history_forecast import history_forecast

    return history_forecast(HistorySpec(file=str(path), **options), path.parent)


def test_twelve_monthly_points_grow_about_14_percent_a_month(tmp_path):
    # ln(40 / 9) / 11 months = 0.1356 from the end points; the fitted trend at the end is about
    # 11-14% a month (a damped trend wins by more than 2 AICc on these points), and its interval
    # holds the end points' 14.5%.
    fitted = _forecast(_write(tmp_path / "t.csv", MONTHLY), change="off")
    assert 0.10 < fitted.growth_per_month < 0.15
    summary = fitted.summary()
    low, high = summary["growth_interval"]
    assert low < fitted.growth_per_month < high


def test_a_history_that_saturates_is_forecast_to_bend(tmp_path):
    # 50 / (1 + 9 e^(-0.5 m)): from 5 req/s to a ceiling of 50 over 36 months, with 2% noise. A
    # damped trend wins; a year ahead the median stays near the ceiling instead of compounding the
    # average growth of the history (which would put it at 5 x 1.066^48, about 109 req/s).
    rng = np.random.default_rng(3)
    months = np.arange(36.0)
    rps = 50 / (1 + 9 * np.exp(-0.5 * months)) * np.exp(rng.normal(0, 0.02, len(months)))
    path = tmp_path / "t.csv"
    path.write_text("date,rps\n" + "".join(f"{d:%Y-%m-%d},{v}\n" for d, v in zip(
        pd.date_range("2023-01-01", periods=36, freq="MS"), rps, strict=True)))
    fitted = _forecast(path, change="off")
    assert fitted.fit.label == "ETS(A,Ad,N)" and fitted.fit.phi < 1
    assert 45 < math.exp(fitted.ln_rate(pd.Timestamp("2027-01-01"))) < 60


def test_requests_per_period_are_a_mean_rate_at_the_periods_middle(tmp_path):
    # Exact 15% a month (continuous in time): the requests of each calendar month are the
    # integral of 40 x 1.15^m req/s over it; read as requests, each month's mean rate sits at
    # its middle: exactly 40 b (e^(b(m+1)) - e^(b m)) / b / month, as a rate.
    index = pd.date_range("2025-01-01", periods=13, freq="MS")
    months = (index - index[0]).total_seconds().to_numpy() / SECONDS_PER_MONTH
    b = math.log(1.15)
    integral = 40 * np.exp(b * months) / b * SECONDS_PER_MONTH  # ∫ 40 e^(b m) dt, t in seconds
    requests = np.diff(integral)
    path = tmp_path / "req.csv"
    path.write_text("date,requests\n" + "".join(f"{d:%Y-%m-%d},{v}\n" for d, v in zip(index[:-1], requests, strict=True)))
    rates = read_history(path)
    seconds = (index[1:] - index[:-1]).total_seconds().to_numpy()
    np.testing.assert_allclose(rates.to_numpy(), requests / seconds, rtol=1e-12)
    fitted = _forecast(path, change="off")
    assert fitted.growth_per_month == pytest.approx(0.15, abs=0.01)
    # The rate at the history's end (2026-01-01) is 40 x 1.15^12: December's mean rate sits at its
    # middle, half a month of growth before it.
    assert math.exp(fitted.ln_rate(pd.Timestamp("2026-01-01"))) == pytest.approx(40 * 1.15**months[-1], rel=0.01)


def test_a_scenario_with_history_forecasts_from_the_fit(tmp_path):
    history = _write(tmp_path / "traffic.csv", MONTHLY)
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1d"})
    data["models"][0]["demand"] = {"history": str(history), "noise": "none"}
    scenario = simulator.load_scenario(data)
    fitted = _forecast(history)
    demand = scenario.models[0].demand
    expected = math.exp(fitted.ln_rate(pd.Timestamp("2026-01-01")))
    rate = demand.base_rps if demand.base_rps is not None else demand.growth.points[0].rps
    assert rate == pytest.approx(expected)
    assert demand.forecast.model == fitted.fit.description and not scenario.uncertain
    # Each path draws its own demand path: the days differ between paths.
    result = run(data, paths=20)
    demand = result.timeseries.pivot(index="time", columns="path", values="demand_requests")
    assert demand.iloc[-1].std() > 0


def test_history_and_growth_are_one_or_the_other(tmp_path):
    data = base_scenario()
    data["models"][0]["demand"] = {"history": str(_write(tmp_path / "t.csv", MONTHLY)), "base_rps": 3}
    with pytest.raises(simulator.ScenarioError) as caught:
        simulator.load_scenario(data)
    assert caught.value.path == "models[0].demand.history" and "give one or the other" in str(caught.value)
    data["models"][0]["demand"] = {"history": str(tmp_path / "missing.csv")}
    with pytest.raises(simulator.ScenarioError, match="cannot read"):
        simulator.load_scenario(data)


def test_fit_demand_prints_the_fit_and_the_block(tmp_path):
    path = _write(tmp_path / "traffic.csv", MONTHLY)
    result = CliRunner().invoke(main, ["fit-demand", str(path), "--start", "2026-01-01", "--backtest"])
    assert result.exit_code == 0, result.output
    assert "12 points, monthly, 2025-01-01 to 2025-12-01" in result.output
    assert "chosen by AICc" in result.output and "growth now" in result.output and "90% interval" in result.output
    assert "backtest (" in result.output and "90% band" in result.output
    assert "forecast:" in result.output and "origin: '2026-01-01T00:00:00'" in result.output
    bad = CliRunner().invoke(main, ["fit-demand", str(tmp_path / "none.csv")])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1


def _piecewise(extrapolate=None) -> dict:
    data = base_scenario()
    growth = {"kind": "piecewise", "points": [{"at": "0h", "rps": 1}, {"at": "10h", "rps": 2}]}
    if extrapolate:
        growth["extrapolate"] = extrapolate
    data["models"][0]["demand"] = {"noise": "none", "growth": growth}
    return data


def test_a_piecewise_curve_must_say_what_follows_its_last_point():
    with pytest.raises(simulator.ScenarioError) as caught:
        simulator.load_scenario(_piecewise())
    assert caught.value.path == "models[0].demand.growth"
    assert "extrapolate: hold" in str(caught.value)
    # hold: 2 req/s after 10 h. trend: the last segment doubled in 10 h, so the rate goes on
    # doubling every 10 h: at the middle of step 12 (12.5 h) 2 x 2^0.25 req/s.
    held = run(_piecewise("hold")).timeseries["demand_requests"].to_numpy()
    assert held[12] == pytest.approx(2 * 3600)
    trend = run(_piecewise("trend")).timeseries["demand_requests"].to_numpy()
    assert trend[12] == pytest.approx(2 * 2**0.25 * 3600)
    assert trend[:10].tolist() == held[:10].tolist()


def test_a_history_too_short_is_refused_and_starts_are_read_as_dates_or_offsets(tmp_path):
    data = base_scenario()
    data["models"][0]["demand"] = {"history": str(_write(tmp_path / "short.csv", [10, 3, 12]))}
    with pytest.raises(simulator.ScenarioError, match="3 months of history; a forecast needs at least 8"):
        simulator.load_scenario(data)
    # A demand start given as an offset: the rate is the forecast's at the horizon's start + 30 days.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "60d", "step": "1d"})
    data["models"][0]["demand"] = {"history": str(_write(tmp_path / "t.csv", MONTHLY)), "start": "30d"}
    demand = simulator.load_scenario(data).models[0].demand
    rate = demand.base_rps if demand.base_rps is not None else demand.growth.points[0].rps
    assert rate == pytest.approx(math.exp(_forecast(tmp_path / "t.csv").ln_rate(pd.Timestamp("2026-01-31"))))
    bad = CliRunner().invoke(main, ["fit-demand", str(tmp_path / "t.csv"), "--start", "soon"])
    assert bad.exit_code == 2 and "not a date" in bad.output


def test_a_trend_needs_a_rising_last_segment_to_follow():
    data = _piecewise("trend")
    data["models"][0]["demand"]["growth"]["points"][0]["rps"] = 0
    data["models"][0]["demand"]["growth"]["points"][1]["at"] = "1h"
    data["models"][0]["demand"]["growth"]["points"].insert(0, {"at": "0h", "rps": 5})
    data["models"][0]["demand"]["growth"]["points"][1]["at"] = "30min"
    with pytest.raises(simulator.ScenarioError, match="trend needs"):
        simulator.load_scenario(data)
