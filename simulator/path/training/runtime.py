"""Wire a path's training onto the engine: schedulers, jobs, and launches that wait on jobs."""

from __future__ import annotations

import numpy as np
import simpy

from simulator.demand import sample_counts
from simulator.path.compiled import launch_arrays
from simulator.path.demand_draws import path_demand_factor
from simulator.path.streams import STREAM_DEMAND, STREAM_TRAINING
from simulator.path.training.policies import POLICIES
from simulator.path.training.scheduler import Cluster, PoolScheduler, TrainingLog
from simulator.path.training.sources import make_jobs, stream_jobs, submitter


def path_jobs(plan, generator) -> list:
    """The path's jobs in submission order: the scenario's and those its streams draw."""
    specs = list(plan.jobs)
    for stream in plan.job_streams:
        specs.extend(stream_jobs(stream, generator(STREAM_TRAINING, stream.key)))
    return make_jobs(specs) if specs else []


def launch_inputs(plan, generator) -> dict:
    """Per job a launch waits for: ``(model, delay s, demand factor, demand generator)``."""
    out: dict = {}
    for model, job_name, delay in plan.launches:
        factor = path_demand_factor(plan, model, generator)
        out.setdefault(job_name, []).append((model, delay, factor, generator(STREAM_DEMAND, plan.model_keys[model])))
    return out


def launch_demand(clock, plan, model: int, factor, rng: np.random.Generator) -> None:
    """The launch of ``model`` now: its demand, subscribers and fixed revenue from the next step on.

    ``factor`` is the model's demand factor per step (or 1), as in ``draw_demand``.
    """
    clock.advance()
    expected, subscribers, revenue = launch_arrays(plan, model, clock.env.now)
    first = clock.next_step
    noisy = expected * factor
    clock.demand[first:, model] = sample_counts(noisy[first:], plan.noise[model], rng)
    clock.subscribers[first:, model] = subscribers[first:]
    clock.fixed_revenue[first:, model] = revenue[first:]
    clock.expected[first:, model] = expected[first:]


def start_training(env: simpy.Environment, fleet, clock, plan, generator) -> TrainingLog:
    """Create the pools' schedulers and submit the path's jobs as SimPy processes (the
    reference for :mod:`simulator.path.training.driver`); return the log to read at the end.

    ``generator(stream, key)`` gives the path's generator for a random stream and key.
    """
    log = TrainingLog()
    for pool, floor in enumerate(plan.training_partition):
        fleet.training_floor[pool] = floor
    jobs = path_jobs(plan, generator)
    if not jobs:
        return log
    log.jobs = jobs
    cluster = Cluster(env, log)
    policy = POLICIES[plan.training_policy]
    rng = generator(STREAM_TRAINING, 0)
    schedulers = [
        PoolScheduler(env, cluster, fleet, pool, policy, plan.training_mode[pool], int(plan.training_partition[pool]),
                      clock, rng)
        for pool in range(len(plan.pool_names))
    ]
    clock.on_stop = lambda step: _preempt_for_inference(schedulers)
    used = {job.pool for job in jobs}
    for pool in used:
        if plan.training_mode[pool] != "dedicated":
            env.process(schedulers[pool].review(plan.training_review_s))
    capped = {job.pool for job in jobs if job.max_preemptions_per_day >= 0}
    for pool in sorted(capped):
        if plan.training_mode[pool] == "preempt":
            env.process(schedulers[pool].midnights())
    by_name = {job.name: job for job in jobs}
    for job_name, launches in launch_inputs(plan, generator).items():
        job = by_name[job_name]
        job.finished = job.finished or env.event()
        for model, delay, factor, demand_rng in launches:
            env.process(_launch_after(env, clock, plan, model, job, delay, factor, demand_rng))
    env.process(submitter(env, jobs, schedulers))
    return log


def _preempt_for_inference(schedulers) -> bool:
    """At the start of a step where inference needs GPUs that jobs hold: preempt them, then let
    each queue start what still fits. Returns whether any job was preempted."""
    preempted = [scheduler.preempt_for_inference() for scheduler in schedulers]
    for scheduler, done in zip(schedulers, preempted, strict=True):
        if done:
            scheduler.try_start()
    return any(preempted)


def _launch_after(env: simpy.Environment, clock, plan, model: int, job, delay: float, factor,
                  rng: np.random.Generator):
    """When ``job`` completes, demand for ``model`` starts ``delay`` later."""
    yield job.finished
    yield env.timeout(delay)
    launch_demand(clock, plan, model, factor, rng)
