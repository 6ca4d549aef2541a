"""The simulated period: a start date, a length (or an end date) and a time step.

Inside the engine time is float seconds since ``start``; step ``k`` covers
``[k * step, (k + 1) * step)`` and is labelled by its start time in every output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from simulator.scenario.types import Duration, Frozen, Instant, When
from simulator.units import format_duration

#: Most steps in a horizon: 10 years at 1-minute steps is 5.3 million.
MAX_STEPS = 10_000_000


class Horizon(Frozen):
    """Start, length and step of a simulation."""

    start: Instant = Field(description="First instant simulated (ISO date, UTC)")
    duration: Duration | None = Field(default=None, description="Length, e.g. '18mo' or '365d'")
    end: Instant | None = Field(default=None, description="Alternative to duration: last instant")
    step: Duration = Field(default=3600.0, description="Time step of the outputs, e.g. '1h'")

    @model_validator(mode="after")
    def _check(self) -> Horizon:
        if (self.duration is None) == (self.end is None):
            raise ValueError("give exactly one of 'duration' and 'end'")
        if self.step <= 0:
            raise ValueError(f"step must be positive, got {format_duration(self.step)}")
        length = self.length_s
        if length <= 0:
            if self.end is not None:
                raise ValueError(f"end {self.end.date()} is not after start {self.start.date()}")
            raise ValueError(f"duration must be positive, got {format_duration(length)}")
        steps = length / self.step
        if steps > MAX_STEPS:
            raise ValueError(
                f"{steps:,.0f} steps of {format_duration(self.step)} are more than the {MAX_STEPS:,} "
                "Fleetcast holds per path; use a coarser step"
            )
        if abs(steps - round(steps)) > 1e-6 * max(1.0, steps):
            raise ValueError(
                f"length {format_duration(length)} is not a whole number of "
                f"{format_duration(self.step)} steps ({steps:.3f})"
            )
        return self

    @property
    def length_s(self) -> float:
        """Length of the horizon in seconds."""
        if self.duration is not None:
            return float(self.duration)
        assert self.end is not None
        return (self.end - self.start).total_seconds()

    @property
    def step_s(self) -> float:
        return float(self.step)

    @property
    def n_steps(self) -> int:
        return int(round(self.length_s / self.step))

    def offset_of(self, when: float | pd.Timestamp) -> float:
        """Seconds from the start to ``when`` (an offset in seconds, or a date)."""
        if isinstance(when, pd.Timestamp):
            return (when - self.start).total_seconds()
        return float(when)

    def times(self) -> pd.DatetimeIndex:
        """Start time of every step."""
        offsets = np.arange(self.n_steps, dtype=np.int64) * int(round(self.step * 1e9))
        return pd.DatetimeIndex(self.start.as_unit("ns") + pd.to_timedelta(offsets, unit="ns"))


__all__ = ["Horizon", "When"]
