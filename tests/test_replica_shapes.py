"""A replica per (model, pool): capacity, GPUs and SLO curve from the GPU each pool holds.

The replica counts below are worked by hand from the placement rule (README, "Replicas on
mixed pools"): the model's pools are filled in order of preference, each with replicas of its
own shape, ``ceil(remaining / capacity)`` of them or as many as fit; GPUs missing are counted
in the shape of the model's first-choice pool.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.decisions.variants import variant_scenarios
from simulator.scenario import dump_scenario
from simulator.serving.capacity import Slo, capacity_curve
from simulator.serving.config import roofline_model
from simulator.serving.trace import LengthMix
from tests.helpers import base_scenario, run

HOUR = 3600.0


def mixed_fleet(base_rps: float) -> dict:
    """H100, H200 and B200 pools of 8 GPUs; one model with a typed shape on each."""
    data = base_scenario()
    data["fleet"]["pools"] = [
        {"name": name, "gpu": gpu, "count": 8, "acquisition": {"type": "owned", "price_usd": 0}}
        for name, gpu in (("h100", "H100"), ("h200", "H200"), ("b200", "B200"))
    ]
    data["models"][0].update(pools=["h100", "h200", "b200"], gpus_per_replica=4, capacity_rps=2.0, replicas={
        "h200": {"gpus_per_replica": 2, "capacity_rps": 3.0},
        "b200": {"gpus_per_replica": 8, "capacity_rps": 10.0},
    })
    data["models"][0]["demand"]["base_rps"] = base_rps
    return data


def test_each_pool_places_replicas_of_its_own_shape():
    # 13 req/s = 46,800 per hour. h100 (7,200 per replica, 4 GPUs): ceil(6.5) = 7 wanted, 2 fit
    # -> 14,400 served, 32,400 left. h200 (10,800, 2 GPUs): ceil(3.0) = 3 replicas, 6 GPUs, all
    # served. b200 is not needed.
    result = run(mixed_fleet(13.0))
    pools = result.pools.groupby("pool", observed=True)[["gpus_inference", "gpus_busy"]].mean()
    assert pools.loc["h100", "gpus_inference"] == 8 and pools.loc["h200", "gpus_inference"] == 6
    assert pools.loc["b200", "gpus_inference"] == 0
    assert pools.loc["h100", "gpus_busy"] == pytest.approx(8.0)
    assert pools.loc["h200", "gpus_busy"] == pytest.approx(6.0)
    models = result.models
    assert (models["replicas"] == 5).all() and (models["unserved_requests"] == 0).all()
    assert (models["shortfall_gpus"] == 0).all()


def test_a_shortfall_is_counted_in_the_first_choice_pool_shape():
    # 30 req/s = 108,000 per hour: h100 2 replicas (14,400), h200 4 of the 9 wanted (43,200),
    # b200 1 of the 2 wanted (36,000): 93,600 served, 14,400 short = 2 H100 replicas = 8 GPUs.
    result = run(mixed_fleet(30.0))
    models = result.models
    assert (models["replicas"] == 7).all()
    assert models["served_requests"].to_numpy() == pytest.approx(np.full(24, 93_600.0))
    assert models["unserved_requests"].to_numpy() == pytest.approx(np.full(24, 14_400.0))
    assert (models["shortfall_gpus"] == 8).all()
    pools = result.pools.groupby("pool", observed=True)["gpus_inference"].mean()
    assert pools.to_dict() == {"h100": 8, "h200": 8, "b200": 8}


def test_slo_attainment_weights_each_pool_curve_by_its_capacity():
    # 10 req/s: h100 2 replicas (14,400 of 36,000), h200 2 replicas (21,600): capacity placed
    # 36,000 = demand, so every replica runs at load 1. h100's curve gives 0.5 at load 1,
    # h200's 0.9: attainment = (14,400 x 0.5 + 21,600 x 0.9) / 36,000 = 0.74.
    data = mixed_fleet(10.0)
    data["models"][0]["slo_curve"] = {"load": [0.5, 1.0], "attainment": [1.0, 0.5]}
    data["models"][0]["replicas"]["h200"]["slo_curve"] = {"load": [0.5, 1.0], "attainment": [1.0, 0.9]}
    result = run(data)
    assert (result.models["replicas"] == 4).all()
    assert result.timeseries["slo_attainment"].to_numpy() == pytest.approx(np.full(24, 0.74))


def test_a_derived_shape_follows_the_pool_gpu(tmp_path, monkeypatch):
    # One serving block for three pools: each pool's capacity is the request-level engine's on
    # that pool's GPU, and the fleet places replicas with it.
    monkeypatch.setenv("FLEETCAST_CACHE_DIR", str(tmp_path / "cache"))
    serving = {"model": "llama-3.1-8b", "tp": 1, "dtype": "bf16", "max_batch": 64, "probe_requests": 400,
               "slo": {"ttft_s": 1.0, "tpot_s": 0.05}}
    data = mixed_fleet(1.0)
    model = data["models"][0]
    for key in ("capacity_rps", "replicas"):
        model.pop(key)
    model.update(gpus_per_replica=1, serving=serving)
    model["demand"].update(input_tokens=1000, output_tokens=200)
    scenario = simulator.load_scenario(data)
    derived = {pool: scenario.models[0].shape_on(pool) for pool in ("h100", "h200", "b200")}
    mix = LengthMix.fixed(1000, 200)
    slo = Slo(1.0, 90.0, 0.05, 99.0)
    for pool, gpu in (("h100", "H100"), ("h200", "H200"), ("b200", "B200")):
        direct = capacity_curve(roofline_model("llama-3.1-8b", gpu, 1, "bf16"), mix, slo, 64, requests=400, seed=0)
        assert derived[pool].capacity_rps == pytest.approx(direct.capacity_rps, rel=1e-6), pool
        assert derived[pool].derived_on == gpu and derived[pool].gpus_per_replica == 1
    assert derived["h100"].capacity_rps < derived["h200"].capacity_rps < derived["b200"].capacity_rps
    # Demand of 9 H100 replicas' worth: 8 H100 replicas, then what is left on the H200s.
    h100, h200 = derived["h100"].capacity_rps * HOUR, derived["h200"].capacity_rps * HOUR
    demand = 9 * derived["h100"].capacity_rps
    model["demand"]["base_rps"] = demand
    result = simulator.simulate(simulator.load_scenario(data), executor="serial")
    left = demand * HOUR - 8 * h100
    expected_h200 = int(np.ceil(left / h200 * (1 - 1e-12)))
    pools = result.pools.groupby("pool", observed=True)["gpus_inference"].mean()
    assert pools["h100"] == 8 and pools["h200"] == expected_h200 == 1 and pools["b200"] == 0
    assert (result.timeseries["unserved_requests"] == 0).all()


def test_a_pool_block_changes_only_what_it_names(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETCAST_CACHE_DIR", str(tmp_path / "cache"))
    data = mixed_fleet(1.0)
    model = data["models"][0]
    model.pop("capacity_rps")
    model.update(gpus_per_replica=4, serving={"model": "llama-3.1-70b", "tp": 4, "dtype": "fp8", "max_batch": 32,
                                              "probe_requests": 300})
    model["replicas"] = {"b200": {"serving": {"tp": 2}}}
    scenario = simulator.load_scenario(data)
    shapes = {pool: scenario.models[0].shape_on(pool) for pool in ("h100", "h200", "b200")}
    assert [shapes[p].gpus_per_replica for p in ("h100", "h200", "b200")] == [4, 4, 2]
    assert scenario.models[0].serving_on("b200").dtype == "fp8"  # inherited
    assert scenario.models[0].serving_on("b200").max_batch == 32
    # The resolved scenario reads back the same, and a variant of the model-level block reaches
    # every pool, the one with its own block too.
    again = simulator.load_scenario(yaml.safe_load(dump_scenario(scenario)))
    assert again == scenario
    with_variant = simulator.load_scenario(data, {"variants": {"small": {"models[0].serving.max_batch": 4}}})
    small = variant_scenarios(with_variant)["small"].models[0]
    for pool in ("h100", "b200"):
        assert small.serving_on(pool).max_batch == 4
        assert small.shape_on(pool).capacity_rps < shapes[pool].capacity_rps


@pytest.mark.parametrize("replicas, field, message", [
    ({"nowhere": {"capacity_rps": 1.0}}, "models[0].replicas.nowhere", "not one of the model's pools"),
    ({"b200": {"serving": {"gpu": "H100"}}}, "models[0].replicas.b200.serving.gpu",
     "is H100 but pool 'b200' holds B200"),
    ({"h200": {"gpus_per_replica": 2, "serving": {"tp": 4}}}, "models[0].replicas.h200.gpus_per_replica",
     "serving.tp is 4 on this pool"),
    ({"h200": {"serving": {"tp": 0}}}, "models[0].replicas.h200.serving.tp", "greater than or equal to 1"),
])
def test_bad_replica_shapes_name_the_field(tmp_path, replicas, field, message):
    data = mixed_fleet(1.0)
    model = data["models"][0]
    model.pop("capacity_rps")
    model.update(serving={"model": "llama-3.1-8b", "probe_requests": 200}, gpus_per_replica=1)
    model["replicas"] = replicas
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {field}: ") and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_report_lists_each_pool_replica(tmp_path, monkeypatch):
    from simulator.report.tables import assumptions_table

    data = mixed_fleet(1.0)
    scenario = simulator.load_scenario(data)
    html = str(assumptions_table(yaml.safe_load(dump_scenario(scenario))))
    assert "Replicas of m" in html
    assert "h100: 4 GPUs, 2 req/s; h200: 2 GPUs, 3 req/s; b200: 8 GPUs, 10 req/s" in html
