"""The reference loop's operations: the autoscaler, and training jobs.

Part of the slow reference (:mod:`reference_loop`, whose docstring states the model); kept in
its own file so that each stays readable. Plain Python, one step at a time, no numpy; it never
imports ``simulator.path``. The loop owns the pools (``installed``, ``available``,
``training``, ``preempt``) and calls in here:

* :class:`Autoscaler` takes one pool's scaling decisions, from the loop's decision phase; both
  it and the training scheduler size from the replicas *needed*
  (:func:`reference_serving.place`), whatever the serving policy;
* :class:`Training` runs the explicit jobs of every pool, from the loop's training phase.

Times here are exact: instants are :class:`fractions.Fraction` seconds, training times are
whole steps.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from reference_serving import REPLICA_SLACK, inference_on, open_to_inference, place

from simulator.demand import expected_counts

UNBOUNDED = 1 << 60  # free GPUs of the pool an autoscaler sizes


def effect_step(seconds: float | Fraction, step_s: float) -> int:
    """Index of the first step starting at or after ``seconds``: exactly ``ceil(t / step)``."""
    return max(0, math.ceil(Fraction(seconds) / Fraction(step_s)))


def step_and_fraction(seconds: float | Fraction, step_s: float) -> tuple[int, Fraction]:
    """The step an instant falls in and how far into it, exactly: ``t = (k + f)·step`` with
    ``0 ≤ f < 1`` (an instant before the start is at the start: ``(0, 0)``)."""
    ratio = max(Fraction(seconds) / Fraction(step_s), Fraction(0))
    k = math.floor(ratio)
    return k, ratio - k


# -- autoscaling ---------------------------------------------------------------------------


def expected_per_step(scenario: Any, expected: Any = None) -> list[list[float]] | None:
    """Expected requests per step and model (no noise), the predictive autoscaler's forecast:
    ``expected`` if given, else each model's ``expected_counts``; None if no pool needs it."""
    if not any(spec.acquisition.type == "on_demand" and spec.acquisition.autoscale is not None
               and spec.acquisition.autoscale.policy == "predictive" for spec in scenario.fleet.pools):
        return None
    if any(model.demand.volatility is not None for model in scenario.models):
        raise ValueError("the reference forecasts demand without volatility only")
    if expected is None:
        expected = np.column_stack([expected_counts(model.demand, scenario.horizon) for model in scenario.models])
    return [[float(x) for x in row] for row in np.asarray(expected, dtype=float).tolist()]



class Autoscaler:
    """The scaling decisions of one autoscaled on-demand pool (see the loop's docstring)."""

    def __init__(self, loop: Any, p: int, spec: Any, scenario: Any, expected: list[list[float]] | None) -> None:
        acquisition = spec.acquisition
        policy = acquisition.autoscale
        self.loop, self.p, self.policy = loop, p, policy
        self.step = Fraction(loop.step_s)
        self.interval = Fraction(policy.interval) if policy.interval is not None else self.step
        if (self.interval / self.step).denominator != 1:
            raise ValueError(f"pool {spec.name!r}: the reference takes autoscale intervals in whole steps")
        self.delay = Fraction(acquisition.provisioning_delay)
        self.node = int(policy.node_gpus)
        max_count = spec.count if acquisition.max_count is None else acquisition.max_count
        min_count = spec.count if acquisition.min_count is None else acquisition.min_count
        self.most = max_count // self.node * self.node
        self.least = min(math.ceil(min_count / self.node) * self.node, self.most)
        self.cooldown = Fraction(policy.cooldown) if policy.cooldown is not None else Fraction(
            3600 if policy.policy == "reactive" else 0)
        self.scale_down_cooldown = Fraction(policy.scale_down_cooldown)
        self.pending = 0
        self.last_action: Fraction | None = None  # none yet: the first decision may act
        self.recent: list[tuple[Fraction, int]] = []  # (decision time, desired GPUs)
        self.expected = expected
        self.schedule_value: list[int] = []
        if policy.policy == "scheduled":
            self.schedule_value = schedule_per_step(policy.schedule, scenario.horizon.start, loop.step_s, loop.n_steps)
        self.log: list[tuple[float, int, int, int]] = []  # (t, step, wanted, desired), for tests

    def decision_times(self):
        """Decision instants ``t = j·interval`` with their step ``ceil(t / step)``, in order."""
        j = 0
        while True:
            t = j * self.interval
            k = effect_step(t, self.loop.step_s)
            if k >= self.loop.n_steps:
                return
            yield t, k
            j += 1

    def sized(self, requests: list[float]) -> int:
        """GPUs this pool should hold for one step's ``requests``: every model placed as the
        fleet stands but with this pool unbounded; each model's load ``L`` here sized at
        ``target_utilization`` in whole replicas (at least one)."""
        loop = self.loop
        free = open_to_inference(loop.pools)
        free[self.p] = UNBOUNDED
        target = self.policy.target_utilization
        wanted = 0
        for m, here in enumerate(place(loop.models, requests, free)):
            model = loop.models[m]
            for p, _replicas, load in here:
                if p == self.p and load > 0:
                    replicas = max(1, math.ceil(load / (model["per_replica"] * target) * (1.0 - REPLICA_SLACK)))
                    wanted += replicas * model["gpus"]
        return wanted

    def wanted(self, k: int, last: int) -> int:
        policy = self.policy.policy
        if policy == "reactive":
            return self.sized(self.loop.demand[k])
        if policy == "scheduled":
            return max(self.schedule_value[s] for s in range(k, last + 1))
        scale = 1.0 + self.policy.margin
        return max(self.sized([x * scale for x in self.expected[s]]) for s in range(k, last + 1))

    def decide(self, t: Fraction, k: int) -> None:
        """The decision at ``t`` (for step ``k``): request, release, or nothing."""
        loop, step = self.loop, self.step
        last = max(k, min(math.ceil((t + self.interval + self.delay) / step) - 1, loop.n_steps - 1))
        # The pool's own GPUs out of service count against it, and (but for a schedule) so do
        # the GPUs its running jobs hold: the pool never shrinks from under a job.
        pool = loop.pools[self.p]
        wanted = self.wanted(k, last) + pool.out_of_service
        if self.policy.policy != "scheduled":
            wanted += pool.training
        desired = min(max(math.ceil(wanted / self.node) * self.node, self.least), self.most)
        self.log.append((float(t), k, wanted, desired))
        self.recent = [(when, count) for when, count in self.recent if when >= t - self.scale_down_cooldown]
        self.recent.append((t, desired))
        keep = max(count for _when, count in self.recent)
        if self.last_action is not None and t - self.last_action < self.cooldown:
            return
        installed = loop.pools[self.p].installed
        if desired > installed + self.pending:
            more = desired - installed - self.pending
            self.last_action = t
            if self.delay == 0:
                loop.install(self.p, more, t)
            else:
                self.pending += more
                arrival = t + self.delay
                loop.schedule_change(arrival, lambda: self.arrive(arrival, more))
        elif keep < installed and self.pending == 0:
            self.last_action = t
            loop.retire(self.p, installed - keep)

    def arrive(self, arrival: Fraction, count: int) -> None:
        """GPUs asked earlier come into service: a fleet change at ``arrival``."""
        self.pending -= count
        self.loop.install(self.p, count, arrival)


def schedule_per_step(schedule: list[int], start: Any, step_s: float, n_steps: int) -> list[int]:
    """A schedule's GPUs in each step: the most of its entries over the UTC hours the step
    overlaps (24 entries: hour of the day; 168: hour of the week from Monday 00:00)."""
    start = pd.Timestamp(start)
    if start.tzinfo is not None:
        start = start.tz_convert("UTC").tz_localize(None)
    monday = start.normalize() - pd.Timedelta(days=start.weekday())
    origin = Fraction(int((start - monday) / pd.Timedelta(microseconds=1)), 1_000_000)  # s after Monday 00:00
    step = Fraction(step_s)
    values = []
    for k in range(n_steps):
        begin, end = origin + k * step, origin + (k + 1) * step
        first, last = math.floor(begin / 3600), math.ceil(end / 3600) - 1
        values.append(max(schedule[h % len(schedule)] for h in range(first, last + 1)))
    return values


# -- training --------------------------------------------------------------------------------


class RefJob:
    """One explicit job; every time in whole steps."""

    def __init__(self, spec: Any, pool: int, order: int, step_s: float, horizon: Any) -> None:
        def steps(seconds: float, what: str) -> int:
            ratio = Fraction(seconds) / Fraction(step_s)
            if ratio.denominator != 1:
                raise ValueError(f"job {spec.name!r}: the reference takes {what} in whole steps")
            return int(ratio)

        if spec.duration is None:
            raise ValueError(f"job {spec.name!r}: the reference takes jobs sized by 'duration'")
        if spec.checkpoint_time != 0:
            raise ValueError(f"job {spec.name!r}: the reference takes checkpoint_time 0")
        self.name, self.pool, self.gpus, self.order = spec.name, pool, int(spec.gpus), order
        self.priority = spec.priority
        self.submit = max(steps(horizon.offset_of(spec.submit), "submissions"), 0)  # before the start: at 0
        self.work = steps(spec.duration, "durations")
        self.checkpoint = (steps(spec.checkpoint_interval, "checkpoint intervals")
                           if spec.checkpoint_interval is not None else None)
        self.restart = steps(spec.restart_time, "restart times")
        self.done = 0  # checkpointed work
        self.start: int | None = None  # first start
        self.end: int | None = None
        self.preemptions = 0
        self.needs_restart = False
        self.since = 0  # last (re)start
        self.lead = 0  # wall time before work at the last (re)start: restart_time after a preemption

    @property
    def finishes(self) -> int:
        """The step (start) at which the running job ends if nothing stops it."""
        return self.since + self.lead + self.work - self.done

    def saved_by(self, k: int, strictly: bool = False) -> int:
        """Work in whole checkpoint intervals completed since the last (re)start by step ``k``'s
        start (``strictly``: before it)."""
        elapsed = k - self.since - self.lead
        if self.checkpoint is None or elapsed <= 0:
            return 0
        return ((elapsed - 1) if strictly else elapsed) // self.checkpoint * self.checkpoint


class Training:
    """Every pool's queue and running jobs; acts at each step's training phase."""

    def __init__(self, loop: Any, scenario: Any) -> None:
        training = scenario.training
        self.loop = loop
        step = Fraction(loop.step_s)
        if training.streams or training.traces:
            raise ValueError("the reference runs explicit training jobs only")
        if training.jobs and training.policy != "fifo":
            raise ValueError("the reference schedules training fifo only")
        review = Fraction(training.review_every) / step
        if training.jobs and review.denominator != 1:
            raise ValueError("the reference takes review_every in whole steps")
        self.review = int(review)
        index = {pool.name: i for i, pool in enumerate(loop.pools)}
        listed = sorted(enumerate(training.jobs),
                        key=lambda item: (scenario.horizon.offset_of(item[1].submit), item[0]))
        self.jobs = [RefJob(spec, index[spec.pool], order, loop.step_s, scenario.horizon)
                     for order, (_, spec) in enumerate(listed)]
        for job, (_, spec) in zip(self.jobs, listed, strict=True):
            failures = scenario.failures_of(job.pool)
            rate = spec.failure_rate_per_gpu_hour
            if (rate if rate is not None else (0.0 if failures is None else failures.rate_per_gpu_hour)) != 0:
                raise ValueError(f"job {job.name!r}: the reference runs no failures")
            if loop.pools[job.pool].mode == "dedicated":
                raise ValueError(f"job {job.name!r}: the reference runs no dedicated partitions")
        self.queue: list[list[RefJob]] = [[] for _ in loop.pools]
        self.running: list[list[RefJob]] = [[] for _ in loop.pools]

    def held(self, p: int) -> int:
        return sum(job.gpus for job in self.running[p])

    def _set_training(self, p: int) -> None:
        self.loop.pools[p].training = self.held(p)

    def need(self, p: int, k: int) -> int:
        """GPUs inference places on pool ``p`` in step ``k`` with the fleet as it is now."""
        loop = self.loop
        return inference_on(loop.pools, loop.models, loop.demand[k])[p]

    def examine(self, p: int, k: int) -> None:
        """FIFO head of line: start queued jobs while they fit in the GPUs free for training."""
        if not self.queue[p]:
            return
        pool = self.loop.pools[p]
        free = max(pool.available - self.held(p) - self.need(p, k), 0)
        while self.queue[p] and self.queue[p][0].gpus <= free:
            job = self.queue[p].pop(0)
            free -= job.gpus
            if job.start is None:
                job.start = k
            job.since, job.lead = k, (job.restart if job.needs_restart else 0)
            job.needs_restart = False
            self.running[p].append(job)
        self._set_training(p)

    def preempt(self, p: int, k: int) -> bool:
        """In a ``preempt`` pool, preempt jobs until inference has the GPUs it needs in step k."""
        pool = self.loop.pools[p]
        if not pool.preempt or not self.running[p]:
            return False
        deficit = self.need(p, k) - (pool.available - self.held(p))
        victims = sorted(self.running[p], key=lambda job: (job.priority, -job.since, -job.order))
        preempted = False
        for job in victims:
            if deficit <= 0:
                break
            job.done += job.saved_by(k)
            job.preemptions += 1
            job.needs_restart = True
            self.running[p].remove(job)
            self.queue[p].append(job)
            self.queue[p].sort(key=lambda queued: queued.order)
            deficit -= job.gpus
            preempted = True
        self._set_training(p)
        return preempted

    def phase(self, k: int) -> None:
        """Step ``k``'s start: ends, submissions, queue examinations, preemptions."""
        n_pools = len(self.loop.pools)
        examine = [k > 0 and k % self.review == 0] * n_pools
        for p in range(n_pools):
            for job in [job for job in self.running[p] if job.finishes == k]:
                job.done, job.end = job.work, k
                self.running[p].remove(job)
                examine[p] = True
            self._set_training(p)
        for job in self.jobs:
            if job.submit == k:
                self.queue[job.pool].append(job)
                examine[job.pool] = True
        for p in range(n_pools):
            if examine[p]:
                self.examine(p, k)
        preempted = [self.preempt(p, k) for p in range(n_pools)]
        for p in range(n_pools):
            if preempted[p]:
                self.examine(p, k)

    def finish(self) -> list[dict]:
        """Every job's record at the horizon: running jobs keep what they saved before it."""
        n = self.loop.n_steps
        step_s = self.loop.step_s
        records = []
        for job in self.jobs:
            done = job.done
            if job in self.running[job.pool]:
                done += job.saved_by(n, strictly=True)
            records.append({
                "name": job.name,
                "start_s": None if job.start is None else job.start * step_s,
                "end_s": None if job.end is None else job.end * step_s,
                "preemptions": job.preemptions,
                "done_s": done * step_s,
            })
        return records
