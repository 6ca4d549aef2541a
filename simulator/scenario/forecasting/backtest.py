"""Backtesting a demand forecast: hold out the last periods, fit on the rest, score the bands.

From each of ``origins`` rolling origins (the last ``holdout`` periods held out first, then the
origin moved back by ``step`` periods each time), the forecast is made again from the history
before the origin as the full one was — the change of growth looked for, the prior combined, the
band widened — except that the form the full fit chose is kept (refitting one form, not every
candidate, keeps a backtest to about a second), and ``paths`` paths of the next ``holdout``
periods are drawn (:func:`~simulator.scenario.forecasting.model.simulate_ln_rates`). Scored over every held-out point
of every origin: the share inside the 50% and 90% central intervals (the coverage, which should
be near 50% and 90%), and the median absolute percentage error of the median forecast. Draws
come from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.scenario.forecasting.fit import MIN_POINTS, fit_periods, with_prior
from simulator.scenario.forecasting.model import simulate_ln_rates

DEFAULT_HOLDOUT = {"day": 28, "week": 8, "month": 3}


@dataclass
class Backtest:
    """Coverage and error of the forecast on the history's own held-out periods."""

    form: str
    holdout: int
    origins: list[pd.Timestamp]
    coverage50: float
    coverage90: float
    median_ape: float  # of the median forecast
    points: int
    by_horizon: list[tuple[int, float, float]] = field(default_factory=list)  # (periods ahead, cov50, cov90)


def backtest(series: pd.Series, period: str, period_s: float, form: str, holdout: int | None = None,
             origins: int = 5, step: int | None = None, paths: int = 400, seed: int = 0, detect_change: bool = True,
             prior: tuple[float, float] | None = None, widen: float = 1.0) -> Backtest:
    """Score ``form`` on ``series`` (the mean rate per period; module docstring)."""
    holdout = holdout or DEFAULT_HOLDOUT.get(period, 4)
    step = step or max(holdout // 2, 1)
    n = len(series)
    ends = [n - holdout - k * step for k in range(origins)]
    ends = [e for e in ends if e >= MIN_POINTS + holdout // 2]
    if not ends:
        raise ValueError(f"{n} {period}s are too few to hold out {holdout} and still fit on {MIN_POINTS}")
    rng = np.random.default_rng(seed)
    inside50, inside90, errors, ahead = [], [], [], []
    for end in sorted(ends):
        past, future = series.iloc[:end], np.log(series.iloc[end:end + holdout].to_numpy())
        origin = series.index[end]
        fit = fit_periods(past, period, period_s, origin, detect_change, form=form)
        if prior is not None:
            fit = dataclasses.replace(fit, **dict(zip(("trend", "trend_sd"), with_prior(
                fit.trend, fit.trend_sd, period_s, *prior), strict=True)))
        draws = simulate_ln_rates(fit, len(future), paths, rng, widen)
        q05, q25, q50, q75, q95 = np.percentile(draws, [5, 25, 50, 75, 95], axis=0)
        inside50.append((future >= q25) & (future <= q75))
        inside90.append((future >= q05) & (future <= q95))
        errors.append(np.abs(np.expm1(q50 - future)))
        ahead.append(np.arange(1, len(future) + 1))
    in50, in90, ahead_all = np.concatenate(inside50), np.concatenate(inside90), np.concatenate(ahead)
    horizons = sorted({1, max(holdout // 2, 1), holdout})
    by = [(h, float(in50[ahead_all == h].mean()), float(in90[ahead_all == h].mean())) for h in horizons
          if (ahead_all == h).any()]
    return Backtest(form=form, holdout=holdout, origins=[series.index[e] for e in sorted(ends)],
                    coverage50=float(in50.mean()), coverage90=float(in90.mean()),
                    median_ape=float(np.median(np.concatenate(errors))), points=int(in50.size), by_horizon=by)
