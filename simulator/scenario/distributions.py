"""Distributions of durations (lead-time slips, repair times), with their theory.

Each knows its mean and its ``quantile(q)`` (the planner times orders by a slip's
quantile), so tests can compare samples against it, and each has a deterministic
special case (``fixed``) so that a test can compute the answer by hand. Values are written
in readable units (``{dist: exponential, mean: 4h}``) and held in seconds.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from simulator.scenario.types import Duration, Frozen, PositiveDuration

_Z90 = 1.2815515655446004  # standard normal quantile at 0.9


class FixedDuration(Frozen):
    """Always ``value``."""

    dist: Literal["fixed"] = Field(default="fixed", description="fixed: always the same duration")
    value: Duration = Field(description="The duration (e.g. 4h)")

    @property
    def mean(self) -> float:
        return self.value

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray | float:
        return self.value if size is None else np.full(size, self.value)

    def quantile(self, q: float) -> float:
        return self.value


class ExponentialDuration(Frozen):
    """Memoryless, with the given ``mean``."""

    dist: Literal["exponential"] = Field(
        default="exponential", description="exponential: memoryless, with the given mean")
    mean: PositiveDuration = Field(description="Mean duration (e.g. 12h)")

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray | float:
        return rng.exponential(self.mean, size)

    def quantile(self, q: float) -> float:
        return -self.mean * math.log1p(-q) if q < 1 else math.inf


class UniformDuration(Frozen):
    """Uniform between ``low`` and ``high``."""

    dist: Literal["uniform"] = Field(
        default="uniform", description="uniform: every duration between low and high equally likely")
    low: Duration = Field(description="Shortest duration (e.g. 2w)")
    high: Duration = Field(description="Longest duration (e.g. 8w)")

    @model_validator(mode="after")
    def _ordered(self) -> UniformDuration:
        if self.high < self.low:
            raise ValueError("'high' must be >= 'low'")
        return self

    @property
    def mean(self) -> float:
        return 0.5 * (self.low + self.high)

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray | float:
        return rng.uniform(self.low, self.high, size)

    def quantile(self, q: float) -> float:
        return self.low + q * (self.high - self.low)


class LognormalDuration(Frozen):
    """Lognormal given by its ``median`` and 90th percentile (right-skewed, like repairs and slips)."""

    dist: Literal["lognormal"] = Field(
        default="lognormal", description="lognormal: given by its median and 90th percentile")
    median: Duration = Field(description="Median duration (e.g. 6w)")
    p90: Duration = Field(description="90th-percentile duration, above the median (e.g. 13w)")

    @model_validator(mode="after")
    def _ordered(self) -> LognormalDuration:
        if not (self.median > 0 and self.p90 > self.median):
            raise ValueError("need 0 < median < p90")
        return self

    @property
    def sigma(self) -> float:
        return math.log(self.p90 / self.median) / _Z90

    @property
    def mean(self) -> float:
        return self.median * math.exp(0.5 * self.sigma**2)

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray | float:
        return rng.lognormal(math.log(self.median), self.sigma, size)

    def quantile(self, q: float) -> float:
        if q <= 0 or q >= 1:
            return 0.0 if q <= 0 else math.inf
        return self.median * math.exp(self.sigma * NormalDist().inv_cdf(q))


DurationDistribution = Annotated[
    FixedDuration | ExponentialDuration | UniformDuration | LognormalDuration,
    Field(discriminator="dist"),
]


def duration_distribution(value: object) -> object:
    """Shorthand: a plain duration (``"4h"``) means ``{dist: fixed, value: 4h}``."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {"dist": "fixed", "value": value}
    return value
