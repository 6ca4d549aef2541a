"""Variance-based (Sobol) sensitivity: the estimators against closed forms, the scenario
design (common random numbers, one stream per input, any executor), labels and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from simulator.cli import main
from simulator.decisions.sobol import sobol_indices
from simulator.decisions.variance_sensitivity import sobol_design, variance_sensitivity
from simulator.runs.design import evaluate_design
from simulator.scenario import ScenarioError
from simulator.scenario.labels import field_label, format_field_value
from simulator.scenario.uncertain import Uncertain
from simulator.serving.resolve import load_scenario
from tests.helpers import base_scenario

COLUMNS = ["first_order", "total"]


def _ishigami(x, a=7.0, b=0.1):
    return np.sin(x["x1"]) + a * np.sin(x["x2"]) ** 2 + b * x["x3"] ** 4 * np.sin(x["x1"])


def test_ishigami_indices_match_the_closed_form():
    # Ishigami f = sin x1 + a sin² x2 + b x3⁴ sin x1, each x uniform on [−π, π]. Its ANOVA terms:
    # E[f | x1] − E f = (1 + b E[x3⁴]) sin x1 with E[x3⁴] = π⁴/5, so V1 = (1 + bπ⁴/5)²/2;
    # E[f | x2] − E f = a (sin² x2 − 1/2), so V2 = a² Var(sin² x2) = a²/8; E[f | x3] = E f: V3 = 0;
    # the x1·x3 interaction is b (x3⁴ − π⁴/5) sin x1: V13 = b² Var(x3⁴)/2 = b² π⁸ (1/9 − 1/25)/2
    # = 8 b² π⁸/225. V = V1 + V2 + V13 = a²/8 + bπ⁴/5 + b²π⁸/18 + 1/2. With a = 7, b = 0.1:
    # S = (0.3139, 0.4424, 0), ST = (S1 + V13/V, S2, V13/V) = (0.5576, 0.4424, 0.2437).
    a, b = 7.0, 0.1
    v1, v2, v13 = (1 + b * math.pi**4 / 5) ** 2 / 2, a**2 / 8, 8 * b**2 * math.pi**8 / 225
    v = v1 + v2 + v13
    assert v == pytest.approx(a**2 / 8 + b * math.pi**4 / 5 + b**2 * math.pi**8 / 18 + 0.5)
    first, total = [v1 / v, v2 / v, 0.0], [(v1 + v13) / v, v2 / v, v13 / v]
    assert np.round(first, 4).tolist() == [0.3139, 0.4424, 0.0]
    assert np.round(total, 4).tolist() == [0.5576, 0.4424, 0.2437]

    uniform = Uncertain(dist="uniform", low=-math.pi, high=math.pi)
    table = sobol_indices(_ishigami, {"x1": uniform, "x2": uniform, "x3": uniform}, 16_384, np.random.default_rng(3))
    assert table["input"].tolist() == ["x1", "x2", "x3"]
    assert table["runs"].iloc[0] == 16_384 * 5
    assert table["variance"].iloc[0] == pytest.approx(v, rel=0.03)
    np.testing.assert_allclose(table["first_order"], first, atol=0.05)
    np.testing.assert_allclose(table["total"], total, atol=0.05)
    # Over 200 designs of this size the largest error of any index was 0.025.
    assert (table["first_order_lo"] <= table["first_order_hi"]).all() and (table["total_lo"] < table["total_hi"]).all()


ADDITIVE = {
    "x1": (4.0, Uncertain(dist="uniform", low=0, high=1), 1 / 12),  # coefficient, distribution, variance
    "x2": (1.0, Uncertain(dist="normal", mean=0, sd=2), 4.0),
    "x3": (2.0, Uncertain(dist="triangular", low=0, mode=1, high=3), (0 + 1 + 9 - 0 - 0 - 3) / 18),
}


def _additive(x):
    return sum(coefficient * x[name] for name, (coefficient, _, _) in ADDITIVE.items())


def _additive_indices() -> np.ndarray:
    # Y = Σ a_i X_i with independent X_i: Var Y = Σ a_i² Var X_i and S_i = ST_i = a_i² Var X_i / Var Y
    # (16/12, 4 and 4·7/18 of 6.889: 0.194, 0.581, 0.226).
    shares = np.array([c**2 * var for c, _, var in ADDITIVE.values()])
    return shares / shares.sum()


def test_additive_function_indices_are_the_shares_of_variance():
    truth = _additive_indices()
    table = sobol_indices(_additive, {name: spec for name, (_, spec, _) in ADDITIVE.items()}, 4096,
                          np.random.default_rng(11))
    for column in COLUMNS:
        np.testing.assert_allclose(table[column], truth, atol=0.05)
    assert table["first_order"].sum() == pytest.approx(1.0, abs=0.05)  # no interactions


def test_the_intervals_cover_the_true_indices_at_least_as_often_as_they_say():
    # 60 independent designs of 128 samples: every 90% interval of the six indices should hold
    # the true value in about 90% of them or more (the bootstrap treats the stratified design
    # rows as independent, which makes the intervals if anything wide).
    truth = _additive_indices()
    rng = np.random.default_rng(2)
    inputs = {name: spec for name, (_, spec, _) in ADDITIVE.items()}
    hits = []
    for _ in range(60):
        table = sobol_indices(_additive, inputs, 128, rng, resamples=200)
        hits += [((table[f"{c}_lo"] <= truth) & (truth <= table[f"{c}_hi"])).to_numpy() for c in COLUMNS]
    assert np.mean(hits) >= 0.85


def _priced(**extra):
    data = base_scenario(pricing={"input_usd_per_1m": {"dist": "uniform", "low": 0, "high": 2},
                                  "output_usd_per_1m": {"dist": "uniform", "low": 1, "high": 3}}, **extra)
    return load_scenario(data)


@pytest.mark.slow
def test_scenario_margin_linear_in_two_prices_has_the_hand_computed_indices():
    # 4 req/s for 24 h = 345,600 requests of 1000 input and 200 output tokens, 8 GPUs that serve
    # them all at no cost: margin = D (1000 p_in + 200 p_out) / 1e6 exactly, linear in two
    # independent prices. p_in ~ U[0, 2] and p_out ~ U[1, 3] both have variance 2²/12 = 1/3, so
    # S_in = ST_in = 1000² (1/3) / (1000² (1/3) + 200² (1/3)) = 1/1.04 = 0.9615, S_out = 0.04/1.04.
    # At 512 samples the estimates of this design scatter by at most 0.015 (sd over 400 designs
    # of the formula; the largest error of the 400 was 0.042), so 0.05 is over three sd.
    scenario = _priced()
    demand = 4 * 24 * 3600
    v_in, v_out = 1000**2 * (2**2 / 12), 200**2 * (2**2 / 12)
    truth = {"pricing.input_usd_per_1m": v_in / (v_in + v_out), "pricing.output_usd_per_1m": v_out / (v_in + v_out)}
    seen = {}

    def run_rows(scenario, values, path_of_row, seed):
        totals = evaluate_design(scenario, values, path_of_row, seed, executor="local", workers=2)
        seen["values"], seen["totals"] = values, totals
        return totals

    table = variance_sensitivity(scenario, 512, seed=5, run_rows=run_rows)
    # Every run is the formula at its row's prices (so the design reached the scenario as built).
    by_hand = demand * (1000 * seen["values"]["pricing.input_usd_per_1m"]
                        + 200 * seen["values"]["pricing.output_usd_per_1m"]) / 1e6
    np.testing.assert_allclose(seen["totals"]["gross_margin_usd"], by_hand, rtol=1e-9)
    margin = table[table["output"] == "gross_margin_usd"].set_index("input")
    assert margin["runs"].iloc[0] == 512 * 4
    for field, share in truth.items():
        for column in COLUMNS:
            assert margin.loc[field, column] == pytest.approx(share, abs=0.05), (field, column)
    assert list(margin.index) == ["pricing.input_usd_per_1m", "pricing.output_usd_per_1m"]  # largest first
    # Nothing is ever short: those outputs do not vary and have no shares to give.
    rest = table[table["output"] != "gross_margin_usd"]
    assert (rest["output_variance"] == 0).all() and rest["first_order"].isna().all()


def _noisy(count=True, third=False):
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "12h", "step": "1h"},
                         pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": {"dist": "uniform", "low": 1, "high": 3}})
    data["models"][0]["demand"]["noise"] = "poisson"
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 0.01, "repair": {"dist": "exponential", "mean": "3h"}}
    if count:
        data["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 2, "mode": 4, "high": 6}
    if third:
        data["models"][0]["demand"]["base_rps"] = {"dist": "lognormal", "median": 4.0, "p90": 6.0}
    return load_scenario(data)


def test_same_seed_same_indices_serially_and_on_two_workers():
    scenario = _noisy()
    serial = variance_sensitivity(scenario, 16, seed=9, run_rows=lambda s, v, p, seed: evaluate_design(
        s, v, p, seed, executor="serial"))
    pooled = variance_sensitivity(scenario, 16, seed=9, run_rows=lambda s, v, p, seed: evaluate_design(
        s, v, p, seed, executor="local", workers=2, rows_per_task=5))
    pd.testing.assert_frame_equal(serial, pooled, check_exact=True)
    assert serial[serial["output"] == "gross_margin_usd"]["output_variance"].iloc[0] > 0


def test_rows_of_one_sample_share_the_paths_other_randomness():
    # The price does not change demand: every row of sample j (A_j, B_j, each A_B^i_j) is path j
    # and sees the same Poisson demand; different samples see different demand.
    scenario = _noisy(count=False)
    design = sobol_design(scenario, 8, seed=4)
    totals = evaluate_design(scenario, design.columns(), design.sample_of_row(), 4, executor="serial")
    demand = totals["demand_requests"].to_numpy().reshape(design.k + 2, design.n)
    assert (demand == demand[0]).all()
    assert len(np.unique(demand[0])) > 1
    one_by_one = evaluate_design(scenario, design.columns(), design.sample_of_row(), 4, executor="serial", rows_per_task=1)
    pd.testing.assert_frame_equal(totals, one_by_one, check_exact=True)


def test_adding_an_input_leaves_the_other_inputs_design_columns_unchanged():
    two, three = sobol_design(_noisy(), 32, seed=3), sobol_design(_noisy(third=True), 32, seed=3)
    assert three.k == 3 and set(two.names) < set(three.names)
    for field in two.names:
        i, j = two.names.index(field), three.names.index(field)
        assert np.array_equal(two.a[:, i], three.a[:, j]) and np.array_equal(two.b[:, i], three.b[:, j])
    count = two.a[:, two.names.index("fleet.pools[0].count")]
    assert np.array_equal(count, np.round(count)) and count.min() >= 2 and count.max() <= 6  # whole GPUs
    assert not np.array_equal(two.a, sobol_design(_noisy(), 32, seed=4).a)  # the seed matters


def test_without_uncertain_inputs_it_refuses_at_uncertain():
    with pytest.raises(ScenarioError) as caught:
        variance_sensitivity(load_scenario(base_scenario()), 8)
    assert caught.value.loc == ("uncertain",)


def test_labels_name_list_items_and_show_values_in_their_units():
    data = base_scenario()
    data["fleet"]["pools"][0]["name"] = "h100-owned"
    data["fleet"]["pools"][0]["orders"] = [{"at": "1d", "count": 1, "lead_time": "16w"}] * 3
    data["models"].append({**data["models"][0], "name": "chat",
                           "demand": {"base_rps": 1.0, "growth": {"kind": "exponential", "rate_per_month": 0.1}}})
    data["models"][0]["pools"] = data["models"][1]["pools"] = ["h100-owned"]
    scenario = load_scenario(data)
    assert field_label(scenario, "fleet.pools[0].count") == "pool h100-owned: count"
    assert field_label(scenario, "models[1].demand.growth.rate_per_month") == "model chat: demand growth rate per month"
    assert field_label(scenario, "fleet.pools[0].orders[2].lead_time") == "pool h100-owned: order 3 lead time"
    assert field_label(scenario, "pricing.output_usd_per_1m") == "price per 1M output tokens"
    assert field_label(scenario, "energy.usd_per_kwh") == "energy: price per kWh"
    assert format_field_value("fleet.pools[0].orders[2].lead_time", 16 * 7 * 86400.0) == "112 days"
    assert format_field_value("pricing.output_usd_per_1m", 2.5) == "$2.50"
    assert format_field_value("fleet.pools[0].count", 256) == "256"


def test_cli_variance_writes_its_files_with_labels(tmp_path):
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": {"dist": "uniform", "low": 1, "high": 3}})
    data["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 2, "mode": 4, "high": 8}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "sobol"
    result = CliRunner().invoke(main, ["sensitivity", str(path), "--method", "variance", "--samples", "8",
                                       "--workers", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"sensitivity.parquet", "sensitivity.csv", "sobol.png", "summary.json",
                                               "scenario.resolved.yaml"}
    table = pd.read_parquet(out / "sensitivity.parquet")
    assert len(table) == 2 * 3 and set(table["output"]) == {"gross_margin_usd", "shortfall_hours", "unserved_share"}
    labels = dict(zip(table["input"], table["label"], strict=False))
    assert labels == {"fleet.pools[0].count": "pool a: count", "pricing.output_usd_per_1m": "price per 1M output tokens"}
    assert "pool a: count" in result.output and "price per 1M output tokens" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "variance" and summary["samples"] == 8 and summary["runs"] == 8 * 4
    assert (out / "sobol.png").stat().st_size > 1000
    assert pd.read_csv(out / "sensitivity.csv").shape == table.shape


def test_cli_oat_table_and_tornado_use_labels(tmp_path):
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": {"dist": "uniform", "low": 1, "high": 3}})
    data["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 6, "mode": 8, "high": 10}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(main, ["sensitivity", str(path), "--paths", "1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(tmp_path / "o" / "sensitivity.parquet").set_index("input")
    assert table.loc["fleet.pools[0].count", "label"] == "pool a: count"
    assert "pool a: count" in result.output and "$1.20" in result.output  # the price's P10, in dollars


@pytest.mark.parametrize("args, message", [
    (["--samples", "16"], "--samples is for --method variance"),
    (["--method", "variance", "--paths", "2"], "--paths is for --method oat"),
])
def test_cli_options_of_the_other_method_exit_2_with_one_line(tmp_path, args, message):
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": {"dist": "uniform", "low": 1, "high": 3}})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(main, ["sensitivity", str(path), *args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith(f"error: {message}") and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_cli_variance_without_uncertain_inputs_exits_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(base_scenario(), sort_keys=False))
    result = CliRunner().invoke(main, ["sensitivity", str(path), "--method", "variance", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no uncertain inputs" in result.stderr
