"""One change of growth in a history: when, how sure, and the growth before and after.

The model is the log rate as a broken line, ``ln r_t = a + b·t + c·(t − τ)⁺ + season + ε_t`` with
``ε`` independent ``N(0, σ²)`` and weekday terms when the history is daily. For each candidate
change ``τ`` (every period, keeping 15% of the history and at least three periods each side) the
least-squares fit gives ``RSS(τ)``; with flat priors on ``τ`` and the coefficients and Jeffreys'
on ``σ``, the posterior of the change date is

    p(τ | y) ∝ |XτᵀXτ|^(−1/2) · RSS(τ)^(−(n − k)/2),

(``k`` coefficients), whose 5% and 95% quantiles give the 90% interval for the date. Whether
there is a change at all is the posterior probability of the broken line against a straight one
by their BIC (two more parameters, ``c`` and ``τ``), averaged over the candidate dates; a change
is reported when that probability is 0.9 or more. A level that wanders (a random walk) bends a
straight line too, and against the straight line alone it passed for a change in 38 of 40
synthetic random walks; so the broken line must also beat, by the same rule, the forecast model
fitted to the whole history without a change (ETS, whose level may wander):
:func:`~simulator.scenario.forecasting.fit.fit_forecast` passes its BIC. The growth after the change is the broken
line's (continuous at the change, so it uses the whole history), averaged over the posterior of
the date, with a standard deviation that holds each date's standard error and the spread of the
slopes between dates (the law of total variance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

TRIM = 0.15
MIN_SIDE = 3
REPORT_PROBABILITY = 0.9


@dataclass(frozen=True)
class GrowthChange:
    """The change found (or not) in a history's growth."""

    probability: float  # of a change, against none
    at: pd.Timestamp  # the posterior's median date
    interval: tuple[pd.Timestamp, pd.Timestamp]  # 90%
    index: int  # the median date's position in the series
    slope_before: float  # ln growth per period, at the median date
    slope_after: float
    after_mean: float  # the growth after the change, averaged over the dates' posterior
    after_sd: float  # its standard deviation: each date's standard error and the spread between dates

    @property
    def found(self) -> bool:
        return self.probability >= REPORT_PROBABILITY


def find_change(series: pd.Series, season: int = 0, rival_bic: float | None = None) -> GrowthChange | None:
    """The change of growth in ``series`` (mean rate per period; module docstring), or None when
    the history is too short to look for one. ``rival_bic``: the BIC (``−2 log L + p ln n`` on the
    same ln rates) of a model without a change whose level may wander; the change's probability is
    then the smaller of its probability against the straight line and against that model."""
    y = np.log(series.to_numpy())
    n = len(y)
    trim = max(MIN_SIDE, int(math.ceil(TRIM * n)))
    candidates = np.arange(trim, n - trim)
    if len(candidates) < 2:
        return None
    t = np.arange(n, dtype=np.float64)
    base = [np.ones(n), t]
    if season:
        weekday = series.index.day_of_week.to_numpy()
        base += [(weekday == d).astype(np.float64) for d in range(1, season)]
    straight = np.column_stack(base)
    k = straight.shape[1] + 1
    log_post, bic, slopes, after_var = [], [], [], []
    pick = np.zeros(k)
    pick[1] = pick[-1] = 1.0  # b + c: the slope after the change
    for tau in candidates:
        design = np.column_stack([straight, np.maximum(t - tau, 0.0)])
        coef, rss = _fit(design, y)
        gram = design.T @ design
        _, logdet = np.linalg.slogdet(gram)
        log_post.append(-0.5 * logdet - 0.5 * (n - k) * math.log(rss))
        bic.append(_bic(rss, n, k + 1))
        slopes.append((coef[1], coef[1] + coef[-1]))
        after_var.append(rss / (n - k) * float(pick @ np.linalg.solve(gram, pick)))
    log_post = np.asarray(log_post)
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    cumulative = np.cumsum(weights)
    at_position = int(np.searchsorted(cumulative, 0.5))
    at = int(candidates[at_position])
    low = int(candidates[np.searchsorted(cumulative, 0.05)])
    high = int(candidates[min(np.searchsorted(cumulative, 0.95), len(candidates) - 1)])
    bic = np.asarray(bic)
    probability = _against(bic, _bic(_rss(straight, y), n, k - 1))
    if rival_bic is not None:
        probability = min(probability, _against(bic, rival_bic))
    afters = np.array([a for _, a in slopes])
    after_mean = float(weights @ afters)
    after_sd = math.sqrt(float(weights @ (np.asarray(after_var) + (afters - after_mean) ** 2)))
    index = series.index
    return GrowthChange(probability=probability, at=index[at], interval=(index[low], index[high]), index=at,
                        slope_before=float(slopes[at_position][0]), slope_after=float(slopes[at_position][1]),
                        after_mean=after_mean, after_sd=after_sd)


def _bic(rss: float, n: int, parameters: int) -> float:
    """``−2 log L + p ln n`` of a Gaussian least-squares fit (σ² = RSS / n counted as a parameter)."""
    return n * (math.log(2 * math.pi) + 1.0 + math.log(rss / n)) + (parameters + 1) * math.log(n)


def _against(broken: np.ndarray, other: float) -> float:
    """The broken line's probability (``e^(−BIC/2)`` averaged over its dates) against a model of BIC ``other``."""
    top = max(-0.5 * other, float((-0.5 * broken).max()))
    weight = float(np.mean(np.exp(-0.5 * broken - top)))
    return weight / (weight + math.exp(-0.5 * other - top))


def _fit(design: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    return coef, float(residual @ residual)


def _rss(design: np.ndarray, y: np.ndarray) -> float:
    return _fit(design, y)[1]
