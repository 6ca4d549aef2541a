"""Contracts in calendar time: a whole number of months or years added to a date ends on the
same day of the month (pandas ``DateOffset``); as a length or a rate a month stays 30.4375 days.

Every figure is worked out by hand in the comments, with hourly steps.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

import simulator
from simulator.scenario.serialize import dump_scenario
from simulator.units import SECONDS_PER_MONTH, calendar_months, parse_duration
from tests.helpers import base_scenario, run


def _idle(data):
    data["models"][0]["demand"]["base_rps"] = 0.0
    return data


def _reserved(price=2.0, term="1y", start=None):
    acquisition = {"type": "reserved", "usd_per_gpu_hour": price, "term": term}
    return acquisition if start is None else {**acquisition, "start": start}


def test_a_one_year_term_from_new_year_ends_at_midnight_a_year_later():
    # 8 GPUs at $2/GPU-h for 1y from 2027-01-01, horizon 18mo from 2027-01-01 (to 2028-07-01).
    # 2027 has 365 days: the term ends 2028-01-01 00:00 = step 365 × 24 = 8760, so each step
    # before costs 8 × $2 = $16 and none from it on. A fixed 365.25-day year would have run
    # 6 more steps, to 2028-01-01 06:00.
    data = _idle(base_scenario(horizon={"start": "2027-01-01", "duration": "18mo", "step": "1h"}))
    data["fleet"]["pools"][0]["acquisition"] = _reserved()
    result = run(data)
    ts = result.timeseries
    # 2027-01-01 → 2028-07-01: 365 + 182 days (2028 is a leap year: 31+29+31+30+31+30).
    assert len(ts) == (365 + 182) * 24 == 13_128
    cost = ts["cost_cloud_reserved_usd"].to_numpy()
    assert (cost[:8760] == pytest.approx(16.0, abs=1e-9)) and (cost[8760:] == 0).all()
    assert ts["time"].iloc[8760] == pd.Timestamp("2028-01-01 00:00")
    assert cost.sum() == pytest.approx(16.0 * 8760, abs=1e-6) == 140_160.0
    assert result.summary["totals"]["reserved_commitment_after_horizon_usd"] == 0.0


def test_a_twelve_month_horizon_from_february_holds_365_days_and_12_months():
    # 2027-02-01 + 12 months = 2028-02-01 00:00; no 29 February in between: 365 days, 8,760
    # hourly steps (12 × 30.4375 days would be 8,766 steps, a 6-hour 13th month).
    data = _idle(base_scenario(horizon={"start": "2027-02-01", "duration": "12mo", "step": "1h"}))
    scenario = simulator.load_scenario(data)
    assert scenario.horizon.end_time == pd.Timestamp("2028-02-01 00:00")
    assert scenario.horizon.n_steps == 365 * 24 == 8760
    result = run(data)
    assert len(result.pnl) == 12
    assert result.summary["end"] == "2028-02-01"
    assert result.summary["steps"] == 8760


def test_two_consecutive_yearly_terms_meet_without_overlap_or_gap():
    # Pool a: 8 GPUs for 1y from 2027-01-01; pool b: 8 GPUs for 1y from 2028-01-01. Horizon 2y
    # = 2027-01-01 → 2029-01-01, 365 + 366 = 731 days = 17,544 steps. Exactly 8 GPUs are
    # reserved at every step: a until step 8,760, b from it on (never 16, never 0).
    data = _idle(base_scenario(horizon={"start": "2027-01-01", "duration": "2y", "step": "1h"}))
    first = data["fleet"]["pools"][0]
    first["acquisition"] = _reserved()
    data["fleet"]["pools"].append({**first, "name": "b", "acquisition": _reserved(start="2028-01-01")})
    result = run(data)
    installed = result.timeseries["gpus_installed"].to_numpy()
    assert len(installed) == 731 * 24 == 17_544
    assert (installed == 8).all()
    pools = result.pools
    a = pools[pools["pool"] == "a"]["gpus_installed"].to_numpy()
    b = pools[pools["pool"] == "b"]["gpus_installed"].to_numpy()
    assert (a[:8760] == 8).all() and (a[8760:] == 0).all()
    assert (b[:8760] == 0).all() and (b[8760:] == 8).all()
    # Each year billed in full: 8 × $2 × (8,760 + 8,784) h = $280,704.
    assert result.timeseries["cost_cloud_reserved_usd"].sum() == pytest.approx(16.0 * 17_544, abs=1e-6)


def test_a_term_past_the_horizon_bills_the_hours_inside_and_reports_the_rest():
    # 8 GPUs at $2.50/GPU-h for 1y from 2027-03-01; horizon 90d from 2027-01-01, ending
    # 2027-04-01 (31 + 28 + 31 days). Inside: March, 31 × 24 = 744 h → 8 × 2.5 × 744 = $14,880.
    # The term ends 2028-03-01: 366 days (29 February 2028 included) = 8,784 h, so 8,784 − 744
    # = 8,040 h remain after the horizon → 8 × 2.5 × 8,040 = $160,800 still committed.
    data = _idle(base_scenario(horizon={"start": "2027-01-01", "duration": "90d", "step": "1h"}))
    data["fleet"]["pools"][0]["acquisition"] = _reserved(price=2.5, start="2027-03-01")
    result = run(data)
    ts = result.timeseries
    cost = ts["cost_cloud_reserved_usd"].to_numpy()
    march = (31 + 28) * 24  # step of 2027-03-01 00:00
    assert (cost[:march] == 0).all() and (cost[march:] == pytest.approx(20.0, abs=1e-9))
    assert cost.sum() == pytest.approx(8 * 2.5 * 744, abs=1e-6) == 14_880.0
    assert result.summary["totals"]["reserved_commitment_after_horizon_usd"] == pytest.approx(
        8 * 2.5 * (8784 - 744), abs=1e-6) == 160_800.0
    assert result.summary["per_path"][0]["reserved_commitment_after_horizon_usd"] == pytest.approx(160_800.0)


def test_a_count_zero_reservation_past_the_horizon_is_accepted_and_owes_nothing():
    data = _idle(base_scenario(horizon={"start": "2027-01-01", "duration": "30d", "step": "1h"}))
    data["fleet"]["pools"][0].update(count=0, acquisition=_reserved(term="3y"))
    data["fleet"]["pools"].append({"name": "b", "gpu": "H100", "count": 8,
                                   "acquisition": {"type": "owned", "price_usd": 0}})
    data["models"][0]["pools"] = ["b"]
    result = run(data)
    assert result.summary["totals"]["reserved_commitment_after_horizon_usd"] == 0.0
    assert result.timeseries["cost_cloud_reserved_usd"].sum() == 0.0


def test_terms_round_trip_through_the_resolved_yaml_in_the_unit_written():
    data = _idle(base_scenario(horizon={"start": "2027-02-01", "duration": "12mo", "step": "1h"}))
    data["fleet"]["pools"][0]["acquisition"] = _reserved(term="1y", start="2027-06-01")
    scenario = simulator.load_scenario(data)
    text = dump_scenario(scenario)
    assert "duration: 12mo" in text and "term: 1y" in text
    again = simulator.load_scenario(yaml.safe_load(text))
    assert again == scenario
    # Still a calendar year after the round trip: 2027-06-01 → 2028-06-01 (366 days).
    start, end = again.fleet.pools[0].acquisition.bounds_s(again.horizon)
    assert (end - start) / 3600 == 366 * 24


def test_a_month_as_a_length_or_a_rate_stays_30_4375_days():
    assert parse_duration("1mo") == SECONDS_PER_MONTH == 30.4375 * 86400
    assert parse_duration("1y") == 365.25 * 86400
    assert calendar_months("1y") == 12 and calendar_months("1.5y") == 18 and calendar_months("6mo") == 6
    assert calendar_months("0.5mo") is None and calendar_months("30d") is None
    # usd_per_month 730.5 over a 730.5-hour month (30.4375 × 24) is $1 an hour, also inside a
    # calendar horizon: 12mo from 2027-02-01 holds 8,760 hours, so $8,760 (not 12 × 730.5).
    data = _idle(base_scenario(horizon={"start": "2027-02-01", "duration": "12mo", "step": "1h"},
                               other_costs={"usd_per_month": 730.5}))
    other = run(data).timeseries["cost_other_usd"].to_numpy()
    assert other == pytest.approx(1.0, abs=1e-12)
    assert other.sum() == pytest.approx(8760.0, abs=1e-6)


def test_with_monthly_steps_the_horizon_stays_whole_fixed_months():
    # step 1mo is a fixed 30.4375 days, so "4mo" stays 4 × 30.4375 = 121.75 days (4 steps); a
    # calendar January–April (120 days) would not be a whole number of such steps.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "4mo", "step": "1mo"})
    horizon = simulator.load_scenario(data).horizon
    assert horizon.n_steps == 4 and horizon.length_s == 4 * SECONDS_PER_MONTH
