"""Scheduling between pools and jobs: bursting to rented GPUs before preempting training, a
cap on a job's preemptions per day, and what a job's delay costs (issue 27, item 4)."""

from __future__ import annotations

import pandas as pd
import pytest

import simulator
from simulator.path.compiled import compile_scenario
from simulator.path.engine import run_path
from tests.helpers import base_scenario, run

PEAK = [{"at": "0h", "rps": 0}, {"at": "10h", "rps": 0}, {"at": "601min", "rps": 4}, {"at": "20h", "rps": 4},
        {"at": "1201min", "rps": 0}]


def _fine_tune_beside_a_burst_pool(**model) -> dict:
    """8 owned GPUs in preempt mode running an 8-GPU fine-tune; inference needs 4 GPUs from
    10:00 to 20:00 (1 GPU serves 1 req/s); an on-demand pool at $2/GPU-h that a reactive
    autoscaler (no delay, no cooldown) sizes from 0 to 8 GPUs."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "1d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, training={"mode": "preempt"})
    data["fleet"]["pools"].append({"name": "burst", "gpu": "H100", "count": 0, "acquisition": {
        "type": "on_demand", "usd_per_gpu_hour": 2.0, "min_count": 0, "max_count": 8,
        "autoscale": {"policy": "reactive", "target_utilization": 1.0, "cooldown": "0s"}}})
    data["models"][0].update(pools=["a", "burst"], **model)
    data["models"][0]["demand"] = {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold",
                                                               "points": PEAK}}
    data["training"] = {"jobs": [{"name": "fine-tune", "pool": "a", "gpus": 8, "duration": "3d",
                                  "checkpoint_interval": "1h", "restart_time": "10min"}]}
    return data


def test_by_default_inference_takes_the_fine_tunes_gpus_first():
    result = run(_fine_tune_beside_a_burst_pool())
    assert result.jobs.iloc[0]["preemptions"] == 1
    assert result.timeseries["cost_cloud_usd"].sum() == 0.0  # the burst pool was never needed


@pytest.mark.parametrize("after", [["burst"], "rented"])
def test_bursting_before_preempting_leaves_the_fine_tune_alone(after):
    # The 4 GPUs inference needs are rented from 10:00 to 20:00: 4 × 10 h × $2 = $80.
    result = run(_fine_tune_beside_a_burst_pool(preempt_after=after))
    assert result.jobs.iloc[0]["preemptions"] == 0
    assert (result.timeseries["gpus_training"] == 8).all()
    assert result.timeseries["cost_cloud_usd"].sum() == pytest.approx(80.0, rel=1e-12)
    assert result.timeseries["unserved_requests"].sum() == 0.0


def test_a_burst_pool_that_is_full_still_preempts():
    # The burst pool holds at most 2 GPUs: the other 2 req/s need 2 of the fine-tune's GPUs.
    data = _fine_tune_beside_a_burst_pool(preempt_after=["burst"])
    data["fleet"]["pools"][1]["acquisition"]["max_count"] = 2
    result = run(data)
    assert result.jobs.iloc[0]["preemptions"] == 1
    assert result.timeseries["unserved_requests"].sum() == 0.0


def test_preempt_after_names_pools_of_the_model():
    data = _fine_tune_beside_a_burst_pool(preempt_after=["elsewhere"])
    with pytest.raises(simulator.ScenarioError, match="preempt_after names 'elsewhere'"):
        simulator.load_scenario(data)


def _two_peaks_a_day(cap) -> dict:
    """8 GPUs in preempt mode; an 8-GPU job with ten days of work; inference needs 4 GPUs from
    10:00 to 12:00 and from 14:00 to 16:00 every day, for three days."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, training={"mode": "preempt"})
    # An hourly profile is scaled to mean 1: four peak hours of 24 at 4 req/s are a base of 4 × 4/24.
    hourly = [1.0 if hour in (10, 11, 14, 15) else 0.0 for hour in range(24)]
    data["models"][0]["demand"] = {"base_rps": 4.0 * 4 / 24, "noise": "none", "seasonality": {"hourly": hourly}}
    job = {"name": "long", "pool": "a", "gpus": 8, "duration": "10d", "checkpoint_interval": "1h"}
    if cap is not None:
        job["max_preemptions_per_day"] = cap
    data["training"] = {"jobs": [job]}
    return data


def test_without_a_cap_the_job_is_preempted_at_every_peak():
    result = run(_two_peaks_a_day(None))
    assert result.jobs.iloc[0]["preemptions"] == 6  # two peaks a day, three days
    assert result.timeseries["unserved_requests"].sum() == pytest.approx(0.0)


@pytest.mark.parametrize("training_loop", ["compiled", "simpy"])
def test_a_cap_of_one_preemption_a_day_leaves_the_second_peak_unserved(training_loop):
    # Each day the 10:00 peak preempts the job; it restarts at 12:00 and, having used its one
    # preemption, keeps its GPUs through the 14:00 peak: 4 req/s × 2 h unserved, three times.
    scenario = simulator.load_scenario(_two_peaks_a_day(1))
    plan = compile_scenario(scenario)
    path = run_path(plan, scenario.seed, 0, training_loop=training_loop)
    jobs = path.jobs
    assert jobs[0].preemptions == 3
    demand = path.model_out[:, 0, 0]
    unserved = path.model_out[:, 0, 2]
    assert demand.sum() == pytest.approx(3 * 4 * 4 * 3600.0)
    assert unserved.sum() == pytest.approx(3 * 4 * 2 * 3600.0)
    hours = pd.Series(unserved).groupby(pd.RangeIndex(len(unserved)) % 24).sum()
    assert hours[14] == pytest.approx(3 * 4 * 3600.0) and hours[15] == pytest.approx(3 * 4 * 3600.0)
    assert (hours.drop([14, 15]) == 0).all()


def test_a_capped_job_lets_serving_take_the_burst_pool():
    # With the cap and a rented pool listed second, the second peak is served from it:
    # 4 GPUs × 2 h × 3 days × $2 = $48, nothing unserved.
    data = _two_peaks_a_day(1)
    data["fleet"]["pools"].append({"name": "burst", "gpu": "H100", "count": 0, "acquisition": {
        "type": "on_demand", "usd_per_gpu_hour": 2.0, "min_count": 0, "max_count": 8,
        "autoscale": {"policy": "reactive", "target_utilization": 1.0, "cooldown": "0s"}}})
    data["models"][0]["pools"] = ["a", "burst"]
    result = run(data)
    assert result.jobs.iloc[0]["preemptions"] == 3
    assert result.timeseries["unserved_requests"].sum() == pytest.approx(0.0)
    assert result.timeseries["cost_cloud_usd"].sum() == pytest.approx(48.0, rel=1e-12)


def test_what_a_delay_costs_is_reported_per_job():
    # The fine-tune of test_training's preemption case: 8 GPUs, 24 h of work from 0, checkpoint
    # every 4 h, preempted at 10:00 (keeps 8 h of work, loses 2 h), back at 20:00 with a 30 min
    # restart: it ends at 36.5 h, 12.5 h = 0.5208 days late, at $1,000 a day late: $520.83.
    # GPU-hours lost: held (10 h + 16.5 h) × 8 = 212 - useful 24 × 8 = 192 -> 20.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, training={"mode": "preempt"})
    data["models"][0]["demand"] = {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold", "points": PEAK}}
    data["training"] = {"jobs": [{"name": "j", "pool": "a", "gpus": 8, "duration": "24h", "checkpoint_interval": "4h",
                                  "restart_time": "30min", "usd_per_day_late": 1000}]}
    result = run(data)
    job = result.jobs.iloc[0]
    assert job["days_late"] == pytest.approx(12.5 / 24, rel=1e-12)
    named = result.summary["training"]["named_jobs"]["j"]
    assert named["delay_cost_usd"]["p50"] == pytest.approx(12.5 / 24 * 1000, rel=1e-12)
    assert named["lost_gpu_hours"]["p50"] == pytest.approx(20.0, rel=1e-12)
    assert job["delay_cost_usd"] == pytest.approx(12.5 / 24 * 1000, rel=1e-12)
    assert job["lost_gpu_hours"] == pytest.approx(20.0, rel=1e-12)
