"""A training job at run time, and the SimPy process that runs it.

While running, a job works through checkpoint segments: ``checkpoint_interval`` of work,
then ``checkpoint_time`` to write it (none after the last). A failure of one of its GPUs —
at ``rate × gpus`` — interrupts the current segment: its work is lost and the job restarts
on the same allocation (spares replace the failed GPUs) after ``restart_time``. Preemption by
inference interrupts it the same way but also takes its GPUs and sends it back to the queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import simpy


@dataclass(eq=False)
class Job:
    """A job's specification and its progress on one path."""

    name: str
    pool: int
    gpus: int
    submit_s: float
    priority: int
    work_s: float
    checkpoint_s: float  # work between checkpoints (inf: none)
    checkpoint_time_s: float
    restart_s: float
    failure_rate_gpu_s: float  # interruptions per GPU-second
    order: int  # submission order, breaks ties
    named: bool = False  # an explicit job: its completion date is summarized
    max_preemptions_per_day: int = -1  # -1: no cap
    preempt_day: int = -1  # the calendar day of its last preemption (days since 1970-01-01, UTC)
    preempted_today: int = 0  # its preemptions on that day
    done_s: float = 0.0  # checkpointed (safe) work
    start_s: float | None = None
    end_s: float | None = None
    preemptions: int = 0
    interruptions: int = 0
    held_gpu_s: float = 0.0
    needs_restart: bool = False
    running: bool = False
    running_since: float = 0.0
    process: simpy.Process | None = field(default=None, repr=False)
    finished: simpy.Event | None = field(default=None, repr=False)

    @property
    def remaining_wall_s(self) -> float:
        """Expected wall time to finish if nothing interrupts it (for schedulers' estimates)."""
        left = max(self.work_s - self.done_s, 0.0)
        writes = max(math.ceil(left / self.checkpoint_s - 1e-9) - 1, 0) if math.isfinite(self.checkpoint_s) else 0
        return (self.restart_s if self.needs_restart else 0.0) + left + writes * self.checkpoint_time_s


def run_job(env: simpy.Environment, job: Job, rng: np.random.Generator, on_done):
    """Run ``job`` on its allocation until done; a preemption arrives as ``simpy.Interrupt``."""
    try:
        while True:
            if job.needs_restart:
                yield env.timeout(job.restart_s)
                job.needs_restart = False
            left = job.work_s - job.done_s
            if left <= 1e-9:
                break
            segment = min(job.checkpoint_s, left)
            wall = segment + (job.checkpoint_time_s if segment < left - 1e-9 else 0.0)
            rate = job.failure_rate_gpu_s * job.gpus
            to_failure = rng.exponential(1.0 / rate) if rate > 0 else math.inf
            if to_failure < wall:
                yield env.timeout(to_failure)
                job.interruptions += 1
                job.needs_restart = True
                continue
            yield env.timeout(wall)
            job.done_s += segment
        job.done_s = job.work_s
        job.end_s = env.now
        on_done(job)
    except simpy.Interrupt:  # preempted: the scheduler counted it and took the GPUs
        return
