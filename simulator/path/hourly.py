"""Values given per UTC hour of the day (24) or of the week from Monday 00:00 (168), per step.

An autoscale ``schedule`` is given this way; a step takes the highest value of the hours it
overlaps, so a step longer than an hour, or one not starting on the hour, holds enough for
all of them.
"""

from __future__ import annotations

import numpy as np

from simulator.scenario.horizon import Horizon


def hourly_per_step(schedule: list[int], horizon: Horizon) -> np.ndarray:
    """GPUs a daily (24) or weekly (168, from Monday 00:00) schedule by UTC hour holds in each
    step: the most of the hours the step overlaps."""
    times = horizon.times()
    seconds = (times.day_of_week * 86_400 + times.hour * 3600 + times.minute * 60 + times.second).to_numpy()
    first = seconds // 3600
    last = np.ceil((seconds + horizon.step_s) / 3600.0 - 1e-9).astype(np.int64) - 1
    values = np.asarray(schedule, dtype=np.int64)
    out = values[first % len(values)]
    for extra in range(1, min(int((last - first).max(initial=0)), len(values) - 1) + 1):
        overlaps = last - first >= extra
        out = np.where(overlaps, np.maximum(out, values[(first + extra) % len(values)]), out)
    return out
