"""What a reader needs to trust a fitted forecast, as numbers and as lines of text.

:func:`forecast_summary` gathers the model chosen and its rivals, the growth with its interval,
the change of growth found (if any), the band of the forecast a month, a quarter and a year
ahead (the 5th and 95th percentiles of 2,000 drawn paths' ln rate, as shares of the median) and
the backtest's coverage; :func:`summary_lines` says them, for ``fleetcast fit-demand`` and the
report.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from simulator.scenario.forecasting.backtest import Backtest
from simulator.scenario.forecasting.fit import ForecastFit
from simulator.scenario.forecasting.model import simulate_ln_rates
from simulator.units import SECONDS_PER_MONTH

BAND_MONTHS = (1, 3, 12)
BAND_PATHS = 2000


def forecast_summary(fit: ForecastFit, trend: float, trend_sd: float, widen: float,
                     backtest: Backtest | None = None, seed: int = 0) -> dict[str, Any]:
    """Numbers of :func:`summary_lines` (``trend``/``trend_sd``: per period, after a prior)."""
    per_month = SECONDS_PER_MONTH / fit.period_s
    periods = int(math.ceil(max(BAND_MONTHS) * per_month))
    shown = dataclasses.replace(fit, trend=trend, trend_sd=trend_sd)
    draws = simulate_ln_rates(shown, periods, BAND_PATHS, np.random.default_rng(seed), widen)
    bands = {}
    for months in BAND_MONTHS:
        column = draws[:, min(int(round(months * per_month)), periods) - 1]
        low, mid, high = np.percentile(column, [5, 50, 95])
        bands[months] = (math.expm1(low - mid), math.expm1(high - mid))
    rivals = [(label, aicc - fit.candidates[0][1]) for label, aicc in fit.candidates[1:]]
    out: dict[str, Any] = {
        "model": fit.description, "points": fit.points, "rivals": rivals,
        "growth_per_month": shown.growth_per_month, "growth_interval": shown.growth_interval,
        "phi": fit.phi, "sigma": fit.sigma, "weekly": fit.weekly, "hourly": fit.hourly, "bands": bands,
        "widen": widen, "notes": list(fit.notes)}
    if fit.change is not None:
        change = fit.change
        out["change"] = {"found": change.found, "probability": change.probability, "at": change.at,
                         "interval": change.interval,
                         "before": math.expm1(change.slope_before * per_month),
                         "after": math.expm1(change.after_mean * per_month)}
    if backtest is not None:
        out["backtest"] = backtest
    return out


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as lines of text."""
    rivals = ", ".join(f"{label} +{delta:.1f}" for label, delta in summary["rivals"][:3])
    lines = [f"forecast: {summary['model']}, chosen by AICc (others: {rivals or 'none'})"]
    low, high = summary["growth_interval"]
    damped = f", damped ×{summary['phi']:.4f} a period" if summary["phi"] < 1 else ""
    lines.append(f"growth now {summary['growth_per_month']:.2%} a month (90% interval {low:.2%} to {high:.2%})"
                 f"{damped}; noise {summary['sigma']:.3f} in ln(rate) a period")
    change = summary.get("change")
    if change is not None and change["found"]:
        lines.append(f"growth changed around {change['at']:%Y-%m-%d} (90% interval {change['interval'][0]:%Y-%m-%d} to "
                     f"{change['interval'][1]:%Y-%m-%d}; probability {change['probability']:.0%}): "
                     f"{change['before']:.2%} a month before, {change['after']:.2%} after")
    elif change is not None:
        lines.append(f"no change of growth found (probability of one {change['probability']:.0%})")
    if summary["weekly"]:
        days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        lines.append("weekday cycle: " + " ".join(f"{d} {v:.2f}" for d, v in zip(days, summary["weekly"], strict=True)))
    bands = "; ".join(f"{m} month{'s' if m > 1 else ''} {lo:+.0%} / {hi:+.0%}" for m, (lo, hi) in summary["bands"].items())
    widen = f" (widened ×{summary['widen']:g})" if summary["widen"] != 1 else ""
    lines.append(f"90% band around the median{widen}: {bands}")
    backtest = summary.get("backtest")
    if summary.get("backtest_skipped"):
        lines.append(f"no backtest: {summary['backtest_skipped']}")
    if backtest is not None:
        lines.append(f"backtest ({len(backtest.origins)} origins, {backtest.holdout} periods held out, {backtest.points} "
                     f"points): 50% band covers {backtest.coverage50:.0%}, 90% band {backtest.coverage90:.0%}; "
                     f"median error of the median {backtest.median_ape:.1%}")
    return lines
