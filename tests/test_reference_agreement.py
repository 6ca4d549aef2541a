"""The fast engine agrees with the slow per-step SimPy reference (benchmarks/reference_loop.py).

The reference is written from the step model's specification, independently of
``simulator.path.kernels`` and ``simulator.path.fleet``; both are fed the same demand draws, and every
per-step array the engine writes must equal the reference's to rtol 1e-9 / atol 1e-6.
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

import simulator  # noqa: E402
from simulator.path.compiled import compile_scenario  # noqa: E402
from simulator.path.engine import draw_demand, run_path  # noqa: E402
from simulator.path.kernels import POOL_OUT_OF_SERVICE  # noqa: E402

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
# (step 439) and the 125.5 h purchase's at 563.8 h (step 564), both inside the 720 h horizon.
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
                    {"at": "125.5h", "add": 8},  # mid-step: takes effect at step 126
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


def assert_agree(ref, result) -> None:
    __tracebackhide__ = True
    problems = compare(ref, result)
    assert not problems, "engine disagrees with the reference:\n" + "\n".join(problems)


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
    for model in data["models"]:
        model["demand"] = {
            "base_rps": 0.01,
            "noise": "none",
            "input_tokens": 1000,
            "output_tokens": 250,
        }
    scenario = simulator.load_scenario(data)
    demand = np.array([[30000.0, 20000.0]] * 6)  # c = 21600 (chat) and 9000 (embed) per step
    ref = reference_run(scenario, demand)
    # chat needs 2 replicas (8 GPUs), embed 3 (6 GPUs): embed takes 3 x 2 of the 8 cloud GPUs.
    assert ref["model_replicas"].tolist() == [[2, 3]] * 6
    assert ref["pool_installed"][:, 0].tolist() == [16, 16, 16, 20, 12, 12]
    assert ref["pool_inference"][0].tolist() == [8, 6, 0]  # the lab pool serves nothing
    assert ref["pool_busy"][0] == pytest.approx([8 * 30000 / 43200, 2 * 20000 / 9000, 0.0])
    life_s = 0.05 * 365.25 * 86400
    # Removing 8 at 4 h retires 8 of the 16 initial GPUs (oldest first); 8 + 4 remain.
    expected = [16, 16, 16, 20, 12, 12]
    assert ref["pool_depreciation"][:, 0] == pytest.approx(
        [n * 30000 / life_s * 3600 for n in expected]
    )
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
    assert (own[:51] == 0).all() and (own[51:300] == 6).all() and (own[300:] == 0).all()
    assert (ref["pool_installed"][:, 2] - ref["pool_available"][:, 2])[48:].tolist() == [3] * (720 - 48)
    assert (ref["model_shortfall_gpus"][51:300] > 0).any()
    assert_agree(ref, result)
    assert (result.pool_out[:, :, POOL_OUT_OF_SERVICE] == ref["pool_installed"] - ref["pool_available"]).all()
