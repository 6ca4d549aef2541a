"""From a history block to the demand fields a scenario runs on: the fit, your judgement, the block.

:func:`history_demand` reads the history (:mod:`simulator.scenario.history_read`), fits the
forecast (:mod:`simulator.scenario.forecasting.fit`), folds in what the user said, and returns the
``demand`` fields: ``base_rps`` and ``growth`` (the point forecast from the forecast's start: an
exponential for an undamped trend, monthly points for a damped one), ``seasonality`` (the fitted
hour-of-day shape and weekday cycle) and ``forecast`` (the model each path draws from).

Your judgement over the fit, keeping the history as the source:

* ``growth_prior: {rate_per_month: g0, sd: s0}`` is combined with the fit's trend by precision on
  the log scale: with the fit's monthly log growth ``ĝ`` and standard error ``ŝ``, and the prior's
  ``m0 = ln(1 + g0)``, ``v0 = (s0 / (1 + g0))²``, the forecast runs at
  ``(ĝ/ŝ² + m0/v0) / (1/ŝ² + 1/v0)`` with standard error ``(1/ŝ² + 1/v0)^(−1/2)``;
* ``widen: w`` multiplies every random term of a path (the errors and the trend's tilt), so the
  band's width in ln(rate) is ``w`` times the fit's;
* ``regime`` adds a change of growth ahead (:class:`~simulator.scenario.forecast_spec.ForecastRegime`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.scenario.forecast_spec import HistorySpec
from simulator.scenario.forecasting.backtest import backtest as run_backtest
from simulator.scenario.forecasting.fit import ForecastFit, fit_forecast, with_prior
from simulator.scenario.forecasting.model import damped_sum
from simulator.scenario.forecasting.summary import forecast_summary
from simulator.scenario.history_read import DateReading, History, load_history


@dataclass
class HistoryForecast:
    """A history read and fitted, with the user's judgement folded in."""

    history: History
    fit: ForecastFit
    spec: HistorySpec
    trend: float  # per period, after the prior
    trend_sd: float

    def ln_rate(self, when: pd.Timestamp) -> float:
        """The point forecast's deseasonalised ln rate at the instant ``when``: a period's forecast
        is its mean rate, the rate at its middle, so the instant ``u`` periods after the origin
        reads the forecast of "period" ``u + ½``."""
        h = (when - self.fit.origin).total_seconds() / self.fit.period_s + 0.5
        if self.fit.phi < 1.0:
            h = max(h, 0.0)
        return self.fit.level + float(damped_sum(self.fit.phi, np.array(h))) * self.trend

    @property
    def growth_per_month(self) -> float:
        return math.expm1(self.trend * self.fit.periods_per_month)

    def forecast(self) -> dict[str, Any]:
        """The ``forecast`` block (:class:`~simulator.scenario.forecast_spec.DemandForecast`)."""
        regime = self.spec.regime.model_dump() if self.spec.regime is not None else None
        return self.fit.spec(self.spec.widen, self.trend, self.trend_sd, regime).model_dump(exclude_none=True)

    def summary(self, backtest: bool = False, holdout: int | None = None) -> dict[str, Any]:
        """:func:`~simulator.scenario.forecasting.summary.forecast_summary` of this forecast, with the
        backtest of its form (:func:`~simulator.scenario.forecasting.backtest.backtest`) when asked."""
        checked, skipped = None, None
        if backtest:
            fit, spec = self.fit, self.spec
            prior = (spec.growth_prior.rate_per_month, spec.growth_prior.sd) if spec.growth_prior else None
            try:
                checked = run_backtest(fit.series, fit.period, fit.period_s, fit.label, holdout=holdout,
                                       detect_change=spec.change == "detect", prior=prior, widen=spec.widen)
            except ValueError as exc:  # too short a history to hold any of it out
                skipped = str(exc)
        summary = forecast_summary(self.fit, self.trend, self.trend_sd, self.spec.widen, checked)
        if skipped:
            summary["backtest_skipped"] = skipped
        return summary

    def demand_fields(self, start: pd.Timestamp, end: pd.Timestamp) -> dict[str, Any]:
        """``base_rps``, ``growth``, ``seasonality`` and ``forecast`` for a forecast from ``start``."""
        base = math.exp(self.ln_rate(start))
        if self.fit.phi >= 1.0:
            growth: dict[str, Any] = {"kind": "exponential", "rate_per_month": self.growth_per_month}
            fields: dict[str, Any] = {"base_rps": base, "growth": growth}
        else:  # a damped trend: the point path month by month
            knots = pd.date_range(start, end + pd.DateOffset(months=1), freq=pd.DateOffset(months=1))
            points = [{"at": k.isoformat(), "rps": math.exp(self.ln_rate(k))} for k in knots]
            fields = {"growth": {"kind": "piecewise", "points": points, "extrapolate": "hold"}}
        season = {}
        if self.fit.hourly is not None:
            season["hourly"] = self.fit.hourly
        if self.fit.weekly is not None:
            season["weekly"] = self.fit.weekly
        if season:
            fields["seasonality"] = season
        fields["forecast"] = self.forecast()
        return fields


def history_forecast(spec: HistorySpec, base_dir: Path) -> HistoryForecast:
    """Read and fit ``spec``'s history; ValueError naming what is wrong with it."""
    history = load_history(base_dir / spec.file, DateReading(spec.dayfirst, spec.date_format))
    fit = fit_forecast(history.rps, history.starts, history.cadence, history.spacing,
                       detect_change=spec.change == "detect")
    trend, trend_sd = fit.trend, fit.trend_sd
    if spec.growth_prior is not None:
        trend, trend_sd = with_prior(trend, trend_sd, fit.period_s, spec.growth_prior.rate_per_month,
                                     spec.growth_prior.sd)
    return HistoryForecast(history, fit, spec, trend, trend_sd)
