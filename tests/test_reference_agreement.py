"""The fast engine agrees with the slow per-step SimPy reference (benchmarks/reference_loop.py).

The reference is written from the step model's specification, independently of
``simulator.path.kernels`` and ``simulator.path.fleet``; both are fed the same demand draws, and every
per-step array the engine writes must equal the reference's to rtol 1e-9 / atol 1e-6. That
covers inference on owned, on-demand and reserved pools (the serving policy's GPUs serving,
replicas up and requests within the SLO too), fleet changes inside steps (each step mixes the
fleets it saw by time), autoscaled on-demand pools (all three policies) and training jobs in
``preempt`` and ``leftover`` pools (each job's start, end, preemptions and checkpointed work
too). Serving policies and changes inside steps have their own cases in
tests/test_reference_serving_policy.py.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine import ATOL, RTOL, compare  # noqa: E402
from reference_loop import SECONDS_PER_MONTH, reference_run  # noqa: E402
from reference_operations import schedule_per_step  # noqa: E402

import simulator  # noqa: E402
from simulator.path import kernels as K  # noqa: E402
from simulator.path.compiled import compile_scenario  # noqa: E402
from simulator.path.engine import draw_demand, run_path  # noqa: E402

LAUNCH = ROOT / "scenarios" / "launch.yaml"
# 240 days from 2026-03-01 include the 2026-09-01 delivery (day 184); at 35% a month the
# demand outgrows the fleet both before and after it.
LAUNCH_SHORT = {
    "horizon.duration": "240d",
    "horizon.step": "1h",
    "models[0].demand.growth.rate_per_month": 0.35,
    # The reference models inference only: the scenario's training jobs are left out.
    "training.jobs": [],
    "training.streams": [],
}

# Two models sharing an owned and an on-demand pool in opposite orders of preference, and an
# idle owned pool no model lists (all R&D). The
# owned GPUs' life is 0.05 y = 438.3 h: the initial cohort's depreciation ends at 438.3 h
# (inside step 438) and the 125.5 h purchase's at 563.8 h (inside step 563), both inside the
# 720 h horizon. Every pool serves with all its replicas up (the default serving policy).
SHARED: dict = {
    "name": "shared",
    "horizon": {"start": "2026-01-01", "duration": "30d", "step": "1h"},
    "fleet": {
        "pools": [
            {
                "name": "own",
                "gpu": "H100",
                "acquisition": {"type": "owned", "price_usd": 30000, "depreciation_years": 0.05},
                "count": 16,
                "changes": [
                    {"at": "125.5h", "add": 8},  # mid-step: serves the second half of step 125
                    {"at": "REMOVE_AT", "remove": 4},
                    {"at": "30d", "add": 64},  # at the horizon end: never happens
                ],
            },
            {
                "name": "cloud",
                "gpu": "H100",
                "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.5},
                "count": 8,
                "changes": [{"at": "10d", "add": 4}, {"at": "20d", "remove": 6}],
            },
            {
                # No model lists it: it exists for training, so all its cost is R&D.
                "name": "lab",
                "gpu": "H100",
                "acquisition": {"type": "owned", "price_usd": 20000, "depreciation_years": 3},
                "count": 8,
                "changes": [{"at": "15.5d", "add": 4}],
            },
        ]
    },
    "models": [
        {
            "name": "chat",
            "pools": ["own", "cloud"],
            "gpus_per_replica": 4,
            "capacity_rps": 6.0,
            "demand": {
                "base_rps": 25,
                "growth": {"kind": "exponential", "rate_per_month": 0.6},
                "seasonality": {"daily_amplitude": 0.4, "peak_hour": 15},
                "noise": "poisson",
            },
        },
        {
            "name": "embed",
            "pools": ["cloud", "own"],
            "gpus_per_replica": 2,
            "capacity_rps": 2.5,
            "demand": {"base_rps": 8, "seasonality": {"daily_amplitude": 0.3}, "noise": "poisson"},
            "pricing": {"input_usd_per_1m": 0.1, "output_usd_per_1m": 0.0},
        },
    ],
    "pricing": {"input_usd_per_1m": 1, "output_usd_per_1m": 2},
    "energy": {"idle_draw_fraction": 0.3},
    "other_costs": {"usd_per_month": 5000},
}


def shared_scenario(remove_at: str):
    data = copy.deepcopy(SHARED)
    data["fleet"]["pools"][0]["changes"][1]["at"] = remove_at
    return simulator.load_scenario(data)


def engine_and_reference(scenario, seed: int):
    plan = compile_scenario(scenario)
    result = run_path(plan, seed, 0)
    return result, reference_run(scenario, draw_demand(plan, seed, 0))


#: The serving policy's arrays, compared on top of bench_engine's ``COMPARED``: GPUs in replicas
#: up per pool, replicas up per model, and requests within the SLO per model.
ALSO_COMPARED = {
    "pool_serving": ("pool", K.POOL_SERVING),
    "model_replicas_up": ("model", K.MODEL_REPLICAS_UP),
    "model_slo_met": ("model", K.MODEL_SLO_MET),
}


def compare_serving(ref, result) -> list[str]:
    """One line per serving-policy array where the engine and the reference differ."""
    problems = []
    for key, (kind, column) in ALSO_COMPARED.items():
        ours, theirs = ref[key], (result.pool_out if kind == "pool" else result.model_out)[:, :, column]
        if theirs.shape != ours.shape:
            problems.append(f"{key}: shape {theirs.shape} (engine) vs {ours.shape} (reference)")
        elif (bad := ~np.isclose(theirs, ours, rtol=RTOL, atol=ATOL)).any():
            where = np.argwhere(bad)
            first = tuple(int(i) for i in where[0])
            problems.append(f"{key}: {len(where)} of {bad.size} values differ; first at {first}: "
                            f"engine {theirs[first]!r} vs reference {ours[first]!r}")
    return problems


def assert_agree(ref, result) -> None:
    __tracebackhide__ = True
    problems = compare(ref, result) + compare_serving(ref, result) + compare_jobs(ref, result)
    assert not problems, "engine disagrees with the reference:\n" + "\n".join(problems)


def compare_jobs(ref, result) -> list[str]:
    """One line per training job whose start, end, preemptions or checkpointed work differ."""
    engine = {job.name: job for job in result.jobs}
    if sorted(engine) != sorted(job["name"] for job in ref["jobs"]):
        return [f"jobs: engine {sorted(engine)} vs reference {[job['name'] for job in ref['jobs']]}"]
    problems = []
    for theirs in ref["jobs"]:
        job = engine[theirs["name"]]
        ours = {"start_s": job.start_s, "end_s": job.end_s, "preemptions": job.preemptions, "done_s": job.done_s}
        for key, value in ours.items():
            expected = theirs[key]
            same = value == expected if value is None or expected is None else np.isclose(value, expected, rtol=RTOL, atol=ATOL)
            if not same:
                problems.append(f"job {theirs['name']} {key}: engine {value!r} vs reference {expected!r}")
    return problems


def test_launch_short_agrees_and_exercises_delivery_and_shortfall():
    scenario = simulator.load_scenario(LAUNCH, LAUNCH_SHORT)
    result, ref = engine_and_reference(scenario, scenario.seed)
    # The run covers what it is meant to: the delivery lands, demand outgrows the fleet.
    delivery = 184 * 24
    owned = ref["pool_installed"][:, 0]
    assert owned[delivery - 1] == 256 and owned[delivery] == 384
    shortfall = ref["model_shortfall_gpus"][:, 0]
    assert shortfall[:delivery].max() > 0 and shortfall[delivery:].max() > 0
    assert ref["pool_cloud"][:, 1].min() > 0
    assert_agree(ref, result)

    # The public table adds pools and models up the same way.
    table = simulator.simulate(scenario, paths=1, executor="serial").timeseries
    np.testing.assert_allclose(table["cost_usd"], ref["cost"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(table["revenue_usd"], ref["revenue"], rtol=RTOL, atol=ATOL)
    fleet_utilization = ref["pool_busy"].sum(axis=1) / ref["pool_available"].sum(axis=1)
    np.testing.assert_allclose(table["utilization"], fleet_utilization, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "remove_at",
    [
        # Before the initial cohort's life ends: the 4 retired GPUs stop depreciating.
        "12d",
        # After it ended (438.3 h): the oldest GPUs are the fully depreciated initial ones, so
        # retiring 4 of them must leave the 125.5 h purchase's depreciation untouched.
        "22d",
    ],
)
def test_shared_pools_agree(remove_at: str):
    scenario = shared_scenario(remove_at)
    result, ref = engine_and_reference(scenario, seed=11)
    # Both pools are shared and contended, and the life of the owned GPUs ends inside.
    assert (ref["model_replicas"][:, 1] > 0).any() and (ref["model_shortfall_gpus"] > 0).any()
    assert ref["pool_inference"][:, 1].max() > 0
    depreciation = ref["pool_depreciation"][:, 0]
    assert depreciation[-1] == 0 and depreciation[438] > depreciation[439] > 0
    # The initial cohort's life ends 0.3 into step 438: it depreciates for that part of it.
    assert depreciation[438] == pytest.approx(0.3 * depreciation[437] + 0.7 * depreciation[439], rel=1e-9)
    # R&D: every dollar of the training-only pool, nothing of the two serving pools.
    assert (ref["pool_rnd"][:, 2] == ref["pool_cost"][:, 2]).all() and ref["pool_rnd"][:, 2].min() > 0
    assert (ref["pool_rnd"][:, :2] == 0).all()
    assert_agree(ref, result)


def test_reference_by_hand():
    """The reference itself, on a case small enough to work out on paper."""
    data = copy.deepcopy(SHARED)
    data["fleet"]["pools"][0]["changes"] = [{"at": "2.5h", "add": 4}, {"at": "4h", "remove": 8}]
    data["fleet"]["pools"][1]["changes"] = []
    data["horizon"]["duration"] = "6h"
    for pool in data["fleet"]["pools"]:  # only the replicas needed are up: no spread here
        pool["serving_policy"] = "needed"
    for model in data["models"]:
        model["demand"] = {"base_rps": 0.01, "noise": "none", "input_tokens": 1000, "output_tokens": 250}
    scenario = simulator.load_scenario(data)
    demand = np.array([[30000.0, 20000.0]] * 6)  # c = 21600 (chat) and 9000 (embed) per step
    ref = reference_run(scenario, demand)
    # chat needs 2 replicas (8 GPUs), embed 3 (6 GPUs): embed takes 3 x 2 of the 8 cloud GPUs.
    assert ref["model_replicas"].tolist() == [[2, 3]] * 6
    assert ref["model_replicas_up"].tolist() == [[2, 3]] * 6
    assert ref["pool_serving"][0].tolist() == ref["pool_inference"][0].tolist() == [8, 6, 0]
    # The 4 GPUs added at 2.5 h serve the second half of step 2: 16 for half of it, 20 for the
    # other half, 18 on average; the removal at 4 h is at a step start.
    assert ref["pool_installed"][:, 0].tolist() == [16, 16, 18, 20, 12, 12]
    assert ref["pool_inference"][0].tolist() == [8, 6, 0]  # the lab pool serves nothing
    assert ref["pool_busy"][0] == pytest.approx([8 * 30000 / 43200, 2 * 20000 / 9000, 0.0])
    life_s = 0.05 * 365.25 * 86400
    # Removing 8 at 4 h retires 8 of the 16 initial GPUs (oldest first); 8 + 4 remain. The 4
    # bought at 2.5 h depreciate from then: half of step 2.
    expected = [16, 16, 18, 20, 12, 12]
    assert ref["pool_depreciation"][:, 0] == pytest.approx([n * 30000 / life_s * 3600 for n in expected])
    assert ref["pool_cloud"][:, 1] == pytest.approx([8 * 2.5] * 6)
    kw = 0.7 * 1.8 * 1.3
    busy = 8 * 30000 / 43200
    assert ref["pool_energy_kwh"][0, 0] == pytest.approx(busy * kw * 0.75 + (16 - busy) * kw * 0.3)
    assert ref["pool_facility"][0, 0] == pytest.approx(
        16 * 0.7 * 1.8 * 184 / SECONDS_PER_MONTH * 3600
    )
    assert ref["pool_energy"][:, 1].max() == 0 and ref["pool_facility"][:, 1].max() == 0
    assert ref["other"][0] == pytest.approx(5000 / SECONDS_PER_MONTH * 3600)
    assert ref["model_revenue"][0].tolist() == pytest.approx([30000 * 0.0015, 20000 * 0.0001])
    # The lab pool, in one hour: 8 idle GPUs depreciating 20000 / 3 y, drawing 30% of
    # 0.7 × 1.8 × 1.3 kW at $0.083/kWh, and 8 × 0.7 × 1.8 kW of facility at $184/kW-month;
    # no model lists it, so all of it is R&D, and none of the serving pools' cost is.
    lab = 8 * 20000 / (3 * 365.25 * 86400) * 3600 + 8 * kw * 0.3 * 0.083 + 8 * 0.7 * 1.8 * 184 / SECONDS_PER_MONTH * 3600
    assert ref["pool_rnd"][0].tolist() == pytest.approx([0.0, 0.0, lab])


def test_gpus_out_of_service_agree():
    # Explicit out/back changes on the shared owned pool (6 GPUs from 50.5 h to 300 h, with the
    # 125.5 h purchase and a 200 h removal of 4 in between) and on the lab pool (3 from day 2
    # to the end): installed and paid for, not available, no energy.
    data = copy.deepcopy(SHARED)
    data["fleet"]["pools"][0]["changes"][1]["at"] = "200h"
    data["fleet"]["pools"][0]["changes"] += [{"at": "50.5h", "out_of_service": 6}, {"at": "300h", "back_in_service": 6}]
    data["fleet"]["pools"][2]["changes"].append({"at": "2d", "out_of_service": 3})
    scenario = simulator.load_scenario(data)
    result, ref = engine_and_reference(scenario, seed=11)
    own = ref["pool_installed"][:, 0] - ref["pool_available"][:, 0]
    # 50.5 h is half-way through step 50: 6 out for half of it.
    assert (own[:50] == 0).all() and own[50] == 3 and (own[51:300] == 6).all() and (own[300:] == 0).all()
    # (Steps a change falls inside mix the fleets by time, in floats: to within rounding.)
    lab = ref["pool_installed"][:, 2] - ref["pool_available"][:, 2]
    assert lab[:48] == pytest.approx([0] * 48, abs=1e-12) and lab[48:] == pytest.approx([3] * (720 - 48), rel=1e-12)
    assert (ref["model_shortfall_gpus"][51:300] > 0).any()
    assert_agree(ref, result)
    np.testing.assert_allclose(result.pool_out[:, :, K.POOL_OUT_OF_SERVICE],
                               ref["pool_installed"] - ref["pool_available"], rtol=1e-12, atol=1e-12)


# -- autoscaling ---------------------------------------------------------------------------

COSTS = {
    "pricing": {"input_usd_per_1m": 1, "output_usd_per_1m": 2},
    "energy": {"idle_draw_fraction": 0.3},
    "other_costs": {"usd_per_month": 1000},
}


def burst_pool(autoscale: dict, **acquisition) -> dict:
    return {"name": "burst", "gpu": "H100", "count": acquisition.pop("count", 0),
            "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 3.0, **acquisition, "autoscale": autoscale}}


# 30-minute steps and decisions: the reactive default cooldown (1 h) blocks every other one; a
# 40 min delay puts GPUs asked at step k in service a third into step k + 1; releases only down to
# the most wanted over 3 h; 4-GPU nodes, at most 26 GPUs (6 nodes: 24). Two models share an
# owned first choice that the autoscaled pool backs up.
REACTIVE: dict = {
    "name": "reactive",
    "horizon": {"start": "2026-01-01", "duration": "5d", "step": "30min"},
    "fleet": {"pools": [
        {"name": "own", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 8},
        burst_pool({"policy": "reactive", "scale_down_cooldown": "3h", "node_gpus": 4},
                   max_count=26, provisioning_delay="40min"),
    ]},
    "models": [
        {"name": "chat", "pools": ["own", "burst"], "gpus_per_replica": 2, "capacity_rps": 5.0,
         "demand": {"base_rps": 40, "seasonality": {"daily_amplitude": 0.6}, "noise": "poisson"}},
        {"name": "embed", "pools": ["own", "burst"], "gpus_per_replica": 1, "capacity_rps": 3.0,
         "demand": {"base_rps": 6, "seasonality": {"daily_amplitude": 0.3, "peak_hour": 3}, "noise": "poisson"}},
    ],
    **COSTS,
}

# A 24-entry schedule; the horizon starts at 00:30, so every hourly step overlaps two UTC
# hours and holds the larger entry. A reserved first choice; 90 min delay, 2 h scale-down
# window, min_count 3 (one 4-GPU node).
SCHEDULE = [0, 0, 0, 0, 0, 0, 4, 8, 12, 16, 20, 24, 28, 28, 28, 24, 20, 16, 12, 8, 4, 0, 0, 0]
SCHEDULED: dict = {
    "name": "scheduled",
    "horizon": {"start": "2026-01-01T00:30:00", "duration": "4d", "step": "1h"},
    "fleet": {"pools": [
        {"name": "res", "gpu": "H100", "acquisition": {"type": "reserved", "usd_per_gpu_hour": 2.0, "term": "1y"},
         "count": 8},
        burst_pool({"policy": "scheduled", "node_gpus": 4, "scale_down_cooldown": "2h", "schedule": SCHEDULE},
                   count=4, max_count=30, min_count=3, provisioning_delay="90min"),
    ]},
    "models": [
        {"name": "chat", "pools": ["res", "burst"], "gpus_per_replica": 2, "capacity_rps": 5.0,
         "demand": {"base_rps": 30, "seasonality": {"daily_amplitude": 0.6}, "noise": "poisson"}},
        {"name": "embed", "pools": ["burst", "res"], "gpus_per_replica": 2, "capacity_rps": 3.0,
         "demand": {"base_rps": 6, "noise": "poisson"}},
    ],
    **COSTS,
}

# A daily cosine and a 30 min delay on hourly steps: each decision covers its step and the next.
PREDICTIVE: dict = {
    "name": "predictive",
    "horizon": {"start": "2026-01-01", "duration": "4d", "step": "1h"},
    "fleet": {"pools": [
        {"name": "own", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 8},
        burst_pool({"policy": "predictive", "node_gpus": 2, "margin": 0.2, "target_utilization": 0.8},
                   max_count=64, provisioning_delay="30min"),
    ]},
    "models": [
        {"name": "chat", "pools": ["own", "burst"], "gpus_per_replica": 2, "capacity_rps": 5.0,
         "demand": {"base_rps": 30, "seasonality": {"daily_amplitude": 0.5}, "noise": "poisson"}},
    ],
    **COSTS,
}


def test_autoscale_reactive_agrees():
    scenario = simulator.load_scenario(REACTIVE)
    result, ref = engine_and_reference(scenario, seed=3)
    burst = ref["pool_installed"][:, 1]
    decisions = ref["autoscale_decisions"]["burst"]
    # The first decision (t = 0) asks for 8 GPUs: in service at 40 min, a third into step 1
    # (30-60 min), which so has 8 GPUs for two thirds of it: 16/3 on average; 8 from step 2.
    assert decisions[0][3] == 8 and burst[:3] == pytest.approx([0, 16 / 3, 8], rel=1e-12)
    # Whole nodes, up to the 24 of max_count 26, and back down at night. Every arrival is a
    # third into a step, so a step holds a GPUs for a third of it and b for the rest, both
    # whole nodes: 3 × its mean (a + 2b) is a multiple of 4.
    assert {d[3] % 4 for d in decisions} == {0} and burst.max() == 24
    thrice = 3 * burst
    assert np.allclose(thrice, np.rint(thrice), atol=1e-9) and set(np.rint(thrice).astype(int) % 4) == {0}
    assert (np.abs(burst - np.rint(burst)) > 0.1).any()  # some steps are mixed
    assert (np.diff(burst) < 0).any() and (np.diff(burst) > 0).any()
    assert (ref["pool_inference"][:, 1] > 0).any() and (ref["pool_inference"][:, 0] == 8).any()
    assert (ref["model_shortfall_gpus"][:2] > 0).any() and (ref["model_shortfall_gpus"][2:] > 0).any()
    assert_agree(ref, result)


def test_autoscale_scheduled_agrees():
    scenario = simulator.load_scenario(SCHEDULED)
    # A step from hh:30 to hh+1:30 holds the larger of the two hours' entries.
    per_step = schedule_per_step(SCHEDULE, scenario.horizon.start, 3600.0, scenario.horizon.n_steps)
    assert per_step == [max(SCHEDULE[k % 24], SCHEDULE[(k + 1) % 24]) for k in range(96)]
    result, ref = engine_and_reference(scenario, seed=3)
    burst = ref["pool_installed"][:, 1]
    assert burst.min() == 4 and burst.max() == 28  # min_count 3 is one node of 4
    assert ref["pool_cloud"][:, 0].tolist() == [16.0] * 96  # the reserved pool: 8 × $2 every hour
    assert (ref["pool_inference"][:, 1] > 0).all() and (ref["model_unserved"] > 0).any()
    assert_agree(ref, result)


def test_autoscale_predictive_agrees():
    scenario = simulator.load_scenario(PREDICTIVE)
    result, ref = engine_and_reference(scenario, seed=3)
    burst = ref["pool_installed"][:, 1]
    decisions = ref["autoscale_decisions"]["burst"]
    # Decisions at every hour, each looking at its step and the next (1 h + 30 min ahead).
    assert [d[:2] for d in decisions[:3]] == [(0.0, 0), (3600.0, 1), (7200.0, 2)]
    # The forecast (with 20% margin at 80% load) covers the drawn peaks: the pool follows the
    # daily cosine, from 0 GPUs at night, and nothing goes unserved.
    assert burst.min() == 0 and burst.max() >= 16 and (ref["model_shortfall_gpus"] == 0).all()
    assert_agree(ref, result)


def test_autoscaler_arrival_at_a_decision_instant_agrees():
    """GPUs that arrive at the instant of a decision are in service for it, not pending.

    One scheduled pool, 8 GPUs wanted in hour 0 and 1 only (0 after), 1 h delay = the
    decision interval: asked at t = 0 (steps 0..1), in service at 1 h, where the decision
    (steps 1..2: 0 wanted) releases them at once, as it does with a 90 min or 2 h delay.
    """
    data = {
        "name": "tie",
        "horizon": {"start": "2026-01-05", "duration": "4h", "step": "1h"},
        "fleet": {"pools": [burst_pool({"policy": "scheduled", "schedule": [8] + [0] * 23},
                                       max_count=8, provisioning_delay="1h")]},
        "models": [{"name": "chat", "pools": ["burst"], "gpus_per_replica": 1, "capacity_rps": 1.0,
                    "demand": {"base_rps": 0.1, "noise": "none"}}],
    }
    result, ref = engine_and_reference(simulator.load_scenario(data), seed=1)
    assert ref["pool_installed"][:, 0].tolist() == [0, 0, 0, 0]
    assert_agree(ref, result)


# -- training ------------------------------------------------------------------------------

# ``pre`` (preempt) is chat's second choice: it serves all of chat until ``fresh`` gets its
# 16 GPUs at 60.5 h (step 61), then only chat's peaks. ``left`` (leftover) serves embed, whose
# peaks its jobs squeeze. p2 has the higher priority; p1 and p3 are preempted.
TRAINING: dict = {
    "name": "training",
    "horizon": {"start": "2026-01-01", "duration": "4d", "step": "1h"},
    "fleet": {"pools": [
        {"name": "fresh", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 0,
         "changes": [{"at": "60.5h", "add": 16}]},
        {"name": "pre", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 32,
         "training": {"mode": "preempt"}},
        {"name": "left", "gpu": "H100", "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.5}, "count": 16,
         "training": {"mode": "leftover"}},
    ]},
    "models": [
        {"name": "chat", "pools": ["fresh", "pre"], "gpus_per_replica": 4, "capacity_rps": 5.0,
         "demand": {"base_rps": 20, "seasonality": {"daily_amplitude": 0.5}, "noise": "poisson"}},
        {"name": "embed", "pools": ["left"], "gpus_per_replica": 2, "capacity_rps": 4.0,
         "demand": {"base_rps": 14, "seasonality": {"daily_amplitude": 0.4, "peak_hour": 9}, "noise": "poisson"}},
    ],
    "training": {"policy": "fifo", "review_every": "1h", "jobs": [
        {"name": "p1", "pool": "pre", "gpus": 12, "submit": 0, "duration": "30h", "checkpoint_interval": "4h",
         "restart_time": "1h"},
        {"name": "p2", "pool": "pre", "gpus": 8, "submit": "2h", "duration": "20h", "checkpoint_interval": "3h",
         "restart_time": "2h", "priority": 1},
        {"name": "p3", "pool": "pre", "gpus": 4, "submit": "10h", "duration": "12h", "checkpoint_interval": "2h"},
        {"name": "p4", "pool": "pre", "gpus": 16, "submit": "3d", "duration": "10h", "checkpoint_interval": "5h",
         "restart_time": "1h"},
        {"name": "l1", "pool": "left", "gpus": 8, "submit": 0, "duration": "24h", "checkpoint_interval": "6h"},
        {"name": "l2", "pool": "left", "gpus": 4, "submit": "5h", "duration": "10h"},
        {"name": "l3", "pool": "left", "gpus": 6, "submit": "1d", "duration": "30h", "checkpoint_interval": "6h"},
    ]},
    **COSTS,
}


@pytest.mark.parametrize("seed", [3, 8])
def test_training_preempt_and_leftover_agree(seed: int):
    scenario = simulator.load_scenario(TRAINING)
    result, ref = engine_and_reference(scenario, seed)
    jobs = {job["name"]: job for job in ref["jobs"]}
    # Preemptions happen, only in the preempt pool and never to the higher-priority p2; jobs
    # wait for room, and all end inside the horizon.
    assert sum(job["preemptions"] for job in jobs.values()) >= 2 and jobs["p2"]["preemptions"] == 0
    assert all(jobs[name]["preemptions"] == 0 for name in ("l1", "l2", "l3"))
    assert all(job["end_s"] is not None for job in jobs.values())
    submitted = {spec.name: scenario.horizon.offset_of(spec.submit) for spec in scenario.training.jobs}
    assert any(job["start_s"] > submitted[name] for name, job in jobs.items())
    pre, left = ref["pool_inference"][:, 1], ref["pool_training"][:, 2]
    assert pre[:61].min() > 0 and (pre[61:] == 0).any() and (pre[61:] > 0).any()
    # In the leftover pool, jobs keep their GPUs and embed goes short.
    assert (ref["model_unserved"][:, 1][left > 0] > 0).any()
    assert (ref["pool_rnd"][:, 1:] > 0).any() and (ref["pool_rnd"][:, 0] == 0).all()
    assert_agree(ref, result)


def test_training_reference_by_hand():
    """The reference's training, on a case small enough to work out on paper."""
    data = {
        "name": "hand",
        "horizon": {"start": "2026-01-01", "duration": "10h", "step": "1h"},
        "fleet": {"pools": [{"name": "pre", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 0},
                             "count": 8, "training": {"mode": "preempt"}}]},
        "models": [{"name": "m", "pools": ["pre"], "gpus_per_replica": 1, "capacity_rps": 1.0,
                    "demand": {"base_rps": 1.0, "noise": "none"}}],
        "training": {"jobs": [{"name": "j", "pool": "pre", "gpus": 8, "duration": "5h",
                               "checkpoint_interval": "2h", "restart_time": "1h"}]},
    }
    demand = np.zeros((10, 1))
    demand[3] = 2 * 3600  # step 3 needs 2 replicas: j is preempted at 3 h, 2 h of its 3 saved
    ref = reference_run(simulator.load_scenario(data), demand)
    # Back at 4 h (8 GPUs free again): 1 h restart, then the 3 h left: ends at 8 h.
    assert ref["pool_training"][:, 0].tolist() == [8, 8, 8, 0, 8, 8, 8, 8, 0, 0]
    assert ref["pool_inference"][:, 0].tolist() == [0, 0, 0, 2, 0, 0, 0, 0, 0, 0]
    assert ref["jobs"] == [{"name": "j", "start_s": 0.0, "end_s": 8 * 3600.0, "preemptions": 1, "done_s": 5 * 3600.0}]
