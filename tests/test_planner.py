"""The capacity planner finds a known optimum, and its answer holds on fresh seeds."""

from __future__ import annotations

import simulator
from simulator.decisions.planner import Action, apply_actions, plan
from tests.helpers import base_scenario


def _evaluate(seed: int = 1, paths: int = 3):
    def evaluate(scenario):
        summary = simulator.simulate(scenario, paths=paths, seed=seed, executor="serial").summary
        return summary["first_shortfall_time"]["probability"], summary["quantiles"]["cost_usd"]["p50"]
    return evaluate


def _scenario():
    # 8 owned GPUs serve 1 req/s each. Demand is 6 req/s until day 10, then 22 req/s: the
    # fleet needs 14 more GPUs from day 10 on. Buying earlier costs more (depreciation from
    # the day of purchase), so the cheapest plan buys ceil(14 / 4) × 4 = 16 GPUs on day 9.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "20d", "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "owned", "price_usd": 30_000}
    data["models"][0]["demand"] = {"noise": "poisson", "growth": {"kind": "piecewise", "extrapolate": "hold", "points": [
        {"at": "0d", "rps": 6}, {"at": "10d", "rps": 6}, {"at": "14401min", "rps": 22}]}}
    return simulator.load_scenario(data)


ACTIONS = [Action("buy-day-0", "a", "0d", 4, 40), Action("buy-day-9", "a", "9d", 4, 40)]


def test_planner_returns_the_known_optimum():
    result = plan(_scenario(), ACTIONS, target=0.0, evaluate=_evaluate())
    assert result.quantities == {"buy-day-0": 0, "buy-day-9": 16}
    assert result.risk == 0.0


def test_the_planned_fleet_meets_the_target_on_fresh_seeds():
    scenario = _scenario()
    result = plan(scenario, ACTIONS, target=0.0, evaluate=_evaluate())
    planned = apply_actions(scenario, ACTIONS, result.quantities)
    risk, _ = _evaluate(seed=12345, paths=8)(planned)
    assert risk == 0.0
    # One step less would not do.
    fewer = apply_actions(scenario, ACTIONS, {"buy-day-0": 0, "buy-day-9": 12})
    assert _evaluate(seed=12345, paths=8)(fewer)[0] == 1.0


def test_fleetcast_plan_writes_the_plan_and_confirms_it(tmp_path):
    import json

    import yaml
    from click.testing import CliRunner

    from simulator.cli import main

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_scenario().model_dump(mode="json"), sort_keys=False))
    out = tmp_path / "plan"
    result = CliRunner().invoke(main, ["plan", str(path), "--action", "early=a@0d:4:40", "--action", "late=a@9d:4:40",
                                       "--target", "0", "--paths", "3", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    written = json.loads((out / "plan.json").read_text())
    assert written["quantities"] == {"early": 0, "late": 16} and written["risk_fresh_seeds"] == 0.0
    assert (out / "timeseries.parquet").exists()
    bad = CliRunner().invoke(main, ["plan", str(path), "--action", "nonsense", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "NAME=POOL@DATE:STEP:MAX" in bad.stderr


def test_bad_actions_exit_2():
    import pytest

    scenario = _scenario()
    for actions, words in (
        ([Action("x", "a", "0d", 4, 8), Action("x", "a", "1d", 4, 8)], "given twice"),
        ([Action("x", "nope", "0d", 4, 8)], "unknown pool 'nope'"),
        ([Action("x", "a", "30d", 4, 8)], "outside the horizon"),
    ):
        with pytest.raises(simulator.ScenarioError, match=words):
            plan(scenario, actions, target=0.0, evaluate=_evaluate())
