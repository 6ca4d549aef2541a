"""Jobs that cap their preemptions per day: the state they keep and what it protects.

A job with ``max_preemptions_per_day: n`` accepts ``n`` preemptions by inference per calendar
day (UTC). Once preempted ``n`` times on a day, whenever it runs for the rest of that day it
is *protected*: inference cannot take its GPUs and it is never chosen to be preempted. The
GPUs protected jobs hold in a ``preempt`` pool are kept from inference as a partition keeps
them (the pool's ``training_floor``), so the step kernel, the placements that decide
preemptions and the autoscalers all see them as training's. The protection ends at the
first step starting at or after midnight.

Shared by the compiled loop (:mod:`simulator.path.training.loop`) and, in plain Python, by
the SimPy reference (:mod:`simulator.path.training.scheduler`): :func:`calendar_day` is the
one definition of a day.
"""

from __future__ import annotations

import math

from numba import njit

from simulator.path.jit_options import NO_REFCOUNT
from simulator.path.training.loop_layout import C_DAY_OFFSET, I_CAP, I_DAY, I_TODAY

SECONDS_PER_DAY = 86_400.0


@njit(cache=True, inline="always")
def calendar_day(now, day_offset_s):
    """The UTC calendar day of ``now`` (seconds from the horizon's start), counted from the
    horizon's first day."""
    return int(math.floor((now + day_offset_s) / SECONDS_PER_DAY + 1e-12))


@njit(cache=True, inline="always")
def _protected(j, day, ints):
    return ints[j, I_CAP] >= 0 and ints[j, I_DAY] == day and ints[j, I_TODAY] >= ints[j, I_CAP]


@njit(cache=True, **NO_REFCOUNT)
def is_protected(j, now, st):
    """Whether job ``j`` has used up today's preemptions."""
    return _protected(j, calendar_day(now, st[13][C_DAY_OFFSET]), st[4])


@njit(cache=True, **NO_REFCOUNT)
def count_preemption(j, now, st):
    """Job ``j`` is preempted now: one more preemption today."""
    ints = st[4]
    day = calendar_day(now, st[13][C_DAY_OFFSET])
    if ints[j, I_DAY] != day:
        ints[j, I_DAY] = day
        ints[j, I_TODAY] = 0
    ints[j, I_TODAY] += 1


@njit(cache=True, **NO_REFCOUNT)
def protect(p, now, st, fleet):
    """Keep from inference, in ``preempt`` pool ``p``, the GPUs its protected running jobs hold."""
    gpus, ints, running, lengths = st[1], st[4], st[8], st[9]
    day = calendar_day(now, st[13][C_DAY_OFFSET])
    kept = 0
    for r in range(lengths[p, 1]):
        j = running[p, r]
        if _protected(j, day, ints):
            kept += gpus[j]
    fleet[4][p] = kept


@njit(cache=True, **NO_REFCOUNT)
def next_midnight_step(k, step_s, st):
    """The first step that starts at or after the midnight following step ``k``'s start."""
    offset = st[13][C_DAY_OFFSET]
    midnight = (calendar_day(k * step_s, offset) + 1) * SECONDS_PER_DAY - offset
    return max(k + 1, math.ceil(midnight / step_s - 1e-9))


__all__ = ["calendar_day", "count_preemption", "is_protected", "next_midnight_step", "protect"]
