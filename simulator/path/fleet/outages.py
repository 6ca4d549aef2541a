"""GPU failures and spot preemptions, advanced inside the compiled step kernel.

An *outage channel* is one source of outages of one pool: hardware failures, or spot
preemptions. Each working GPU of the pool (installed, neither failed nor out of service)
suffers an outage at the channel's rate, so the
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

The compiled part (``advance_outages``) lives in :mod:`simulator.path.kernels`, beside the step
kernel that calls it, so that numba's on-disk cache is invalidated with it.

Random numbers come from the path's NumPy generators, drawn ahead into buffers (unit
exponentials and repair times, per channel, each from its own stream, so that the draws do
not depend on how the horizon is split into kernel calls) that :class:`OutageChannels` tops
up before each kernel call with a wide safety margin; the kernel raises if one ever runs dry.
"""

from __future__ import annotations

import numpy as np

from simulator.path.outage_kernel import (
    CH_BASIS,
    CH_BLAST,
    CH_EXPO,
    CH_HEAP,
    CH_NEXT,
    CH_POOL,
    CH_RATE,
    CH_REPAIR,
    N_CH_FLOAT,
    N_CH_INT,
)


class OutageChannels:
    """The outage channels of one path, with their random buffers and repair heaps."""

    def __init__(self, channels: list[tuple[int, float, int, object, np.random.Generator]], n_steps: int,
                 step_s: float) -> None:
        """``channels``: (pool, rate per GPU-hour, blast radius, repair distribution, generator)."""
        count = len(channels)
        self.repairs_dist = [c[3] for c in channels]
        # Times to outages and repair times from two streams of the channel's generator: what
        # each buffer holds is then the same however the kernel calls split the horizon.
        streams = [c[4].spawn(2) for c in channels]
        self.outage_rngs = [s[0] for s in streams]
        self.repair_rngs = [s[1] for s in streams]
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
        self._valid = {CH_EXPO: np.zeros(count, dtype=np.int64), CH_REPAIR: np.zeros(count, dtype=np.int64)}
        self.step_s = step_s

    def __len__(self) -> int:
        return len(self.ints)

    def prepare(self, k0: int, k1: int, installed: np.ndarray) -> None:
        """Make sure buffers and heaps suffice for steps ``k0 <= k < k1``."""
        if not len(self):
            return
        span = (k1 - k0 + 1) * self.step_s
        pools = self.ints[:, CH_POOL]
        # Outages of a channel in the span are Poisson with mean at most `lam`; 10 standard
        # deviations and a constant above it are never exceeded in practice.
        lam = self.floats[:, CH_RATE] * installed[pools] * span
        outages = np.ceil(lam + 10 * np.sqrt(lam) + 32).astype(np.int64)
        # Every outage and repair of a pool redraws each of its channels once.
        per_pool = np.bincount(pools, weights=outages, minlength=len(installed))
        channels = np.bincount(pools, minlength=len(installed))
        draws = (2 * per_pool[pools] * channels[pools] + 2).astype(np.int64)
        self.expo = self._top_up(self.expo, CH_EXPO, draws, lambda c, n: self.outage_rngs[c].exponential(1.0, n))
        self.repair = self._top_up(self.repair, CH_REPAIR, outages,
                                   lambda c, n: np.maximum(self.repairs_dist[c].sample(self.repair_rngs[c], n), 0.0))
        # A repair is pending for each outage not yet repaired: those pending now plus at most
        # the span's outages (and never more than the pool's GPUs).
        pending = self.ints[:, CH_HEAP] + outages
        capacity = int(np.minimum(installed[pools] + 1, pending + 1).max())
        if capacity > self.heap_time.shape[1]:
            grow = max(capacity, 2 * self.heap_time.shape[1])
            self.heap_time = _widen(self.heap_time, grow)
            self.heap_count = _widen(self.heap_count, grow)

    def _top_up(self, buffer: np.ndarray, column: int, need: np.ndarray, draw) -> np.ndarray:
        used = self.ints[:, column]
        valid = self._valid[column]  # rows are NaN-padded after their valid length
        if (valid - used >= need).all():
            return buffer
        rows = []
        for c in range(len(self)):
            rest = buffer[c, used[c]: valid[c]]
            fresh = draw(c, int(max(need[c], len(rest), 64)))
            rows.append(np.concatenate([rest, fresh]))
            valid[c] = len(rows[-1])
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
