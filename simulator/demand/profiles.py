"""Seasonal profiles: multipliers by UTC hour of day and by weekday, integrated exactly.

A profile is a step function: the hourly one constant over each UTC hour, the weekly one over
each UTC day. Each is scaled so that its mean over its cycle is 1, so ``base_rps`` and growth
keep their meaning. The seasonal factor is then constant times at most one cosine (the cycle
given as a cosine, if any) within every UTC hour, so its mean over any window is exact: the
hours the window overlaps, each integrated in closed form, weighted by the overlap.
"""

from __future__ import annotations

import numpy as np

from simulator.scenario.demand import Seasonality
from simulator.units import SECONDS_PER_DAY

_HOUR = 3600.0
_WEEK = 7 * SECONDS_PER_DAY


def normalized(profile: list[float]) -> np.ndarray:
    """A profile scaled to mean 1 over its cycle."""
    values = np.asarray(profile, dtype=np.float64)
    return values / values.mean()


def hour_multipliers(season: Seasonality) -> np.ndarray:
    """The profiles' product for each of the 168 hours of a week from Monday 00:00 UTC."""
    hours = np.arange(168)
    out = np.ones(168)
    if season.hourly is not None:
        out = out * normalized(season.hourly)[hours % 24]
    if season.weekly is not None:
        out = out * normalized(season.weekly)[hours // 24]
    return out


def profile_seasonal(season: Seasonality, week_offset: float, seconds: np.ndarray, width: float) -> np.ndarray:
    """Seasonal factor with at least one profile, averaged over ``[t − width/2, t + width/2]``.

    ``week_offset`` is the start of the horizon in seconds since Monday 00:00 UTC. Within hour
    ``k`` the factor is ``p_k (1 + a cos(ω u − φ))`` with ``p_k`` the profiles' product and the
    cosine the remaining cycle's (``a = 0`` when both cycles are profiles).
    """
    p = hour_multipliers(season)
    if season.hourly is None:
        a, omega, peak = season.daily_amplitude, 2 * np.pi / SECONDS_PER_DAY, season.peak_hour * _HOUR
    elif season.weekly is None:
        a, omega, peak = season.weekly_amplitude, 2 * np.pi / _WEEK, (season.peak_weekday + 0.5) * SECONDS_PER_DAY
    else:
        a, omega, peak = 0.0, 1.0, 0.0
    u = np.asarray(seconds, dtype=np.float64) + week_offset
    if width <= 0:
        k = np.floor(u / _HOUR).astype(np.int64)
        return p[k % 168] * (1.0 + a * np.cos(omega * (u - peak)))

    def integral(k: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``∫ p_k (1 + a cos(ω u − φ)) du`` from ``lo`` to ``hi`` inside hour ``k``."""
        wave = a / omega * (np.sin(omega * (hi - peak)) - np.sin(omega * (lo - peak))) if a else 0.0
        return p[k % 168] * ((hi - lo) + wave)

    lo, hi = u - width / 2, u + width / 2
    k_lo = np.floor(lo / _HOUR).astype(np.int64)
    k_hi = np.floor(hi / _HOUR).astype(np.int64)
    first = int(k_lo.min(initial=0))
    hours = np.arange(first, int(k_hi.max(initial=0)) + 2)
    whole = np.concatenate(([0.0], np.cumsum(integral(hours, hours * _HOUR, (hours + 1) * _HOUR))))
    same = k_hi == k_lo
    head = integral(k_lo, lo, np.where(same, hi, (k_lo + 1) * _HOUR))
    tail = np.where(same, 0.0, integral(k_hi, k_hi * _HOUR, hi))
    between = np.where(k_hi > k_lo + 1, whole[k_hi - first] - whole[np.minimum(k_lo + 1, k_hi) - first], 0.0)
    return (head + between + tail) / width
