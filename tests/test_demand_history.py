"""Demand from the history a user has (issue 17, item 5): fitted growth with its uncertainty,
``fleetcast fit-demand``, and piecewise curves that must say what follows their last point."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.scenario.history import fit_history, read_history
from simulator.units import SECONDS_PER_MONTH
from tests.helpers import base_scenario, run

MONTHLY = [9, 11, 12, 14, 17, 19, 22, 25, 28, 31, 35, 40]


def _monthly(values, start: str = "2025-01-01") -> pd.Series:
    return pd.Series(values, index=pd.date_range(start, periods=len(values), freq="MS"), dtype=float)


def _write(path, values, column: str = "rps", start: str = "2025-01-01"):
    series = _monthly(values, start)
    path.write_text(f"date,{column}\n" + "".join(f"{d:%Y-%m-%d},{v}\n" for d, v in series.items()))
    return path


def test_twelve_monthly_points_grow_about_14_percent_a_month():
    # ln(40 / 9) / 11 months = 0.1356 from the end points; least squares over all twelve gives
    # e^0.1338 - 1 = 14.3% a month.
    fit = fit_history(_monthly(MONTHLY))
    assert fit.kind == "exponential"
    assert fit.rate_per_month == pytest.approx(0.143, abs=0.005)
    assert fit.rate_interval[0] < fit.rate_per_month < fit.rate_interval[1]


def test_the_stated_interval_covers_the_true_rate_as_often_as_it_says():
    # 200 synthetic histories: 24 months of 8% compound growth with lognormal noise (sd 0.1).
    # The 90% interval must hold the true rate in at least 85% of them (binomial sd 2.1%).
    rng = np.random.default_rng(17)
    index = pd.date_range("2024-01-01", periods=24, freq="MS")
    months = (index - index[0]).total_seconds().to_numpy() / SECONDS_PER_MONTH
    hits = 0
    for _ in range(200):
        rps = 50 * 1.08**months * np.exp(rng.normal(0, 0.1, len(index)))
        fit = fit_history(pd.Series(rps, index=index))
        hits += fit.rate_interval[0] <= 0.08 <= fit.rate_interval[1]
    assert hits >= 170, hits


def test_a_history_that_saturates_is_fitted_as_logistic():
    # 50 / (1 + 9 e^(-0.5 m)): from 5 req/s to a ceiling of 50, with 2% noise.
    rng = np.random.default_rng(3)
    months = np.arange(36.0)
    rps = 50 / (1 + 9 * np.exp(-0.5 * months)) * np.exp(rng.normal(0, 0.02, len(months)))
    fit = fit_history(pd.Series(rps, index=pd.date_range("2023-01-01", periods=36, freq="MS")))
    assert fit.kind == "logistic"
    assert fit.ceiling_rps == pytest.approx(50, rel=0.1)
    assert math.log1p(fit.rate_per_month) == pytest.approx(0.5, abs=0.1)


def test_requests_per_period_are_a_mean_rate_at_the_periods_middle(tmp_path):
    # Exact 15% a month (continuous in time): the requests of each calendar month are the
    # integral of 40 x 1.15^m req/s over it. Read as requests, each month's mean rate sits at
    # its middle, so the fit recovers 15% and the rate at 2026-01-01 (40 x 1.15^12) closely.
    index = pd.date_range("2025-01-01", periods=13, freq="MS")
    months = (index - index[0]).total_seconds().to_numpy() / SECONDS_PER_MONTH
    b = math.log(1.15)
    integral = 40 * np.exp(b * months) / b * SECONDS_PER_MONTH  # ∫ 40 e^(b m) dt, t in seconds
    requests = np.diff(integral)
    path = tmp_path / "req.csv"
    path.write_text("date,requests\n" + "".join(f"{d:%Y-%m-%d},{v}\n" for d, v in zip(index[:-1], requests, strict=True)))
    fit = fit_history(read_history(path))
    assert fit.rate_per_month == pytest.approx(0.15, abs=0.002)
    assert fit.rps_at(pd.Timestamp("2026-01-01")) == pytest.approx(40 * 1.15**months[-1], rel=0.01)


def test_a_scenario_with_history_forecasts_from_the_fit_with_an_uncertain_rate(tmp_path):
    history = _write(tmp_path / "traffic.csv", MONTHLY)
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1d"})
    data["models"][0]["demand"] = {"history": str(history), "noise": "none"}
    scenario = simulator.load_scenario(data)
    fit = fit_history(_monthly(MONTHLY))
    demand = scenario.models[0].demand
    assert demand.base_rps == pytest.approx(fit.rps_at(pd.Timestamp("2026-01-01")))
    assert demand.growth.rate_per_month == pytest.approx(fit.rate_per_month)
    spread = scenario.uncertain["models[0].demand.growth.rate_per_month"]
    assert spread.mean == pytest.approx(fit.rate_per_month) and spread.sd == pytest.approx(fit.rate_se)
    # The forecast's bands widen with the horizon: the spread of the last day over the first.
    result = run(data, paths=40)
    demand = result.timeseries.pivot(index="time", columns="path", values="demand_requests")
    first, last = demand.iloc[0], demand.iloc[-1]
    assert (last.std() / last.mean()) > 3 * (first.std() / first.mean())


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
    result = CliRunner().invoke(main, ["fit-demand", str(path), "--start", "2026-01-01"])
    assert result.exit_code == 0, result.output
    assert "14.31% a month" in result.output and "90% interval" in result.output
    assert "kind: exponential" in result.output and "dist: normal" in result.output
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


def test_a_history_too_noisy_for_growth_is_refused_and_starts_are_read_as_dates_or_offsets(tmp_path):
    # 10, 3, 12 req/s: the rate's standard error (about 80% a month) would draw rates below -100%.
    data = base_scenario()
    data["models"][0]["demand"] = {"history": str(_write(tmp_path / "noisy.csv", [10, 3, 12]))}
    with pytest.raises(simulator.ScenarioError, match="too short or noisy"):
        simulator.load_scenario(data)
    # A demand start given as an offset: base_rps is the fit at the horizon's start + 30 days.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "60d", "step": "1d"})
    data["models"][0]["demand"] = {"history": str(_write(tmp_path / "t.csv", MONTHLY)), "start": "30d"}
    fit = fit_history(_monthly(MONTHLY))
    assert simulator.load_scenario(data).models[0].demand.base_rps == pytest.approx(fit.rps_at(pd.Timestamp("2026-01-31")))
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
