"""Workloads for the request-level engine: a trace, Poisson arrivals, or an offline batch."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.serving.iteration import ServingConfigError
from simulator.serving.trace import Trace, read_trace


@dataclass(frozen=True)
class Workload:
    """Requests to serve, sorted by arrival."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    description: str


def synthetic_workload(
    input_len: int, output_len: int, num_requests: int, rate: float | None = None, seed: int = 0
) -> Workload:
    """``num_requests`` requests of fixed lengths: Poisson at ``rate`` req/s, or all at time 0."""
    if num_requests < 1 or input_len < 1 or output_len < 1:
        raise ServingConfigError("input length, output length and number of requests must be >= 1")
    if rate is None:
        arrival = np.zeros(num_requests)
        how = "all at time 0 (offline)"
    else:
        if not (rate > 0 and math.isfinite(rate)):
            raise ServingConfigError(f"--rate must be a positive number of requests per second, got {rate}")
        arrival = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, num_requests))
        arrival -= arrival[0]
        how = f"Poisson at {rate:g} req/s"
    return Workload(arrival, np.full(num_requests, input_len, dtype=np.int64),
                    np.full(num_requests, output_len, dtype=np.int64),
                    f"{num_requests:,} requests of {input_len}+{output_len} tokens, {how}")


def trace_workload(trace: str, rate: float | None = None, rate_scale: float | None = None) -> Workload:
    """Replay a trace, optionally at ``rate_scale`` × its rate or rescaled to a mean ``rate``."""
    loaded: Trace = read_trace(trace)
    for label, value in (("--rate", rate), ("--rate-scale", rate_scale)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ServingConfigError(f"{label} must be a positive finite number, got {value}")
    factor = 1.0
    if rate_scale is not None:
        factor = rate_scale
    elif rate is not None:
        factor = rate / loaded.rate_rps
    scaled = loaded.scaled(factor) if factor != 1.0 else loaded
    return Workload(scaled.arrival_s, scaled.prompt_tokens, scaled.output_tokens,
                    f"{len(scaled.arrival_s):,} requests from {trace} at {factor:g}× "
                    f"({scaled.rate_rps:.2f} req/s)")
