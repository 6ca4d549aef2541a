"""Training jobs: schedules worked by hand, queueing theory, FLOPs, failures and launches."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import simulator
from tests.helpers import base_scenario, run

H = 3600.0


def _cluster(gpus=8, days=3, step="1h", **training):
    """A pool of ``gpus`` GPUs dedicated to training, no inference demand."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": f"{days}d", "step": step})
    data["fleet"]["pools"][0].update(count=gpus, training={"mode": "dedicated", "partition_gpus": gpus})
    data["models"][0]["demand"]["base_rps"] = 0.0
    data["training"] = training
    return data


def _jobs(*specs):
    return [{"name": n, "pool": "a", "gpus": g, "duration": f"{d}h", "submit": f"{s}h"} for n, g, d, s in specs]


# (name, GPUs, hours, submitted at hour) on 8 GPUs.
WORKLOAD = [("A", 4, 10, 0), ("B", 8, 5, 1), ("C", 2, 3, 2), ("D", 4, 12, 2), ("E", 4, 4, 3)]


def _schedule(policy):
    result = run(_cluster(policy=policy, jobs=_jobs(*WORKLOAD)))
    jobs = result.jobs.set_index("job")
    start = pd.Timestamp("2026-01-01")
    hours = lambda column: {k: (v - start) / pd.Timedelta(hours=1) for k, v in jobs[column].items()}  # noqa: E731
    return hours("start_time"), hours("end_time"), result


def test_fifo_schedule_by_hand():
    # A runs 0-10. B needs all 8 GPUs: it waits for A and runs 10-15. FIFO does not overtake,
    # so C, D and E wait behind B. At 15, C (2 GPUs) and D (4) start, leaving 2 free: E (4)
    # waits until C ends at 18 and runs 18-22. D runs 15-27.
    starts, ends, _ = _schedule("fifo")
    assert starts == {"A": 0, "B": 10, "C": 15, "D": 15, "E": 18}
    assert ends == {"A": 10, "B": 15, "C": 18, "D": 27, "E": 22}


def test_easy_backfill_schedule_by_hand():
    # A runs 0-10. B (8 GPUs) cannot start; its reservation (shadow time) is 10, when A ends,
    # with no GPUs to spare then. C (2 GPUs, 3 h) fits at 2 and ends at 5 <= 10: backfilled.
    # D (4 GPUs, 12 h) would end after 10: not backfilled. E (4 GPUs, 4 h) arrives at 3 when
    # only 2 are free; at 5 (C done) it fits and ends at 9 <= 10: backfilled 5-9. B runs 10-15,
    # then D 15-27. Nobody's start is later than under FIFO, and C and E start far earlier.
    starts, ends, result = _schedule("easy_backfill")
    assert starts == {"A": 0, "B": 10, "C": 2, "D": 15, "E": 5}
    assert ends == {"A": 10, "B": 15, "C": 5, "D": 27, "E": 9}
    ts = result.timeseries
    # Training GPUs and queue by step: hour 2 has A + C (6 GPUs) and B, D queued.
    assert ts.loc[2, "gpus_training"] == 6 and ts.loc[2, "training_jobs_queued"] == 2
    assert ts.loc[5, "gpus_training"] == 8 and ts.loc[5, "training_jobs_running"] == 2


def test_priority_and_shortest_first_orders():
    jobs = _jobs(("long", 8, 10, 0), ("x", 8, 6, 1), ("y", 8, 2, 2))
    jobs[1]["priority"] = 1
    result = run(_cluster(policy="priority", jobs=jobs))
    order = result.jobs.sort_values("start_time")["job"].tolist()
    assert order == ["long", "x", "y"]
    result = run(_cluster(policy="shortest_first", jobs=jobs))
    order = result.jobs.sort_values("start_time")["job"].tolist()
    assert order == ["long", "y", "x"]


def test_a_job_given_as_flops_runs_exactly_6nd_over_gpus_peak_mfu():
    # 8B parameters on 1T tokens: 6·N·D = 4.8e22 FLOPs on 256 H100s (989 TFLOP/s BF16) at MFU
    # 0.4: 4.8e22 / (256 × 989e12 × 0.4) = 473,963.6 s.
    data = _cluster(gpus=256, days=10, step="1min")
    data["training"] = {"jobs": [{"name": "pretrain", "pool": "a", "gpus": 256, "params": 8e9, "tokens": 1e12, "mfu": 0.4}]}
    job = run(data).jobs.iloc[0]
    expected = 6 * 8e9 * 1e12 / (256 * 989e12 * 0.4)
    assert (job["end_time"] - job["start_time"]).total_seconds() == pytest.approx(expected, abs=1e-3)
    assert job["work_s"] == pytest.approx(expected, rel=1e-12)


def _erlang_c(c: int, offered: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load a = λ/μ."""
    term = sum(offered**k / math.factorial(k) for k in range(c))
    top = offered**c / math.factorial(c) * c / (c - offered)
    return top / (term + top)


@pytest.mark.slow
def test_single_gpu_jobs_on_c_gpus_wait_as_erlang_c_predicts():
    # Poisson arrivals (λ = 0.6 jobs/h) of one-GPU jobs with exponential durations (mean 2 h)
    # on c = 2 GPUs: a = 1.2, ρ = 0.6, C(2, 1.2) = 1.8 / (1 + 1.2 + 1.8) = 0.45 and
    # Wq = C / (cμ − λ) = 0.45 / (1 − 0.6) = 1.125 h. Mean waits of queues scatter
    # widely (±5% over 8 paths of 1,000 days at c = 8, ρ = 0.6), so 24 paths of 2,000 days
    # (about 690,000 jobs) are pooled; the standard error is checked, then the 3% tolerance.
    c, rate, mean_h = 2, 0.6, 2.0
    expected_h = _erlang_c(c, rate * mean_h) / (c / mean_h - rate)
    assert expected_h == pytest.approx(1.125)
    data = _cluster(gpus=c, days=2000, step="1d", streams=[{
        "name": "s", "pool": "a", "arrivals_per_hour": rate, "gpus": 1,
        "duration": {"dist": "exponential", "mean": f"{mean_h}h"}}])
    jobs = run(data, paths=24).jobs
    warm = jobs["submit_time"] >= pd.Timestamp("2026-01-01") + pd.Timedelta(days=30)
    waits = jobs.loc[warm & jobs["start_time"].notna(), "wait_s"] / H
    per_path = jobs.loc[warm].groupby("path")["wait_s"].mean() / H
    assert per_path.std(ddof=1) / np.sqrt(len(per_path)) / expected_h < 0.01
    assert waits.mean() == pytest.approx(expected_h, rel=0.03)


@pytest.mark.slow
def test_little_law_between_the_queue_series_and_the_jobs_table():
    # Time-average number waiting (timeseries, sampled at every 5-minute step) equals the
    # arrival rate times the mean wait (jobs table), per path and pooled.
    data = _cluster(gpus=8, days=200, step="5min", streams=[{
        "name": "s", "pool": "a", "arrivals_per_hour": 3.0, "gpus": {"choices": [1, 2], "weights": [0.7, 0.3]},
        "duration": {"dist": "exponential", "mean": "2h"}}])
    result = run(data, paths=4)
    ts, jobs = result.timeseries, result.jobs
    span_h = 200 * 24
    queue_average = ts.groupby("path")["training_jobs_queued"].mean()
    # Jobs still waiting at the end contribute the time they waited within the horizon.
    end = pd.Timestamp("2026-01-01") + pd.Timedelta(hours=span_h)
    waited = jobs["start_time"].fillna(end).clip(upper=end) - jobs["submit_time"]
    little = (waited.dt.total_seconds() / H).groupby(jobs["path"]).sum() / span_h
    np.testing.assert_allclose(queue_average, little, rtol=0.02)


@pytest.mark.slow
def test_llama3_scale_job_under_failures_matches_the_renewal_derivation():
    # 16,384 H100s for 54 days of work, failures at 2e-5 per GPU-hour: the job is interrupted
    # at λ = 16384 × 2e-5 = 0.328 per hour (about one every 3 hours). With a checkpoint every
    # τ of work and a restart time R, each segment of τ takes, with interruptions as a Poisson
    # process and the work since the last checkpoint lost, E[T] = (e^{λτ} − 1)(1/λ + R) of wall
    # time (renewal argument). To first order that is τ(1 + λ(τ/2 + R)): each interruption
    # loses half a checkpoint interval plus the restart. Effective training time = 1 / (E[T]/τ).
    lam, work_h = 16384 * 2e-5, 54 * 24
    for tau_h, restart_h, floor in ((0.5, 0.05, None), (1 / 3, 1 / 30, 0.90)):
        data = _cluster(gpus=16384, days=70, step="1h")
        data["training"] = {"jobs": [{
            "name": "llama", "pool": "a", "gpus": 16384, "duration": f"{work_h}h",
            "checkpoint_interval": f"{tau_h * 60:g}min", "restart_time": f"{restart_h * 60:g}min",
            "failure_rate_per_gpu_hour": 2e-5}]}
        jobs = run(data, paths=6).jobs
        wall_h = ((jobs["end_time"] - jobs["start_time"]).dt.total_seconds() / H).to_numpy()
        exact = work_h / tau_h * (math.exp(lam * tau_h) - 1) * (1 / lam + restart_h)
        first_order = work_h * (1 + lam * (tau_h / 2 + restart_h))
        assert wall_h.mean() == pytest.approx(exact, rel=0.02)
        assert exact == pytest.approx(first_order, rel=0.01)  # the first-order derivation
        effective = work_h / wall_h.mean()
        assert jobs["interruptions"].mean() == pytest.approx(lam * wall_h.mean() - lam * restart_h * jobs["interruptions"].mean(), rel=0.06)
        if floor is not None:
            assert effective > floor


def test_a_launch_tied_to_a_training_job_moves_by_exactly_the_jobs_delay():
    # The pretraining job needs 64 GPUs; the pool has 32 until 64 more arrive on day 5. The
    # product launches 2 days after the job finishes (12 h of work), so demand starts on
    # day 5 + 12 h + 2 d instead of 12 h + 2 d.
    def scenario(delivery):
        data = base_scenario(horizon={"start": "2026-01-01", "duration": "12d", "step": "1h"})
        data["fleet"]["pools"][0].update(count=32 if delivery else 96, changes=[{"at": "5d", "add": 64}] if delivery else [])
        data["models"][0]["demand"]["start"] = {"after_job": "pretrain", "delay": "2d"}
        data["training"] = {"jobs": [{"name": "pretrain", "pool": "a", "gpus": 64, "duration": "12h"}]}
        return run(data)

    early, late = scenario(False), scenario(True)
    first = lambda r: r.timeseries.loc[r.timeseries["demand_requests"] > 0, "time"].min()  # noqa: E731
    assert first(early) == pd.Timestamp("2026-01-03 12:00")
    assert first(late) - first(early) == pd.Timedelta(days=5)
    assert late.jobs.iloc[0]["wait_s"] == 5 * 86400
    # The demand itself is the same curve, shifted.
    shift = 5 * 24
    np.testing.assert_array_equal(early.timeseries["demand_requests"].to_numpy()[60:160],
                                  late.timeseries["demand_requests"].to_numpy()[60 + shift:160 + shift])


def test_inference_preempts_training_and_the_job_loses_work_since_its_checkpoint():
    # 8 GPUs; inference needs 4 of them from hour 10 (1 GPU serves 1 req/s). An 8-GPU job
    # submitted at 0 with 24 h of work, checkpointing every 4 h, is preempted at hour 10: it
    # keeps 8 h of work, loses 2 h, and waits. Inference needs nothing again from hour 20;
    # the job restarts at 20 (restart 30 min) and finishes 16 h of work later: 36.5 h.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, training={"mode": "preempt"})
    data["models"][0]["demand"] = {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold", "points": [
        {"at": "0h", "rps": 0}, {"at": "10h", "rps": 0}, {"at": "601min", "rps": 4},
        {"at": "20h", "rps": 4}, {"at": "1201min", "rps": 0}]}}
    data["training"] = {"jobs": [{"name": "j", "pool": "a", "gpus": 8, "duration": "24h",
                                  "checkpoint_interval": "4h", "restart_time": "30min"}]}
    result = run(data)
    job = result.jobs.iloc[0]
    assert job["preemptions"] == 1
    assert job["end_time"] == pd.Timestamp("2026-01-01") + pd.Timedelta(hours=36.5)
    ts = result.timeseries
    assert (ts.loc[11:19, "gpus_training"] == 0).all() and (ts.loc[11:19, "unserved_requests"] == 0).all()
    # Goodput: 24 h of useful work on 8 GPUs over 10 + 16.5 h held.
    assert result.summary["training"]["goodput"]["p50"] == pytest.approx(24 / 26.5)


@pytest.mark.parametrize(
    ("training", "path", "words"),
    [
        ({"jobs": [{"name": "big", "pool": "a", "gpus": 9, "duration": "1h"}]}, "training.jobs[0].gpus",
         "never has more than 8"),
        ({"jobs": [{"name": "z", "pool": "a", "gpus": 1, "duration": "1h", "checkpoint_interval": "0h"}]},
         "training.jobs[0].checkpoint_interval", "must be positive"),
        ({"policy": "random"}, "training.policy", "'fifo', 'priority', 'shortest_first' or 'easy_backfill'"),
        ({"jobs": [{"name": "z", "pool": "nope", "gpus": 1, "duration": "1h"}]}, "training.jobs[0].pool", "unknown pool"),
        ({"jobs": [{"name": "z", "pool": "a", "gpus": 1}]}, "training.jobs[0]", "exactly one of 'duration'"),
    ],
)
def test_bad_training_input_names_the_field(training, path, words):
    data = base_scenario()
    data["training"] = training
    with pytest.raises(simulator.ScenarioError) as caught:
        simulator.load_scenario(data)
    assert caught.value.path == path, str(caught.value)
    assert words in str(caught.value)


def test_training_results_are_the_same_on_a_process_pool():
    data = _cluster(gpus=8, days=5, streams=[{"name": "s", "pool": "a", "arrivals_per_hour": 1.0,
                                              "gpus": {"choices": [1, 2, 4]}, "duration": {"dist": "exponential", "mean": "3h"}}])
    scenario = simulator.load_scenario(data)
    serial = simulator.simulate(scenario, paths=3, executor="serial")
    pooled = simulator.simulate(scenario, paths=3, executor="local", workers=2)
    pd.testing.assert_frame_equal(serial.jobs, pooled.jobs)
    pd.testing.assert_frame_equal(serial.timeseries, pooled.timeseries)


def test_a_launch_after_a_job_is_served_and_earns_its_subscriptions():
    # Review regression: after the launch, inference must get its GPUs back from a stream of
    # 8-GPU training jobs (preempt mode) and subscriptions must earn revenue.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "6d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, training={"mode": "preempt"})
    data["models"][0]["demand"]["start"] = {"after_job": "pre", "delay": "12h"}
    data["models"][0]["subscription"] = {"usd_per_month": 30, "requests_per_day": 86.4}  # 4 req/s = 4,000 subscribers
    data["training"] = {"review_every": "1h", "jobs": [{"name": "pre", "pool": "a", "gpus": 8, "duration": "1d"}],
                        "streams": [{"name": "s", "pool": "a", "arrivals_per_hour": 0.5, "gpus": 8,
                                     "duration": {"dist": "exponential", "mean": "6h"}}]}
    result = run(data)
    ts = result.timeseries
    launched = ts["time"] >= pd.Timestamp("2026-01-02 12:00")
    assert (ts.loc[~launched, "demand_requests"] == 0).all()
    # Within an hour of review lag, the launched demand is served.
    assert ts.loc[launched, "served_requests"].sum() / ts.loc[launched, "demand_requests"].sum() > 0.97
    assert ts.loc[launched, "subscribers"].to_numpy() == pytest.approx(4000)
    # Launch at 1.5 d, horizon 6 d: 4.5 days of 4,000 subscribers at $30 a month.
    assert ts["revenue_usd"].sum() == pytest.approx(4000 * 30 * 4.5 / 30.4375, rel=1e-9)


def test_a_named_job_reports_how_late_it_finished_and_how_often_it_was_preempted():
    # The launch fine-tune yields to serving at every evening peak when serving takes its GPUs
    # before bursting to the cloud: the pooled card said "100% of jobs finished, median wait
    # 0.0 h" (thousands of short experiments) while the one run that matters finished days
    # late. Its own figures are read here from the jobs table.
    from simulator.report.tables import key_findings

    scenario = simulator.load_scenario("scenarios/launch.yaml", {
        "horizon.duration": "7mo", "variants": {}, "training.jobs[0].submit": "2026-08-10",  # peaks outgrow the fleet
        "models[0].preempt_after": None})
    results = simulator.simulate(scenario, paths=6, seed=11, executor="serial", keep_paths=None)
    jobs = results.jobs
    fine_tune = jobs[jobs["job"] == "finetune-v2"].set_index("path").sort_index()
    assert len(fine_tune) == 6
    # Late past its uninterrupted finish: submission + work + its checkpoint writes (launch.yaml's
    # fine-tune writes each in 0 s, so the reference is submission + work).
    assert scenario.training.jobs[0].checkpoint_time == 0
    late = ((fine_tune["end_time"] - fine_tune["submit_time"]).dt.total_seconds() - fine_tune["work_s"]).dropna().to_numpy()
    assert (fine_tune["uninterrupted_end_time"] == fine_tune["submit_time"] + pd.Timedelta(days=10)).all()
    figures = results.summary["training"]["named_jobs"]["finetune-v2"]
    assert figures["finished_share"] == pytest.approx(len(late) / 6)
    assert len(late) >= 1 and late.min() > 0  # preempted at peaks: it cannot finish on time
    for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9)):
        assert figures["late_s"][name] == pytest.approx(np.quantile(late, q), abs=1e-3)  # times in ns
        assert figures["preemptions"][name] == pytest.approx(np.quantile(fine_tune["preemptions"].to_numpy(), q))
    assert figures["preemptions"]["p50"] >= 1
    card = next(f for f in key_findings(results.summary) if f["label"] == "Training job finetune-v2")
    assert card["value"].startswith(f"{np.quantile(late, 0.5) / 86400:.1f} days late (P50)")
    assert f"preempted {np.quantile(fine_tune['preemptions'].to_numpy(), 0.5):.0f} times" in card["note"]
