"""A path's drawn demand: the expected counts times the path's demand factor, counted with noise.

The factor is the model's day-to-day volatility (:mod:`simulator.demand.volatility`) or its
fitted forecast's path (:mod:`simulator.demand.forecast_paths`), each from its own stream; the
counting noise comes from the demand stream. Used when a path starts and when a launch that
waited on a training job begins serving.
"""

from __future__ import annotations

import numpy as np

from simulator.demand import forecast_factor, sample_counts, volatility_factor
from simulator.path.compiled import CompiledScenario
from simulator.path.streams import STREAM_DEMAND, STREAM_FORECAST, STREAM_VOLATILITY, path_generator


def draw_demand(plan: CompiledScenario, seed: int, path: int) -> np.ndarray:
    """Requests per step for every model, from the path's demand streams.

    A model with ``volatility`` or a ``forecast`` has its expected counts scaled by its factor
    (its own stream) before the counting noise (the demand stream) is drawn around them.
    """
    demand = np.empty_like(plan.expected_demand)
    for m, noise in enumerate(plan.noise):
        expected = plan.expected_demand[:, m] * demand_factor(plan, m, seed, path)
        rng = path_generator(seed, path, STREAM_DEMAND, plan.model_keys[m])
        demand[:, m] = sample_counts(expected, noise, rng)
    return demand


def demand_factor(plan: CompiledScenario, model: int, seed: int, path: int) -> np.ndarray | float:
    """The model's demand factor per step on this path (1 without volatility or a forecast)."""
    return path_demand_factor(plan, model, lambda stream, key: path_generator(seed, path, stream, key))


def path_demand_factor(plan: CompiledScenario, model: int, generator) -> np.ndarray | float:
    """The day-to-day volatility factor, or the fitted forecast's path factor, of ``model``, each
    from its own stream (``generator(stream, key)``)."""
    demand = plan.demands[model]
    if demand.volatility is not None:
        return volatility_factor(demand.volatility, plan.horizon,
                                 generator(STREAM_VOLATILITY, plan.model_keys[model]))
    if demand.forecast is not None:
        return forecast_factor(demand.forecast, plan.horizon, generator(STREAM_FORECAST, plan.model_keys[model]))
    return 1.0
