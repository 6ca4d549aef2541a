"""Serving policies and changes inside a step: the engine against the per-step SimPy reference.

Each scenario runs through the fast engine and through benchmarks/reference_loop.py (written from
the model's specification) on the same demand draws; every compared array must agree, the serving
policy's (GPUs serving, replicas up, requests within the SLO) included. A last case works the
reference out on paper.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import simulator
from tests.test_reference_agreement import (
    COSTS,
    TRAINING,
    assert_agree,
    burst_pool,
    engine_and_reference,
    reference_run,
)

CHAT_CURVE = {"load": [0.2, 0.6, 0.9, 1.0], "attainment": [1.0, 0.99, 0.95, 0.85]}
EMBED_CURVE = {"load": [0.0, 0.5, 1.0], "attainment": [1.0, 0.98, 0.9]}

# Two models share ``own`` and ``cloud`` (both ``all``); chat keeps 30% headroom on ``cloud``
# (its own override of the pool's policy); ``spare`` runs only the replicas needed. On ``own``,
# 8 GPUs go out of service at 53 h 20 min (a third into step 53), 4 are removed at 89 h 45 min
# (three quarters into step 89) and the 8 come back at 106 h 40 min (two thirds into step 106).
POLICIES: dict = {
    "name": "policies",
    "horizon": {"start": "2026-01-01", "duration": "6d", "step": "1h"},
    "fleet": {"pools": [
        {"name": "own", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000, "depreciation_years": 3},
         "count": 28, "changes": [
             {"at": "2026-01-03T05:20", "out_of_service": 8},
             {"at": "2026-01-04T17:45", "remove": 4},
             {"at": "2026-01-05T10:40", "back_in_service": 8}]},
        {"name": "cloud", "gpu": "H100", "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.5}, "count": 24},
        {"name": "spare", "gpu": "H100", "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 3.0}, "count": 16,
         "serving_policy": "needed"},
    ]},
    "models": [
        {"name": "chat", "pools": ["own", "cloud", "spare"], "gpus_per_replica": 4, "capacity_rps": 5.0,
         "slo_curve": CHAT_CURVE, "replicas": {"cloud": {"serving_policy": {"headroom": 0.3}}},
         "demand": {"base_rps": 34, "seasonality": {"daily_amplitude": 0.5, "peak_hour": 15}, "noise": "poisson"}},
        {"name": "embed", "pools": ["cloud", "own", "spare"], "gpus_per_replica": 2, "capacity_rps": 3.0,
         "slo_curve": EMBED_CURVE,
         "demand": {"base_rps": 12, "seasonality": {"daily_amplitude": 0.3, "peak_hour": 4}, "noise": "poisson"}},
    ],
    **COSTS,
}


def test_serving_policies_and_changes_inside_steps_agree():
    scenario = simulator.load_scenario(POLICIES)
    result, ref = engine_and_reference(scenario, seed=5)
    inference, serving = ref["pool_inference"], ref["pool_serving"]
    # ``all`` pools hold replicas beyond those needed; the ``needed`` pool serves, but never more.
    assert (serving[:, 0] > inference[:, 0]).any() and (serving[:, 1] > inference[:, 1]).any()
    assert (inference[:, 2] > 0).any() and (serving[:, 2] == inference[:, 2]).all()
    assert (ref["model_replicas_up"] >= ref["model_replicas"]).all()
    # The curves bite: fewer requests within the SLO than served at some steps.
    assert (ref["model_slo_met"] < ref["model_served"] - 1).any(axis=0).all()
    # The router spreads each model's work without creating any: inference's busy
    # GPU-equivalents add up to what the models serve, served / c × g (no training here).
    work = ref["model_served"][:, 0] / 18000 * 4 + ref["model_served"][:, 1] / 10800 * 2
    np.testing.assert_allclose(ref["pool_busy"].sum(axis=1), work, rtol=1e-12)
    # The changes inside steps 53, 89 and 106 serve the rest of their step.
    installed, available = ref["pool_installed"][:, 0], ref["pool_available"][:, 0]
    assert available[52:55] == pytest.approx([28, 28 / 3 + 20 * 2 / 3, 20], rel=1e-12)
    assert installed[88:91] == pytest.approx([28, 28 * 0.75 + 24 * 0.25, 24], rel=1e-12)
    assert available[88:91] == pytest.approx([20, 20 * 0.75 + 16 * 0.25, 16], rel=1e-12)
    assert available[105:108] == pytest.approx([16, 16 * 2 / 3 + 24 / 3, 24], rel=1e-12)
    assert_agree(ref, result)

    # Chat's headroom on cloud gives it replicas up there beyond those needed: with ``needed``
    # there instead, chat has fewer up at some steps and never more (own's spread does not
    # depend on cloud's policy).
    data = copy.deepcopy(POLICIES)
    data["models"][0]["replicas"]["cloud"]["serving_policy"] = "needed"
    plain = reference_run(simulator.load_scenario(data), ref["model_demand"])
    assert (plain["model_replicas_up"][:, 0] <= ref["model_replicas_up"][:, 0]).all()
    assert (plain["model_replicas_up"][:, 0] < ref["model_replicas_up"][:, 0]).any()


# A reactive pool backs an owned one on a demand ramp (no seasonality: it only grows); GPUs
# asked at a decision (each hour) arrive 30 min later, half-way through the step.
RAMP: dict = {
    "name": "ramp",
    "horizon": {"start": "2026-01-01", "duration": "2d", "step": "1h"},
    "fleet": {"pools": [
        {"name": "own", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 8},
        burst_pool({"policy": "reactive", "node_gpus": 2, "scale_down_cooldown": "2h"},
                   max_count=64, provisioning_delay="30min"),
    ]},
    "models": [
        {"name": "chat", "pools": ["own", "burst"], "gpus_per_replica": 2, "capacity_rps": 5.0,
         "slo_curve": {"load": [0.5, 1.0], "attainment": [1.0, 0.9]},
         "demand": {"base_rps": 10, "growth": {"kind": "linear", "increase_per_month": 60}, "noise": "poisson"}},
    ],
    **COSTS,
}


@pytest.mark.parametrize("seed", [4, 9])
def test_autoscaled_arrivals_inside_steps_agree(seed: int):
    scenario = simulator.load_scenario(RAMP)
    result, ref = engine_and_reference(scenario, seed)
    burst = ref["pool_installed"][:, 1]
    desired = [decision[3] for decision in ref["autoscale_decisions"]["burst"]]
    assert desired == sorted(desired) and desired[-1] >= 12  # the ramp: the pool only grows
    # Each decision asks for what it wants beyond the GPUs there (nothing is pending at a
    # decision: the last request arrived half a step after it); they serve the second half of
    # the decision's step: its mean is the midpoint, and the next step starts with them all.
    there = 0
    for k, wanted in enumerate(desired):
        assert burst[k] == pytest.approx((there + wanted) / 2 if wanted > there else there, rel=1e-12)
        there = max(there, wanted)
    # The first half of a step that needs them goes short, so shortfall is only ever there.
    grows = np.diff(desired, prepend=0) > 0
    assert (ref["model_shortfall_gpus"][:, 0][~grows] == 0).all() and (ref["model_shortfall_gpus"][:, 0] > 0).any()
    assert (ref["pool_serving"][:, 1] > ref["pool_inference"][:, 1]).any()
    assert_agree(ref, result)


def test_fleet_shrinking_under_jobs_inside_a_step_agrees():
    """12 of the preempt pool's 32 GPUs go out of service half-way through step 5: for the rest
    of the step its jobs keep only what inference leaves them (preemption waits for step 6)."""
    data = copy.deepcopy(TRAINING)
    data["fleet"]["pools"][1]["changes"] = [{"at": "5.5h", "out_of_service": 12}, {"at": "45.25h", "back_in_service": 12}]
    result, ref = engine_and_reference(simulator.load_scenario(data), seed=3)
    pre = 1
    # Steps 4..6: jobs hold 20 GPUs; inference needs 12. In step 5's second half 20 are
    # available: jobs keep 20 − 12 = 8, so step 5 holds ½·20 + ½·8 = 14; then jobs are
    # preempted down to what fits at step 6's start.
    assert ref["pool_available"][4:7, pre].tolist() == [32, 26, 20]
    assert ref["pool_inference"][4:7, pre].tolist() == [12, 12, 12]
    assert ref["pool_training"][4:6, pre].tolist() == [20, 14] and ref["pool_training"][6, pre] <= 8
    assert (ref["pool_idle"] >= 0).all()
    assert_agree(ref, result)


def test_spread_and_change_inside_a_step_by_hand():
    """The reference's serving policy and mixing, on a case small enough to work out on paper."""
    data = {
        "name": "hand",
        "horizon": {"start": "2026-01-01", "duration": "2h", "step": "1h"},
        "fleet": {"pools": [
            {"name": "a", "gpu": "H100", "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.0}, "count": 8,
             "changes": [{"at": "75min", "add": 4}]},  # a quarter into step 1
            {"name": "b", "gpu": "H100", "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 1.0}, "count": 4},
        ]},
        "models": [
            {"name": "m1", "pools": ["a"], "gpus_per_replica": 2, "capacity_rps": 1.0,
             "slo_curve": {"load": [0.5, 1.0], "attainment": [1.0, 0.7]},
             "demand": {"base_rps": 2.5, "noise": "none"}},
            {"name": "m2", "pools": ["a", "b"], "gpus_per_replica": 1, "capacity_rps": 2.0,
             "slo_curve": {"load": [0.4, 1.0], "attainment": [0.95, 0.6]},
             "demand": {"base_rps": 3.0, "noise": "none"}},
        ],
    }
    scenario = simulator.load_scenario(data)
    result, ref = engine_and_reference(scenario, seed=1)
    # Per step: m1 9,000 requests, c = 3,600 per replica -> 3 replicas needed (6 GPUs);
    # m2 10,800 requests, c = 7,200 -> 2 replicas needed (2 GPUs).
    assert ref["model_demand"].tolist() == [[9000, 10800]] * 2
    #
    # Fleet A (a = 8, b = 4), all of step 0 and the first quarter of step 1:
    #   placed: m1 3 on a (6 GPUs), m2 2 on a (2 GPUs): a is full, spare a = 0, b = 4.
    #   weights (demand in GPUs): a: m1 9000/3600·2 = 5 + m2 10800/7200·1 = 1.5 = 6.5; b: m2 1.5.
    #   round 1: nothing fits on a; m2 on b: floor(4 · 1.5/1.5 / 1) = 4 replicas. Round 2: no room.
    #   up: m1 3 (on a); m2 2 on a + 4 on b = 6, where it needed none on b.
    #   m1 has none extra: filled in turn, busy a += 9000/3600 · 2 = 5.
    #   m2 is spread: 10800 / (6 · 7200) = 0.25 of capacity each; busy a += 0.25·2 = 0.5, b += 0.25·4 = 1.
    #   SLO: m1 at 9000 / (3 · 3600) = 5/6 of capacity: 1 − 0.3 · (5/6 − 0.5)/0.5 = 0.8 -> 7,200 within;
    #   m2 at 0.25, below its curve's first point (0.4): flat at its first attainment, 0.95 -> 10,260.
    #   serving: a 3·2 + 2·1 = 8, b 4; idle a 8 − 8 = 0, b 4 (spare GPUs count as idle).
    # Fleet B (a = 12, b = 4), the last three quarters of step 1:
    #   placed as before (8 GPUs on a): spare a = 4, b = 4; same weights.
    #   round 1: m1 on a: floor(4 · 5/6.5 / 2) = floor(1.54) = 1 (spare a 2); m2 on a:
    #   floor(4 · 1.5/6.5 / 1) = floor(0.92) = 0; m2 on b: 4 as before.
    #   round 2: m1 on a: 2 spare ≥ 2 -> one more (spare a 0); nothing else fits.
    #   up: m1 5 on a; m2 2 + 4 = 6. m1 at 9000 / (5 · 3600) = 0.5: busy a += 0.5 · 5 · 2 = 5,
    #   all within the SLO (9,000); m2 as in A. serving a 5·2 + 2 = 12; idle a 12 − 8 = 4.
    # Step 1 = ¼ A + ¾ B.
    a = 0  # pool a's column
    assert ref["model_replicas"].tolist() == [[3, 2], [3, 2]]
    assert ref["model_replicas_up"][0].tolist() == [3, 6]
    assert ref["model_replicas_up"][1] == pytest.approx([0.25 * 3 + 0.75 * 5, 6], rel=1e-12)
    assert ref["pool_installed"][:, a] == pytest.approx([8, 0.25 * 8 + 0.75 * 12], rel=1e-12)
    assert ref["pool_serving"][0].tolist() == [8, 4]
    assert ref["pool_serving"][1] == pytest.approx([0.25 * 8 + 0.75 * 12, 4], rel=1e-12)
    assert ref["pool_inference"].tolist() == [[8, 0], [8, 0]]
    assert ref["pool_idle"][0].tolist() == [0, 4]
    assert ref["pool_idle"][1] == pytest.approx([0.75 * 4, 4], rel=1e-12)
    assert ref["pool_busy"][0] == pytest.approx([5 + 0.5, 1.0], rel=1e-12)
    assert ref["pool_busy"][1] == pytest.approx([5 + 0.5, 1.0], rel=1e-12)  # 5 either way for m1
    assert ref["pool_utilization"][1] == pytest.approx([5.5 / 11, 1.0 / 4], rel=1e-12)
    assert ref["model_slo_met"][0] == pytest.approx([7200, 10260], rel=1e-12)
    assert ref["model_slo_met"][1] == pytest.approx([0.25 * 7200 + 0.75 * 9000, 10260], rel=1e-12)
    assert ref["model_served"].tolist() == [[9000, 10800]] * 2
    # Rent: a 8 × $2 in step 0; in step 1 ¼ of 8 × $2 and ¾ of 12 × $2 = 4 + 18 = $22; b 4 × $1.
    assert ref["pool_cloud"][0] == pytest.approx([16, 4], rel=1e-12)
    assert ref["pool_cloud"][1] == pytest.approx([22, 4], rel=1e-12)
    assert ref["cost"].tolist() == pytest.approx([20, 26], rel=1e-12)
    assert_agree(ref, result)
