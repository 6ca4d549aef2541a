"""The outage channels' compiled part: advance every channel to a time, drawing outages and
repairs from the path's pre-drawn buffers (see :mod:`simulator.path.fleet.outages` for the
model and :class:`~simulator.path.fleet.outages.OutageChannels` for the state it advances).

Each channel's state is a row of ``ints`` and ``floats``, with columns named by ``CH_*``;
pending repairs are a small heap per channel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.path.jit_options import NO_REFCOUNT

# Columns of the per-channel integer state.
CH_POOL = 0
CH_BLAST = 1
CH_DOWN = 2  # GPUs this channel has down now
CH_BASIS = 3  # working GPUs of the pool when the next outage time was drawn
CH_EXPO = 4  # next unused unit exponential
CH_REPAIR = 5  # next unused repair time
CH_HEAP = 6  # pending repairs
CH_OUTAGES = 7  # outages so far
CH_REPAIRS = 8  # repairs so far
N_CH_INT = 9
# Columns of the per-channel float state.
CH_RATE = 0  # outages per working GPU per second
CH_NEXT = 1  # time of the next outage (inf: none pending)
CH_CLOCK = 2  # time up to which the channel has been advanced
N_CH_FLOAT = 3


@njit(cache=True, **NO_REFCOUNT)
def advance_outages(until, installed, failed, out_of_service, ints, floats, heap_time, heap_count, expo, repair):
    """Process every outage and repair at or before ``until``; update ``failed`` per pool.

    See :mod:`simulator.path.fleet.outages` for the model.
    """
    n = ints.shape[0]
    if n == 0:
        return
    for c in range(n):
        pool = ints[c, CH_POOL]
        if ints[c, CH_BASIS] != installed[pool] - failed[pool] - out_of_service[pool]:
            # The pool changed size since the draw: redraw from where the channel stands.
            _redraw(c, floats[c, CH_CLOCK], installed, failed, out_of_service, ints, floats, expo)
    while True:
        best = -1
        best_time = until
        is_repair = False
        for c in range(n):
            if floats[c, CH_NEXT] <= best_time:
                best, best_time, is_repair = c, floats[c, CH_NEXT], False
            if ints[c, CH_HEAP] > 0 and heap_time[c, 0] <= best_time:
                best, best_time, is_repair = c, heap_time[c, 0], True
        if best < 0:
            for c in range(n):
                floats[c, CH_CLOCK] = until
            return
        pool = ints[best, CH_POOL]
        if is_repair:
            count = _heap_pop(best, ints, heap_time, heap_count)
            back = min(count, ints[best, CH_DOWN], failed[pool])
            ints[best, CH_DOWN] -= back
            failed[pool] -= back
            ints[best, CH_REPAIRS] += 1
        else:
            down = min(ints[best, CH_BLAST], installed[pool] - failed[pool] - out_of_service[pool])
            if ints[best, CH_REPAIR] >= repair.shape[1] or not repair[best, ints[best, CH_REPAIR]] >= 0:
                raise RuntimeError("outage random buffer exhausted")
            if down > 0:
                ints[best, CH_DOWN] += down
                failed[pool] += down
                _heap_push(best, best_time + repair[best, ints[best, CH_REPAIR]], down, ints, heap_time, heap_count)
                ints[best, CH_REPAIR] += 1
                ints[best, CH_OUTAGES] += 1
        for c in range(n):  # the pool's rate changed: redraw its channels (memoryless)
            if ints[c, CH_POOL] == pool:
                _redraw(c, best_time, installed, failed, out_of_service, ints, floats, expo)


@njit(cache=True, **NO_REFCOUNT)
def _redraw(c, now, installed, failed, out_of_service, ints, floats, expo):
    pool = ints[c, CH_POOL]
    working = installed[pool] - failed[pool] - out_of_service[pool]
    ints[c, CH_BASIS] = working
    if working <= 0 or floats[c, CH_RATE] <= 0.0:
        floats[c, CH_NEXT] = np.inf
        return
    position = ints[c, CH_EXPO]
    if position >= expo.shape[1] or not expo[c, position] >= 0:
        raise RuntimeError("outage random buffer exhausted")
    floats[c, CH_NEXT] = now + expo[c, position] / (floats[c, CH_RATE] * working)
    ints[c, CH_EXPO] = position + 1


@njit(cache=True, **NO_REFCOUNT)
def _heap_push(c, time, count, ints, heap_time, heap_count):
    j = ints[c, CH_HEAP]
    ints[c, CH_HEAP] = j + 1
    while j > 0:
        parent = (j - 1) // 2
        if heap_time[c, parent] <= time:
            break
        heap_time[c, j] = heap_time[c, parent]
        heap_count[c, j] = heap_count[c, parent]
        j = parent
    heap_time[c, j] = time
    heap_count[c, j] = count


@njit(cache=True, **NO_REFCOUNT)
def _heap_pop(c, ints, heap_time, heap_count):
    top = heap_count[c, 0]
    last = ints[c, CH_HEAP] - 1
    ints[c, CH_HEAP] = last
    time, count = heap_time[c, last], heap_count[c, last]
    j = 0
    while True:
        child = 2 * j + 1
        if child >= last:
            break
        if child + 1 < last and heap_time[c, child + 1] < heap_time[c, child]:
            child += 1
        if heap_time[c, child] >= time:
            break
        heap_time[c, j] = heap_time[c, child]
        heap_count[c, j] = heap_count[c, child]
        j = child
    heap_time[c, j] = time
    heap_count[c, j] = count
    return top
