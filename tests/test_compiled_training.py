"""The compiled training loop against the SimPy processes it replaced, path for path.

``run_path(..., training_loop="simpy")`` runs training as one SimPy process per job with a
timeout per checkpoint segment (:mod:`simulator.path.training.scheduler`): a separate
implementation of the same world. The compiled loop must give the same schedule to the bit:
every job's start, end, checkpointed work, preemptions, interruptions and GPU-seconds held,
and every step's pool and model columns, with failures drawn from the same stream in the
same order, across the four policies and the three pool modes, with hardware failures,
deliveries and a launch that waits for a job.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import simulator
from simulator.path.compiled import compile_scenario
from simulator.path.engine import run_path


def _world(policy: str, days: int = 12, first_mode: str = "preempt") -> dict:
    stream = {"arrivals_per_hour": 0.6, "gpus": {"choices": [1, 2, 4, 8], "weights": [4, 3, 2, 1]},
              "duration": {"dist": "lognormal", "median": "3h", "p90": "14h"}, "checkpoint_interval": "40min",
              "checkpoint_time": "2min", "restart_time": "7min", "failure_rate_per_gpu_hour": 0.004}
    return {
        "name": "compiled-training",
        "horizon": {"start": "2026-01-01", "duration": f"{days}d", "step": "1h"},
        "seed": 5,
        "fleet": {"pools": [
            {"name": "pre", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 24,
             "training": {"mode": first_mode}, "changes": [{"at": "4d", "add": 8}],
             "failures": {"rate_per_gpu_hour": 0.002, "blast_radius": 2, "repair": {"dist": "exponential", "mean": "6h"}}},
            {"name": "left", "gpu": "H100", "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.5}, "count": 16,
             "training": {"mode": "leftover"}},
            {"name": "lab", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 16,
             "training": {"mode": "dedicated", "partition_gpus": 12}},
        ]},
        "models": [
            {"name": "chat", "pools": ["pre"], "gpus_per_replica": 2, "capacity_rps": 4.0,
             "demand": {"base_rps": 22, "seasonality": {"daily_amplitude": 0.6}, "noise": "poisson"}},
            {"name": "embed", "pools": ["left", "lab"], "gpus_per_replica": 1, "capacity_rps": 3.0,
             "demand": {"base_rps": 9, "seasonality": {"daily_amplitude": 0.5, "peak_hour": 9}, "noise": "poisson"}},
            {"name": "next", "pools": ["pre", "left"], "gpus_per_replica": 2, "capacity_rps": 4.0,
             "demand": {"base_rps": 6, "noise": "poisson", "start": {"after_job": "tune", "delay": "5h"}}},
        ],
        "training": {"policy": policy, "review_every": "1h",
                     "jobs": [{"name": "tune", "pool": "pre", "gpus": 8, "duration": "30h", "submit": "1d",
                               "checkpoint_interval": "3h", "restart_time": "20min", "priority": 2}],
                     "streams": [{"name": "x", "pool": "pre", **stream},
                                 {"name": "y", "pool": "left", **stream, "arrivals_per_hour": 0.3},
                                 {"name": "z", "pool": "lab", **stream, "priority": 1}]},
        "pricing": {"input_usd_per_1m": 1, "output_usd_per_1m": 2},
    }


def _both_loops(plan, seed: int, path: int):
    """Run the path with both loops, assert they agree to the bit; the reference's outcome."""
    reference = _outcome(run_path(plan, seed, path, training_loop="simpy"))
    compiled = _outcome(run_path(plan, seed, path, training_loop="compiled"))
    assert compiled[0] == reference[0]
    for ours, theirs in zip(compiled[1:], reference[1:], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    return reference


def _outcome(result):
    jobs = [(j.name, j.pool, j.start_s, j.end_s, j.done_s, j.preemptions, j.interruptions, j.held_gpu_s, j.running)
            for j in result.jobs]
    return jobs, result.pool_out, result.model_out, result.training_queued, result.training_running


@pytest.mark.parametrize("policy", ["fifo", "priority", "shortest_first", "easy_backfill"])
def test_the_compiled_loop_gives_the_simpy_schedule_to_the_bit(policy):
    plan = compile_scenario(simulator.load_scenario(_world(policy)))
    preempted = interrupted = launched = 0
    for path in range(3):
        reference = _both_loops(plan, 11, path)
        jobs = reference[0]
        preempted += sum(job[5] for job in jobs)
        interrupted += sum(job[6] for job in jobs)
        launched += int(reference[2][:, 2, 0].sum() > 0)  # the launch's demand arrived
    # The comparison covers what it is meant to: preemptions, failures, and the launch.
    assert preempted > 5 and interrupted > 5 and launched == 3


def test_the_compiled_loop_agrees_on_the_shipped_launch_scenario():
    plan = compile_scenario(simulator.load_scenario("scenarios/launch.yaml", ["horizon.duration=120d"]))
    for path in range(2):
        reference = _both_loops(plan, 3, path)
        assert len(reference[0]) > 1000


def test_a_job_preempted_every_other_hour_agrees_and_its_void_events_do_not_overflow():
    # One 8-GPU job on 8 GPUs, no checkpoints, 60 h of work; inference wants about 4 GPUs in
    # every odd hour and none in even hours. Each preemption leaves its run's pending end in the event heap (sized for two
    # events per job): dozens of them in three days, dropped when the heap fills.
    data = _world("fifo", days=3)
    data["fleet"]["pools"] = [{"name": "pre", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 0},
                               "count": 8, "training": {"mode": "preempt"}}]
    points = [{"at": f"{60 * h + m}min", "rps": 4.0 * (h % 2)} for h in range(72) for m in (0, 59)]
    data["models"] = [{"name": "m", "pools": ["pre"], "gpus_per_replica": 1, "capacity_rps": 1.0,
                       "demand": {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold",
                                                               "points": points}}}]
    data["training"] = {"jobs": [{"name": "j", "pool": "pre", "gpus": 8, "duration": "60h", "restart_time": "6min"}]}
    plan = compile_scenario(simulator.load_scenario(data))
    reference = _both_loops(plan, 1, 0)
    assert reference[0][0][5] > 30


@pytest.mark.parametrize("policy", ["fifo", "easy_backfill"])
def test_caps_on_preemptions_and_bursting_first_agree(policy):
    # The world above with the streams' jobs capped at one preemption a day (the horizon
    # starting at 06:30, so calendar days fall inside steps' hours), "next" bursting to the
    # on-demand pool before preempting, and deliveries and repairs inside steps.
    data = _world(policy)
    data["horizon"]["start"] = "2026-01-01T06:30"
    for stream in data["training"]["streams"]:
        stream["max_preemptions_per_day"] = 1
    data["models"][2]["preempt_after"] = "rented"
    data["fleet"]["pools"][0]["changes"] = [{"at": "4d 5h 20min", "add": 8}, {"at": "6d 7h 45min", "out_of_service": 4,
                                             "repair": {"dist": "uniform", "low": "10min", "high": "3h"}}]
    plan = compile_scenario(simulator.load_scenario(data))
    preempted = 0
    for path in range(2):
        preempted += sum(job[5] for job in _both_loops(plan, 11, path)[0])
    assert preempted > 3


def test_without_a_preempt_pool_jobs_see_the_failures_up_to_their_step():
    # No pool gives way to inference here, but the pools fail: both loops integrate the steps
    # up to each event, so a job's start sees the GPUs down by then.
    plan = compile_scenario(simulator.load_scenario(_world("easy_backfill", first_mode="leftover")))
    for path in range(3):
        _both_loops(plan, 2, path)


@pytest.mark.parametrize("delay", ["0h", "1h", "90min"])
def test_a_launch_lands_in_the_autoscalers_order_at_the_same_instant(delay):
    # The fine-tune ends at 54 h, on an hour the cloud pool's autoscaler decides; the launch's
    # demand starts `delay` later. Whether the decision at that instant sees the new demand
    # depends on which event SimPy created first: the compiled loop must keep that order.
    data = {
        "name": "launch-order", "horizon": {"start": "2026-01-01", "duration": "4d", "step": "1h"}, "seed": 5,
        "fleet": {"pools": [
            {"name": "lab", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 30000}, "count": 8,
             "training": {"mode": "dedicated", "partition_gpus": 8}},
            {"name": "cloud", "gpu": "H100", "count": 0,
             "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.5, "max_count": 64,
                             "autoscale": {"policy": "reactive", "interval": "1h"}}},
        ]},
        "models": [
            {"name": "chat", "pools": ["cloud"], "gpus_per_replica": 1, "capacity_rps": 4.0,
             "demand": {"base_rps": 8, "noise": "none"}},
            {"name": "next", "pools": ["cloud"], "gpus_per_replica": 1, "capacity_rps": 4.0,
             "demand": {"base_rps": 20, "noise": "none", "start": {"after_job": "tune", "delay": delay}}},
        ],
        "training": {"policy": "fifo", "review_every": "1h",
                     "jobs": [{"name": "tune", "pool": "lab", "gpus": 8, "duration": "30h", "submit": "1d"}]},
        "pricing": {"input_usd_per_1m": 1, "output_usd_per_1m": 2},
    }
    plan = compile_scenario(simulator.load_scenario(data))
    reference = _both_loops(plan, 1, 0)
    assert reference[0][0][3] == 54 * 3600


def test_an_unknown_training_loop_is_refused():
    launch = Path(__file__).parents[1] / "scenarios" / "launch.yaml"
    plan = compile_scenario(simulator.load_scenario(launch, {"horizon.duration": "2d", "variants": {}}))
    with pytest.raises(ValueError, match="training_loop must be 'compiled' or 'simpy', got 'simp'"):
        run_path(plan, 1, 0, training_loop="simp")
