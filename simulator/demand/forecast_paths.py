"""One Monte Carlo path of a fitted demand forecast, as a factor on the scenario's expected demand.

The scenario's expected demand follows the forecast's point path (``base_rps × growth ×
seasonality``, written by the fit); a path departs from it by ``e_h`` in ln(rate) in period ``h``
after the forecast's origin (:func:`simulator.scenario.forecasting.model.log_departures`). The
factor of a step is the mean of ``exp(e_h)`` over the periods it overlaps; before the origin it
is 1 (the history is known).
"""

from __future__ import annotations

import math

import numpy as np

from simulator.scenario.forecast_spec import DemandForecast
from simulator.scenario.forecasting.model import log_departures
from simulator.scenario.horizon import Horizon


def forecast_factor(forecast: DemandForecast, horizon: Horizon, rng: np.random.Generator) -> np.ndarray:
    """The path's factor per step of the horizon (module docstring)."""
    import pandas as pd

    origin = (pd.Timestamp(forecast.origin) - horizon.start).total_seconds()
    period = forecast.period_s
    lo = np.arange(horizon.n_steps, dtype=np.float64) * horizon.step_s - origin  # seconds after the origin
    hi = lo + horizon.step_s
    end = float(hi[-1]) if len(hi) else 0.0
    periods = max(int(math.ceil(end / period)), 0)
    if periods == 0:
        return np.ones(horizon.n_steps)
    f = np.concatenate(([1.0], np.exp(log_departures(forecast, periods, rng))))  # index 0: before the origin
    # Period p >= 1 covers [(p − 1)·period, p·period) after the origin; before the origin, 1.
    cumulative = np.concatenate(([0.0], np.cumsum(f[1:] * period)))  # ∫ from the origin to each edge

    def integral(x: np.ndarray) -> np.ndarray:
        """∫ factor from the origin to x (negative x: the time before the origin, factor 1)."""
        x = np.minimum(x, periods * period)
        inside = np.clip(np.floor(x / period).astype(np.int64), 0, periods - 1)
        within = cumulative[inside] + f[1 + inside] * (x - inside * period)
        return np.where(x < 0, x, within)

    return (integral(hi) - integral(lo)) / horizon.step_s
