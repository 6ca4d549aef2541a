"""Invariants that hold for every scenario, checked on generated ones (Hypothesis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import simulator
from simulator.path import kernels
from simulator.path.compiled import compile_scenario
from simulator.path.engine import draw_demand, run_path
from simulator.path.fleet.outages import OutageChannels
from simulator.path.tables import COST_COMPONENTS
from simulator.scenario.distributions import FixedDuration

GROWTH = st.one_of(
    st.builds(lambda: {"kind": "constant"}),  # a fresh dict each time: callers may change what they draw
    st.builds(lambda r: {"kind": "linear", "increase_per_month": r}, st.floats(-0.5, 3)),
    st.builds(lambda r: {"kind": "exponential", "rate_per_month": r}, st.floats(-0.5, 2)),
    st.builds(lambda c, r: {"kind": "logistic", "ceiling": c, "rate_per_month": r},
              st.floats(1.5, 20), st.floats(0.05, 3)),
)


@st.composite
def scenarios(draw):
    n_pools = draw(st.integers(1, 3))
    days = draw(st.integers(1, 4))
    step = draw(st.sampled_from(["15min", "1h", "6h"]))
    pools = []
    for p in range(n_pools):
        kind = draw(st.sampled_from(["owned", "on_demand", "reserved", "spot"]))
        if kind == "owned":
            acquisition = {"type": "owned", "price_usd": draw(st.floats(0, 50_000)),
                           "depreciation_years": draw(st.floats(0.001, 6))}
        elif kind == "on_demand":
            acquisition = {"type": "on_demand", "usd_per_gpu_hour": draw(st.floats(0, 10))}
        elif kind == "reserved":
            acquisition = {"type": "reserved", "usd_per_gpu_hour": draw(st.floats(0, 10)),
                           "term": f"{draw(st.integers(1, days * 24))}h"}
        else:
            acquisition = {"type": "spot", "usd_per_gpu_hour": draw(st.floats(0, 10)),
                           "preemption_rate_per_gpu_hour": draw(st.floats(0, 0.2)), "replacement": "3h"}
        count = draw(st.integers(0, 40))
        changes = []
        if draw(st.booleans()):
            changes.append({"at": f"{draw(st.integers(0, days * 24))}h", "add": draw(st.integers(1, 30))})
        pool = {"name": f"p{p}", "gpu": draw(st.sampled_from(["H100", "a100-80gb", "L40S"])),
                "acquisition": acquisition, "count": count, "changes": changes}
        if draw(st.booleans()):
            pool["failures"] = {"rate_per_gpu_hour": draw(st.floats(0, 0.1)),
                                "blast_radius": draw(st.sampled_from([1, 8])), "repair": "2h"}
        pools.append(pool)
    models = []
    for m in range(draw(st.integers(1, 3))):
        chosen = draw(st.lists(st.integers(0, n_pools - 1), min_size=1, max_size=n_pools, unique=True))
        models.append({
            "name": f"m{m}",
            "pools": [f"p{i}" for i in chosen],
            "gpus_per_replica": draw(st.integers(1, 8)),
            "capacity_rps": draw(st.floats(0.05, 20)),
            "demand": {
                "base_rps": draw(st.floats(0, 60)),
                "growth": draw(GROWTH),
                "noise": draw(st.sampled_from(["poisson", "none"])),
                "seasonality": {"daily_amplitude": draw(st.floats(0, 1)),
                                "weekly_amplitude": draw(st.floats(0, 1))},
                "input_tokens": draw(st.floats(0, 4000)),
                "output_tokens": draw(st.floats(0, 2000)),
            },
        })
        if draw(st.booleans()):
            models[-1]["api"] = {"mode": "overflow", "input_usd_per_1m": 1.0, "output_usd_per_1m": 2.0,
                                 "rate_limit_rps": draw(st.floats(0.1, 20))}
    return {
        "name": "generated",
        "horizon": {"start": "2026-02-03T05:00", "duration": f"{days}d", "step": step},
        "seed": draw(st.integers(0, 2**32)),
        "fleet": {"pools": pools},
        "models": models,
        "pricing": {"input_usd_per_1m": draw(st.floats(0, 10)), "output_usd_per_1m": draw(st.floats(0, 30))},
        "energy": {"pue": draw(st.floats(1, 2)), "usd_per_kwh": draw(st.floats(0, 0.3)),
                   "idle_draw_fraction": draw(st.floats(0, 1))},
        "other_costs": {"usd_per_month": draw(st.floats(0, 1e5))},
    }


def _load(data):
    """Load a generated scenario; drop the ones whose replicas never fit their pools (exit 2)."""
    try:
        return simulator.load_scenario(data)
    except simulator.ScenarioError as exc:
        assume(not exc.path.endswith("gpus_per_replica"))
        raise


SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios())
def test_invariants(data):
    result = simulator.simulate(_load(data), paths=2, executor="serial")
    ts, pools = result.timeseries, result.pools
    assert np.allclose(ts["served_requests"] + ts["unserved_requests"], ts["demand_requests"], rtol=1e-12, atol=1e-9)
    assert (ts["served_requests"] >= 0).all() and (ts["unserved_requests"] >= -1e-9).all()
    assert ((ts["utilization"] >= 0) & (ts["utilization"] <= 1 + 1e-12)).all()
    assert ((pools["utilization"] >= 0) & (pools["utilization"] <= 1 + 1e-12)).all()
    assert ((ts["slo_attainment"] >= 0) & (ts["slo_attainment"] <= 1 + 1e-12)).all()
    costs = [c for c in ts.columns if c.startswith("cost_")] + ["cogs_usd", "rnd_compute_usd", "revenue_usd"]
    assert (ts[costs] >= 0).all().all()
    assert np.allclose(ts[list(COST_COMPONENTS)].sum(axis=1), ts["cost_usd"])
    tiers = ts[["cost_cloud_on_demand_usd", "cost_cloud_reserved_usd", "cost_cloud_spot_usd", "cost_api_usd"]]
    assert np.allclose(tiers.sum(axis=1), ts["cost_cloud_usd"])
    assert np.allclose(ts["gross_margin_usd"], ts["revenue_usd"] - ts["cogs_usd"])
    for frame in (ts, pools):
        assert (frame["gpus_idle"] >= 0).all()
        assert (frame["gpus_inference"] + frame["gpus_training"] + frame["gpus_idle"] == frame["gpus_available"]).all()
        assert (frame["gpus_available"] <= frame["gpus_installed"]).all()
    assert (ts["shortfall_gpus"] >= 0).all()
    # Shortfall in GPUs exactly when requests go unserved.
    assert ((ts["shortfall_gpus"] > 0) == (ts["unserved_requests"] > 0)).all()


@settings(max_examples=15, deadline=None)
@given(scenarios())
def test_same_seed_same_outputs(data):
    scenario = _load(data)
    first = simulator.simulate(scenario, paths=2, executor="serial")
    second = simulator.simulate(scenario, paths=2, executor="serial")
    pd.testing.assert_frame_equal(first.timeseries, second.timeseries)
    pd.testing.assert_frame_equal(first.pools, second.pools)
    assert first.summary == second.summary


@settings(max_examples=40, deadline=None)
@given(scenarios(), st.data())
def test_kernel_equals_its_python_function(data, draws):
    plan = compile_scenario(_load(data))
    demand = draw_demand(plan, 3, 0)
    n_pools = len(plan.pool_names)
    rng = np.random.default_rng(draws.draw(st.integers(0, 2**32)))
    installed = rng.integers(0, 50, n_pools)
    available = np.minimum(installed, rng.integers(0, 50, n_pools))
    training = np.minimum(available, rng.integers(0, 10, n_pools))
    depreciation = rng.uniform(0, 1, n_pools)
    is_spot = rng.random(n_pools) < 0.5
    rates = rng.uniform(0, 0.5, n_pools)
    # Some of the GPUs not available are out of service (RMA), the rest failed.
    out_of_service = rng.integers(0, installed - available + 1)

    def outage_state():
        # Fresh outage channels (one per pool, high rates) with the same random buffers for both calls.
        channels = OutageChannels([(p, rates[p], 2, FixedDuration(value="2h"), np.random.default_rng(p))
                                   for p in range(n_pools)], plan.n_steps, plan.step_s)
        channels.prepare(0, plan.n_steps, installed)
        return channels.ints, channels.floats, channels.heap_time, channels.heap_count, channels.expo, channels.repair
    blocked = rng.integers(0, 5, n_pools)
    training_floor = rng.integers(0, 4, n_pools)
    contracted = np.where(rng.random(n_pools) < 0.5, rng.integers(0, 6, n_pools), 0)  # GPUs sold on contracts
    contract_busy = contracted * rng.uniform(0, 1, n_pools)
    serves_model = rng.random(n_pools) < 0.7
    preempt = rng.random(n_pools) < 0.5
    stop_from = draws.draw(st.sampled_from([0, plan.n_steps]))  # stop at a preemption, or squeeze the jobs
    n_models = len(plan.model_names)
    api_mode = rng.integers(0, 3, n_models)
    api_limit = np.where(rng.random(n_models) < 0.5, np.inf, rng.uniform(0, 5000, n_models))
    # Serving policies and bursting before preempting, drawn per (model, slot): a model walks
    # its pools twice when its first slot is marked.
    shape = plan.preferences.shape
    spread = rng.integers(0, 3, shape)
    headroom = rng.uniform(0.05, 0.9, shape)
    burst = np.where(rng.random(shape[0])[:, None] < 0.5, rng.integers(1, 3, shape), 0)
    burst[:, 0] = np.where(burst[:, 0] > 0, 1, 0)
    k1 = plan.n_steps
    k0 = draws.draw(st.integers(0, k1))

    def call(fn):
        pool_out = np.zeros((plan.n_steps, n_pools, kernels.N_POOL_COLS))
        model_out = np.zeros((plan.n_steps, len(plan.model_names), kernels.N_MODEL_COLS))
        other_out = np.zeros(plan.n_steps)
        reached = fn(k0, k1, plan.step_s, demand, plan.capacity_per_step, plan.gpus_per_replica, plan.companion,
           plan.preferences,
           plan.revenue_per_request, plan.fixed_revenue, api_mode, api_limit, plan.api_cost_per_request + 1e-4,
           burst, plan.slo_load, plan.slo_attainment, spread, headroom, installed, installed - available - out_of_service, out_of_service,
           is_spot, blocked, training, training_floor, contracted, contract_busy, preempt, stop_from,
           serves_model, depreciation, plan.cloud_usd_gpu_s, plan.facility_usd_gpu_s, plan.busy_kw, plan.idle_kw,
           plan.usd_per_kwh, plan.other_usd_s, *outage_state(), pool_out, model_out, other_out,
           kernels.step_scratch(n_pools, len(plan.model_names), plan.preferences.shape[1]), 0)
        return pool_out, model_out, other_out, np.array([reached])

    for jitted, python in zip(call(kernels.integrate_interval), call(kernels.integrate_interval.py_func), strict=True):
        np.testing.assert_allclose(jitted, python, rtol=1e-12, atol=1e-12)


def test_path_results_do_not_depend_on_other_paths():
    data = {
        "name": "p", "horizon": {"start": "2026-01-01", "duration": "2d", "step": "1h"},
        "fleet": {"pools": [{"name": "a", "gpu": "H100", "count": 8}]},
        "models": [{"name": "m", "pools": ["a"], "capacity_rps": 1, "demand": {"base_rps": 7}}],
    }
    plan = compile_scenario(simulator.load_scenario(data))
    alone = run_path(plan, seed=5, path=3)
    many = simulator.simulate(data, paths=5, seed=5, executor="serial")
    path3 = many.timeseries[many.timeseries["path"] == 3]
    np.testing.assert_array_equal(path3["demand_requests"].to_numpy(), alone.model_out[:, 0, kernels.MODEL_DEMAND])
