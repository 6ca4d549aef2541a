"""Disaggregation, speculation and a host KV tier through ``fleetcast serving`` and a scenario.

Figures are checked against what the run's own keys imply (tokens per GPU over each side's
GPUs, KV bytes over the duration), the closed form of accepted tokens, and hand counts of GPUs.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import simulator
from simulator import ScenarioError
from simulator.cli import main
from tests.helpers import base_scenario

H100_70B = ["serving", "--model", "llama-3.1-70b", "--gpu", "H100", "--tp", "4", "--dtype", "fp8",
            "--batching", "vllm"]


def _json(args):
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_disaggregated_unit_reports_each_side_per_gpu():
    report = _json([*H100_70B, "--input-len", "2000", "--output-len", "100", "--num-requests", "300",
                    "--rate", "3", "--disaggregate", "1:2"])
    assert (report["split"], report["prefill_gpus"], report["decode_gpus"], report["gpus"]) == ("1:2", 4, 8, 12)
    duration = report["duration_s"]
    assert report["prefill_tokens_per_s_per_gpu"] == pytest.approx(300 * 2000 / duration / 4)
    assert report["decode_tokens_per_s_per_gpu"] == pytest.approx(300 * 100 / duration / 8)
    assert report["output_tokens_per_s_per_gpu"] == pytest.approx(300 * 100 / duration / 12)
    # 12 GPUs do not fit an 8-GPU NVLink domain: RDMA at the NIC's 50 GB/s per GPU.
    assert (report["kv_link"], report["kv_link_gbps"]) == ("rdma", 50.0)
    # 80 layers × 8 KV heads × 128 × 2 × 1 byte (FP8) = 163,840 bytes per prompt token.
    assert report["kv_transfer_gbps"] == pytest.approx(300 * 2000 * 163_840 / duration / 1e9)


def test_speculation_reports_tokens_per_step_near_the_closed_form():
    report = _json(["serving", "--model", "llama-3.1-8b", "--gpu", "H100", "--batching", "vllm", "--input-len", "100",
                    "--output-len", "1000", "--num-requests", "32", "--speculative", "3", "--acceptance", "0.8",
                    "--draft", "ngram"])
    expected = (1 - 0.8 ** 4) / (1 - 0.8)  # 2.952
    assert report["tokens_per_step_expected"] == pytest.approx(expected)
    assert report["tokens_per_step"] == pytest.approx(expected, rel=0.03)  # ≈ 10,600 steps


def test_the_split_search_lists_splits_best_per_gpu_first():
    rows = _json(["serving", "--model", "llama-3.1-8b", "--gpu", "H100", "--batching", "vllm", "--input-len", "2000",
                  "--output-len", "200", "--disaggregate", "search", "--slo-ttft", "0.5", "--slo-tpot", "0.03",
                  "--max-prefill", "2", "--max-decode", "3", "--num-requests", "600"])
    per_gpu = [row["rps_per_gpu"] for row in rows]
    assert per_gpu == sorted(per_gpu, reverse=True)
    assert all(row["rps_per_gpu"] == pytest.approx(row["capacity_rps"] / row["gpus"]) for row in rows)
    assert {row["split"] for row in rows} >= {"1:1", "2:1"}


@pytest.mark.parametrize(("extra", "message"), [
    (["--disaggregate", "1:2", "--batching", "whole-prompt"], "apply to --batching vllm"),
    (["--speculative", "2", "--batching", "whole-prompt"], "apply to --batching vllm"),
    (["--decode-tp", "2"], "apply to --disaggregate"),
    (["--disaggregate", "1x2", "--batching", "vllm"], "P:D split"),
    (["--speculative", "2", "--acceptance", "0.5,0.5,0.5", "--batching", "vllm"], "acceptance rate"),
    (["--disaggregate", "1:1", "--batching", "vllm", "--decode-gpu", "B200", "--kv-link", "nvlink"], "NVLink"),
])
def test_bad_combinations_exit_2_with_one_line(extra, message):
    result = CliRunner().invoke(main, ["serving", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "8",
                                       "--output-len", "8", "--num-requests", "2", *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output


def _disaggregated_scenario(**serving):
    data = base_scenario()
    model = data["models"][0]
    del model["capacity_rps"], model["gpus_per_replica"]
    model["serving"] = {"model": "llama-3.1-8b", "probe_requests": 400,
                        "slo": {"ttft_s": 1.0, "tpot_s": 0.05}, **serving}
    data["fleet"]["pools"][0]["count"] = 24
    return data


def test_a_disaggregated_unit_is_the_replica_the_fleet_places():
    data = _disaggregated_scenario(tp=1, disaggregation={"prefill": {"replicas": 1}, "decode": {"replicas": 2, "tp": 2}})
    scenario = simulator.load_scenario(data)
    shape = scenario.models[0].replicas["a"]
    assert shape.gpus_per_replica == 1 * 1 + 2 * 2  # one TP1 prefill replica, two TP2 decode replicas
    assert "P:D 1:2 (1 + 4 GPUs)" in shape.derived_workload
    results = simulator.simulate(scenario, paths=1, executor="serial")
    inference = results.timeseries["gpus_inference"]
    assert (inference % 5 == 0).all() and inference.max() > 0


@pytest.mark.parametrize(("serving", "path"), [
    ({"speculative": {"k": 3, "acceptance": [0.5, 0.5]}}, "models[0].serving.speculative"),
    ({"speculative": {"k": 2, "accepted_distribution": [0.5, 0.6, 0.1]}}, "models[0].serving.speculative"),
    ({"disaggregation": {"prefill": {"replicas": 0}}}, "models[0].serving.disaggregation.prefill.replicas"),
    ({"kv_offload": {"host_tokens": 4096, "bandwidth_gbps": -1}}, "models[0].serving.kv_offload.bandwidth_gbps"),
])
def test_bad_feature_blocks_name_their_field(serving, path):
    with pytest.raises(ScenarioError) as error:
        simulator.load_scenario(_disaggregated_scenario(**serving))
    assert path in str(error.value)


def test_the_reports_assumptions_show_a_units_split_and_its_figures():
    import yaml

    from simulator.report.assumptions import _replica_shapes
    from simulator.scenario.serialize import dump_scenario

    data = _disaggregated_scenario(tp=1, disaggregation={"prefill": {"replicas": 1}, "decode": {"replicas": 2}},
                                   speculative={"k": 2, "acceptance": 0.7, "draft": "ngram"})
    scenario = simulator.load_scenario(data)
    (text,) = _replica_shapes(yaml.safe_load(dump_scenario(scenario))["models"][0])
    assert text.startswith("a: 3 GPUs per disaggregated unit, ")
    assert "P:D 1:2 (1 + 2 GPUs)" in text and "output tokens/s per decode GPU" in text and "KV " in text
    assert "speculative decoding" in text and "tokens per step at capacity" in text


def _two_pools(b_count):
    data = base_scenario()
    data["fleet"]["pools"].append({"name": "b", "gpu": "H200", "acquisition": {"type": "owned", "price_usd": 0},
                                   "count": b_count})
    model = data["models"][0]
    del model["gpus_per_replica"], model["capacity_rps"]
    model["replicas"] = {"a": {"gpus_per_replica": 2, "capacity_rps": 1.0, "companion_pool": "b",
                               "companion_gpus": 1}}
    return data


@pytest.mark.parametrize(("b_count", "units"), [(8, 4), (3, 3)])
def test_a_unit_across_two_pools_takes_gpus_from_both(b_count, units):
    """4 req/s on units of 1 req/s holding 2 GPUs of pool a (8) and 1 of pool b: 4 units when b has
    room, 3 when b holds 3 GPUs (then 1 req/s unserved, 3 GPUs short: one unit's 2 + 1)."""
    from tests.helpers import run

    results = run(_two_pools(b_count))
    pools = results.pools.groupby("pool")
    assert (pools.get_group("a")["gpus_inference"] == 2 * units).all()
    assert (pools.get_group("b")["gpus_inference"] == units).all()
    # Every unit placed is full (the demand exceeds or equals them): busy on both pools.
    assert (pools.get_group("a")["gpus_busy"] == 2 * units).all()
    assert (pools.get_group("b")["gpus_busy"] == units).all()
    assert (pools.get_group("b")["gpus_serving"] == units).all()
    per_step = 4.0 * 3600
    assert results.timeseries["served_requests"].to_numpy() == pytest.approx(units * 3600.0)
    assert results.timeseries["unserved_requests"].to_numpy() == pytest.approx(per_step - units * 3600.0)
    assert (results.timeseries["shortfall_gpus"] == (4 - units) * 3).all()


def test_a_unit_across_pools_refuses_a_companion_that_is_not_another_pool():
    data = _two_pools(8)
    data["models"][0]["replicas"]["a"]["companion_pool"] = "a"
    with pytest.raises(ScenarioError, match="models\\[0\\].replicas.a.companion_pool"):
        simulator.load_scenario(data)


def test_a_derived_unit_runs_its_prefill_on_another_pool():
    data = _two_pools(8)
    model = data["models"][0]
    del model["replicas"]
    model["serving"] = {"model": "llama-3.1-8b", "probe_requests": 400, "slo": {"ttft_s": 1.0, "tpot_s": 0.05},
                        "disaggregation": {"prefill": {"replicas": 1, "pool": "b"}, "decode": {"replicas": 2}}}
    shape = simulator.load_scenario(data).models[0].replicas["a"]
    assert (shape.gpus_per_replica, shape.companion_pool, shape.companion_gpus) == (2, "b", 1)
    assert "the prefill side on pool 'b'" in shape.derived_workload and "over rdma" in shape.derived_workload
    data["models"][0]["serving"]["disaggregation"]["kv_link"] = "nvlink"
    with pytest.raises(ScenarioError, match="disaggregation.kv_link"):
        simulator.load_scenario(data)


def _autoscaled_pair():
    """Two empty autoscaled on-demand pools; units of 1 req/s hold 2 GPUs of a and 1 of b."""
    data = _two_pools(0)
    for pool, price in zip(data["fleet"]["pools"], (2.0, 3.0), strict=True):
        pool["count"] = 0
        pool["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": price, "max_count": 16, "min_count": 0,
                               "autoscale": {"target_utilization": 1.0, "node_gpus": 1}}
    return data


def test_two_autoscaled_pools_joined_by_units_both_scale_up():
    """4 req/s: 4 units, each pool sized as if the other had room: 8 GPUs of a, 4 of b, all served."""
    from tests.helpers import run

    results = run(_autoscaled_pair())
    pools = results.pools.groupby("pool")
    assert pools.get_group("a")["gpus_installed"].max() == 8
    assert pools.get_group("b")["gpus_installed"].max() == 4
    assert results.timeseries["unserved_requests"].iloc[-1] == 0


def test_a_given_capacity_with_a_side_on_another_pool_still_holds_that_pools_gpus():
    data = _two_pools(8)
    model = data["models"][0]
    del model["replicas"]
    model["capacity_rps"] = 1.0
    model["serving"] = {"model": "llama-3.1-8b",
                        "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 2, "pool": "b"}}}
    shape = simulator.load_scenario(data).models[0].shape_on("a")
    assert (shape.gpus_per_replica, shape.companion_pool, shape.companion_gpus) == (1, "b", 2)


def test_a_companion_pool_too_small_for_its_side_is_refused():
    data = _two_pools(1)
    data["models"][0]["replicas"]["a"]["companion_gpus"] = 2
    with pytest.raises(ScenarioError, match="never holds more than 1"):
        simulator.load_scenario(data)


def test_a_sides_own_error_names_its_field_once():
    data = _disaggregated_scenario(tp=1, disaggregation={"decode": {"tp": 3}})
    with pytest.raises(ScenarioError) as error:
        simulator.load_scenario(data)
    text = str(error.value)
    assert text.count("disaggregation.decode.tp") == 1 and text.count("(pool 'a')") == 1


def test_spill_is_a_word_in_a_scenario():
    data = _disaggregated_scenario(kv_offload={"host_tokens": 4096, "spill_preempted": "enabled"})
    assert simulator.load_scenario(data).models[0].serving.kv_offload.spill_preempted == "enabled"


def test_a_draft_model_runs_on_the_decode_sides_gpu_and_ranks():
    from simulator.serving.config import operator_model
    from simulator.serving.serving_setup import speculation

    target = operator_model("llama-3.1-70b", "H200", tp=4, dtype="fp8", dp=2)
    made = speculation(2, 0.7, "llama-3.1-8b", target, gpu="H100")
    assert (made.draft.gpu_name, made.draft.tp, made.draft.dp) == ("H200", 4, 2)


@pytest.mark.parametrize("extra", [["--concurrency", "4", "--spill-preempted"],
                                   ["--concurrency", "4", "--host-kv-gbps", "20"],
                                   ["--disaggregate", "search", "--rate-scale", "2"]])
def test_options_a_mode_would_ignore_are_refused(extra):
    result = CliRunner().invoke(main, ["serving", "--model", "llama-3.1-8b", "--gpu", "H100", "--batching", "vllm",
                                       "--input-len", "8", "--output-len", "8", *extra])
    assert result.exit_code == 2, result.output


def test_the_split_search_reports_a_configuration_error_instead_of_empty_splits():
    result = CliRunner().invoke(main, ["serving", "--model", "llama-3.1-70b", "--gpu", "H100", "--tp", "4",
                                       "--batching", "vllm", "--input-len", "3000000", "--output-len", "8",
                                       "--disaggregate", "search", "--max-prefill", "1", "--max-decode", "1"])
    assert result.exit_code == 2 and "KV cache" in result.output, result.output
