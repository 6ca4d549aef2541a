"""Site power over a path: the dated caps, and the upgrades ordered, energized after their lead
time and a slip drawn from their own stream (``STREAM_ORDERS``, keyed ``power:<name>``)."""

from __future__ import annotations

import simpy

from simulator.path.compiled import CompiledScenario
from simulator.path.fleet.procurement import delivery_delay
from simulator.path.fleet.state import FleetState
from simulator.path.streams import STREAM_ORDERS, path_generator, stream_key


def start_power(env: simpy.Environment, fleet: FleetState, plan: CompiledScenario, seed: int, path: int) -> list:
    """Set the cap in force at the start and schedule the later caps and the upgrades; returns
    the list the upgrades energized are appended to: (name, energized s, USD, life s)."""
    horizon = plan.horizon_s
    for at_s, kw in plan.power_caps:
        if at_s <= 0:
            fleet.power_cap_kw = kw
        elif at_s < horizon:
            env.process(_cap(env, fleet, at_s, kw))
    energized: list = []
    for name, at_s, lead_s, slip, kw, cost, life_s in plan.power_upgrades:
        delay = delivery_delay(lead_s, slip, path_generator(seed, path, STREAM_ORDERS, stream_key(f"power:{name}")))
        when = at_s + delay
        if when <= 0:  # energized before the horizon: part of the site, its cost not this run's
            fleet.power_cap_kw += kw
            fleet.power_added_kw += kw
        elif when < horizon:
            env.process(_upgrade(env, fleet, when, kw, (name, when, cost, life_s), energized))
    return energized


def _cap(env: simpy.Environment, fleet: FleetState, at_s: float, kw: float):
    yield env.timeout(at_s)
    fleet.set_power_cap(kw)


def _upgrade(env: simpy.Environment, fleet: FleetState, at_s: float, kw: float, record: tuple, energized: list):
    yield env.timeout(at_s)
    fleet.add_power(kw)
    energized.append(record)


__all__ = ["start_power"]
