"""The fitted demand forecast's paths: departures from the point forecast, drawn per path.

The scenario's expected demand follows the forecast's point path (``base_rps × growth ×
seasonality``, written by the fit). A path departs from it by what the model's errors do
(:class:`~simulator.scenario.forecast_spec.DemandForecast`): with ``e_h`` the path's
deseasonalised ln rate minus the point forecast's in period ``h`` after the origin,

    e_h = Λ_{h−1} + φ B_{h−1} + ε_h + δ·(φ + … + φ^h) + S_h + R_h,
    Λ_h = Λ_{h−1} + φ B_{h−1} + α ε_h,   B_h = φ B_{h−1} + β ε_h,   S_h = S_{h−m} + γ ε_h,

from Λ_0 = B_0 = S = 0 (the level, trend and season's departures), ``ε_h ~ N(0, (widen σ)²)``,
``δ ~ N(0, (widen · trend_sd)²)`` once per path (the trend's estimation error) and ``R_h`` a
change of growth: with ``D(h) = φ + … + φ^h``, ``c`` the regime's date in periods and ``g`` the
path's own trend (``trend + δ``), ``R_h = g·D(c) + (ln(1 + rate) / periods per month)·(h − c) −
g·D(h)`` after ``c`` on a share ``probability`` of the paths, 0 otherwise
(:mod:`simulator.demand.forecast_paths` turns them into a factor per step). All draws come from the generator passed in, in a fixed order: ``δ``, the regime's
uniform (drawn whether or not there is a regime), then one ``ε`` per period.
"""

from __future__ import annotations

import math

import numpy as np

from simulator.scenario.forecast_spec import DemandForecast
from simulator.units import SECONDS_PER_MONTH


def damped_sum(phi: float, h: np.ndarray) -> np.ndarray:
    """``φ + φ² + … + φ^h`` (``h`` for φ = 1)."""
    if phi >= 1.0:
        return np.asarray(h, dtype=np.float64)
    return phi * (1.0 - phi ** np.asarray(h, dtype=np.float64)) / (1.0 - phi)


def log_departures(forecast: DemandForecast, periods: int, rng: np.random.Generator) -> np.ndarray:
    """``e_1 … e_periods`` of one path (module docstring)."""
    widen = forecast.widen
    delta = rng.normal(0.0, widen * forecast.trend_sd) if forecast.trend_sd > 0 else 0.0
    draw = rng.random()  # drawn with or without a regime: adding one moves no other draw
    changes = forecast.regime is not None and draw < forecast.regime.probability
    eps = rng.normal(0.0, widen * forecast.sigma, periods) if forecast.sigma > 0 else np.zeros(periods)
    alpha, beta, gamma, phi = forecast.alpha, forecast.beta, forecast.gamma, forecast.phi
    m = forecast.season_length
    level = trend = 0.0
    season = np.zeros(m) if m else None
    out = np.empty(periods)
    for k in range(periods):
        seasonal = 0.0
        if season is not None:
            seasonal = season[k % m]
            season[k % m] += gamma * eps[k]
        out[k] = level + phi * trend + eps[k] + seasonal
        level = level + phi * trend + alpha * eps[k]
        trend = phi * trend + beta * eps[k]
    h = np.arange(1, periods + 1, dtype=np.float64)
    out += delta * damped_sum(phi, h)
    if changes:
        per_month = SECONDS_PER_MONTH / forecast.period_s
        at = forecast.regime.after_months * per_month  # the change, in periods after the origin
        slope = math.log1p(forecast.regime.rate_per_month) / per_month
        own = forecast.trend + delta  # the path's trend per period before the change
        after = h > at
        out[after] += own * float(damped_sum(phi, np.array(at))) + slope * (h[after] - at) - own * damped_sum(
            phi, h[after])
    return out


def simulate_ln_rates(fit, periods: int, paths: int, rng: np.random.Generator, widen: float = 1.0) -> np.ndarray:
    """``paths × periods`` draws of ln(mean rate) per period after a fit's origin, season included
    (a :class:`~simulator.scenario.forecasting.fit.ForecastFit`): what a backtest scores."""
    spec = fit.spec(widen)
    h = np.arange(1, periods + 1)
    point = fit.point(h)
    if fit.seasonal:
        point = point + np.asarray(fit.seasonal)[(h - 1) % len(fit.seasonal)]
    return np.array([point + log_departures(spec, periods, rng) for _ in range(paths)])
