"""A replica per (model, pool): capacity, GPUs and SLO curve from the GPU each pool holds.

The replica counts below are worked by hand from the placement rule (docs/guide/fleet.md,
"Replicas on mixed pools"): the model's pools are filled in order of preference, each with replicas of its
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
from simulator.serving.config import operator_model
from simulator.serving.trace import LengthMix
from tests.helpers import base_scenario, run

HOUR = 3600.0


def mixed_fleet(base_rps: float, policy="needed") -> dict:
    """H100, H200 and B200 pools of 8 GPUs; one model with a typed shape on each. Only the
    replicas needed are up (``policy``), so each placed replica runs full but the last."""
    data = base_scenario()
    data["fleet"]["pools"] = [
        {"name": name, "gpu": gpu, "count": 8, "acquisition": {"type": "owned", "price_usd": 0}, "serving_policy": policy}
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


def test_with_every_replica_up_the_load_spreads_over_each_pools_shape():
    # 13 req/s needs h100 2 (4 GPUs, 2 req/s each) + h200 3 (2 GPUs, 3 req/s): 2 GPUs of h200 and
    # all 8 of b200 are spare: one more h200 replica and one b200 replica (8 GPUs, 10 req/s).
    # Up: 2 + 4 + 1 = 7 replicas, 4 + 12 + 10 = 26 req/s of capacity: each at 13/26 = 0.5.
    # Busy: h100 0.5 x 2 x 4 = 4, h200 0.5 x 4 x 2 = 4, b200 0.5 x 1 x 8 = 4 GPU-equivalents.
    result = run(mixed_fleet(13.0, policy="all"))
    pools = result.pools.groupby("pool", observed=True)[["gpus_inference", "gpus_serving", "gpus_busy"]].mean()
    assert pools["gpus_serving"].to_dict() == {"h100": 8, "h200": 8, "b200": 8}
    assert pools["gpus_inference"].to_dict() == {"h100": 8, "h200": 6, "b200": 0}
    assert pools["gpus_busy"].to_numpy() == pytest.approx([4.0, 4.0, 4.0])
    assert (result.models["replicas_up"] == 7).all() and (result.models["replicas"] == 5).all()


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
        direct = capacity_curve(operator_model("llama-3.1-8b", gpu, 1, "bf16"), mix, slo, 64, requests=400, seed=0,
                                use_cache=False)
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
     "serving's tp × dp × pp is 4 on this pool"),
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
    from simulator.report.assumptions import assumptions_table

    data = mixed_fleet(1.0)
    scenario = simulator.load_scenario(data)
    html = str(assumptions_table(yaml.safe_load(dump_scenario(scenario))))
    assert "Replicas of m" in html
    assert "h100: 4 GPUs, 2 req/s; h200: 2 GPUs, 3 req/s; b200: 8 GPUs, 10 req/s" in html


def test_an_autoscaled_fallback_pool_grows_in_its_own_replica_shape():
    # h100: 8 GPUs, 4-GPU replicas of 2 req/s (7,200 per hour). burst: on demand, 8-GPU B200
    # replicas of 10 req/s (36,000), autoscaled at 100 %. 6 req/s = 21,600 per hour: h100 serves
    # 14,400, 7,200 is left = 1 burst replica = 8 GPUs (not the 4 GPUs of an H100 replica, which
    # could never hold a B200 replica). Asked at the first decision (t = 0, on step 0's demand),
    # it is in service after the 1 h provisioning delay, from step 1, and serves everything;
    # sized in whole replicas, the pool then keeps that replica (never 1.6 GPUs, the busy
    # GPU-equivalents of 7,200 requests on an 8-GPU replica of 36,000).
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "48h", "step": "1h"})
    data["fleet"]["pools"] = [
        {"name": "h100", "gpu": "H100", "count": 8, "acquisition": {"type": "owned", "price_usd": 0}},
        {"name": "burst", "gpu": "B200", "count": 0, "acquisition": {
            "type": "on_demand", "usd_per_gpu_hour": 5.0, "max_count": 64, "provisioning_delay": "1h",
            "autoscale": {"target_utilization": 1.0, "cooldown": "0s"}}},
    ]
    data["models"][0].update(pools=["h100", "burst"], gpus_per_replica=4, capacity_rps=2.0,
                             replicas={"burst": {"gpus_per_replica": 8, "capacity_rps": 10.0}})
    data["models"][0]["demand"]["base_rps"] = 6.0
    result = run(data)
    burst = result.pools[result.pools["pool"] == "burst"].reset_index(drop=True)
    installed = burst["gpus_installed"].tolist()
    assert installed == [0] + [8] * 47, installed
    unserved = result.timeseries["unserved_requests"].to_numpy()
    assert unserved[0] > 0 and (unserved[1:] == 0).all()


def test_a_pool_curve_or_capacity_overrides_on_its_own():
    # Curve A (model): 0.5 at load 1; curve B (h200 only): 0.8 at load 1.
    a = {"load": [0.5, 1.0], "attainment": [1.0, 0.5]}
    b = {"load": [0.5, 1.0], "attainment": [1.0, 0.8]}
    # 8 req/s = 28,800 per hour: h100 2 replicas (14,400), h200 2 GPUs per replica of the
    # model's 2 req/s: 2 replicas (14,400); load 1 on both: (14,400 x 0.5 + 14,400 x 0.8) / 28,800.
    data = mixed_fleet(8.0)
    data["models"][0]["slo_curve"] = a
    data["models"][0]["replicas"] = {"h200": {"gpus_per_replica": 2, "slo_curve": b}}
    assert run(data).timeseries["slo_attainment"].to_numpy() == pytest.approx(np.full(24, 0.65))
    # A pool capacity alone keeps the model's curve: 10 req/s, h100 14,400 + h200 21,600, load 1.
    data = mixed_fleet(10.0)
    data["models"][0]["slo_curve"] = a
    data["models"][0]["replicas"] = {"h200": {"gpus_per_replica": 2, "capacity_rps": 3.0}}
    assert run(data).timeseries["slo_attainment"].to_numpy() == pytest.approx(np.full(24, 0.5))


def _served_on_two_pools() -> dict:
    data = mixed_fleet(1.0)
    model = data["models"][0]
    model.pop("capacity_rps")
    model.pop("gpus_per_replica")
    model.update(serving={"model": "llama-3.1-8b", "tp": 1, "probe_requests": 300},
                 replicas={"h200": {"serving": {"tp": 2}}})
    return data


def test_reading_a_resolved_file_derives_again_for_the_scenario_as_it_stands(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETCAST_CACHE_DIR", str(tmp_path / "cache"))
    resolved = tmp_path / "resolved.yaml"
    resolved.write_text(dump_scenario(simulator.load_scenario(_served_on_two_pools())))
    on_h100 = simulator.load_scenario(resolved).models[0].shape_on("h100")
    assert on_h100.derived_on == "H100"
    # The pool's GPU changed: derived again on an H200, never the H100 figure kept.
    moved = simulator.load_scenario(resolved, ["fleet.pools[0].gpu=H200"]).models[0].shape_on("h100")
    assert moved.derived_on == "H200" and moved.capacity_rps > on_h100.capacity_rps
    # A field below a derived entry's (empty) serving block can be set.
    fp8 = simulator.load_scenario(resolved, ["models[0].replicas.h100.serving.dtype=fp8"]).models[0]
    assert fp8.serving_on("h100").dtype == "fp8" and fp8.shape_on("h100").capacity_rps > on_h100.capacity_rps
    # A capacity typed without derived_on is the user's own, with or without variants.
    data = yaml.safe_load(resolved.read_text())
    data["models"][0]["replicas"]["h200"] = {"serving": {"tp": 2}, "capacity_rps": 3.0}
    for variants in ({}, {"again": {"seed": 2}}):
        runs = variant_scenarios(simulator.load_scenario({**data, "variants": variants}))
        assert {name: s.models[0].shape_on("h200").capacity_rps for name, s in runs.items()} == \
            dict.fromkeys(runs, 3.0)


def test_a_variant_of_the_tp_group_resizes_the_replica(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETCAST_CACHE_DIR", str(tmp_path / "cache"))
    scenario = simulator.load_scenario(_served_on_two_pools(), {"variants": {"tp2": {"models[0].serving.tp": 2}}})
    runs = variant_scenarios(scenario)
    assert runs["base"].models[0].shape_on("h100").gpus_per_replica == 1
    assert runs["tp2"].models[0].shape_on("h100").gpus_per_replica == 2
    assert runs["tp2"].models[0].shape_on("h200").gpus_per_replica == 2


def test_the_report_counts_a_pool_tp_group(tmp_path, monkeypatch):
    from simulator.report.assumptions import _replica_shapes

    monkeypatch.setenv("FLEETCAST_CACHE_DIR", str(tmp_path / "cache"))
    data = _served_on_two_pools()
    data["models"][0]["replicas"]["h200"]["capacity_rps"] = 3.0
    shapes = _replica_shapes(yaml.safe_load(dump_scenario(simulator.load_scenario(data)))["models"][0])
    assert shapes[1] == "h200: 2 GPUs, 3 req/s" and shapes[0].startswith("h100: 1 GPU, ")


@pytest.mark.parametrize("change, field, message", [
    ({"replicas": {"h200": {"gpus_per_replica": 16}}}, "models[0].replicas.h200.gpus_per_replica",
     "is 16 but pool 'h200' never holds more than 8 GPUs"),
    ({"replicas": {"h200": {"serving": {"tp": 16}}}}, "models[0].replicas.h200.serving.tp",
     "is 16 but pool 'h200' never holds more than 8 GPUs"),
    ({"serving": {"model": "llama-3.1-8b", "tp": 16}, "replicas": {"h200": {"serving": {"tp": 2}}}},
     "models[0].serving.tp", "is 16 but its pools never hold more than 8 GPUs"),
    ({"serving": None, "capacity_rps": 1.0, "replicas": {"h200": {"serving": {"tp": 2}}}},
     "models[0].replicas.h200.serving.model", "name the LLM"),
    ({"serving": {"model": "llama-3.1-8b", "gpu": "H100"}, "replicas": {"h200": {"serving": {"tp": 2}}}},
     "models[0].serving.gpu", "is H100 but pool 'h200' holds H200"),
])
def test_replica_shapes_that_cannot_work_name_their_field(tmp_path, monkeypatch, change, field, message):
    monkeypatch.setenv("FLEETCAST_CACHE_DIR", str(tmp_path / "cache"))
    data = _served_on_two_pools()
    for key, value in change.items():
        if value is None:
            data["models"][0].pop(key)
        else:
            data["models"][0][key] = value
    data["fleet"]["pools"] = data["fleet"]["pools"][:2]
    data["models"][0]["pools"] = ["h100", "h200"]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {field}: ") and message in result.stderr, result.stderr
    assert "(line " in result.stderr and len(result.stderr.strip().splitlines()) == 1
