"""A scenario's training jobs and streams, resolved to pools, seconds and work."""

from __future__ import annotations

import math

from simulator.path.streams import stream_key
from simulator.path.training.sources import JobSpec, StreamSpec
from simulator.scenario import Scenario
from simulator.scenario.training import Checkpointing, TrainingJob


def work_seconds(scenario: Scenario, job: TrainingJob) -> float:
    """Work of a job at full speed: its duration, or 6·N·D / (GPUs × peak FLOP/s × MFU)."""
    if job.duration is not None:
        return float(job.duration)
    pool = next(p for p in scenario.fleet.pools if p.name == job.pool)
    gpu = scenario.gpu(pool.gpu)
    tflops = gpu.tflops_fp8 if job.dtype == "fp8" and gpu.tflops_fp8 else gpu.tflops_bf16
    return float(job.total_flops) / (job.gpus * tflops * 1e12 * job.mfu)


def _failure_rate_gpu_s(scenario: Scenario, pool: int, spec: Checkpointing) -> float:
    if spec.failure_rate_per_gpu_hour is not None:
        return spec.failure_rate_per_gpu_hour / 3600.0
    failures = scenario.failures_of(pool)
    return 0.0 if failures is None else failures.rate_per_gpu_hour / 3600.0


def _checkpointing(scenario: Scenario, pool: int, spec: Checkpointing) -> tuple[float, float, float, float, int]:
    interval = spec.checkpoint_interval if spec.checkpoint_interval is not None else math.inf
    cap = -1 if spec.max_preemptions_per_day is None else spec.max_preemptions_per_day
    return interval, spec.checkpoint_time, spec.restart_time, _failure_rate_gpu_s(scenario, pool, spec), cap


def training_jobs(scenario: Scenario, pools: dict[str, int]) -> tuple[JobSpec, ...]:
    """Explicit jobs and trace rows."""
    horizon = scenario.horizon
    training = scenario.training
    specs = []
    for job in training.jobs:
        pool = pools[job.pool]
        specs.append(JobSpec(job.name, pool, job.gpus, horizon.offset_of(job.submit), job.priority,
                             work_seconds(scenario, job), *_checkpointing(scenario, pool, job), named=True,
                             usd_per_day_late=job.usd_per_day_late or 0.0))
    for trace in training.traces:
        pool = pools[trace.pool]
        for i, (submit, gpus, duration) in enumerate(trace.rows):
            specs.append(JobSpec(f"{trace.name}-{i}", pool, gpus, horizon.offset_of(submit), trace.priority,
                                 float(duration), *_checkpointing(scenario, pool, trace)))
    return tuple(specs)


def training_streams(scenario: Scenario, pools: dict[str, int]) -> tuple[StreamSpec, ...]:
    horizon = scenario.horizon
    out = []
    for stream in scenario.training.streams:
        pool = pools[stream.pool]
        choices, weights = ((stream.gpus,), None) if isinstance(stream.gpus, int) else (
            tuple(stream.gpus.choices), None if stream.gpus.weights is None else tuple(stream.gpus.weights))
        end = horizon.length_s if stream.end is None else min(horizon.offset_of(stream.end), horizon.length_s)
        out.append(StreamSpec(stream.name, stream_key(stream.name), pool, stream.arrivals_per_hour / 3600.0,
                              choices, weights, stream.duration, max(horizon.offset_of(stream.start), 0.0), end,
                              stream.priority, *_checkpointing(scenario, pool, stream)))
    return tuple(out)
