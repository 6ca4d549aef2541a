"""GPU failures and spot preemptions, advanced inside the compiled step kernel.

An *outage channel* is one source of outages of one pool: hardware failures, or spot
preemptions. Each working GPU of the pool suffers an outage at the channel's rate, so the
channel strikes at ``rate × working GPUs``; an outage takes ``blast_radius`` GPUs down (its
node) until a repair (or replacement) time has passed. The pool's channels form one
superposed process per channel, not one per GPU: after every outage or repair of the pool,
the time to each channel's next outage is redrawn with the new rate, which the exponential
distribution's lack of memory makes exact. Between two fleet events the kernel advances the
channels step by step, at a few dozen nanoseconds per outage, so a 16,384-GPU fleet costs
little more than a small one.

Events follow the engine's rule: an outage or repair at time *t* counts from the first step
starting at or after *t*. A change of the pool's size changes the rate from the last
step boundary before it.

Random numbers come from the path's NumPy generators, drawn ahead into buffers (unit
exponentials and repair times, per channel) that :class:`OutageChannels` tops up before
each kernel call with a wide safety margin; the kernel raises if one ever runs dry.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Columns of the per-channel integer state.
CH_POOL = 0
CH_BLAST = 1
CH_DOWN = 2  # GPUs this channel has down now
CH_BASIS = 3  # working GPUs of the pool when the next outage time was drawn
CH_EXPO = 4  # next unused unit exponential
CH_REPAIR = 5  # next unused repair time
CH_HEAP = 6  # pending repairs
N_CH_INT = 7
# Columns of the per-channel float state.
CH_RATE = 0  # outages per working GPU per second
CH_NEXT = 1  # time of the next outage (inf: none pending)
CH_CLOCK = 2  # time up to which the channel has been advanced
N_CH_FLOAT = 3


class OutageChannels:
    """The outage channels of one path, with their random buffers and repair heaps."""

    def __init__(self, channels: list[tuple[int, float, int, object, np.random.Generator]], n_steps: int,
                 step_s: float) -> None:
        """``channels``: (pool, rate per GPU-hour, blast radius, repair distribution, generator)."""
        count = len(channels)
        self.repairs_dist = [c[3] for c in channels]
        self.rngs = [c[4] for c in channels]
        self.ints = np.zeros((count, N_CH_INT), dtype=np.int64)
        self.floats = np.zeros((count, N_CH_FLOAT), dtype=np.float64)
        for c, (pool, rate, blast, _, _) in enumerate(channels):
            self.ints[c, CH_POOL] = pool
            self.ints[c, CH_BLAST] = blast
            self.ints[c, CH_BASIS] = -1
            self.floats[c, CH_RATE] = rate / 3600.0
            self.floats[c, CH_NEXT] = np.inf
        self.heap_time = np.zeros((count, 16))
        self.heap_count = np.zeros((count, 16), dtype=np.int64)
        self.expo = np.zeros((count, 0))
        self.repair = np.zeros((count, 0))
        self.step_s = step_s

    def __len__(self) -> int:
        return len(self.ints)

    def prepare(self, k0: int, k1: int, installed: np.ndarray) -> None:
        """Make sure buffers and heaps suffice for steps ``k0 <= k < k1``."""
        if not len(self):
            return
        span = (k1 - k0 + 1) * self.step_s
        pools = self.ints[:, CH_POOL]
        lam = self.floats[:, CH_RATE] * installed[pools] * span
        need = (12 * lam + 64).astype(np.int64)
        self.expo = self._top_up(self.expo, CH_EXPO, 4 * need, lambda c, n: self.rngs[c].exponential(1.0, n))
        self.repair = self._top_up(self.repair, CH_REPAIR, need,
                                   lambda c, n: np.maximum(self.repairs_dist[c].sample(self.rngs[c], n), 0.0))
        capacity = int(installed[pools].max()) + 1 if len(pools) else 1
        if capacity > self.heap_time.shape[1]:
            grow = max(capacity, 2 * self.heap_time.shape[1])
            self.heap_time = _widen(self.heap_time, grow)
            self.heap_count = _widen(self.heap_count, grow)

    def _top_up(self, buffer: np.ndarray, column: int, need: np.ndarray, draw) -> np.ndarray:
        used = self.ints[:, column]
        left = np.isfinite(buffer).sum(axis=1) - used  # rows are NaN-padded at the end
        if (left >= need).all():
            return buffer
        rows = []
        for c in range(len(self)):
            rest = buffer[c, used[c]:]
            rest = rest[np.isfinite(rest)]
            fresh = draw(c, int(max(need[c], 2 * len(rest), 256)))
            rows.append(np.concatenate([rest, fresh]))
        width = max(len(r) for r in rows)
        out = np.full((len(self), width), np.nan)
        for c, row in enumerate(rows):
            out[c, : len(row)] = row
        self.ints[:, column] = 0
        return out


def _widen(array: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((array.shape[0], width), dtype=array.dtype)
    out[:, : array.shape[1]] = array
    return out


@njit(cache=True)
def advance_outages(until, installed, failed, ints, floats, heap_time, heap_count, expo, repair):
    """Process every outage and repair at or before ``until``; update ``failed`` per pool."""
    n = ints.shape[0]
    if n == 0:
        return
    for c in range(n):
        pool = ints[c, CH_POOL]
        if ints[c, CH_BASIS] != installed[pool] - failed[pool]:
            # The pool changed size since the draw: redraw from where the channel stands.
            _redraw(c, floats[c, CH_CLOCK], installed, failed, ints, floats, expo)
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
        else:
            down = min(ints[best, CH_BLAST], installed[pool] - failed[pool])
            if ints[best, CH_REPAIR] >= repair.shape[1] or not repair[best, ints[best, CH_REPAIR]] >= 0:
                raise RuntimeError("outage random buffer exhausted")
            if down > 0:
                ints[best, CH_DOWN] += down
                failed[pool] += down
                _heap_push(best, best_time + repair[best, ints[best, CH_REPAIR]], down, ints, heap_time, heap_count)
                ints[best, CH_REPAIR] += 1
        for c in range(n):  # the pool's rate changed: redraw its channels (memoryless)
            if ints[c, CH_POOL] == pool:
                _redraw(c, best_time, installed, failed, ints, floats, expo)


@njit(cache=True)
def _redraw(c, now, installed, failed, ints, floats, expo):
    pool = ints[c, CH_POOL]
    working = installed[pool] - failed[pool]
    ints[c, CH_BASIS] = working
    if working <= 0 or floats[c, CH_RATE] <= 0.0:
        floats[c, CH_NEXT] = np.inf
        return
    position = ints[c, CH_EXPO]
    if position >= expo.shape[1] or not expo[c, position] >= 0:
        raise RuntimeError("outage random buffer exhausted")
    floats[c, CH_NEXT] = now + expo[c, position] / (floats[c, CH_RATE] * working)
    ints[c, CH_EXPO] = position + 1


@njit(cache=True)
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


@njit(cache=True)
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
