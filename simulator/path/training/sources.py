"""Where jobs come from: an explicit list, Poisson streams, traces; and the submitter process."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import simpy

from simulator.path.training.jobs import Job


@dataclass(frozen=True)
class JobSpec:
    """A job as the engine sees it: pool index, sizes and times in seconds."""

    name: str
    pool: int
    gpus: int
    submit_s: float
    priority: int
    work_s: float
    checkpoint_s: float
    checkpoint_time_s: float
    restart_s: float
    failure_rate_gpu_s: float
    max_preemptions_per_day: int = -1  # -1: no cap
    named: bool = False
    usd_per_day_late: float = 0.0  # what each day late costs (a named job's; reported, not booked)


@dataclass(frozen=True)
class StreamSpec:
    """A Poisson stream of jobs (sizes and durations drawn per path)."""

    name: str
    key: int
    pool: int
    rate_per_s: float
    gpu_choices: tuple[int, ...]
    gpu_weights: tuple[float, ...] | None
    duration: object  # a DurationDistribution
    start_s: float
    end_s: float
    priority: int
    checkpoint_s: float
    checkpoint_time_s: float
    restart_s: float
    failure_rate_gpu_s: float
    max_preemptions_per_day: int = -1


def stream_job_arrays(stream: StreamSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Draw one path's jobs of a stream: Poisson arrivals, sizes and durations, as arrays."""
    span = stream.end_s - stream.start_s
    if span <= 0 or stream.rate_per_s <= 0:
        return {"submit_s": np.zeros(0), "gpus": np.zeros(0, dtype=np.int64), "work_s": np.zeros(0)}
    count = rng.poisson(stream.rate_per_s * span)
    submits = np.sort(stream.start_s + rng.uniform(0.0, span, count))
    if stream.gpu_weights is None:
        gpus = rng.choice(np.asarray(stream.gpu_choices), count)
    else:
        weights = np.asarray(stream.gpu_weights) / sum(stream.gpu_weights)
        gpus = rng.choice(np.asarray(stream.gpu_choices), count, p=weights)
    durations = np.maximum(np.asarray(stream.duration.sample(rng, count), dtype=float), 1e-9)
    return {"submit_s": submits, "gpus": np.asarray(gpus, dtype=np.int64), "work_s": durations}


def stream_jobs(stream: StreamSpec, rng: np.random.Generator) -> list[JobSpec]:
    """One path's jobs of a stream, one spec each."""
    drawn = stream_job_arrays(stream, rng)
    return [
        JobSpec(f"{stream.name}-{i}", stream.pool, int(g), float(t), stream.priority, float(d),
                stream.checkpoint_s, stream.checkpoint_time_s, stream.restart_s, stream.failure_rate_gpu_s,
                stream.max_preemptions_per_day)
        for i, (t, g, d) in enumerate(zip(drawn["submit_s"], drawn["gpus"], drawn["work_s"], strict=True))
    ]


def make_jobs(specs: list[JobSpec]) -> list[Job]:
    """Runtime jobs in submission order (ties: the order given)."""
    ordered = sorted(enumerate(specs), key=lambda item: (item[1].submit_s, item[0]))
    return [
        Job(s.name, s.pool, s.gpus, s.submit_s, s.priority, s.work_s,
            s.checkpoint_s if s.checkpoint_s > 0 else math.inf, s.checkpoint_time_s, s.restart_s,
            s.failure_rate_gpu_s, order, s.named, max_preemptions_per_day=s.max_preemptions_per_day)
        for order, (_, s) in enumerate(ordered)
    ]


def submitter(env: simpy.Environment, jobs: list[Job], schedulers):
    """Submit each job to its pool's scheduler at its submission time."""
    for job in jobs:
        if job.submit_s > env.now:
            yield env.timeout(job.submit_s - env.now)
        schedulers[job.pool].submit(job)
