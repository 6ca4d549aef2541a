"""Inference demand: expected request rates over the horizon, and the noisy counts per step."""

from simulator.demand.rates import (
    expected_counts,
    expected_level_counts,
    expected_rate,
    sample_counts,
)

__all__ = ["expected_counts", "expected_level_counts", "expected_rate", "sample_counts"]
