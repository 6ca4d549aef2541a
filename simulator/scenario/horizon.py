"""The simulated period: a start date, a length (or an end date) and a time step.

A length in whole months or years is calendar time: ``12mo`` from 2027-02-01 ends on
2028-02-01, 365 days later (a fixed 12 × 30.4375 days would add 6 hours). With a step of
whole months (``step: 1mo``, a fixed 30.4375 days) the duration stays a fixed length too, so
it remains a whole number of steps.

Inside the engine time is float seconds since ``start``; step ``k`` covers
``[k * step, (k + 1) * step)`` and is labelled by its start time in every output.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from simulator.scenario.types import Duration, Frozen, Instant, Term, When
from simulator.units import SECONDS_PER_MONTH, format_duration

#: Most steps in a horizon: 10 years at 1-minute steps is 5.3 million.
MAX_STEPS = 10_000_000
#: Times are nanoseconds in pandas (to 2262-04-11): a horizon ends before this.
_LAST_END = pd.Timestamp("2262-01-01")


class Horizon(Frozen):
    """Start, length and step of a simulation."""

    start: Instant = Field(description="First instant simulated (ISO date, UTC)")
    duration: Term | None = Field(
        default=None, description="Length, e.g. '18mo' (calendar months) or '365d'")
    end: Instant | None = Field(default=None, description="Alternative to duration: last instant")
    step: Duration = Field(default=3600.0, description="Time step of the outputs, e.g. '1h'")

    @model_validator(mode="after")
    def _check(self) -> Horizon:
        if (self.duration is None) == (self.end is None):
            raise ValueError("give exactly one of 'duration' and 'end'")
        if self.step <= 0:
            raise ValueError(f"step must be positive, got {format_duration(self.step)}")
        try:
            length = self.length_s
        except (OverflowError, ValueError):  # past pandas' last date, 2262
            length = math.inf
        if length > (_LAST_END - self.start).total_seconds():
            raise ValueError(f"the horizon must end before {_LAST_END.date()} (times are held in nanoseconds)")
        if length <= 0:
            if self.end is not None:
                raise ValueError(f"end {self.end.date()} is not after start {self.start.date()}")
            raise ValueError(f"duration must be positive, got {format_duration(length)}")
        steps = length / self.step
        if round(steps) < 1:
            raise ValueError(f"the step ({format_duration(self.step)}) is longer than the horizon "
                             f"({format_duration(length)})")
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
    def end_time(self) -> pd.Timestamp:
        """The instant the horizon ends: ``end``, or ``duration`` after the start (calendar
        months when the duration is written in months or years)."""
        if self.end is not None:
            return self.end
        assert self.duration is not None
        if self.step % SECONDS_PER_MONTH == 0:  # steps of fixed 30.4375-day months: fixed months too
            return self.start + pd.Timedelta(seconds=self.duration.seconds)
        return self.duration.end_from(self.start)

    @property
    def length_s(self) -> float:
        """Length of the horizon in seconds."""
        return (self.end_time - self.start).total_seconds()

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
        """Start time of every step (an index is immutable: one is made per horizon and shared)."""
        return _step_times(self.start, int(round(self.step * 1e9)), self.n_steps)


@lru_cache(maxsize=32)
def _step_times(start: pd.Timestamp, step_ns: int, n_steps: int) -> pd.DatetimeIndex:
    offsets = np.arange(n_steps, dtype=np.int64) * step_ns
    return pd.DatetimeIndex(start.as_unit("ns") + pd.to_timedelta(offsets, unit="ns"))


__all__ = ["Horizon", "When"]
