"""Common random numbers that hold, shared draws and rank correlations between inputs."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.decisions.variants import variant_scenarios
from simulator.runs.montecarlo import draw_inputs
from tests.helpers import base_scenario, run


def _three_inputs():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2d", "step": "1h"})
    data["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 4, "mode": 8, "high": 12}
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 0.01, "repair": {"dist": "exponential", "mean": "3h"}}
    data["models"][0]["demand"].update(base_rps={"dist": "lognormal", "median": 4.0, "p90": 6.0}, noise="poisson")
    data["pricing"] = {"output_usd_per_1m": {"dist": "uniform", "low": 1.0, "high": 3.0}}
    return data


def test_a_variant_that_fixes_one_input_leaves_every_other_draw_identical_on_every_path():
    data = _three_inputs()
    # 'models[0].demand.base_rps' sorts between the other two inputs: fixing it used to
    # re-draw the price after it.
    data["variants"] = {"fixed_demand": {"models[0].demand.base_rps": 4.0},
                        "fixed_price": {"pricing.output_usd_per_1m": 2.0}}
    variants = variant_scenarios(simulator.load_scenario(data))
    base = run(_three_inputs(), paths=16)
    demand_fixed = simulator.simulate(variants["fixed_demand"], paths=16, executor="serial", keep_paths=None)
    price_fixed = simulator.simulate(variants["fixed_price"], paths=16, executor="serial", keep_paths=None)
    for fixed, other in ((demand_fixed, ["fleet.pools[0].count", "pricing.output_usd_per_1m"]),
                         (price_fixed, ["fleet.pools[0].count", "models[0].demand.base_rps"])):
        pd.testing.assert_frame_equal(fixed.inputs[["path", *other]], base.inputs[["path", *other]])
    # With only the price fixed, every other stream is untouched too: the same Poisson
    # demand, the same failures, the same GPUs in service, step by step and path by path.
    for column in ("demand_requests", "gpus_available", "served_requests"):
        pd.testing.assert_series_equal(price_fixed.timeseries[column], base.timeseries[column])
    assert not price_fixed.timeseries["revenue_usd"].equals(base.timeseries["revenue_usd"])


def test_adding_an_uncertain_field_leaves_the_existing_fields_draws_identical():
    before = simulator.load_scenario(_three_inputs()).model_dump(mode="json")
    more = _three_inputs()
    more["energy"] = {"usd_per_kwh": {"dist": "uniform", "low": 0.05, "high": 0.15}}  # sorts first
    after = simulator.load_scenario(more).model_dump(mode="json")
    for path in range(200):
        old, new = draw_inputs(before, 7, path)[1], draw_inputs(after, 7, path)[1]
        assert set(new) == set(old) | {"energy.usd_per_kwh"}
        assert {key: new[key] for key in old} == old


def _two_growths(**second):
    data = base_scenario()
    data["models"].append({**copy.deepcopy(data["models"][0]), "name": "n"})
    data["models"][0]["demand"]["base_rps"] = {"dist": "lognormal", "median": 4.0, "p90": 6.0}
    data["models"][1]["demand"]["base_rps"] = {"dist": "uniform", "low": 1.0, "high": 3.0, **second}
    return data


def _draws(data, n=4000, seed=11):
    dumped = simulator.load_scenario(data).model_dump(mode="json")
    return pd.DataFrame([draw_inputs(dumped, seed, path)[1] for path in range(n)])


def test_a_requested_rank_correlation_comes_out_over_4000_paths():
    data = _two_growths()
    data["correlations"] = [{"inputs": ["models[0].demand.base_rps", "models[1].demand.base_rps"], "rank": 0.6}]
    draws = _draws(data)
    # Spearman's rho from ranks computed here with argsort (ties impossible: continuous draws).
    ranks = draws.to_numpy().argsort(axis=0).argsort(axis=0)
    rho = np.corrcoef(ranks.T)[0, 1]
    assert rho == pytest.approx(0.6, abs=0.03)
    # The marginals are untouched: the lognormal's median and P90, the uniform's mean.
    first = draws["models[0].demand.base_rps"]
    assert np.median(first) == pytest.approx(4.0, rel=0.03) and np.quantile(first, 0.9) == pytest.approx(6.0, rel=0.04)
    assert draws["models[1].demand.base_rps"].mean() == pytest.approx(2.0, abs=0.02)
    # Only the second input's draws move: the first keeps its own stream's values.
    independent = _draws(_two_growths())
    pd.testing.assert_series_equal(first, independent["models[0].demand.base_rps"])


def test_fields_that_share_a_draw_take_the_same_quantile():
    data = _two_growths(draw="market")
    data["models"][0]["demand"]["base_rps"]["draw"] = "market"
    draws = _draws(data, n=500)
    # The same normal score z: base_rps[0] = 4 exp(σ z) with σ = ln(1.5)/1.2816, and
    # base_rps[1] = 1 + 2 Φ(z), so Φ(ln(b0 / 4) / σ) = (b1 − 1) / 2 on every path.
    sigma = math.log(1.5) / 1.2815515655446004
    z = np.log(draws["models[0].demand.base_rps"] / 4.0) / sigma
    phi = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    assert ((draws["models[1].demand.base_rps"] - 1) / 2).to_numpy() == pytest.approx(phi, abs=1e-9)


def test_a_correlation_may_name_a_draw_and_the_run_reports_rank_correlations():
    data = _two_growths(draw="market")
    data["pricing"] = {"output_usd_per_1m": {"dist": "uniform", "low": 1.0, "high": 3.0}}
    data["correlations"] = [{"inputs": ["market", "pricing.output_usd_per_1m"], "rank": -0.5}]
    data["models"][0]["demand"]["base_rps"] = 4.0
    result = run(data, paths=60, keep_paths=0)
    drawn = result.inputs.drop(columns="path")
    ranks = drawn.to_numpy().argsort(axis=0).argsort(axis=0)
    expected = np.corrcoef(ranks.T)[0, 1]
    reported = result.summary["inputs_rank_correlation"]["models[1].demand.base_rps"]["pricing.output_usd_per_1m"]
    assert reported == pytest.approx(expected, abs=1e-12)
    assert reported == pytest.approx(-0.5, abs=0.3)  # about 3 standard errors at 60 paths


@pytest.mark.parametrize("correlations, path, words", [
    ([{"inputs": ["models[0].demand.base_rps", "models[9].demand.base_rps"], "rank": 0.5}],
     "correlations[0].inputs[1]", "is not an uncertain input"),
    ([{"inputs": ["models[0].demand.base_rps", "models[0].demand.base_rps"], "rank": 0.5}],
     "correlations[0].inputs", "twice"),
    ([{"inputs": ["models[0].demand.base_rps", "models[1].demand.base_rps"], "rank": 1.5}],
     "correlations[0].rank", "less than or equal to 1"),
    ([{"inputs": ["models[0].demand.base_rps", "models[1].demand.base_rps"], "rank": -0.9},
      {"inputs": ["models[0].demand.base_rps", "pricing.output_usd_per_1m"], "rank": -0.9},
      {"inputs": ["models[1].demand.base_rps", "pricing.output_usd_per_1m"], "rank": -0.9}],
     "correlations", "positive semi-definite"),
])
def test_impossible_correlations_exit_2_naming_the_field(tmp_path, correlations, path, words):
    data = _two_growths()
    data["pricing"] = {"output_usd_per_1m": {"dist": "uniform", "low": 1.0, "high": 3.0}}
    data["correlations"] = correlations
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(main, ["validate", str(file)])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert message.count("\n") == 0 and f"{path}:" in message and words in message, message
    assert "line" in message


def test_a_variant_that_fixes_a_correlated_input_leaves_its_partners_draws_identical():
    data = _two_growths()
    data["correlations"] = [{"inputs": ["models[0].demand.base_rps", "models[1].demand.base_rps"], "rank": 0.6}]
    # The copula mixes the keys in sorted order (Cholesky): models[1] is the one whose draw
    # depends on its partner's score, so fix models[0].
    data["variants"] = {"fixed": {"models[0].demand.base_rps": 4.0}}
    base_scenario_, fixed = variant_scenarios(simulator.load_scenario(data)).values()
    assert set(fixed.uncertain) == {"models[1].demand.base_rps"}
    assert fixed.fixed_inputs == ["models[0].demand.base_rps"] and len(fixed.correlations) == 1
    base, pinned = (simulator.load_scenario(s).model_dump(mode="json") for s in (base_scenario_, fixed))
    unmixed = simulator.load_scenario(_two_growths(), {"models[0].demand.base_rps": 4.0}).model_dump(mode="json")
    differs = 0
    for path in range(50):
        # The fixed input's score is still drawn and mixed, so its partner draws what it draws
        # in the base run, path by path; without it, the partner would draw something else.
        before, after = draw_inputs(base, 5, path)[1], draw_inputs(pinned, 5, path)[1]
        assert after == {"models[1].demand.base_rps": before["models[1].demand.base_rps"]}
        differs += draw_inputs(unmixed, 5, path)[1] != after
    assert differs == 50
    overridden = simulator.load_scenario(data, {"models[1].demand.base_rps": 3.0})
    assert overridden.fixed_inputs == ["models[1].demand.base_rps"] and overridden.models[1].demand.base_rps == 3.0
