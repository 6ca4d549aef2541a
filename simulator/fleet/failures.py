"""Failures and spot preemptions of a whole pool as one superposed process.

Each working GPU fails at ``rate`` per hour, so the pool fails at ``rate × available``;
a failure takes ``blast_radius`` GPUs down (its node) until a repair time drawn from the
repair distribution has passed. Rather than one process per GPU, one process per pool draws
the time to the pool's next failure; when the pool changes (a delivery, a repair, another
failure) the draw is redone with the new rate, which the exponential's lack of memory makes
exact. A 16,384-GPU pool therefore costs one process and one event per failure and repair.
Spot preemptions are the same process with the preemption rate and replacement delay.
"""

from __future__ import annotations

import numpy as np
import simpy

from simulator.fleet.state import FleetState


def failure_process(env: simpy.Environment, fleet: FleetState, pool: int, rate_per_gpu_hour: float,
                    blast_radius: int, repair, rng: np.random.Generator):
    """Fail GPUs of ``pool`` at ``rate_per_gpu_hour`` each, repairing each after ``repair``."""
    if rate_per_gpu_hour <= 0:
        return
    rate_per_gpu_s = rate_per_gpu_hour / 3600.0
    if rate_per_gpu_s <= 0:
        return
    while True:
        working = int(fleet.available[pool])
        changed = fleet.changed(pool)
        if working <= 0:
            yield changed
            continue
        wait = rng.exponential(1.0 / (rate_per_gpu_s * working))
        timeout = env.timeout(wait)
        fired = yield timeout | changed
        if timeout not in fired:
            continue  # the pool changed first: redraw with the new rate
        down = fleet.fail(pool, blast_radius)
        if down:
            env.process(_repair_after(env, fleet, pool, down, float(repair.sample(rng))))


def _repair_after(env: simpy.Environment, fleet: FleetState, pool: int, count: int, delay: float):
    yield env.timeout(delay)
    fleet.repair(pool, count)
