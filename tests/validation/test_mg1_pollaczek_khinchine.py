"""Queueing theory: with max batch 1 and one output token, a replica is an M/G/1 queue.

Each request is one prefill iteration of ``S = base + per_token × prompt`` seconds, served
first-come-first-served, so TTFT = waiting time + S and the Pollaczek–Khinchine formula gives
``E[TTFT] = E[S] + λ E[S²] / (2 (1 − ρ))`` with ``ρ = λ E[S]``.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.serving import LinearIterationModel, simulate_replica

BASE_S, PER_TOKEN_S = 0.02, 1e-4


def test_mean_ttft_matches_pollaczek_khinchine_at_rho_07():
    # Prompts uniform on 1..999: S = 0.02 + 1e-4 * P, a general (not exponential) service time.
    prompts = np.arange(1, 1000)
    service = BASE_S + PER_TOKEN_S * prompts
    mean_s, second_s = service.mean(), (service**2).mean()
    rho = 0.7
    rate = rho / mean_s
    expected = mean_s + rate * second_s / (2 * (1 - rho))
    model = LinearIterationModel(BASE_S, PER_TOKEN_S)
    n, warmup, replications = 200_000, 20_000, 10
    ttft = []
    for seed in range(replications):
        rng = np.random.default_rng(seed)
        arrival = np.cumsum(rng.exponential(1 / rate, n))
        prompt = rng.choice(prompts, n)
        result = simulate_replica(arrival, prompt, np.ones(n, dtype=np.int64), model, max_batch=1)
        ttft.append(result.ttft_s[warmup:])
    pooled = np.concatenate(ttft)
    per_run = np.array([t.mean() for t in ttft])
    # Run-to-run scatter of the mean tells how sharp the pooled estimate is.
    standard_error = per_run.std(ddof=1) / np.sqrt(replications)
    assert standard_error / expected < 0.006
    assert pooled.mean() == pytest.approx(expected, rel=0.02)


def test_little_law_holds_for_the_batching_engine():
    # L = λW: the time-average number of requests in the system equals the arrival rate times
    # the mean time in system, for continuous batching with many requests per iteration.
    rng = np.random.default_rng(42)
    n = 100_000
    rate = 12.0
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    prompt = rng.integers(50, 1500, n)
    output = rng.integers(10, 300, n)
    result = simulate_replica(arrival, prompt, output, LinearIterationModel(0.01, 5e-5), max_batch=32)
    events = np.concatenate([result.arrival_s, result.finish_s])
    steps = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.argsort(events, kind="stable")
    times, counts = events[order], np.cumsum(steps[order])
    area = np.sum(counts[:-1] * np.diff(times))
    span = times[-1] - times[0]
    assert area / span == pytest.approx(n / span * result.e2e_s.mean(), rel=1e-9)
