"""Many runs on one executor give each run exactly what it gives alone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

import simulator
from simulator.runs.batch import simulate_all

LAUNCH = Path(__file__).parents[1] / "scenarios" / "launch.yaml"


@pytest.fixture(scope="module")
def points():
    base = {"horizon.duration": "40d", "variants": {}}
    return {
        "base": simulator.load_scenario(LAUNCH, base),
        "fewer": simulator.load_scenario(LAUNCH, {**base, "fleet.pools[0].count": 96}),
        ("seed", 5): simulator.load_scenario(LAUNCH, {**base, "seed": 5, "paths": 3}),
    }


@pytest.fixture(scope="module")
def alone(points):
    return {key: simulator.simulate(scenario, paths=None if key == ("seed", 5) else 4, executor="serial")
            for key, scenario in points.items()}


def _same(one: simulator.Results, other: simulator.Results) -> None:
    assert one.summary == other.summary
    for name in ("timeseries", "jobs", "pnl", "bands", "period_paths", "statements"):
        pd.testing.assert_frame_equal(getattr(one, name), getattr(other, name), check_exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["serial", "local", "threads"])
def test_each_run_is_what_it_is_alone(points, alone, executor):
    counted = []
    sized = {key: (s if key == ("seed", 5) else s.model_copy(update={"paths": 4})) for key, s in points.items()}
    if executor == "threads":
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = simulate_all(sized, executor=pool, progress=lambda done, total: counted.append((done, total)))
    else:
        runs = simulate_all(sized, executor=executor, workers=2,
                            progress=lambda done, total: counted.append((done, total)))
    assert list(runs) == list(points)
    for key in points:
        _same(runs[key], alone[key])
    assert counted == [(done, 11) for done in range(1, 12)]  # one count over all runs: 4 + 4 + 3 paths


def test_finish_keeps_what_it_returns_and_paths_and_seed_apply_to_all(points, alone):
    seen = []

    def finish(key, results):
        seen.append(key)
        return results.summary

    two = {key: points[key] for key in ("base", "fewer")}
    summaries = simulate_all(two, paths=4, executor="serial", finish=finish)
    assert seen == ["base", "fewer"] and summaries == {key: alone[key].summary for key in two}
    reseeded = simulate_all({"base": points["base"]}, paths=3, seed=5, executor="serial")["base"]
    _same(reseeded, simulator.simulate(points["base"], paths=3, seed=5, executor="serial"))
