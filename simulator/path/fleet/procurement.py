"""Orders that arrive after a lead time, and a policy that places them.

A dated order arrives ``lead_time`` after it is placed, plus a slip drawn from its
distribution. The utilization policy reviews the pool every ``review_every``: if the peak
number of GPUs the models preferring this pool will need over the ``lookahead`` (from their
expected demand and capacity per replica) exceeds ``threshold`` × the GPUs installed, waiting
for power and on order, it orders ``order_count`` more.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from simulator.path.compiled import CompiledScenario
from simulator.path.fleet.state import FleetState


def delivery_delay(lead_s: float, slip, rng: np.random.Generator) -> float:
    """Lead time plus a slip drawn from its distribution (none: no slip)."""
    return lead_s + (0.0 if slip is None else max(0.0, float(slip.sample(rng))))


def dated_order(env: simpy.Environment, fleet: FleetState, pool: int, at_s: float, count: int,
                delay_s: float, on_order: np.ndarray, lead_s: float | None = None):
    """Place an order at ``at_s``; deliver it ``delay_s`` later (promised ``lead_s`` later:
    the difference is the slip; default no slip).

    An order placed before the horizon (``at_s < 0``) is on order from the start and arrives
    ``at_s + delay_s`` (at the start if that is not after it)."""
    yield env.timeout(max(0.0, at_s - env.now))  # (a policy places its orders now: at_s is env.now)
    on_order[pool] += count
    promised = at_s + (delay_s if lead_s is None else lead_s)
    fleet.log.orders.append([at_s, promised, np.nan, pool, count])
    row = len(fleet.log.orders) - 1
    yield env.timeout(max(0.0, at_s + delay_s - env.now))
    on_order[pool] -= count
    fleet.deliver(pool, count, order=row)


def procurement_policy(env: simpy.Environment, fleet: FleetState, plan: CompiledScenario, pool: int,
                       rng: np.random.Generator, on_order: np.ndarray, orders_log: list):
    """Review the pool periodically and order when projected utilization passes the threshold."""
    policy = plan.pools[pool].procurement
    need = plan.inference_need[:, pool]
    window = max(1, int(math.ceil(policy.lookahead / plan.step_s)))
    placed = 0
    while policy.max_orders is None or placed < policy.max_orders:
        step = int(env.now // plan.step_s)
        if step >= plan.n_steps:
            return
        peak = float(need[step: step + window].max())
        supply = float(fleet.installed[pool] + fleet.blocked[pool] + on_order[pool])
        if peak > 0 and (supply <= 0 or peak / supply > policy.threshold):
            delay = delivery_delay(policy.lead_time, policy.slip, rng)
            orders_log.append((env.now, pool, policy.order_count, env.now + delay))
            env.process(dated_order(env, fleet, pool, env.now, policy.order_count, delay, on_order,
                                    lead_s=policy.lead_time))
            placed += 1
        yield env.timeout(policy.review_every)

