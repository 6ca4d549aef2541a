"""Inference demand: expected request rates over the horizon, day-to-day volatility, and the noisy
counts per step."""

from simulator.demand.rates import (
    expected_counts,
    expected_level_counts,
    expected_rate,
    sample_counts,
)
from simulator.demand.volatility import volatility_factor

__all__ = ["expected_counts", "expected_level_counts", "expected_rate", "sample_counts", "volatility_factor"]
