"""Hand-computed cases: each mechanism alone, with the arithmetic written out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import base_scenario, run

YEAR_S = 365.25 * 86400
MONTH_S = YEAR_S / 12


def test_on_demand_gpus_cost_price_times_hours_and_serve_everything():
    # 8 on-demand GPUs at $2/GPU-h for 24 h = 8 * 2 * 24 = $384.00.
    data = base_scenario()
    data["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 2.0}
    ts = run(data).timeseries
    assert ts["cost_cloud_usd"].sum() == pytest.approx(384.00, abs=1e-9)
    assert ts["cost_usd"].sum() == pytest.approx(384.00, abs=1e-9)
    assert (ts["unserved_requests"] == 0).all()
    assert ts["served_requests"].sum() == pytest.approx(4.0 * 86400)
    assert (ts["shortfall_gpus"] == 0).all()


def test_demand_at_twice_capacity_serves_capacity_and_leaves_the_rest():
    # 8 replicas x 1 req/s = 8 req/s of capacity against 16 req/s of demand, for 24 h.
    data = base_scenario()
    data["models"][0]["demand"]["base_rps"] = 16.0
    ts = run(data).timeseries
    assert ts["served_requests"].sum() == pytest.approx(8 * 86400)
    assert ts["unserved_requests"].sum() == pytest.approx(8 * 86400)
    # Every step: 16*3600 requests need 16 replicas; 8 are placed -> 8 GPUs short.
    assert (ts["shortfall_gpus"] == 8).all()
    assert (ts["utilization"] == 1.0).all()
    assert ts["slo_attainment"].to_numpy() == pytest.approx(0.5)


def test_gpus_added_on_a_date_appear_exactly_at_that_step():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "10d", "step": "1h"})
    data["fleet"]["pools"][0]["changes"] = [{"at": "2026-01-04T06:00", "add": 64}]
    ts = run(data).timeseries.set_index("time")
    arrival = pd.Timestamp("2026-01-04T06:00")
    assert (ts.loc[ts.index < arrival, "gpus_installed"] == 8).all()
    assert (ts.loc[ts.index >= arrival, "gpus_installed"] == 72).all()
    # An offset from the start means the same thing: 3 days 6 hours.
    data["fleet"]["pools"][0]["changes"] = [{"at": "78h", "add": 64}]
    ts2 = run(data).timeseries.set_index("time")
    assert (ts2["gpus_installed"] == ts["gpus_installed"]).all()


def test_a_change_inside_a_step_serves_the_part_of_the_step_after_it():
    # 2 GPUs added at 1h30: step 1 (1h-2h) has 8 GPUs for its first half and 10 for its
    # second, so its mean is 9; from step 2 on, 10.
    data = base_scenario()
    data["fleet"]["pools"][0]["changes"] = [{"at": "90min", "add": 2}]
    installed = run(data).timeseries["gpus_installed"].to_numpy()
    assert installed[:3].tolist() == [8, 9, 10] and (installed[2:] == 10).all()


def test_two_changes_inside_one_step_each_serve_their_share_of_it():
    # 16 req/s against 8 GPUs of 1 req/s; +4 GPUs at 1h15, +4 more at 1h45. Step 1 serves
    # 8 req/s for 15 min, 12 for 30 min and 16 for 15 min: 3600 * (8/4 + 12/2 + 16/4) = 43,200
    # requests of 57,600; its mean GPUs installed are 8/4 + 12/2 + 16/4 = 12.
    data = base_scenario()
    data["models"][0]["demand"]["base_rps"] = 16.0
    data["fleet"]["pools"][0]["changes"] = [{"at": "75min", "add": 4}, {"at": "105min", "add": 4}]
    ts = run(data).timeseries
    assert ts["gpus_installed"].iloc[1] == pytest.approx(12.0, rel=1e-12)
    assert ts["served_requests"].iloc[1] == pytest.approx(43_200.0, rel=1e-12)
    assert ts["unserved_requests"].iloc[1] == pytest.approx(57_600.0 - 43_200.0, rel=1e-12)
    assert ts["served_requests"].iloc[0] == pytest.approx(8 * 3600.0) and ts["served_requests"].iloc[2] == 57_600.0


def test_owned_gpus_depreciate_straight_line_to_the_cent():
    # 10 GPUs at $30,000 over 5 years, 30 days: 10 * 30000 / (5 * 365.25 d) * 30 d = $4,928.13.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "30d", "step": "1h"})
    data["fleet"]["pools"][0].update(
        count=10, acquisition={"type": "owned", "price_usd": 30000, "depreciation_years": 5}
    )
    ts = run(data).timeseries
    assert round(ts["cost_depreciation_usd"].sum(), 2) == 4928.13
    per_hour = 10 * 30000 / (5 * YEAR_S) * 3600
    assert np.allclose(ts["cost_depreciation_usd"], per_hour, rtol=1e-12)


def test_depreciation_stops_when_the_useful_life_ends():
    # Life of 0.5 year: a GPU costing $8,766 is fully written off after 182.625 days,
    # and nothing more is booked afterwards, even though the horizon is 365.25 days.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "1y", "step": "1h"})
    data["fleet"]["pools"][0].update(
        count=1, acquisition={"type": "owned", "price_usd": 8766, "depreciation_years": 0.5}
    )
    ts = run(data).timeseries
    assert ts["cost_depreciation_usd"].sum() == pytest.approx(8766.0, abs=0.01)
    end = pd.Timestamp("2026-01-01") + pd.Timedelta(days=182.625)
    assert (ts.loc[ts["time"] >= end, "cost_depreciation_usd"] == 0).all()


def test_removal_retires_the_oldest_cohort_first():
    # 4 GPUs bought at the start for $1000 (life 1 y) and 4 added on day 10; removing 4 on day 20
    # retires the first 4. Per-GPU rate r = 1000 / 1 y. Booked: 4 r * 20 d + 4 r * 10 d (the
    # day-10 cohort before day 20) + 4 r * 10 d (the day-10 cohort after) = r * 160 GPU-days.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "30d", "step": "1h"})
    data["fleet"]["pools"][0].update(
        count=4,
        acquisition={"type": "owned", "price_usd": 1000, "depreciation_years": 1},
        changes=[{"at": "10d", "add": 4}, {"at": "20d", "remove": 4}],
    )
    ts = run(data).timeseries
    rate = 1000 / YEAR_S
    assert ts["cost_depreciation_usd"].sum() == pytest.approx(rate * 160 * 86400, rel=1e-12)


def test_energy_is_gpus_times_tdp_times_draw_times_pue_times_hours_times_price():
    # 8 H100 (700 W) at 60% draw, PUE 1.25, server factor 1, $0.10/kWh, 24 h:
    # 8 * 0.7 kW * 0.6 * 1.25 * 24 h * 0.10 = $10.08.
    data = base_scenario()
    data["energy"] = {"pue": 1.25, "usd_per_kwh": 0.10, "draw_fraction": 0.6, "server_power_factor": 1.0}
    ts = run(data).timeseries
    assert ts["cost_energy_usd"].sum() == pytest.approx(10.08, abs=1e-9)
    assert ts["energy_kwh"].sum() == pytest.approx(100.8, abs=1e-9)


def test_idle_gpus_draw_their_idle_power():
    # 4 of 8 GPUs busy (4 req/s, 1 req/s each): busy 4 * 0.7 * 0.8 kW, idle 4 * 0.7 * 0.2 kW,
    # times PUE 1.5, server factor 2 and 24 h: (2.24 + 0.56) * 1.5 * 2 * 24 = 201.6 kWh.
    data = base_scenario()
    data["energy"] = {
        "pue": 1.5, "usd_per_kwh": 1.0, "draw_fraction": 0.8, "idle_draw_fraction": 0.2,
        "server_power_factor": 2.0,
    }
    ts = run(data).timeseries
    assert ts["energy_kwh"].sum() == pytest.approx(201.6, rel=1e-12)
    assert ts["utilization"].to_numpy() == pytest.approx(0.5)


def test_facility_is_provisioned_kw_times_price_per_kw_month():
    # 8 H100 * 0.7 kW * server factor 1.8 = 10.08 kW at $150/kW-month. The horizon "1mo" from
    # 2026-01-01 is calendar January, 31 days (it ends 2026-02-01); the price is per fixed
    # 30.4375-day month, so January costs 10.08 * 150 * 31 / 30.4375 = $1,539.94 (it was
    # $1,512 when "1mo" was a 30.4375-day horizon).
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "1mo", "step": "15min"})
    data["facility"] = {"usd_per_kw_month": 150}
    data["energy"] = {"usd_per_kwh": 0.0, "server_power_factor": 1.8}
    ts = run(data).timeseries
    assert len(ts) == 31 * 96
    assert ts["cost_facility_usd"].sum() == pytest.approx(10.08 * 150 * 31 / 30.4375, rel=1e-12)


def test_rented_gpus_pay_no_energy_or_facility():
    data = base_scenario()
    data["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 1.0}
    data["energy"] = {"usd_per_kwh": 0.5}
    data["facility"] = {"usd_per_kw_month": 500}
    ts = run(data).timeseries
    assert ts["cost_energy_usd"].sum() == 0 and ts["cost_facility_usd"].sum() == 0


def test_other_costs_are_spread_evenly_per_month():
    # "2mo" from 2026-01-01 is calendar January + February = 59 days = 1,416 h; $10,000 per
    # fixed 730.5-hour month (30.4375 days): 10,000 * 1,416 / 730.5 = $19,383.98 (it was
    # $20,000 when the horizon was two fixed months).
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2mo", "step": "1h"})
    data["other_costs"] = {"usd_per_month": 10_000}
    ts = run(data).timeseries
    assert ts["cost_other_usd"].sum() == pytest.approx(10_000 * 1416 / 730.5, rel=1e-12)


def test_revenue_margin_and_cost_split():
    # 4 req/s for 24 h = 345,600 requests of 1000 input + 200 output tokens at $1 / $5 per 1M:
    # revenue = 345600 * (0.001 + 0.001) = $691.20; cost: 8 GPUs on demand at $1/h = $192.
    data = base_scenario(pricing={"input_usd_per_1m": 1.0, "output_usd_per_1m": 5.0})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 1.0}
    ts = run(data).timeseries
    assert ts["revenue_usd"].sum() == pytest.approx(691.20, abs=1e-9)
    assert ts["cogs_usd"].sum() == pytest.approx(192.0, abs=1e-9)
    assert ts["gross_margin_usd"].sum() == pytest.approx(499.20, abs=1e-9)
    assert (ts["rnd_compute_usd"] == 0).all()
    components = ts[["cost_depreciation_usd", "cost_cloud_usd", "cost_energy_usd", "cost_facility_usd", "cost_other_usd"]]
    assert np.allclose(components.sum(axis=1), ts["cost_usd"], rtol=1e-12)


def test_replicas_overflow_to_the_next_pool_in_order_of_preference():
    # 4 GPUs per replica; pool a holds 8 (2 replicas), pool b 8 more. Demand of 3 replicas.
    data = base_scenario()
    data["fleet"]["pools"].append({"name": "b", "gpu": "H100", "count": 8,
                                    "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 1}})
    data["models"][0].update(pools=["a", "b"], gpus_per_replica=4, capacity_rps=2.0)
    data["models"][0]["demand"]["base_rps"] = 5.0  # needs ceil(5/2) = 3 replicas
    for pool in data["fleet"]["pools"]:
        pool["serving_policy"] = "needed"
    result = run(data)
    pools = result.pools.groupby("pool", observed=True)[["gpus_inference", "gpus_idle", "gpus_busy"]].mean()
    assert pools.loc["a", "gpus_inference"] == 8 and pools.loc["b", "gpus_inference"] == 4
    assert pools.loc["b", "gpus_idle"] == 4
    # Load: pool a's two replicas are full (4 req/s -> 8 GPU-equivalents), b carries 1 req/s.
    assert pools.loc["a", "gpus_busy"] == pytest.approx(8.0)
    assert pools.loc["b", "gpus_busy"] == pytest.approx(2.0)
    assert (result.timeseries["unserved_requests"] == 0).all()
    # With every replica up (the default), b's 4 spare GPUs hold a fourth replica and the
    # router spreads 5 req/s over 8 req/s of capacity: 0.625 each, 0.625 * 2 * 4 = 5 GPUs busy per pool.
    for pool in data["fleet"]["pools"]:
        pool["serving_policy"] = "all"
    spread = run(data).pools.groupby("pool", observed=True)[["gpus_inference", "gpus_serving", "gpus_busy"]].mean()
    assert spread.loc["b", "gpus_inference"] == 4 and spread.loc["b", "gpus_serving"] == 8
    assert spread.loc["a", "gpus_busy"] == pytest.approx(5.0) and spread.loc["b", "gpus_busy"] == pytest.approx(5.0)


def test_models_listed_first_are_served_first_when_capacity_is_short():
    data = base_scenario()
    second = {"name": "n", "pools": ["a"], "gpus_per_replica": 1, "capacity_rps": 1.0,
              "demand": {"base_rps": 6.0, "noise": "none"}}
    data["models"].append(second)  # 4 + 6 replicas wanted, 8 GPUs
    models = run(data).models.groupby("model", observed=True)[["served_requests", "shortfall_gpus"]].mean()
    assert models.loc["m", "served_requests"] == pytest.approx(4 * 3600)
    assert models.loc["n", "served_requests"] == pytest.approx(4 * 3600)
    assert models.loc["n", "shortfall_gpus"] == 2


def test_exponential_growth_integrates_exactly():
    # 10 req/s growing 20% a month, no noise, 6 months: total = 10 * (e^{rT} - 1) / r with
    # r = ln(1.2) per fixed month; "6mo" from 2026-01-01 ends 2026-07-01 (calendar), so
    # T = 31+28+31+30+31+30 = 181 days (not 6 * 30.4375 = 182.625).
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "6mo", "step": "1h"})
    data["models"][0]["demand"].update(base_rps=10.0, growth={"kind": "exponential", "rate_per_month": 0.2})
    data["models"][0]["capacity_rps"] = 1e6
    ts = run(data).timeseries
    r = np.log(1.2) / MONTH_S
    assert ts["demand_requests"].sum() == pytest.approx(10 * np.expm1(r * 181 * 86400) / r, rel=1e-10)
    # The rate at the end of month 3 is 10 * 1.2^3 = 17.28 req/s.
    at = ts.set_index("time")["demand_requests"]
    k = int(3 * MONTH_S // 3600)
    assert at.iloc[k] / 3600 == pytest.approx(17.28, rel=1e-4)


def test_linear_and_logistic_growth_by_hand():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "4mo", "step": "1mo"})
    demand = data["models"][0]["demand"]
    data["models"][0]["capacity_rps"] = 1e6
    demand.update(base_rps=1.0, growth={"kind": "linear", "increase_per_month": 0.5})
    counts = run(data).timeseries["demand_requests"].to_numpy() / MONTH_S
    # Mean rate over month i of 1 + 0.5 t is 1 + 0.5 (i + 1/2).
    assert counts == pytest.approx([1.25, 1.75, 2.25, 2.75], rel=1e-12)
    demand.update(growth={"kind": "logistic", "ceiling": 10, "rate_per_month": 1.0})
    data["horizon"] = {"start": "2026-01-01", "duration": "30mo", "step": "1h"}
    rate = run(data).timeseries["demand_requests"].to_numpy() / 3600
    # The logistic starts at the base rate and saturates at the ceiling.
    assert rate[0] == pytest.approx(1.0, rel=1e-3) and rate[-1] == pytest.approx(10.0, rel=1e-4)


def test_piecewise_rates_interpolate_between_dates(tmp_path):
    csv = tmp_path / "rates.csv"
    csv.write_text("date,rps\n2026-01-01,10\n2026-01-11,20\n")
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "20d", "step": "1d"})
    data["models"][0]["capacity_rps"] = 1e6
    data["models"][0]["demand"] = {"growth": {"kind": "piecewise", "csv": str(csv), "extrapolate": "hold"}, "noise": "none"}
    rate = run(data).timeseries["demand_requests"].to_numpy() / 86400
    # Day i (midpoint i + 1/2) on the line from 10 to 20 over 10 days, flat at 20 afterwards.
    assert rate[:10] == pytest.approx([10 + (i + 0.5) for i in range(10)], rel=1e-12)
    assert rate[10:] == pytest.approx(20.0)


def test_daily_seasonality_moves_load_but_keeps_the_total():
    # Amplitude 0.5 peaking at 18:00 UTC: whole days keep the mean rate; the 18:00 step holds
    # the peak averaged over the hour: 1 + 0.5 * sinc(pi/24) where sinc(x) = sin(x)/x.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "7d", "step": "1h"})
    data["models"][0]["capacity_rps"] = 1e6
    data["models"][0]["demand"].update(base_rps=10.0, seasonality={"daily_amplitude": 0.5, "peak_hour": 18.5})
    ts = run(data).timeseries.set_index("time")["demand_requests"] / 3600
    assert ts.sum() * 3600 == pytest.approx(10 * 7 * 86400, rel=1e-12)
    x = np.pi / 24
    assert ts.loc["2026-01-02 18:00"] == pytest.approx(10 * (1 + 0.5 * np.sin(x) / x), rel=1e-12)
    assert ts.loc["2026-01-02 06:00"] == pytest.approx(10 * (1 - 0.5 * np.sin(x) / x), rel=1e-12)


def test_no_demand_before_launch():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "10d", "step": "1d"})
    data["models"][0]["demand"]["start"] = "2026-01-05"
    rate = run(data).timeseries["demand_requests"].to_numpy()
    assert (rate[:4] == 0).all() and rate[4:] == pytest.approx(4.0 * 86400)


def test_first_shortfall_time_in_the_summary():
    # Capacity 8 req/s; demand 4 req/s growing 10% a month. A step is short once more than
    # 0.1% of its demand d goes unserved: (d − 8) / d > 0.001, so d > 8 / 0.999, which demand
    # passes after log(2 / 0.999) / log(1.1) months (7.7 hours after it first exceeds 8).
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "12mo", "step": "1h"})
    data["models"][0]["demand"]["growth"] = {"kind": "exponential", "rate_per_month": 0.1}
    summary = run(data).summary
    months = np.log(2 / 0.999) / np.log(1.1)
    expected = pd.Timestamp("2026-01-01") + pd.Timedelta(seconds=months * MONTH_S)
    first = pd.Timestamp(summary["first_shortfall_time"]["p50"])
    assert abs(first - expected) <= pd.Timedelta(hours=1)
    assert summary["first_shortfall_time"]["probability"] == 1.0


def test_no_shortfall_gives_null_quantiles():
    summary = run(base_scenario()).summary
    first = summary["first_shortfall_time"]
    assert {key: first[key] for key in ("p10", "p50", "p90", "probability")} == {
        "p10": None, "p50": None, "p90": None, "probability": 0.0}
    assert first["ci"] == {"p10": [None, None], "p50": [None, None], "p90": [None, None]}
    # Wilson at 0 of 1 path, z = 1.6449: the upper end is z² / (1 + z²) = 2.7055 / 3.7055.
    assert first["probability_ci"] == pytest.approx([0.0, 2.705543454095404 / 3.705543454095404])
