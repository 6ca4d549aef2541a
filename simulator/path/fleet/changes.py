"""A pool's dated changes over one path: GPUs added or removed on a date (a rented pool's adds
from a provider that may be out of stock), and GPUs taken out of service and back (each after
its own repair time when one is drawn)."""

from __future__ import annotations

import numpy as np
import simpy

from simulator.path.compiled import CompiledScenario
from simulator.path.fleet.state import FleetState
from simulator.path.streams import STREAM_ORDERS, STREAM_SERVICE, path_generator, stream_key


def start_changes(env: simpy.Environment, fleet: FleetState, plan: CompiledScenario, seed: int, path: int) -> None:
    """Schedule every dated change of every pool."""
    horizon = plan.horizon_s
    service_rngs: dict[int, np.random.Generator] = {}
    fill_rngs: dict[int, np.random.Generator] = {}
    for change in plan.changes:
        repairs = None
        if change.repair is not None:  # drawn in the pool's order of changes, whatever the horizon
            rng = service_rngs.get(change.pool)
            if rng is None:
                rng = service_rngs[change.pool] = path_generator(seed, path, STREAM_SERVICE, plan.pools[change.pool].key)
            repairs = np.maximum(np.asarray(change.repair.sample(rng, -change.service), dtype=float), 0.0)
        if change.at_s < horizon:
            if change.service:
                env.process(_service_change(env, fleet, change.pool, change.at_s, change.service, repairs))
            elif change.delta > 0 and plan.pools[change.pool].availability is not None:
                rng = fill_rngs.get(change.pool)
                if rng is None:  # one stream per pool for its dated adds, apart from its autoscaler's
                    key = stream_key("fill-dated:" + plan.pools[change.pool].name)
                    rng = fill_rngs[change.pool] = path_generator(seed, path, STREAM_ORDERS, key)
                # Asked again until the pool's next dated removal (the rental's end), not past it.
                until = min((c.at_s for c in plan.changes if c.pool == change.pool and c.delta < 0
                             and c.at_s > change.at_s), default=horizon)
                env.process(rental_request(env, fleet, change.pool, change.at_s, change.delta, min(until, horizon), rng))
            else:
                env.process(scheduled_change(env, fleet, change.pool, change.at_s, change.delta))


def scheduled_change(env: simpy.Environment, fleet: FleetState, pool: int, at_s: float, delta: int):
    yield env.timeout(at_s)
    if delta > 0:
        fleet.deliver(pool, delta)
    else:
        fleet.remove(pool, -delta)


def _service_change(env: simpy.Environment, fleet: FleetState, pool: int, at_s: float, service: int,
                    repairs: np.ndarray | None):
    """GPUs out of service at ``at_s`` (back after ``repairs`` seconds each, if given), or back."""
    yield env.timeout(at_s)
    if service > 0:
        fleet.return_to_service(pool, service)
        return
    taken = fleet.take_out_of_service(pool, -service)
    if repairs is None:
        return
    # The GPUs actually taken come back, each after its own repair time, grouped by instant.
    times, counts = np.unique(repairs[:taken], return_counts=True)
    for after_s, count in zip(times, counts, strict=True):
        if at_s + after_s < fleet.plan.horizon_s:
            env.process(_return_after(env, fleet, pool, float(after_s), int(count)))


def _return_after(env: simpy.Environment, fleet: FleetState, pool: int, after_s: float, count: int):
    yield env.timeout(after_s)
    fleet.return_to_service(pool, count)


def rental_request(env: simpy.Environment, fleet: FleetState, pool: int, at_s: float, count: int, until_s: float,
                   rng: np.random.Generator):
    """A dated ``add`` of rental GPUs from a provider that may be out of stock: asked at
    ``at_s`` and every ``retry`` after until filled (each time with ``fill_probability``), and
    not at or after ``until_s`` (the rental's end: the pool's next dated removal, or the horizon's)."""
    availability = fleet.plan.pools[pool].availability
    yield env.timeout(max(at_s - env.now, 0.0))
    while env.now < until_s - 1e-9:
        if rng.random() < availability.fill_probability:
            fleet.deliver(pool, count)
            return
        yield env.timeout(availability.retry)


__all__ = ["rental_request", "scheduled_change", "start_changes"]
