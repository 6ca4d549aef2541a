"""Uncertain inputs: any numeric field as a distribution, drawn once per path."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.runs.montecarlo import draw_inputs
from tests.helpers import base_scenario, run


def _scenario():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2d", "step": "1h"})
    data["models"][0]["demand"]["base_rps"] = {"dist": "lognormal", "median": 4.0, "p90": 6.0}
    data["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 4, "mode": 8, "high": 10}
    data["pricing"] = {"output_usd_per_1m": {"dist": "choice", "values": [1, 2, 4], "weights": [1, 2, 1]}}
    data["fleet"]["pools"][0]["orders"] = [{"at": "1d", "count": 2, "lead_time": {"dist": "uniform", "low": "2h", "high": "10h"}}]
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 0.001, "repair": {"dist": "exponential", "mean": "3h"}}
    return data


def test_fields_hold_medians_and_event_distributions_keep_their_meaning():
    scenario = simulator.load_scenario(_scenario())
    assert set(scenario.uncertain) == {"models[0].demand.base_rps", "fleet.pools[0].count",
                                       "pricing.output_usd_per_1m", "fleet.pools[0].orders[0].lead_time"}
    assert scenario.models[0].demand.base_rps == 4.0
    # Triangular(4, 8, 10): the mode is above the middle (7), so the median is
    # 4 + sqrt((10 − 4)(8 − 4) / 2) = 7.46 -> 7 GPUs.
    assert scenario.fleet.pools[0].count == round(4 + math.sqrt(12)) == 7
    assert scenario.fleet.pools[0].orders[0].lead_time == pytest.approx(6 * 3600)
    assert scenario.fleet.pools[0].failures.repair.dist == "exponential"  # an event distribution stays one


def test_draws_follow_their_distributions():
    data = simulator.load_scenario(_scenario()).model_dump(mode="json")
    draws = pd.DataFrame([draw_inputs(data, seed=3, path=p)[1] for p in range(4000)])
    base = draws["models[0].demand.base_rps"]
    assert np.median(base) == pytest.approx(4.0, rel=0.03)
    assert np.quantile(base, 0.9) == pytest.approx(6.0, rel=0.04)
    counts = draws["fleet.pools[0].count"]
    assert counts.dtype.kind == "i" and counts.between(4, 10).all()
    # Triangular mean (4 + 8 + 10) / 3 = 7.33, before rounding to whole GPUs.
    assert counts.mean() == pytest.approx(22 / 3, abs=0.1)
    prices = draws["pricing.output_usd_per_1m"].value_counts(normalize=True)
    assert prices[2.0] == pytest.approx(0.5, abs=0.03) and prices[1.0] == pytest.approx(0.25, abs=0.03)
    lead = draws["fleet.pools[0].orders[0].lead_time"] / 3600
    assert lead.between(2, 10).all() and lead.mean() == pytest.approx(6, abs=0.15)


def test_each_path_runs_with_its_own_draws_the_same_on_any_executor():
    scenario = simulator.load_scenario(_scenario())
    serial = run(_scenario(), paths=6)
    pooled = simulator.simulate(scenario, paths=6, executor="local", workers=2)
    pd.testing.assert_frame_equal(serial.timeseries, pooled.timeseries)
    pd.testing.assert_frame_equal(serial.inputs, pooled.inputs)
    # Path 2's pool really had the count drawn for it.
    row = serial.inputs.set_index("path").loc[2]
    first = serial.timeseries[serial.timeseries["path"] == 2]["gpus_installed"].iloc[0]
    assert first == row["fleet.pools[0].count"]
    assert serial.summary["per_path"][2]["inputs"]["fleet.pools[0].count"] == row["fleet.pools[0].count"]
    assert set(serial.summary["inputs"]) == set(scenario.uncertain)


def test_resolved_scenario_with_uncertain_inputs_reloads_equal(tmp_path):
    out = tmp_path / "run"
    path = tmp_path / "s.yaml"
    import yaml

    path.write_text(yaml.safe_dump(_scenario(), sort_keys=False))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "--paths", "3", "-q"])
    assert result.exit_code == 0, result.output
    assert simulator.load_scenario(out / "scenario.resolved.yaml") == simulator.load_scenario(path, {"paths": 3})
    assert (out / "inputs.parquet").exists()


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ({"dist": "lognormal", "median": 4, "p90": 3}, "models[0].demand.base_rps", "0 < median < p90"),
        ({"dist": "normal", "mean": 4, "sd": -1}, "models[0].demand.base_rps", "standard deviation must be >= 0"),
        ({"dist": "triangular", "low": 5, "mode": 4, "high": 6}, "models[0].demand.base_rps", "low <= mode <= high"),
        ({"dist": "lognormal", "median": 4}, "models[0].demand.base_rps", "needs median, p90"),
        ({"dist": "gamma", "k": 2}, "models[0].demand.base_rps.dist", "input should be"),
    ],
)
def test_impossible_distributions_name_the_field(value, path, words):
    data = base_scenario()
    data["models"][0]["demand"]["base_rps"] = value
    with pytest.raises(simulator.ScenarioError) as caught:
        simulator.load_scenario(data)
    assert caught.value.path == path, str(caught.value)
    assert words in str(caught.value)


def test_a_draw_outside_a_fields_range_is_an_input_error_on_any_executor(tmp_path):
    data = base_scenario()
    data["fleet"]["pools"][0]["count"] = {"dist": "normal", "mean": 1, "sd": 20}
    scenario = simulator.load_scenario(data)
    for executor in ("serial", "local"):
        with pytest.raises(simulator.ScenarioError, match=r"fleet\.pools\[0\]\.count: .*drawn for path"):
            simulator.simulate(scenario, paths=24, executor=executor, workers=2)


def test_an_override_replaces_the_distribution_of_its_field():
    scenario = simulator.load_scenario(_scenario())
    fixed = simulator.load_scenario(scenario, {"fleet.pools[0].count": 9})
    assert "fleet.pools[0].count" not in fixed.uncertain and fixed.fleet.pools[0].count == 9
    no_orders = simulator.load_scenario(scenario, {"fleet.pools[0].orders": []})
    assert "fleet.pools[0].orders[0].lead_time" not in no_orders.uncertain
    result = simulator.simulate(fixed, paths=3, executor="serial")
    assert (result.timeseries.groupby("path")["gpus_installed"].first() == 9).all()


def test_the_horizon_seed_and_paths_cannot_be_uncertain():
    data = base_scenario()
    data["horizon"]["duration"] = {"dist": "choice", "values": ["1d", "2d"]}
    with pytest.raises(simulator.ScenarioError, match=r"horizon\.duration: cannot be uncertain"):
        simulator.load_scenario(data)
