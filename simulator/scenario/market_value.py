"""What a GPU would fetch on the secondary market, by its age: separate from its book value.

A curve per GPU type (``market_value: {H100: {...}}``) gives the value as a share of the
pool's purchase price: ``decay_per_year`` compounds (``0.28``: worth 72% after a year, 52%
after two), or ``points`` of ``(age, share)`` are read linearly between points and flat past
the last. Age counts from delivery (the starting GPUs: from ``in_service_since``). Either
figure may be uncertain ({dist: …}): drawn per path like any input.

For scale: used H100s traded at $15,000–28,000 and used A100s at $4,000–18,000 by condition
and configuration in 2026 (computeforecast.com, "The secondary market for AI hardware"),
against new prices of about $25,000 and $17,000–18,500 (``reference_hardware.md``).
Without a curve a GPU is
worth its book value, and a sale books no gain or loss.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field, model_validator

from simulator.scenario.types import Duration, Frozen
from simulator.units import SECONDS_PER_YEAR


class AgePoint(Frozen):
    age: Duration = Field(description="Age since delivery (a duration, e.g. 730d)")
    share: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] = Field(
        description="Resale value at that age, as a share of the pool's price (1 = new)")


class MarketValue(Frozen):
    """A GPU type's resale value as a share of its price, by age."""

    decay_per_year: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] | None = Field(
        default=None, description="Share (0–1) of its value a GPU loses each year (compounded)")
    points: list[AgePoint] = Field(
        default_factory=list, description="Resale value by age instead: [{age, share}], linear between points, flat past the last")

    @model_validator(mode="after")
    def _one_form(self) -> MarketValue:
        if (self.decay_per_year is None) == (not self.points):
            raise ValueError("give decay_per_year or points (age, share), one of the two")
        ages = [point.age for point in self.points]
        if ages != sorted(ages) or len(set(ages)) != len(ages):
            raise ValueError("points must be in increasing age order")
        return self

    def share(self, age_s: np.ndarray | float) -> np.ndarray:
        """Value / purchase price at each age in seconds (negative ages: new)."""
        age = np.maximum(np.asarray(age_s, dtype=np.float64), 0.0)
        if self.decay_per_year is not None:
            return (1.0 - self.decay_per_year) ** (age / SECONDS_PER_YEAR)
        return np.interp(age, [p.age for p in self.points], [p.share for p in self.points])
