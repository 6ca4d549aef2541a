"""Workloads for the request-level engine: a trace, Poisson arrivals, or an offline batch."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.serving.iteration import ServingConfigError
from simulator.serving.trace import Trace, read_trace


@dataclass(frozen=True)
class Workload:
    """Requests to serve, sorted by arrival, with optional prompt-content labels (prefix cache)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    description: str
    prefix_id: np.ndarray | None = None
    prefix_tokens: np.ndarray | None = None
    prompt_id: np.ndarray | None = None


def _labels(prompt: np.ndarray, shared_prefix_tokens: int, distinct_prompts: int, rng: np.random.Generator,
            prefix_id=None, prefix_tokens=None, prompt_id=None):
    """Prefix-cache labels: a shared system prompt and/or ``distinct_prompts`` repeated prompts."""
    for label, value in (("--shared-prefix-tokens", shared_prefix_tokens), ("--distinct-prompts", distinct_prompts)):
        if value < 0:
            raise ServingConfigError(f"{label} must be >= 0, got {value}")
    n = len(prompt)
    if shared_prefix_tokens > 0:
        prefix_id = np.zeros(n, dtype=np.int64)
        prefix_tokens = np.minimum(prompt, shared_prefix_tokens)
    if distinct_prompts > 0:
        prompt_id = rng.integers(0, distinct_prompts, n)
    return prefix_id, prefix_tokens, prompt_id


def synthetic_workload(
    input_len: int, output_len: int, num_requests: int, rate: float | None = None, seed: int = 0,
    shared_prefix_tokens: int = 0, distinct_prompts: int = 0,
) -> Workload:
    """``num_requests`` requests of fixed lengths: Poisson at ``rate`` req/s, or all at time 0.

    ``shared_prefix_tokens``: a system prompt every request shares; ``distinct_prompts``: each
    request repeats one of that many prompts (uniformly, drawn after the arrivals).
    """
    if num_requests < 1 or input_len < 1 or output_len < 1:
        raise ServingConfigError("input length, output length and number of requests must be >= 1")
    rng = np.random.default_rng(seed)
    if rate is None:
        arrival = np.zeros(num_requests)
        how = "all at time 0 (offline)"
    else:
        if not (rate > 0 and math.isfinite(rate)):
            raise ServingConfigError(f"--rate must be a positive number of requests per second, got {rate}")
        arrival = np.cumsum(rng.exponential(1.0 / rate, num_requests))
        arrival -= arrival[0]
        how = f"Poisson at {rate:g} req/s"
    prompt = np.full(num_requests, input_len, dtype=np.int64)
    labels = _labels(prompt, shared_prefix_tokens, distinct_prompts, rng)
    return Workload(arrival, prompt, np.full(num_requests, output_len, dtype=np.int64),
                    f"{num_requests:,} requests of {input_len}+{output_len} tokens, {how}", *labels)


def trace_workload(trace: str, rate: float | None = None, rate_scale: float | None = None, seed: int = 0,
                   shared_prefix_tokens: int = 0, distinct_prompts: int = 0) -> Workload:
    """Replay a trace, optionally at ``rate_scale`` × its rate or rescaled to a mean ``rate``.

    The trace's own ``prefix_id, prefix_tokens`` columns (optional) label shared prefixes;
    ``shared_prefix_tokens`` / ``distinct_prompts`` override them as in :func:`synthetic_workload`.
    """
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
    labels = _labels(scaled.prompt_tokens, shared_prefix_tokens, distinct_prompts, np.random.default_rng(seed),
                     loaded.prefix_id, loaded.prefix_tokens)
    return Workload(scaled.arrival_s, scaled.prompt_tokens, scaled.output_tokens,
                    f"{len(scaled.arrival_s):,} requests from {trace} at {factor:g}× "
                    f"({scaled.rate_rps:.2f} req/s)", *labels)
