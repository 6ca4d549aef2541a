"""Inference demand: expected request rates over the horizon, day-to-day volatility, a fitted
forecast's paths, and the noisy counts per step."""

from simulator.demand.forecast_paths import forecast_factor
from simulator.demand.rates import (
    expected_counts,
    expected_level_counts,
    expected_rate,
    sample_counts,
)
from simulator.demand.volatility import volatility_factor

__all__ = ["expected_counts", "expected_level_counts", "expected_rate", "forecast_factor", "sample_counts",
           "volatility_factor"]
