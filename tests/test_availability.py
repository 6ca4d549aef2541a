"""Rental GPUs a provider may not have: a dated add filled with probability p is asked again
every `retry` until filled, so the days it waits are geometric (mean (1 − p)/p retries); an
autoscaler's scale-up that is not filled is asked again at its next decision."""

from __future__ import annotations

import numpy as np
import pytest

import simulator
from tests.helpers import base_scenario, run


def _rented(**pool) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "60d", "step": "1h"})
    data["fleet"]["pools"][0]["count"] = 0
    data["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 2.0, **pool}
    return data


@pytest.mark.slow
def test_a_dated_rental_waits_a_geometric_number_of_retries():
    p = 0.3
    data = _rented(availability={"fill_probability": p, "retry": "1d"})
    data["fleet"]["pools"][0]["changes"] = [{"at": "1d", "add": 8}]
    results = run(data, paths=400, keep_paths=None, executor="local", workers=2)
    ts = results.timeseries
    first = ts[ts["gpus_installed"] == 8].groupby("path")["time"].min()
    waits = ((first - np.datetime64("2026-01-02")) / np.timedelta64(1, "D")).to_numpy()
    assert np.allclose(waits, np.round(waits))  # whole retries of a day
    # Geometric on {0, 1, ...}: mean (1 − p)/p = 2.33, sd sqrt(1 − p)/p = 2.79; 400 paths put the
    # mean's standard error at 0.14 (paths not filled within the 59 days: (0.7)^59, none).
    assert len(waits) == 400
    assert waits.mean() == pytest.approx((1 - p) / p, abs=4 * np.sqrt(1 - p) / p / np.sqrt(400))
    assert (waits == 0).mean() == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / 400))
    # Rent only while held: each path's rent is 8 GPUs × $2 × the hours from its fill.
    held_hours = (ts[ts["path"] == 0]["gpus_installed"] > 0).sum()
    assert results.pnl.groupby("path")["cogs_cloud_usd"].sum()[0] == pytest.approx(8 * 2.0 * held_hours)


@pytest.mark.slow
def test_an_autoscaler_asks_again_at_its_next_decision():
    # 4 req/s on 1-GPU replicas wants 4 GPUs from the start; decisions every hour, each filled
    # with probability 0.25: the first fill comes after a geometric number of hours.
    p = 0.25
    data = _rented(availability={"fill_probability": p}, max_count=8, min_count=0,
                   autoscale={"target_utilization": 1.0, "node_gpus": 1})
    results = run(data, paths=300, keep_paths=None, executor="local", workers=2)
    ts = results.timeseries
    first = ts[ts["gpus_installed"] >= 4].groupby("path")["time"].min()
    hours = ((first - np.datetime64("2026-01-01")) / np.timedelta64(1, "h")).to_numpy()
    assert len(hours) == 300
    assert hours.mean() == pytest.approx((1 - p) / p, abs=4 * np.sqrt(1 - p) / p / np.sqrt(300))
    always = _rented(max_count=8, min_count=0, autoscale={"target_utilization": 1.0, "node_gpus": 1})
    assert (run(always, paths=1).timeseries["gpus_installed"] == 4).all()


def test_availability_is_refused_outside_zero_to_one():
    with pytest.raises(simulator.ScenarioError, match=r"fleet\.pools\[0\]\.acquisition\.availability\.fill_probability"):
        simulator.load_scenario(_rented(availability={"fill_probability": 0}))


def test_a_rental_not_filled_before_its_removal_is_not_asked_again():
    # Rented from day 1 to day 3; a request not filled by day 3 lapses (it used to be filled
    # later and then held to the horizon's end, as the removal had found nothing to remove).
    data = _rented(availability={"fill_probability": 0.2, "retry": "1d"})
    data["horizon"]["duration"] = "30d"
    data["fleet"]["pools"][0]["changes"] = [{"at": "1d", "add": 8}, {"at": "3d", "remove": 8}]
    ts = run(data, paths=40).timeseries
    assert (ts[ts["time"] >= np.datetime64("2026-01-04")]["gpus_installed"] == 0).all()
    filled = ts.groupby("path")["gpus_installed"].max() == 8
    assert 0 < filled.mean() < 1  # some paths got them (day 1 or 2), some never: 1 − 0.8² = 36%
