"""Day-to-day volatility: one multiplicative demand factor per UTC calendar day.

Demand on a real service swings from one day to the next by more than counting noise (a
launch, a holiday, an outage elsewhere), and the swings persist for a few days. On the log
scale the factor is an AR(1) process started in its stationary law:

    x_0 = σ ε_0,   x_d = φ x_{d−1} + sqrt(1 − φ²) σ ε_d,   f_d = exp(x_d − σ²/2),

with ε standard normal, σ = ``daily_sigma`` and φ = ``persistence``. Every ``x_d`` is then
normal with mean 0 and standard deviation σ, and ``corr(x_d, x_{d−1}) = φ``, so ``log f``
has standard deviation σ and lag-1 autocorrelation φ, and ``E f_d = exp(−σ²/2 + σ²/2) = 1``:
the factor moves demand about without changing its expectation. A step's factor is the mean
of the daily factors over the step (the factor of its day when the step lies inside one day).
"""

from __future__ import annotations

import numpy as np

from simulator.scenario.demand import Volatility
from simulator.scenario.horizon import Horizon
from simulator.units import SECONDS_PER_DAY


def daily_factors(volatility: Volatility, n_days: int, rng: np.random.Generator) -> np.ndarray:
    """``f_0 … f_{n_days−1}``: the factor of each calendar day, from ``n_days`` normal draws."""
    sigma, phi = volatility.daily_sigma, volatility.persistence
    eps = rng.standard_normal(n_days)
    x = np.empty(n_days)
    innovation = np.sqrt(1.0 - phi * phi) * sigma
    previous = 0.0
    for d in range(n_days):
        previous = sigma * eps[0] if d == 0 else phi * previous + innovation * eps[d]
        x[d] = previous
    return np.exp(x - sigma * sigma / 2)


def volatility_factor(volatility: Volatility, horizon: Horizon, rng: np.random.Generator) -> np.ndarray:
    """The factor of each step: the daily factors averaged over the step (day 0 = the start's day)."""
    start = horizon.start
    day_offset = (start - start.normalize()).total_seconds()
    lo = np.arange(horizon.n_steps, dtype=np.float64) * horizon.step_s + day_offset
    hi = lo + horizon.step_s
    first = np.floor(lo / SECONDS_PER_DAY).astype(np.int64)
    last = np.maximum(np.ceil(hi / SECONDS_PER_DAY).astype(np.int64) - 1, first)  # last day overlapped
    f = daily_factors(volatility, int(last.max(initial=0)) + 1, rng)
    if (first == last).all():
        return f[first]
    whole = np.concatenate(([0.0], np.cumsum(f))) * SECONDS_PER_DAY
    head = f[first] * np.minimum((first + 1) * SECONDS_PER_DAY, hi) - f[first] * lo
    tail = np.where(last > first, f[last] * (hi - last * SECONDS_PER_DAY), 0.0)
    between = np.where(last > first + 1, whole[last] - whole[np.minimum(first + 1, last)], 0.0)
    return np.where(first == last, f[first], (head + between + tail) / horizon.step_s)
