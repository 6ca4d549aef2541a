"""Every shipped scenario validates and runs (on a short horizon), and tells its story."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import simulator

SCENARIOS = sorted((Path(__file__).parents[1] / "scenarios").glob("*.yaml"))


def test_there_are_scenarios_for_each_user():
    assert {p.stem for p in SCENARIOS} >= {"launch", "growth", "stress"}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_runs_on_a_short_horizon(path, tmp_path):
    scenario = simulator.load_scenario(path, {"horizon.duration": "14d", "paths": 2})
    results = simulator.simulate(scenario, executor="serial")
    assert len(results.timeseries) == 2 * scenario.horizon.n_steps
    assert results.summary["totals"]["cost_usd"] > 0
    results.save(tmp_path / path.stem)
    assert (tmp_path / path.stem / "summary.json").exists()


def test_launch_outgrows_its_fleet_between_months_9_and_12():
    scenario = simulator.load_scenario(SCENARIOS[0].parent / "launch.yaml", {"paths": 3})
    first = simulator.simulate(scenario, executor="serial").summary["first_shortfall_time"]
    start = scenario.horizon.start
    for quantile in ("p10", "p90"):
        months = (pd.Timestamp(first[quantile]) - start) / pd.Timedelta(days=30.4375)
        assert 9 <= months <= 12, months
