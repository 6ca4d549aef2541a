"""Rental rates that move: the mean-reverting process with jumps against its closed forms, and
rent booked in a month at that month's rate."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.path.markets import rate_path
from simulator.scenario import ScenarioError
from simulator.scenario.markets import RentProcess
from tests.helpers import base_scenario, run

DRAWS = 10_000


def test_the_log_rate_settles_to_its_closed_form_mean_and_variance():
    # a = exp(-κ/12), s² = σ²(1 − a²)/(2κ); per month Poisson(λ/12) jumps of N(μ, σ_J²).
    # Stationary: mean θ + (λ/12)μ/(1 − a), variance (s² + (λ/12)(σ_J² + μ²)) / (1 − a²).
    process = RentProcess(long_run_usd=2.2, reversion_per_year=2.0, volatility_per_year=0.35, jumps_per_year=3.0,
                          jump_mean=0.12, jump_sd=0.08)
    rng = np.random.default_rng(11)
    last = np.log([rate_path(process, 1.7, 121, rng)[-1] for _ in range(DRAWS)])  # 10 years: settled (a¹²⁰ ≈ 2e-9)
    a = math.exp(-2.0 / 12)
    s2 = 0.35 ** 2 * (1 - a * a) / (2 * 2.0)
    lam = 3.0 / 12
    mean = math.log(2.2) + lam * 0.12 / (1 - a)
    variance = (s2 + lam * (0.08 ** 2 + 0.12 ** 2)) / (1 - a * a)
    assert last.mean() == pytest.approx(mean, abs=4 * math.sqrt(variance / DRAWS))
    centred = last - last.mean()
    se_var = math.sqrt((np.mean(centred ** 4) - np.mean(centred ** 2) ** 2) / DRAWS)  # the sample variance's SE
    assert last.var() == pytest.approx(variance, abs=4 * se_var)


def test_jumps_come_at_their_yearly_rate():
    # Without diffusion and with fixed jumps of +0.1, each month's residual x' − a·x − (1 − a)θ
    # is 0.1 × the month's jump count: Poisson(λ/12) with λ = 6, so P(a month jumps) = 1 − e^(−0.5).
    process = RentProcess(long_run_usd=2.0, reversion_per_year=1.5, volatility_per_year=0.0, jumps_per_year=6.0,
                          jump_mean=0.1, jump_sd=0.0)
    rng = np.random.default_rng(5)
    a, theta = math.exp(-1.5 / 12), math.log(2.0)
    counts = []
    for _ in range(DRAWS // 10):
        x = np.log(rate_path(process, 2.0, 13, rng))
        counts.extend(np.rint((x[1:] - a * x[:-1] - (1 - a) * theta) / 0.1))
    counts = np.array(counts)  # 12,000 months
    assert counts.mean() == pytest.approx(0.5, abs=4 * math.sqrt(0.5 / len(counts)))
    p = 1 - math.exp(-0.5)
    assert (counts > 0).mean() == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / len(counts)))


def _rented(market: dict) -> dict:
    data = base_scenario()
    data["horizon"] = {"start": "2026-01-15", "duration": "140d", "step": "1h"}
    data["fleet"]["pools"].append({"name": "r", "gpu": "H100", "count": 4,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.0}})
    data["markets"] = {"rent": [{"pool": "r", **market}]}
    return data


def _booked_rates(results) -> pd.Series:
    pools = results.pools
    rented = pools[pools["pool"] == "r"]
    monthly = rented.assign(month=rented["time"].dt.to_period("M").dt.start_time).groupby("month")
    return monthly["cost_cloud_usd"].sum() / (4 * monthly.size())  # USD per GPU-hour (hourly steps)


def test_rent_booked_in_a_month_is_that_months_drawn_rate():
    market = {"process": {"long_run_usd": 3.0, "reversion_per_year": 2.0, "volatility_per_year": 0.3,
                          "jumps_per_year": 4.0, "jump_mean": 0.1, "jump_sd": 0.05}}
    results = run(_rented(market), paths=3)
    for path in range(3):
        drawn = results.market_rates[results.market_rates["path"] == path].set_index("month")["usd_per_gpu_hour"]
        pools = results.pools[results.pools["path"] == path]
        rented = pools[pools["pool"] == "r"]
        monthly = rented.assign(month=rented["time"].dt.to_period("M").dt.start_time).groupby("month")
        per_hour = monthly["cost_cloud_usd"].sum() / (4 * monthly.size())
        assert np.allclose(per_hour.to_numpy(), drawn.to_numpy(), rtol=1e-12)
        assert drawn.iloc[0] == 2.0  # the first month at the pool's own rate
    assert results.market_rates.groupby("month")["usd_per_gpu_hour"].nunique().iloc[1:].min() == 3  # paths differ


def test_dated_points_set_the_rate_from_the_first_month_they_cover():
    # From 2026-03-01 $2.60, from 2026-04-10 (taking effect in May) $1.90; before: the pool's $2.00.
    market = {"points": [{"at": "2026-03-01", "usd_per_gpu_hour": 2.6}, {"at": "2026-04-10", "usd_per_gpu_hour": 1.9}]}
    results = run(_rented(market), paths=1)
    assert np.allclose(_booked_rates(results).to_numpy(), [2.0, 2.0, 2.6, 2.6, 1.9, 1.9], rtol=1e-12)


def test_a_market_on_an_owned_pool_is_refused():
    data = _rented({"points": [{"at": "2026-03-01", "usd_per_gpu_hour": 2.6}]})
    data["markets"]["rent"][0]["pool"] = "a"
    with pytest.raises(ScenarioError, match="on-demand and spot"):
        simulator.load_scenario(data)


def test_a_gpu_is_paid_and_depreciated_at_the_price_of_the_month_it_lands():
    # The pool's price is $30,000 until March, $20,000 from April 1. 12 GPUs ordered on day 0
    # land on day 100 (2026-04-11): capex 12 × $20,000, depreciated over 5 years from then;
    # the 8 GPUs bought at the start cost $30,000 each.
    data = base_scenario()
    data["horizon"] = {"start": "2026-01-01", "duration": "181d", "step": "1d"}
    pool = data["fleet"]["pools"][0]
    pool["acquisition"] = {"type": "owned", "price_usd": 30_000, "depreciation_years": 5}
    pool["orders"] = [{"at": "2026-01-01", "count": 12, "lead_time": "100d"}]
    data["markets"] = {"purchase": [{"pool": "a", "points": [{"at": "2026-04-01", "usd": 20_000}]}]}
    results = run(data, paths=1)
    pnl = results.pnl.set_index("month")
    assert pnl.loc["2026-01-01", "capex_usd"] == pytest.approx(8 * 30_000)
    assert pnl.loc["2026-04-01", "capex_usd"] == pytest.approx(12 * 20_000)
    life_days = 5 * 365.25
    may = 31 * (8 * 30_000 + 12 * 20_000) / life_days
    assert pnl.loc["2026-05-01", "depreciation_amortization_usd"] == pytest.approx(may, rel=1e-9)
    prices = results.market_rates.set_index("month")["usd_per_gpu"]
    assert list(prices) == [30_000, 30_000, 30_000, 20_000, 20_000, 20_000]


def _api_only(market: dict) -> dict:
    # Everything served by the API: 4 req/s of 1,000 input and 200 output tokens at $1 and $4 per
    # 1M: $0.0018 a request, 4 × 3,600 × $0.0018 = $25.92 an hour at the prices as written.
    data = base_scenario()
    data["horizon"] = {"start": "2026-01-15", "duration": "140d", "step": "1h"}
    data["models"][0]["api"] = {"mode": "all", "input_usd_per_1m": 1.0, "output_usd_per_1m": 4.0}
    data["markets"] = {"api": [{"model": "m", **market}]}
    return data


def _api_per_hour(results) -> pd.Series:
    ts = results.timeseries
    monthly = ts.assign(month=ts["time"].dt.to_period("M").dt.start_time).groupby("month")
    return monthly["cost_api_usd"].sum() / monthly.size()


def test_api_prices_move_by_the_month_from_dated_points():
    # From 2026-03-01 half the prices, from 2026-04-10 (taking effect in May) 1.2 times them.
    market = {"points": [{"at": "2026-03-01", "share": 0.5}, {"at": "2026-04-10", "share": 1.2}]}
    per_hour = _api_per_hour(run(_api_only(market), paths=1))
    assert np.allclose(per_hour.to_numpy(), 25.92 * np.array([1, 1, 0.5, 0.5, 1.2, 1.2]), rtol=1e-9)


def test_api_prices_booked_follow_the_drawn_process_and_are_in_markets_parquet():
    market = {"process": {"long_run_usd": 0.6, "reversion_per_year": 3.0, "volatility_per_year": 0.4}}
    results = run(_api_only(market), paths=2)
    for path in range(2):
        drawn = results.market_rates[(results.market_rates["path"] == path) & (results.market_rates["kind"] == "api")]
        assert (drawn["model"] == "m").all() and drawn["pool"].isna().all()
        ts = results.timeseries[results.timeseries["path"] == path]
        monthly = ts.assign(month=ts["time"].dt.to_period("M").dt.start_time).groupby("month")
        per_hour = monthly["cost_api_usd"].sum() / monthly.size()
        assert np.allclose(per_hour.to_numpy(), 25.92 * drawn["api_price_share"].to_numpy(), rtol=1e-9)
        assert drawn["api_price_share"].iloc[0] == 1.0


def test_an_api_market_on_a_model_without_an_api_is_refused():
    data = _api_only({"points": [{"at": "2026-03-01", "share": 0.5}]})
    del data["models"][0]["api"]
    with pytest.raises(ScenarioError, match=r"markets\.api\[0\]\.model: model 'm' has no 'api' tier"):
        simulator.load_scenario(data)
