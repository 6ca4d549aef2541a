"""A fleet that already exists: GPUs in service before the horizon, orders placed before it.

Every figure is worked out by hand in the comments. The scenario: 8 owned H100s at $30,000,
a 5-year life, a 1-year horizon from 2026-01-01 in hourly steps (365 days = 8,760 steps). A
year of depreciation life is 365.25 days = 8,766 h, so a 5-year life is 43,830 h. Nothing but
the GPUs costs anything (no energy, facility, other costs, revenue), so cash is capex only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.path import kernels as K
from simulator.path.compiled import compile_scenario
from simulator.path.engine import draw_demand, run_path
from tests.helpers import base_scenario, run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from reference_loop import reference_run  # noqa: E402

LIFE_H = 5 * 8766  # 43,830 h
STEPS = 365 * 24  # 8,760 hourly steps
RATE_H = 8 * 30_000 / LIFE_H  # $5.4757... an hour for the 8 GPUs bought at full price


def existing(**acquisition) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "365d", "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {
        "type": "owned", "price_usd": 30_000, "depreciation_years": 5, **acquisition}
    return data


def series(data: dict) -> tuple:
    result = run(data)
    return result.timeseries, result.pnl


def test_bought_at_the_start_is_unchanged():
    # No in_service_since: bought on 2026-01-01, as before. Capex 8 × 30,000 = 240,000 at step 0,
    # and the year's cash is −240,000.
    ts, pnl = series(existing())
    capex = ts["capex_usd"].to_numpy()
    assert capex[0] == 240_000 and capex.sum() == 240_000
    assert ts["cost_depreciation_usd"].to_numpy() == pytest.approx(RATE_H)
    assert pnl["cumulative_cash_usd"].iloc[-1] == pytest.approx(-240_000)


def test_in_service_two_years_before_depreciates_the_whole_year_and_pays_nothing():
    # In service since 2024-01-01: 731 days (2024 is a leap year) = 17,544 h before the start.
    # Life left: 43,830 − 17,544 = 26,286 h, more than the horizon's 8,760 h, so every hour of the
    # year depreciates 8 × 30,000 / 43,830 = $5.47570 and the year's depreciation is
    # 8,760 × 5.47570 = $47,967.15. The GPUs were paid for before: capex 0, cash 0.
    ts, pnl = series(existing(in_service_since="2024-01-01"))
    dep = ts["cost_depreciation_usd"].to_numpy()
    assert len(dep) == STEPS
    assert dep == pytest.approx(RATE_H, rel=1e-12)
    assert dep.sum() == pytest.approx(8_760 * 240_000 / 43_830, rel=1e-12)
    assert round(dep.sum(), 2) == 47_967.15
    assert ts["capex_usd"].to_numpy().sum() == 0
    assert pnl["capex_usd"].sum() == 0
    assert pnl["cumulative_cash_usd"].iloc[-1] == pytest.approx(0.0, abs=1e-6)
    # Depreciation is still a cost (it lowers the margin); it is just not cash.
    assert pnl["cogs_depreciation_usd"].sum() == pytest.approx(dep.sum(), rel=1e-12)


def test_in_service_four_and_a_half_years_before_stops_mid_year():
    # In service since 2021-07-01: 184 days to 2022-01-01, then 365 + 365 + 366 + 365 days to
    # 2026-01-01: 1,645 days = 39,480 h (≈ 4.5 years). Life left: 43,830 − 39,480 = 4,350 h, so
    # depreciation runs in steps 0 … 4,349 and stops from step 4,350, 181.25 days in (Jan–Jun
    # are 181 days): 2026-07-01 06:00. In all 4,350 × 240,000 / 43,830 = $23,819.30, against
    # $48,000 for a full year. The GPUs stay installed after that.
    ts, _ = series(existing(in_service_since="2021-07-01"))
    dep = ts["cost_depreciation_usd"].to_numpy()
    assert dep[:4_350] == pytest.approx(RATE_H, rel=1e-12)
    assert (dep[4_350:] == 0).all()
    assert ts["time"].iloc[4_350] == pd.Timestamp("2026-07-01 06:00")
    assert round(dep.sum(), 2) == 23_819.30
    assert (ts["gpus_installed"].to_numpy() == 8).all()
    assert ts["capex_usd"].to_numpy().sum() == 0


def test_book_value_is_spread_over_the_life_left():
    # In service since 2024-01-01 (26,286 h of life left, as above) at a book value of $120,000
    # (the default would be 240,000 × 26,286 / 43,830 = $143,934.29): 120,000 / 26,286 =
    # $4.56517 an hour, 8,760 × 4.56517 = $39,990.87 over the year. No capex.
    ts, _ = series(existing(in_service_since="2024-01-01", book_value_usd=120_000))
    dep = ts["cost_depreciation_usd"].to_numpy()
    assert dep == pytest.approx(120_000 / 26_286, rel=1e-12)
    assert round(dep.sum(), 2) == 39_990.87
    assert ts["capex_usd"].to_numpy().sum() == 0


def test_book_value_without_a_date_is_owned_already_over_a_full_life():
    # book_value_usd alone: the GPUs are already owned (no capex) and their book value is spread
    # over a full 5-year life from the start: 100,000 / 43,830 = $2.28154 an hour.
    ts, _ = series(existing(book_value_usd=100_000))
    assert ts["cost_depreciation_usd"].to_numpy() == pytest.approx(100_000 / 43_830, rel=1e-12)
    assert ts["capex_usd"].to_numpy().sum() == 0


def test_retire_years_count_from_in_service_since():
    # retire_years 2.5 from 2024-01-01: 2.5 × 8,766 = 21,915 h after it, i.e. 21,915 − 17,544 =
    # 4,371 h into the horizon: 8 GPUs installed in steps 0 … 4,370, none from step 4,371.
    ts, _ = series(existing(in_service_since="2024-01-01", retire_years=2.5))
    installed = ts["gpus_installed"].to_numpy()
    assert (installed[:4_371] == 8).all() and (installed[4_371:] == 0).all()
    dep = ts["cost_depreciation_usd"].to_numpy()
    assert (dep[4_371:] == 0).all() and dep[:4_371] == pytest.approx(RATE_H, rel=1e-12)


def test_order_placed_before_the_start_arrives_inside():
    # 4 GPUs ordered on 2025-11-02, 60 days before the start (Nov 2 → Dec 2 → Jan 1), with a
    # 90-day lead time: they arrive 90 − 60 = 30 days = 720 h into the horizon, at step 720.
    # Capex 4 × 30,000 = $120,000 on that step; 12 GPUs installed from it; their depreciation,
    # 4 × 30,000 / 43,830 = $2.73785 an hour, is added from that step.
    data = existing(in_service_since="2024-01-01")
    data["fleet"]["pools"][0]["orders"] = [{"at": "2025-11-02", "count": 4, "lead_time": "90d"}]
    ts, pnl = series(data)
    installed = ts["gpus_installed"].to_numpy()
    assert (installed[:720] == 8).all() and (installed[720:] == 12).all()
    capex = ts["capex_usd"].to_numpy()
    assert capex[720] == 120_000 and capex.sum() == 120_000
    dep = ts["cost_depreciation_usd"].to_numpy()
    assert dep[:720] == pytest.approx(RATE_H, rel=1e-12)
    assert dep[720:] == pytest.approx(12 * 30_000 / LIFE_H, rel=1e-12)
    # Cash: the starting GPUs cost nothing now; the delivery is paid in January.
    assert pnl["capex_usd"].iloc[0] == 120_000
    assert pnl["cumulative_cash_usd"].iloc[-1] == pytest.approx(-120_000)


def test_order_placed_before_the_start_arriving_after_the_end_never_arrives():
    # Placed 60 days before, 500-day lead time: arrives 440 days in, after the 365-day horizon.
    data = existing()
    data["fleet"]["pools"][0]["orders"] = [{"at": "2025-11-02", "count": 4, "lead_time": "500d"}]
    ts, _ = series(data)
    assert (ts["gpus_installed"].to_numpy() == 8).all()
    assert ts["capex_usd"].to_numpy().sum() == 240_000  # only the starting GPUs, bought now


def test_reference_loop_agrees_on_an_existing_fleet():
    # Small horizon (48 h) with a 5-day life: in service since 4 days before, 1 day (24 h) of
    # life left at a book value of $50,000: 50,000 / (8 × 86,400 s) per GPU-second until hour 24.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "48h", "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {
        "type": "owned", "price_usd": 30_000, "depreciation_years": 5 / 365.25,
        "in_service_since": "2025-12-28", "book_value_usd": 50_000}
    scenario = simulator.load_scenario(data)
    plan = compile_scenario(scenario)
    engine = run_path(plan, 1, 0)
    ref = reference_run(scenario, draw_demand(plan, 1, 0))
    dep = ref["pool_depreciation"][:, 0]
    assert dep[:24] == pytest.approx(50_000 / 24, rel=1e-12) and (dep[24:] == 0).all()
    np.testing.assert_allclose(engine.pool_out[:, 0, K.POOL_DEPRECIATION], dep, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize(("acquisition", "field", "words"), [
    ({"in_service_since": "2026-02-01"}, "fleet.pools[0].acquisition.in_service_since", "after the start"),
    ({"book_value_usd": 240_001}, "fleet.pools[0].acquisition.book_value_usd", "above price × count"),
    ({"book_value_usd": -1}, "fleet.pools[0].acquisition.book_value_usd", "greater than or equal to 0"),
    ({"in_service_since": "2020-01-01", "book_value_usd": 10}, "fleet.pools[0].acquisition.book_value_usd",
     "life ended"),
])
def test_invalid_existing_fleet(acquisition, field, words):
    with pytest.raises(simulator.ScenarioError) as error:
        simulator.load_scenario(existing(**acquisition))
    assert field in str(error.value) and words in str(error.value)


def test_order_arriving_before_the_start_is_refused():
    # Placed 60 days before with a 30-day lead time: it arrived 30 days before the start.
    data = existing()
    data["fleet"]["pools"][0]["orders"] = [{"at": "2025-11-02", "count": 4, "lead_time": "30d"}]
    with pytest.raises(simulator.ScenarioError) as error:
        simulator.load_scenario(data)
    assert "fleet.pools[0].orders[0].at" in str(error.value) and "before the start" in str(error.value)
