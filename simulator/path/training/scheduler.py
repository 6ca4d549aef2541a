"""Gang scheduling of training jobs on one pool, sharing it with inference.

A job starts only when all its GPUs are free for training at once. How many are free
depends on the pool's mode: ``dedicated``: its partition, less what jobs hold; ``leftover``
and ``preempt``: the pool's available GPUs less what jobs hold and what inference places on
the pool in the step the job would start, from that step's drawn demand of every model,
placed on all its pools in its order of preference (so a pool that is a second choice gets
what the first cannot hold). In ``preempt`` mode inference comes first in every step: the
step clock stops at the start of a step where inference needs GPUs that jobs hold, and
:meth:`PoolScheduler.preempt_for_inference` preempts jobs (lowest priority, then latest
started first) until it has them; they lose the work since their last checkpoint and go
back to the queue; a job that has used up its preemptions for the day is never preempted
and its GPUs are kept from inference (:mod:`simulator.path.training.preemption_caps`). In
``leftover`` mode jobs keep their GPUs and inference makes do. The queue is re-examined when
a job arrives or ends and every ``review_every``.
"""

from __future__ import annotations

import numpy as np
import simpy

from simulator.path.fleet.state import FleetState
from simulator.path.placement import inference_gpus
from simulator.path.training.jobs import Job, run_job
from simulator.path.training.policies import Policy
from simulator.path.training.preemption_caps import calendar_day


class TrainingLog:
    """Queue and running counts over time, and every job, for the tables."""

    def __init__(self) -> None:
        self.times: list[float] = [0.0]
        self.queued: list[int] = [0]
        self.running: list[int] = [0]
        self.jobs: list[Job] = []

    def record(self, now: float, queued: int, running: int) -> None:
        if now == self.times[-1]:
            self.queued[-1], self.running[-1] = queued, running
        else:
            self.times.append(now)
            self.queued.append(queued)
            self.running.append(running)

    def per_step(self, n_steps: int, step_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Counts during each step: the state after every change at or before its start."""
        starts = np.arange(n_steps) * step_s
        index = np.searchsorted(np.asarray(self.times), starts + 1e-9 * step_s, side="right") - 1
        return np.asarray(self.queued)[index], np.asarray(self.running)[index]


class Cluster:
    """Every pool's scheduler, with shared queue/running counts."""

    def __init__(self, env: simpy.Environment, log: TrainingLog) -> None:
        self.env = env
        self.log = log
        self.schedulers: list[PoolScheduler] = []

    def record(self) -> None:
        queued = sum(len(s.queue) for s in self.schedulers)
        running = sum(len(s.running) for s in self.schedulers)
        self.log.record(self.env.now, queued, running)


class PoolScheduler:
    """The queue and the running jobs of one pool."""

    def __init__(self, env: simpy.Environment, cluster: Cluster, fleet: FleetState, pool: int, policy: Policy,
                 mode: str, partition: int, clock, rng: np.random.Generator) -> None:
        self.env, self.cluster, self.fleet, self.pool = env, cluster, fleet, pool
        self.policy, self.mode, self.partition = policy, mode, partition
        self.clock, self.rng = clock, rng
        self.queue: list[Job] = []
        self.running: list[Job] = []
        cluster.schedulers.append(self)

    @property
    def held(self) -> int:
        return sum(job.gpus for job in self.running)

    def protected(self, job: Job) -> bool:
        """Whether ``job`` has used up today's preemptions."""
        day = calendar_day(self.env.now, self.clock.plan.day_offset_s)
        cap = job.max_preemptions_per_day
        return cap >= 0 and job.preempt_day == day and job.preempted_today >= cap

    def protect(self) -> None:
        """Keep from inference the GPUs the protected running jobs of a ``preempt`` pool hold."""
        if self.mode == "preempt":
            kept = sum(job.gpus for job in self.running if self.protected(job))
            if kept != self.fleet.training_floor[self.pool]:
                self.fleet.set_training_floor(self.pool, kept)

    def _inference_need(self) -> int:
        """GPUs inference places on this pool in the step a change made now takes effect."""
        plan, fleet = self.clock.plan, self.fleet
        step = plan.step_at_or_after(self.env.now)
        if step >= plan.n_steps:
            return 0
        need = inference_gpus(self.clock.requests_at(step), plan.capacity_per_step, plan.gpus_per_replica,
                              plan.companion, plan.preferences, plan.api_mode, plan.burst, fleet.installed, fleet.failed,
                              fleet.out_of_service, fleet.training, fleet.training_floor, plan.preempt)
        return int(need[self.pool])

    def free(self) -> int:
        available = int(self.fleet.available[self.pool])
        if self.mode == "dedicated":
            return max(min(self.partition, available) - self.held, 0)
        return max(available - self.held - self._inference_need(), 0)

    def submit(self, job: Job) -> None:
        self.queue.append(job)
        self.try_start()

    def try_start(self) -> None:
        if not self.queue:
            self.cluster.record()
            return
        now = self.env.now
        running = [(now + job.remaining_wall_s, job.gpus) for job in self.running]
        for job in self.policy(self.queue, self.free(), now, running):
            self._start(job)
        self.cluster.record()

    def _start(self, job: Job) -> None:
        self.queue.remove(job)
        self.running.append(job)
        if job.start_s is None:
            job.start_s = self.env.now
        job.running_since = self.env.now
        job.running = True
        self.fleet.set_training(self.pool, self.held)
        self.protect()
        job.process = self.env.process(run_job(self.env, job, self.rng, self._done))

    def _release(self, job: Job) -> None:
        self.running.remove(job)
        job.running = False
        job.held_gpu_s += (self.env.now - job.running_since) * job.gpus
        self.fleet.set_training(self.pool, self.held)
        self.protect()

    def _done(self, job: Job) -> None:
        self._release(job)
        if job.finished is not None:
            job.finished.succeed(job)
        self.try_start()

    def preempt_for_inference(self) -> bool:
        """In ``preempt`` mode, give inference the GPUs it needs in the step starting now; return
        whether any job was preempted."""
        if self.mode != "preempt" or not self.running:
            return False
        deficit = self._inference_need() - (int(self.fleet.available[self.pool]) - self.held)
        victims = sorted((job for job in self.running if not self.protected(job)),
                         key=lambda job: (job.priority, -job.running_since, -job.order))
        preempted = False
        day = calendar_day(self.env.now, self.clock.plan.day_offset_s)
        for job in victims:
            if deficit <= 0:
                break
            job.process.interrupt("preempted by inference")
            job.preemptions += 1
            job.preempted_today = job.preempted_today + 1 if job.preempt_day == day else 1
            job.preempt_day = day
            job.needs_restart = True  # at once: a queue examined now sees the restart it will need
            self._release(job)
            self.queue.append(job)
            self.queue.sort(key=lambda queued: queued.order)
            deficit -= job.gpus
            preempted = True
        return preempted

    def midnights(self):
        """Protections end at each midnight (UTC): recompute them then."""
        plan = self.clock.plan
        while True:
            day = calendar_day(self.env.now, plan.day_offset_s)
            midnight = (day + 1) * 86_400.0 - plan.day_offset_s
            if midnight >= plan.horizon_s:
                return
            yield self.env.timeout(midnight - self.env.now)
            self.protect()

    def review(self, every: float):
        """Re-examine the queue periodically: the room for training moves with inference."""
        while True:
            yield self.env.timeout(every)
            self.try_start()
