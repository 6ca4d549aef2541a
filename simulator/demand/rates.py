"""Expected request rate at any time, and requests per step drawn around it.

The rate is ``base × growth × daily × weekly`` (see :mod:`simulator.scenario.demand`); the
day-to-day volatility factor of a path is drawn in :mod:`simulator.demand.volatility`.
A step's expected count is the rate integrated over the step: growth is integrated exactly
(constant, exponential; linear, logistic and piecewise at the step's midpoint, which is exact
for a line), the seasonal factor is averaged exactly over the step, and their product is
taken, which is exact whenever either is constant over the step and otherwise off by a
second-order term far below the Poisson noise.
"""

from __future__ import annotations

import numpy as np

from simulator.demand.profiles import profile_seasonal
from simulator.scenario.demand import (
    ConstantGrowth,
    Demand,
    ExponentialGrowth,
    LinearGrowth,
    LogisticGrowth,
    PiecewiseGrowth,
)
from simulator.scenario.horizon import Horizon
from simulator.scenario.training import LaunchAfter
from simulator.units import SECONDS_PER_DAY, SECONDS_PER_MONTH

_WEEK = 7 * SECONDS_PER_DAY


def expected_rate(demand: Demand, horizon: Horizon, seconds: np.ndarray) -> np.ndarray:
    """Expected requests per second at ``seconds`` from the start of the horizon."""
    seconds = np.asarray(seconds, dtype=np.float64)
    launch = _launch_offset(demand, horizon)
    rate = _level(demand, horizon, seconds, launch) * _seasonal(demand, horizon, seconds)
    return np.where(seconds >= launch, rate, 0.0)


def expected_counts(demand: Demand, horizon: Horizon, launch_s: float | None = None) -> np.ndarray:
    """Expected requests in each step of the horizon (``launch_s`` overrides the start)."""
    step = horizon.step_s
    starts = np.arange(horizon.n_steps, dtype=np.float64) * step
    mids = starts + step / 2
    launch = _launch_offset(demand, horizon) if launch_s is None else launch_s
    level = _level_integral(demand, horizon, starts, launch)
    counts = level * _seasonal(demand, horizon, mids, width=step)
    return np.maximum(counts, 0.0)


def expected_level_counts(demand: Demand, horizon: Horizon, launch_s: float | None = None) -> np.ndarray:
    """Expected requests in each step without seasonality (base × growth integrated)."""
    starts = np.arange(horizon.n_steps, dtype=np.float64) * horizon.step_s
    launch = _launch_offset(demand, horizon) if launch_s is None else launch_s
    return np.maximum(_level_integral(demand, horizon, starts, launch), 0.0)


def sample_counts(expected: np.ndarray, noise: str, rng: np.random.Generator) -> np.ndarray:
    """Requests per step: Poisson around the expected counts, or the counts themselves.

    ``expected`` already carries the path's volatility factor, if any.
    """
    if noise == "none":
        return expected.astype(np.float64, copy=True)
    return rng.poisson(expected).astype(np.float64)


def _launch_offset(demand: Demand, horizon: Horizon) -> float:
    """Seconds from the start to the launch; +inf while it waits on a training job."""
    if demand.start is None:
        return -np.inf
    if isinstance(demand.start, LaunchAfter):
        return np.inf
    return horizon.offset_of(demand.start)


def _months_since(seconds: np.ndarray, launch: float) -> np.ndarray:
    origin = 0.0 if not np.isfinite(launch) else launch
    return np.maximum(seconds - origin, 0.0) / SECONDS_PER_MONTH


def _level(demand: Demand, horizon: Horizon, seconds: np.ndarray, launch: float) -> np.ndarray:
    """``base × growth`` at instants (rates per second)."""
    growth = demand.growth
    if isinstance(growth, PiecewiseGrowth):
        times = np.array([horizon.offset_of(p.at) for p in growth.points])
        values = np.array([p.rps for p in growth.points])
        order = np.argsort(times, kind="stable")
        times, values = times[order], values[order]
        rates = np.interp(seconds, times, values)
        if growth.extrapolate == "trend" and len(times) >= 2 and times[-1] > times[-2]:
            # Past the last point, the last segment's growth goes on, compounded.
            ratio = values[-1] / values[-2] if values[-2] > 0 else 1.0
            after = seconds > times[-1]
            rates[after] = values[-1] * ratio ** ((seconds[after] - times[-1]) / (times[-1] - times[-2]))
        return rates
    months = _months_since(seconds, launch)
    base = float(demand.base_rps or 0.0)
    if isinstance(growth, ConstantGrowth):
        return np.full_like(months, base)
    if isinstance(growth, LinearGrowth):
        return base * np.maximum(1.0 + growth.increase_per_month * months, 0.0)
    if isinstance(growth, ExponentialGrowth):
        return base * np.power(1.0 + growth.rate_per_month, months)
    if isinstance(growth, LogisticGrowth):
        k = growth.ceiling
        return base * k / (1.0 + (k - 1.0) * np.exp(-growth.rate_per_month * months))
    raise TypeError(f"unknown growth {growth!r}")


def _level_integral(
    demand: Demand, horizon: Horizon, starts: np.ndarray, launch: float
) -> np.ndarray:
    """``∫ base × growth dt`` over each step, exact where a closed form exists."""
    step = horizon.step_s
    growth = demand.growth
    if launch == np.inf:  # not launched (yet)
        return np.zeros_like(starts)
    lo = np.maximum(starts, launch) if np.isfinite(launch) else starts
    hi = starts + step
    width = np.maximum(hi - lo, 0.0)
    base = float(demand.base_rps or 0.0)
    if isinstance(growth, ConstantGrowth):
        return base * width
    if isinstance(growth, LinearGrowth):
        # Exact while the line stays non-negative; the clip at zero is evaluated at the midpoint.
        mid = _months_since((lo + hi) / 2, launch)
        return base * np.maximum(1.0 + growth.increase_per_month * mid, 0.0) * width
    if isinstance(growth, ExponentialGrowth):
        r = np.log1p(growth.rate_per_month) / SECONDS_PER_MONTH
        m_lo = _months_since(lo, launch) * SECONDS_PER_MONTH
        if r == 0.0:
            return base * width
        return base * np.exp(r * m_lo) * np.expm1(r * width) / r
    mid = (lo + hi) / 2
    return _level(demand, horizon, mid, launch) * width


def _seasonal(
    demand: Demand, horizon: Horizon, seconds: np.ndarray, width: float = 0.0
) -> np.ndarray:
    """Seasonal factor averaged over ``[t - width/2, t + width/2]`` (exactly; 0 = at ``t``).

    Profiles are integrated by :func:`simulator.demand.profiles.profile_seasonal`; two cosines
    as follows.

    With ``A = ω_d t − φ_d`` and ``B = ω_w t − φ_w`` the factor is
    ``(1 + a_d cos A)(1 + a_w cos B) = 1 + a_d cos A + a_w cos B + a_d a_w (cos(A+B) + cos(A−B))/2``,
    and the mean of ``cos(ω t − φ)`` over a window of width ``w`` centred on ``m`` is
    ``cos(ω m − φ) · sinc(ω w / 2)``.
    """
    season = demand.seasonality
    start = horizon.start
    day_offset = (start - start.normalize()).total_seconds()
    week_offset = start.weekday() * SECONDS_PER_DAY + day_offset  # since Monday 00:00 UTC
    if season.hourly is not None or season.weekly is not None:
        return profile_seasonal(season, week_offset, seconds, width)
    a_d, a_w = season.daily_amplitude, season.weekly_amplitude
    if a_d == 0 and a_w == 0:
        return np.ones_like(seconds)
    w_d, w_w = 2 * np.pi / SECONDS_PER_DAY, 2 * np.pi / _WEEK
    phase_d = w_d * (seconds + day_offset - season.peak_hour * 3600.0)
    phase_w = w_w * (seconds + week_offset - (season.peak_weekday + 0.5) * SECONDS_PER_DAY)

    def mean_cos(phase: np.ndarray, omega: float) -> np.ndarray:
        half = omega * width / 2
        return np.cos(phase) * (np.sin(half) / half if half > 0 else 1.0)

    return (
        1.0
        + a_d * mean_cos(phase_d, w_d)
        + a_w * mean_cos(phase_w, w_w)
        + a_d * a_w * 0.5 * (mean_cos(phase_d + phase_w, w_d + w_w) + mean_cos(phase_d - phase_w, w_d - w_w))
    )
