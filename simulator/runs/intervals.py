"""Monte Carlo error of the figures a run reports: how far a figure read off ``n`` paths may
be from the figure an unlimited number of paths would give.

Every interval is a confidence interval at ``level`` (90% by default): over repeated runs
with fresh seeds, at least (or, for the approximate ones, about) that share of intervals
contains the true value. They measure sampling error only, not whether the model is right.

* :func:`quantile_interval` — for a quantile (P10, P50, P90). Sort the ``n`` values; the
  true q-quantile lies between the l-th and the u-th smallest with probability
  ``P(l <= B < u)``, ``B ~ Binomial(n, q)`` (the number of values below the quantile),
  whatever the distribution of the values (for tied values the chance is only higher).
  ``l`` is the largest rank whose lower miss ``P(B < l)`` is at most ``(1 - level)/2`` and
  ``u`` the smallest whose upper miss ``P(B >= u)`` is, so each bound alone is a one-sided
  ``(1 + level)/2`` bound and the pair covers at least ``level``: the shortest pair whose
  tails both stay within that share. When no rank in ``1..n`` keeps a tail within it, that
  side has no bound (too few paths): ``None``, shown as "—". Thompson, W. R. (1936), "On
  confidence ranges for the median and other expectation distributions for populations of
  unknown distribution form", *Ann. Math. Statist.* 7, 122–128; David & Nagaraja (2003),
  *Order Statistics*, 3rd ed., §7.1.
* :func:`wilson_interval` — for a probability (the chance of a shortfall). The Wilson score
  interval: the probabilities ``p`` whose normal test ``|p̂ - p| <= z·sqrt(p(1-p)/n)``
  accepts the observed share ``p̂``. Unlike ``p̂ ± z·sqrt(p̂(1-p̂)/n)`` it stays in [0, 1]
  and does not collapse to a point at 0 or n successes. Wilson, E. B. (1927), *J. Amer.
  Statist. Assoc.* 22, 209–212; Brown, Cai & DasGupta (2001), *Statist. Sci.* 16, 101–133.
* :func:`mean_interval` — for a mean (a total's average over paths): the central-limit
  interval ``mean ± z·s/sqrt(n)``, with ``s`` the sample standard deviation.
* :func:`ratio_interval` — for a pooled ratio (share served, SLO attainment: Σ over paths of
  a numerator over Σ of a denominator), by the delta method of the ratio estimator.

``z`` is the standard normal quantile of ``(1 + level)/2`` (1.645 at 90%).
:func:`binomial_cdf` is exact up to rounding: each probability is computed in log space
from ``math.lgamma`` (relative error about 1e-13 at n = 100, 1e-9 at n = 10^6).
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

Interval = tuple[float | None, float | None]


def binomial_cdf(k: ArrayLike, n: int, p: float) -> np.ndarray | float:
    """``P(B <= k)`` for ``B ~ Binomial(n, p)``, elementwise over ``k`` (rounded down to an
    integer; ``k < 0`` gives 0 and ``k >= n`` gives 1). A scalar ``k`` gives a float."""
    ks = np.floor(np.asarray(k, dtype=np.float64))
    cdf = np.cumsum(_binomial_pmf(n, p))
    inside = np.clip(np.nan_to_num(ks, nan=-1.0), 0, n).astype(np.int64)
    out = np.where(ks < 0, 0.0, np.where(ks >= n, 1.0, cdf[inside]))
    out[np.isnan(ks)] = np.nan
    return float(out) if out.ndim == 0 else out


@lru_cache(maxsize=256)
def quantile_rank_bounds(n: int, q: float, level: float = 0.9) -> tuple[int, int]:
    """1-based ranks ``(l, u)`` of the order statistics bounding the q-quantile of ``n``
    values at ``level`` (see the module docstring): ``l`` is 0 when there is no lower bound
    and ``u`` is ``n + 1`` when there is no upper bound."""
    _check_level(level)
    tail = (1.0 - level) / 2.0
    pmf = _binomial_pmf(n, q)
    below = np.cumsum(pmf)[:n]  # below[l - 1] = P(B < l) for l = 1..n
    above = np.cumsum(pmf[::-1])[::-1][1:]  # above[u - 1] = P(B >= u) for u = 1..n
    lower = int(np.searchsorted(below, tail, side="right"))  # the count of l with P(B < l) <= tail
    upper = n + 1 - int(np.searchsorted(above[::-1], tail, side="right"))
    return lower, upper


def quantile_interval(values: ArrayLike, q: float, level: float = 0.9) -> Interval:
    """Distribution-free interval for the population q-quantile of ``values``: two of the
    sorted values, at the ranks of :func:`quantile_rank_bounds`. NaN values are left out;
    ±inf values count (a time after the horizon is +inf), and an infinite bound is ``None``,
    as is a bound that ``n`` values are too few to give."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = np.sort(x[~np.isnan(x)])
    lower, upper = quantile_rank_bounds(len(x), float(q), float(level))
    return (_finite(x[lower - 1]) if lower >= 1 else None,
            _finite(x[upper - 1]) if upper <= len(x) else None)


def wilson_interval(successes: int, n: int, level: float = 0.9) -> tuple[float, float]:
    """Wilson score interval for a probability from ``successes`` out of ``n`` trials;
    ``(0.0, 1.0)`` when ``n`` is 0."""
    _check_level(level)
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = _z(level)
    share = successes / n
    shrink = 1.0 + z * z / n
    centre = (share + z * z / (2 * n)) / shrink
    half = z / shrink * math.sqrt(share * (1.0 - share) / n + z * z / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def mean_interval(values: ArrayLike, level: float = 0.9) -> Interval:
    """Normal-approximation interval ``mean ± z·s/sqrt(n)`` for the mean of ``values``
    (NaN left out; ``s`` with ``ddof=1``). Both bounds are ``None`` below two values or when
    a value is infinite."""
    _check_level(level)
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    if len(x) < 2 or not np.isfinite(x).all():
        return None, None
    mean = float(np.mean(x))
    half = _z(level) * float(np.std(x, ddof=1)) / math.sqrt(len(x))
    return _finite(mean - half), _finite(mean + half)


def ratio_interval(numerators: ArrayLike, denominators: ArrayLike, level: float = 0.9) -> Interval:
    """Normal-approximation interval for a pooled ratio ``R = Σ x / Σ y`` over paths (the ratio
    estimator's delta method): ``R ± z·s_e/(sqrt(n)·mean(y))`` with ``s_e`` the sample standard
    deviation of the residuals ``x_i − R·y_i``. Both bounds are ``None`` below two paths or
    when the denominators sum to zero. Cochran, W. G. (1977), *Sampling Techniques*, 3rd ed., §6.4."""
    _check_level(level)
    x = np.asarray(numerators, dtype=np.float64).ravel()
    y = np.asarray(denominators, dtype=np.float64).ravel()
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()) or y.sum() <= 0:
        return None, None
    with np.errstate(all="ignore"):  # sums beyond a float's range: no interval, and no warning
        ratio = float(x.sum() / y.sum())
        half = _z(level) * float(np.std(x - ratio * y, ddof=1)) / (math.sqrt(len(x)) * float(np.mean(y)))
    if not (math.isfinite(ratio) and math.isfinite(half)):
        return None, None
    return _finite(ratio - half), _finite(ratio + half)


def half_width(interval: Interval) -> float:
    """Half the interval's width, ``(hi - lo)/2``; ``inf`` when a side is ``None``."""
    low, high = interval
    if low is None or high is None:
        return math.inf
    return (high - low) / 2.0


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    """``P(B = j)`` for ``j = 0..n``, each from its logarithm."""
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    n = int(n)
    if p == 0.0 or p == 1.0:
        pmf = np.zeros(n + 1)
        pmf[0 if p == 0.0 else n] = 1.0
        return pmf
    j = np.arange(n + 1, dtype=np.float64)
    log_factorial = np.fromiter(map(math.lgamma, range(1, n + 2)), np.float64, n + 1)
    log_choose = log_factorial[n] - log_factorial - log_factorial[::-1]
    return np.exp(log_choose + j * math.log(p) + (n - j) * math.log1p(-p))


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")


def _z(level: float) -> float:
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
