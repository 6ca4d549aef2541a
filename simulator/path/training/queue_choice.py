"""Which queued jobs of a pool start now, by the scheduling policy, in compiled code.

The policies of :mod:`simulator.path.training.policies` (the SimPy reference's), written over
the training loop's arrays: ``fifo``, ``priority`` and ``shortest_first`` start jobs from the
head of their ordered queue while they fit (no overtaking); ``easy_backfill`` then lets later
jobs start when they end before the head's reservation (its shadow time) or use GPUs it
will not need.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from simulator.path.jit_options import NO_REFCOUNT, REFCOUNT
from simulator.path.training.loop_layout import (
    F_CKPT,
    F_CKPT_TIME,
    F_DONE,
    F_RESTART,
    F_WORK,
    I_RESTART,
    POLICY_EASY,
    POLICY_PRIORITY,
    POLICY_SHORTEST,
)


@njit(cache=True, **NO_REFCOUNT)
def remaining_wall(floats, ints, j):
    """Expected wall time for job ``j`` to finish if nothing interrupts it (as ``Job.remaining_wall_s``)."""
    left = max(floats[j, F_WORK] - floats[j, F_DONE], 0.0)
    ckpt = floats[j, F_CKPT]
    writes = 0.0
    if math.isfinite(ckpt):
        writes = float(max(math.ceil(left / ckpt - 1e-9) - 1, 0))
    return (floats[j, F_RESTART] if ints[j, I_RESTART] else 0.0) + left + writes * floats[j, F_CKPT_TIME]


@njit(cache=True, **REFCOUNT)
def chosen_to_start(p, free, now, policy, st):
    """How many queued jobs of pool ``p`` start now; they are written, in the order they start
    (the policies of :mod:`simulator.path.training.policies`), into the scratch array
    ``st[15]``."""
    gpus, priority, floats, ints, queue, running, lengths = st[1], st[2], st[3], st[4], st[7], st[8], st[9]
    started, ends, sizes = st[15], st[16], st[17]
    n = lengths[p, 0]
    if free <= 0:  # every job needs a GPU: nothing starts, nothing backfills
        return 0
    waiting = queue[p, :n]
    if policy == POLICY_PRIORITY:
        waiting = waiting[np.argsort(-priority[waiting], kind="mergesort")]
    elif policy == POLICY_SHORTEST:
        walls = np.empty(n)
        for i in range(n):
            walls[i] = remaining_wall(floats, ints, waiting[i])
        waiting = waiting[np.argsort(walls, kind="mergesort")]
    count = 0
    i = 0
    while i < n and gpus[waiting[i]] <= free:  # head of line while the head fits
        started[count] = waiting[i]
        count += 1
        free -= gpus[waiting[i]]
        i += 1
    if policy != POLICY_EASY or i == n or free <= 0:
        return count
    head = waiting[i]
    fits = False  # can any later job start now at all? (the shadow time is not needed if not)
    for w in range(i + 1, n):
        if gpus[waiting[w]] <= free:
            fits = True
            break
    if not fits:
        return count
    # Shadow time: when enough running jobs (and those just started) have ended for the head
    # to fit, taking them by (end, GPUs).
    n_running = lengths[p, 1]
    size = n_running + count
    for r in range(size):
        job = running[p, r] if r < n_running else started[r - n_running]
        ends[r], sizes[r] = now + remaining_wall(floats, ints, job), gpus[job]
    by_size = np.argsort(sizes[:size], kind="mergesort")
    order = by_size[np.argsort(ends[:size][by_size], kind="mergesort")]
    available, shadow, extra = free, np.inf, 0
    for r in order:
        available += sizes[r]
        if available >= gpus[head]:
            shadow, extra = ends[r], available - gpus[head]
            break
    for w in range(i + 1, n):
        job = waiting[w]
        if gpus[job] > free:
            continue
        ends_in_time = now + remaining_wall(floats, ints, job) <= shadow + 1e-9
        if ends_in_time or gpus[job] <= extra:
            started[count] = job
            count += 1
            free -= gpus[job]
            if not ends_in_time:
                extra -= gpus[job]
            if free <= 0:
                break
    return count
