"""Forecasts that know what they don't know (issue 32): the fitted model's paths against
statsmodels' own simulation, the change of growth against its truth, bands that cover, and the
forecast in a scenario (widen, prior, regime) worked by hand."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.demand.forecast_paths import forecast_factor
from simulator.scenario.forecast_spec import DemandForecast, ForecastRegime
from simulator.scenario.forecasting.backtest import backtest
from simulator.scenario.forecasting.change import find_change
from simulator.scenario.forecasting.fit import fit_forecast
from simulator.scenario.forecasting.model import log_departures, simulate_ln_rates
from simulator.scenario.horizon import Horizon
from simulator.units import SECONDS_PER_DAY, SECONDS_PER_MONTH
from tests.helpers import base_scenario, run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_forecast import DAYS_PER_MONTH, WEEK, daily_history  # noqa: E402


def _spec(**fields) -> DemandForecast:
    base = dict(origin="2026-01-01", period_s=SECONDS_PER_DAY, alpha=0.2, beta=0.01, gamma=0.05, phi=0.99,
                sigma=0.05, trend=0.001, trend_sd=0.0, season_length=7)
    return DemandForecast(**{**base, **fields})


def test_paths_follow_statsmodels_own_simulation_of_the_fitted_model():
    """Departures from the point forecast drawn by Fleetcast and by statsmodels' ETSResults.simulate
    for the same fitted ETS(A,Ad,A): the same mean and spread at 1, 10 and 60 days (4,000 paths each;
    the standard error of a standard deviation is about 1.1%)."""
    import warnings

    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    history, _ = daily_history(3, "random_walk", days=200)
    y = pd.Series(np.log(history.to_numpy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = ETSModel(y, error="add", trend="add", damped_trend=True, seasonal="add",
                           seasonal_periods=7).fit(disp=False)
    spec = DemandForecast(origin="2026-01-01", period_s=SECONDS_PER_DAY, alpha=results.smoothing_level,
                          beta=results.smoothing_trend, gamma=results.smoothing_seasonal, phi=results.damping_trend,
                          sigma=math.sqrt(results.mse), season_length=7)
    theirs = np.asarray(results.simulate(60, anchor="end", repetitions=4000, rng=np.random.default_rng(1)))
    theirs = theirs - results.forecast(60).to_numpy()[:, None]
    rng = np.random.default_rng(2)
    ours = np.array([log_departures(spec, 60, rng) for _ in range(4000)])
    for h in (0, 9, 59):
        assert ours[:, h].std() == pytest.approx(theirs[h].std(), rel=0.05)
        assert abs(ours[:, h].mean() - theirs[h].mean()) < 4 * theirs[h].std() * math.sqrt(2 / 4000)


def test_widen_scales_every_departure_exactly():
    a = log_departures(_spec(trend_sd=0.0004), 90, np.random.default_rng(5))
    b = log_departures(_spec(trend_sd=0.0004, widen=2.5), 90, np.random.default_rng(5))
    np.testing.assert_allclose(b, 2.5 * a, rtol=1e-12)


def test_a_regime_replaces_the_trend_after_its_date_by_hand():
    """No noise, trend 0.004 a day (12.9% a month), undamped: after 2 months the path grows at 5% a
    month instead, so 100 days out it sits (ln 1.05 / 30.4375 − 0.004) × (100 − 60.875) below the point."""
    regime = ForecastRegime(after_months=2, rate_per_month=0.05)
    spec = _spec(sigma=0.0, phi=1.0, trend=0.004, gamma=0.0, regime=regime)
    departures = log_departures(spec, 120, np.random.default_rng(0))
    at = 2 * SECONDS_PER_MONTH / SECONDS_PER_DAY
    slope = math.log(1.05) / (SECONDS_PER_MONTH / SECONDS_PER_DAY)
    assert departures[59] == 0.0  # h = 60 < 60.875
    assert departures[99] == pytest.approx((slope - 0.004) * (100 - at), rel=1e-12)
    never = log_departures(spec.model_copy(update={"regime": regime.model_copy(update={"probability": 0.0})}), 120,
                           np.random.default_rng(0))
    assert not never.any()


def test_the_factor_is_one_before_the_origin_and_averages_the_days_a_step_spans():
    regime = ForecastRegime(after_months=0, rate_per_month=math.expm1(0.01 * SECONDS_PER_MONTH / SECONDS_PER_DAY))
    spec = _spec(sigma=0.0, phi=1.0, trend=0.0, gamma=0.0, season_length=0, origin="2026-01-03", regime=regime)
    # Departure of day h (h = 1 from 3 January) is 0.01·h: a factor e^(0.01 h) per day.
    horizon = Horizon(start="2026-01-01", duration="6d", step="12h")
    factor = forecast_factor(spec, horizon, np.random.default_rng(0))
    expected = [1, 1, 1, 1, math.exp(0.01), math.exp(0.01), math.exp(0.02), math.exp(0.02), math.exp(0.03),
                math.exp(0.03), math.exp(0.04), math.exp(0.04)]
    np.testing.assert_allclose(factor, expected, rtol=1e-12)
    daily = forecast_factor(spec, Horizon(start="2026-01-02", duration="4d", step="2d"), np.random.default_rng(0))
    np.testing.assert_allclose(daily, [(1 + math.exp(0.01)) / 2, (math.exp(0.02) + math.exp(0.03)) / 2], rtol=1e-12)


def test_growth_and_weekly_cycle_are_recovered_and_the_interval_holds_the_truth():
    """40 synthetic years (12% a month, weekday cycle, σ 0.05): the weekday multipliers within 3%,
    and the 90% growth interval holding 12% in 30 or more (binomial: mean 36, sd 1.9)."""
    hits = 0
    for seed in range(40):
        history, _ = daily_history(seed, "weekly")
        fit = fit_forecast(history, history.index, "daily", pd.Timedelta(days=1))
        hits += fit.growth_interval[0] <= 0.12 <= fit.growth_interval[1]
        truth = np.exp(WEEK) / np.exp(WEEK).mean()
        assert np.max(np.abs(np.asarray(fit.weekly) / truth - 1)) < 0.03
    assert hits >= 30, hits


def test_the_change_date_interval_holds_the_truth_at_its_stated_rate():
    """200 histories slowing from 12% to 5% a month after month 8: the change is found every time and
    its 90% date interval holds the true date in 84-96% (binomial sd 2.1%); 100 histories without a
    change: none found."""
    truth = pd.Timestamp("2025-01-01") + pd.Timedelta(days=8 * DAYS_PER_MONTH)
    found = hits = 0
    for seed in range(200):
        history, _ = daily_history(seed, "slowing")
        change = find_change(history, 7)
        found += change.found
        hits += change.interval[0] <= truth < change.interval[1] + pd.Timedelta(days=1)
    assert found == 200
    assert 0.84 <= hits / 200 <= 0.96, hits
    assert not any(find_change(daily_history(seed, "weekly")[0], 7).found for seed in range(100))


def test_a_wandering_level_is_not_read_as_a_change_of_growth():
    """Random walks with drift (σ 0.02 a day) bend a straight line; against it alone a change was
    "found" in 38 of 40. Against the forecast model without a change too, none of 12 is."""
    found = [fit_forecast(*_daily(daily_history(seed, "random_walk")[0])).change.found for seed in range(12)]
    assert not any(found)


def _daily(history: pd.Series):
    return history, history.index, "daily", pd.Timedelta(days=1)


@pytest.mark.slow
def test_bands_cover_the_held_out_future_and_the_backtest_says_so():
    """30 synthetic years: the 50% and 90% bands of the next 60 days against the truth (pooled), and
    the backtest's coverage on each history's own last months within 5 points of it."""
    in50, in90, back50, back90 = [], [], [], []
    for seed in range(30):
        history, future = daily_history(seed, "weekly")
        fit = fit_forecast(*_daily(history))
        draws = simulate_ln_rates(fit, len(future), 400, np.random.default_rng(seed))
        q05, q25, q75, q95 = np.percentile(draws, [5, 25, 75, 95], axis=0)
        in50.append(np.mean((future >= q25) & (future <= q75)))
        in90.append(np.mean((future >= q05) & (future <= q95)))
        check = backtest(history, "day", SECONDS_PER_DAY, fit.label, holdout=28, origins=5, paths=400, seed=seed)
        back50.append(check.coverage50)
        back90.append(check.coverage90)
    assert 0.85 <= np.mean(in90) <= 0.95 and 0.42 <= np.mean(in50) <= 0.58
    assert abs(np.mean(back90) - np.mean(in90)) <= 0.05 and abs(np.mean(back50) - np.mean(in50)) <= 0.05


def test_the_founders_slowing_history_is_forecast_from_its_change_where_a_straight_line_misses():
    """12 months growing 12% then (after month 8) 5%: the forecast's 90% band at month 24 holds the
    true path's level; a straight line through the whole history puts it far above."""
    history, future = daily_history(11, "slowing", ahead=366)
    fit = fit_forecast(history, history.index, "daily", pd.Timedelta(days=1))
    assert fit.change.found and fit.growth_interval[0] <= 0.05 <= fit.growth_interval[1]
    day = 365  # month 24 from the history's start is day 730
    draws = simulate_ln_rates(fit, 366, 2000, np.random.default_rng(0))
    low, high = np.percentile(draws[:, day], [5, 95])
    assert low <= future[day] <= high
    t = np.arange(len(history), dtype=np.float64)
    slope = np.polyfit(t, np.log(history.to_numpy()), 1)[0]
    assert math.expm1(slope * DAYS_PER_MONTH) > 0.08  # the straight line's growth, a month
    line = np.polyval(np.polyfit(t, np.log(history.to_numpy()), 1), 730.0)
    assert line - future[day] > 3 * (high - low) / 3.29  # several band widths above the truth


def _history_file(tmp_path, seed: int = 4, kind: str = "weekly") -> Path:
    history, _ = daily_history(seed, kind, days=200)
    path = tmp_path / "traffic.csv"
    path.write_text("date,rps\n" + "".join(f"{d:%d/%m/%Y},{v:.6f}\n" for d, v in history.items()))
    return path


def test_a_scenario_forecasts_paths_and_widen_doubles_their_spread(tmp_path):
    path = _history_file(tmp_path, kind="random_walk")  # a wandering level: the band must widen
    data = base_scenario(horizon={"start": "2025-07-20", "duration": "120d", "step": "1d"})
    data["models"][0]["demand"] = {"history": {"file": str(path), "date_order": "day_first"}, "noise": "none"}
    scenario = simulator.load_scenario(data)
    demand = scenario.models[0].demand
    assert demand.forecast is not None and demand.forecast.origin == "2025-07-20T00:00:00"
    assert demand.seasonality.weekly is not None and not scenario.uncertain
    one = run(data, paths=30, seed=3).timeseries.pivot(index="time", columns="path", values="demand_requests")
    data["models"][0]["demand"]["history"]["widen"] = 2.0
    two = run(data, paths=30, seed=3).timeseries.pivot(index="time", columns="path", values="demand_requests")
    # Same seed, noise none: ln(demand / median path) doubles exactly with widen 2.
    expected = np.log(one.to_numpy()) - np.log(one.to_numpy()).mean(axis=1, keepdims=True)
    doubled = np.log(two.to_numpy()) - np.log(two.to_numpy()).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(doubled, 2 * expected, atol=1e-9)
    spread = np.log(one.to_numpy()).std(axis=1)
    assert spread[-1] > 1.5 * spread[0]  # the band widens with the horizon


def test_a_growth_prior_is_combined_with_the_fit_by_precision(tmp_path):
    from simulator.scenario.forecast_spec import HistorySpec
    from simulator.scenario.history_forecast import history_forecast

    path = _history_file(tmp_path)
    plain = history_forecast(HistorySpec(file=str(path), date_order="day_first"), tmp_path)
    judged = history_forecast(HistorySpec(file=str(path), date_order="day_first",
                                          growth_prior={"rate_per_month": 0.05, "sd": 0.01}), tmp_path)
    per_month = SECONDS_PER_MONTH / SECONDS_PER_DAY
    g, s = plain.trend * per_month, plain.trend_sd * per_month
    m0, v0 = math.log(1.05), (0.01 / 1.05) ** 2
    precision = 1 / s**2 + 1 / v0
    assert judged.trend * per_month == pytest.approx((g / s**2 + m0 / v0) / precision, rel=1e-12)
    assert judged.trend_sd * per_month == pytest.approx(precision**-0.5, rel=1e-12)
    assert plain.growth_per_month > judged.growth_per_month > 0.05


def test_history_block_mistakes_are_named(tmp_path):
    path = _history_file(tmp_path)
    data = base_scenario()
    data["models"][0]["demand"] = {"history": {"file": str(path), "date_order": "day_first", "date_format": "%d/%m/%Y"}}
    with pytest.raises(simulator.ScenarioError, match="date_order or date_format, not both"):
        simulator.load_scenario(data)
    data["models"][0]["demand"] = {"history": {"file": str(path), "date_order": "day_first"}, "volatility": {"daily_sigma": 0.1}}
    with pytest.raises(simulator.ScenarioError, match="'volatility' and 'forecast' both draw day-to-day swings"):
        simulator.load_scenario(data)


def test_a_run_with_a_history_reports_the_fitted_model_and_its_backtest(tmp_path):
    import yaml
    from click.testing import CliRunner

    from simulator.cli import main

    _history_file(tmp_path)
    data = base_scenario(horizon={"start": "2025-07-20", "duration": "30d", "step": "1d"})
    data["models"][0]["demand"] = {"history": {"file": "traffic.csv", "date_order": "day_first"}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--paths",
                                       "4", "-q"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "out" / "report.html").read_text()
    section = html[html.index('id="demand-forecast"'):html.index("<h2>Assumptions</h2>")]
    assert "traffic.csv: 200 points, daily, 2025-01-01 to 2025-07-19" in section
    assert "chosen by AICc" in section and "growth now" in section
    assert "backtest (5 origins, 28 periods held out, 140 points)" in section
    resolved = yaml.safe_load((tmp_path / "out" / "scenario.resolved.yaml").read_text())
    assert resolved["models"][0]["demand"]["forecast"]["origin"] == "2025-07-20T00:00:00"


def test_slows_to_five_percent_after_month_six_maybe_is_one_line(tmp_path):
    """``regime: {after_months: U(4, 8), rate_per_month: N(5%, 1%), probability: 0.7}``: each path
    draws its date and rate as uncertain inputs and whether the change happens from its forecast
    stream; with the change, a path grows more slowly a year on."""
    path = _history_file(tmp_path)
    data = base_scenario(horizon={"start": "2025-07-20", "duration": "365d", "step": "1d"})
    regime = {"after_months": {"dist": "uniform", "low": 4, "high": 8},
              "rate_per_month": {"dist": "normal", "mean": 0.05, "sd": 0.01}, "probability": 0.7}
    data["models"][0]["demand"] = {"history": {"file": str(path), "date_order": "day_first", "regime": regime},
                                   "noise": "none"}
    scenario = simulator.load_scenario(data)
    assert set(scenario.uncertain) == {"models[0].demand.forecast.regime.after_months",
                                       "models[0].demand.forecast.regime.rate_per_month"}
    demand = run(data, paths=40, seed=2).timeseries.pivot(index="time", columns="path", values="demand_requests")
    data["models"][0]["demand"]["history"].pop("regime")
    plain = run(data, paths=40, seed=2).timeseries.pivot(index="time", columns="path", values="demand_requests")
    ratio = demand.iloc[-1] / plain.iloc[-1]
    # About 12% a month, then 3-7% from month 4-8: a year on, ((1 + r) / 1.12)^(12 − c) of the
    # path without the change, 0.51 (c = 4, r = 3%) to 0.83 (c = 8, r = 7%). The other paths are
    # unchanged, draw for draw.
    changed = ratio < 0.95
    assert 0.45 <= changed.mean() <= 0.9  # binomial around 0.7 over 40 paths (sd 0.07)
    assert ((ratio[changed] > 0.45) & (ratio[changed] < 0.88)).all()
    np.testing.assert_allclose(ratio[~changed], 1.0, rtol=1e-9)


def test_the_scenarios_expected_demand_is_the_models_own_point_forecast(tmp_path):
    """The demand a scenario runs on, day by day, against statsmodels' forecast of the same ETS form
    fitted to the same ln daily rates (its exp: the median path): within 0.01%. (Before, the weekday
    multipliers were normalised without moving the level, 4% off; and the rate at the origin was
    read half a day early.)"""
    import warnings

    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    from simulator.demand import expected_counts

    path = _history_file(tmp_path)
    data = base_scenario(horizon={"start": "2025-07-20", "duration": "14d", "step": "1d"})
    data["models"][0]["demand"] = {"history": {"file": str(path), "date_order": "day_first", "change": "off"}}
    scenario = simulator.load_scenario(data)
    demand = scenario.models[0].demand
    assert demand.forecast.model.startswith("ETS(A,A,A)")
    history, _ = daily_history(4, "weekly", days=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = ETSModel(pd.Series(np.log(history.round(6).to_numpy())), error="add", trend="add", seasonal="add",
                           seasonal_periods=7).fit(disp=False)
    theirs = np.exp(results.forecast(14).to_numpy())
    ours = expected_counts(demand, scenario.horizon) / SECONDS_PER_DAY
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def test_a_bad_value_beside_a_regime_distribution_is_named_where_it_was_written(tmp_path):
    from click.testing import CliRunner

    from simulator.cli import main

    _history_file(tmp_path)
    text = (Path(__file__).resolve().parent.parent / "scenarios" / "history.yaml").read_text()
    text = text.replace("file: data/assistant_traffic.csv", "file: traffic.csv").replace("probability: 0.5",
                                                                                          "probability: 1.5")
    (tmp_path / "s.yaml").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if "regime:" in row)
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: models[0].demand.history.regime.probability: input should be less than "
                                     f"or equal to 1, got 1.5 (line {line})")
