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


def test_uncertain_inputs_and_kept_paths_are_as_alone(points):
    uncertain = simulator.load_scenario(LAUNCH, {
        "horizon.duration": "20d", "variants": {}, "paths": 3,
        "models[0].demand.growth.rate_per_month": {"dist": "lognormal", "median": 0.1, "p90": 0.2}})
    runs = simulate_all({"uncertain": uncertain, "base": points["base"]}, paths=3, executor="local", workers=2,
                        keep_paths=1)
    _same(runs["uncertain"], simulator.simulate(uncertain, executor="serial", keep_paths=1))
    _same(runs["base"], simulator.simulate(points["base"], paths=3, executor="serial", keep_paths=1))
    assert runs["uncertain"].inputs["path"].tolist() == [0, 1, 2]
    assert runs["base"].timeseries["path"].unique().tolist() == [0]


def test_sweep_and_sensitivity_points_together_are_the_tables_one_at_a_time():
    from simulator.decisions.sensitivity import sensitivity_table
    from simulator.decisions.sweep import run_sweep, sweep_points

    settings = ["horizon.duration=15d", "variants={}", "paths=2"]
    grid = sweep_points({"fleet.pools[0].count": [96, 160]})

    def together(runs):
        return simulate_all(runs, executor="serial", finish=lambda key, results: results.summary)

    one_at_a_time = run_sweep(LAUNCH, grid, lambda point: simulator.simulate(point, executor="serial"), settings)
    pd.testing.assert_frame_equal(run_sweep(LAUNCH, grid, overrides=settings, simulate_points=together),
                                  one_at_a_time)
    assert one_at_a_time["fleet.pools[0].count"].tolist() == [96, 160]
    investor = simulator.load_scenario(LAUNCH, {
        "horizon.duration": "15d", "variants": {}, "paths": 2,
        "models[0].demand.growth.rate_per_month": {"dist": "lognormal", "median": 0.1, "p90": 0.3},
        "fleet.pools[1].count": {"dist": "uniform", "low": 32, "high": 96}})
    pd.testing.assert_frame_equal(sensitivity_table(investor, simulate_points=together),
                                  sensitivity_table(investor, lambda point: simulator.simulate(point, executor="serial")))
    with pytest.raises(TypeError, match="simulate_point or simulate_points"):
        run_sweep(LAUNCH, grid, overrides=settings)


def test_variants_with_automatic_paths_run_one_after_another(monkeypatch):
    # paths="auto" (and precision) belong to simulate: each variant goes there, not to the
    # pool of simulate_all, which takes a number of paths.
    import simulator.runs.montecarlo as montecarlo
    from simulator.decisions.variants import simulate_variants

    calls = []
    monkeypatch.setattr(montecarlo, "simulate", lambda scenario, **kwargs: calls.append(kwargs) or "run")
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "10d"})
    assert list(simulate_variants(scenario, paths="auto", executor="serial").results.values()) == ["run"] * 3
    assert calls == [{"paths": "auto", "executor": "serial"}] * 3
