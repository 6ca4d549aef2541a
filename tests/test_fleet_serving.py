"""Fleet serving as operators run it: which replicas are up, the load spread over them, and the
latency read at the load each one carries (issue 27, items 1 and 3). Figures by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import base_scenario, run

# An SLO curve on which a replica at half its capacity meets the SLO for every request and
# one at full capacity for 90.45% of them (the figure a packed fleet showed every hour).
CURVE = {"load": [0.5, 0.8, 1.0], "attainment": [1.0, 0.98, 0.9045]}


def _sixty_four_gpus(policy) -> dict:
    """64 owned GPUs, replicas of 4 GPUs serving 1 req/s each, demand of 8 req/s: 8 replicas' worth."""
    data = base_scenario()
    data["fleet"]["pools"][0].update(count=64, serving_policy=policy)
    data["models"][0].update(gpus_per_replica=4, capacity_rps=1.0, slo_curve=CURVE)
    data["models"][0]["demand"]["base_rps"] = 8.0
    return data


def test_all_replicas_up_spreads_the_load_and_reads_latency_at_half_load():
    # 64 GPUs hold 16 replicas of 4; the router spreads 8 req/s over 16 req/s of capacity:
    # each replica at 0.5, where the curve reads 1.0. The load needs 8 replicas (32 GPUs).
    result = run(_sixty_four_gpus("all"))
    ts, models, pools = result.timeseries, result.models, result.pools
    assert (models["replicas_up"] == 16).all() and (models["replicas"] == 8).all()
    assert (pools["gpus_serving"] == 64).all()
    assert (pools["gpus_inference"] == 32).all() and (pools["gpus_idle"] == 32).all()
    assert ts["slo_attainment"].to_numpy() == pytest.approx(1.0, abs=1e-12)
    # Busy GPU-time follows the load, not the replicas: 16 replicas × 4 GPUs × 0.5 = 32.
    assert pools["gpus_busy"].to_numpy() == pytest.approx(32.0)
    assert ts["utilization"].to_numpy() == pytest.approx(0.5)


def test_only_the_replicas_needed_keeps_todays_figures():
    # 8 replicas at full load: attainment 0.9045 every hour, 32 GPUs idle and not serving.
    result = run(_sixty_four_gpus("needed"))
    assert (result.models["replicas_up"] == 8).all()
    assert (result.pools["gpus_serving"] == 32).all() and (result.pools["gpus_idle"] == 32).all()
    assert result.timeseries["slo_attainment"].to_numpy() == pytest.approx(0.9045, abs=1e-12)


def test_headroom_keeps_each_replica_below_its_share_of_capacity():
    # headroom 0.3: replicas = ceil(8 / (1 × 0.7)) = ceil(11.43) = 12, each at 8/12 = 2/3 of its
    # capacity. The curve between 0.5 (1.0) and 0.8 (0.98) at 2/3: 1 − 0.02 × (2/3 − 0.5) / 0.3.
    result = run(_sixty_four_gpus({"headroom": 0.3}))
    assert (result.models["replicas_up"] == 12).all() and (result.pools["gpus_serving"] == 48).all()
    expected = 1.0 - 0.02 * (2 / 3 - 0.5) / 0.3
    assert result.timeseries["slo_attainment"].to_numpy() == pytest.approx(expected, abs=1e-12)


def test_energy_follows_the_spread_load_the_same_as_packed_replicas():
    # A GPU at half its capacity draws halfway between idle and busy power: 16 replicas at 0.5
    # draw what 8 at 1.0 and 8 idle do. 32 busy × 0.7 kW + 32 idle × 0.2 kW per hour, by hand.
    energy = {"usd_per_kwh": 0.1, "pue": 1.0, "server_power_factor": 1.0, "draw_fraction": 1.0,
              "idle_draw_fraction": 0.3}
    spread = run({**_sixty_four_gpus("all"), "energy": energy}).timeseries
    packed = run({**_sixty_four_gpus("needed"), "energy": energy}).timeseries
    kw = 0.7  # an H100's TDP
    by_hand = (32 * kw + 32 * kw * 0.3) * 0.1
    assert spread["cost_energy_usd"].to_numpy() == pytest.approx(by_hand, rel=1e-12)
    assert packed["cost_energy_usd"].to_numpy() == pytest.approx(by_hand, rel=1e-12)


def test_spare_gpus_are_shared_by_demand_and_a_model_can_keep_only_its_needed_replicas():
    # 16 GPUs of 1-GPU replicas at 1 req/s; m needs 4 (4 req/s), n needs 2 (2 req/s): spare 10.
    # Shares by demand in GPUs: m 4/6 × 10 = 6.67 -> 6, n 2/6 × 10 = 3.33 -> 3; one left: m's.
    # So m has 4 + 7 = 11 up (load 4/11), n 2 + 3 = 5 (load 2/5).
    data = base_scenario()
    data["fleet"]["pools"][0]["count"] = 16
    data["models"].append({"name": "n", "pools": ["a"], "gpus_per_replica": 1, "capacity_rps": 1.0,
                           "demand": {"base_rps": 2.0, "noise": "none"}})
    models = run(data).models.groupby("model", observed=True)["replicas_up"].mean()
    assert models["m"] == 11 and models["n"] == 5
    # n keeps only its needed replicas on the pool: m takes all 10 spare GPUs.
    data["models"][1]["replicas"] = {"a": {"serving_policy": "needed"}}
    models = run(data).models.groupby("model", observed=True)["replicas_up"].mean()
    assert models["m"] == 14 and models["n"] == 2


def test_replicas_are_spread_only_over_gpus_training_leaves():
    # 16 GPUs, a 10-GPU job running in leftover mode: 6 left, 4 needed by inference, so 2
    # more replicas up (6 in all, load 4/6); the job keeps its GPUs.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "6h", "step": "1h"})
    data["fleet"]["pools"][0]["count"] = 16
    data["training"] = {"jobs": [{"name": "j", "pool": "a", "gpus": 10, "duration": "30d"}]}
    result = run(data)
    assert (result.timeseries["gpus_training"] == 10).all()
    assert (result.models["replicas_up"] == 6).all() and (result.pools["gpus_serving"] == 6).all()


# -- Changes inside a step -------------------------------------------------------------------

def _autoscaled_ramp(step: str) -> dict:
    """Demand rising linearly from 100 req/s by 30 × 100 req/s a month, served only by an
    on-demand pool that a reactive autoscaler sizes each step (delay 30 min, no cooldown) in
    replicas of one GPU serving 0.01 req/s."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2d", "step": step})
    data["fleet"]["pools"][0].update(count=0, acquisition={
        "type": "on_demand", "usd_per_gpu_hour": 1.0, "min_count": 0, "max_count": 10_000_000,
        "provisioning_delay": "30min",
        "autoscale": {"policy": "reactive", "target_utilization": 1.0, "cooldown": "0s"}})
    data["models"][0].update(capacity_rps=0.01, gpus_per_replica=1)
    data["models"][0]["demand"] = {"base_rps": 100.0, "noise": "none",
                                   "growth": {"kind": "linear", "increase_per_month": 30.0}}
    return data


def _ramp_unserved_by_hand(step_s: float) -> float:
    """The rule worked out without the engine: at each step start ``t`` the autoscaler asks for
    ``ceil(mean rate of the step / 0.01)`` GPUs, in service from ``t + 30 min``; each step's
    demand is its mean rate over the whole step; capacity changes inside a step serve the part
    of the step after them."""
    month = 365.25 * 86400 / 12
    n = round(2 * 86400 / step_s)

    def mean_rate(k: int) -> float:
        return 100.0 * (1 + 30.0 * ((k + 0.5) * step_s) / month)

    asked = [math.ceil(mean_rate(k) / 0.01 * (1 - 1e-12)) * 0.01 for k in range(n)]
    arrivals = sorted((k * step_s + 1800.0, rate) for k, rate in enumerate(asked))
    unserved = 0.0
    for k in range(n):
        start, end = k * step_s, (k + 1) * step_s
        # Capacity in service during the step, piecewise: the last arrival at or before each instant.
        cuts = [start] + [t for t, _ in arrivals if start < t < end] + [end]
        for a, b in zip(cuts, cuts[1:], strict=False):
            capacity = max([rate for t, rate in arrivals if t <= a + 1e-9], default=0.0)
            unserved += max(mean_rate(k) - capacity, 0.0) * (b - a)
    return unserved


@pytest.mark.parametrize("step,step_s", [("1h", 3600.0), ("15min", 900.0)])
def test_autoscaled_capacity_serves_from_its_arrival_inside_the_step(step: str, step_s: float):
    unserved = run(_autoscaled_ramp(step)).timeseries["unserved_requests"].sum()
    assert unserved == pytest.approx(_ramp_unserved_by_hand(step_s), rel=1e-7)


def test_the_autoscalers_misses_do_not_depend_on_the_step_length():
    # On a linear ramp the capacity lags the demand by the provisioning delay whatever the
    # step: the deficit is slope × 30 min at any instant. Before, capacity asked at t served
    # from the first step starting after t + 30 min: the lag was a whole hour at 1-hour steps.
    hourly = run(_autoscaled_ramp("1h")).timeseries["unserved_requests"].sum()
    quarter = run(_autoscaled_ramp("15min")).timeseries["unserved_requests"].sum()
    assert abs(hourly - quarter) / quarter < 0.10
    # And the steady lag, away from the start: slope × delay × time, slope = 100 × 30 / month.
    slope = 100.0 * 30.0 / (365.25 * 86400 / 12)
    ts = run(_autoscaled_ramp("15min")).timeseries
    steady = ts["unserved_requests"].to_numpy()[8:].sum()
    assert steady == pytest.approx(slope * 1800.0 * (2 * 86400 - 8 * 900), rel=0.02)


def test_a_delivery_inside_a_step_is_paid_for_and_depreciated_from_its_arrival():
    # 12 GPUs at $30,000 over 5 years, added at 06:45: step 6 depreciates them for 15 of its 60
    # minutes. Per GPU-second 30,000 / (5 × 365.25 × 86400).
    data = base_scenario()
    data["fleet"]["pools"][0]["acquisition"] = {"type": "owned", "price_usd": 30_000, "depreciation_years": 5}
    data["fleet"]["pools"][0].update(count=0, changes=[{"at": "405min", "add": 12}])
    ts = run(data).timeseries
    per_s = 30_000 / (5 * 365.25 * 86400)
    assert ts["cost_depreciation_usd"].iloc[6] == pytest.approx(12 * per_s * 900, rel=1e-12)
    assert ts["cost_depreciation_usd"].iloc[7] == pytest.approx(12 * per_s * 3600, rel=1e-12)
    assert ts["capex_usd"].iloc[6] == pytest.approx(360_000)
    assert np.isclose(ts["cost_depreciation_usd"].iloc[:6], 0.0).all()


def test_the_report_says_which_serving_policy_each_pool_ran(tmp_path):
    import yaml

    from simulator.report.assumptions import assumptions_table

    data = _sixty_four_gpus({"headroom": 0.3})
    data["fleet"]["pools"].append({"name": "b", "gpu": "H100", "count": 8, "serving_policy": "needed"})
    data["fleet"]["pools"].append({"name": "c", "gpu": "H100", "count": 8})
    data["models"][0].update(pools=["a", "b", "c"], replicas={"c": {"serving_policy": "needed"}})
    run(data).save(tmp_path / "run")

    resolved = yaml.safe_load((tmp_path / "run" / "scenario.resolved.yaml").read_text())
    rows = {row[0]["text"]: row[1]["text"] for row in assumptions_table(resolved)["rows"]}
    assert rows["Pool a"].endswith("serving policy: headroom 30%")
    assert rows["Pool b"].endswith("serving policy: replicas needed")
    assert rows["Pool c"].endswith("serving policy: all replicas up")
    assert rows["Serving policy of m"] == "replicas needed on c"
