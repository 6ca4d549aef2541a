"""An autoscaler for an on-demand pool, as a SimPy process.

Every ``interval`` it looks at the step just integrated: the GPU-equivalents the pool kept
busy plus the GPUs missing for the models that may use it, counted in this pool's replica
shape. The pool should hold
``ceil(that / target_utilization)`` GPUs, at least its base ``count`` and at most
``max_count``. More GPUs are requested and arrive after the provisioning delay; surplus GPUs
are released at once. No action follows another within the cooldown.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from simulator.path import kernels as K
from simulator.path.compiled import CompiledScenario
from simulator.path.fleet.state import FleetState


def autoscaler(env: simpy.Environment, fleet: FleetState, plan: CompiledScenario, pool: int,
               clock, base_count: int):
    """Keep the pool near its target utilization (see module docstring)."""
    info = plan.pools[pool]
    policy = info.autoscale
    interval = policy.interval or plan.step_s
    users = [m for m in range(len(plan.model_names)) if pool in plan.preferences[m]]
    pending = 0
    last_action = -np.inf

    def arrive(count: int):
        nonlocal pending
        yield env.timeout(info.provisioning_delay_s)
        pending -= count
        fleet.deliver(pool, count)

    while True:
        yield env.timeout(interval)
        clock.advance()
        step = clock.next_step - 1
        if step < 0 or env.now - last_action < policy.cooldown - 1e-9:
            continue
        busy = clock.pool_out[step, pool, K.POOL_BUSY]
        missing = sum(_missing_here(plan, clock.model_out[step, m], m, pool) for m in users)
        desired = math.ceil((busy + missing) / policy.target_utilization - 1e-9)
        desired = min(max(desired, base_count), info.max_count)
        held = int(fleet.installed[pool]) + pending
        if desired > held:
            pending += desired - held
            env.process(arrive(desired - held))
            last_action = env.now
        elif desired < int(fleet.installed[pool]) and pending == 0:
            fleet.remove(pool, int(fleet.installed[pool]) - desired)
            last_action = env.now


def _missing_here(plan: CompiledScenario, row: np.ndarray, model: int, pool: int) -> float:
    """The GPUs a model's unserved demand would take on this pool, in this pool's replica shape
    (``shortfall_gpus`` counts them in the first-choice pool's shape)."""
    slot = int(np.flatnonzero(plan.preferences[model] == pool)[0])
    same = (plan.capacity_per_step[model, slot] == plan.capacity_per_step[model, 0]
            and plan.gpus_per_replica[model, slot] == plan.gpus_per_replica[model, 0])
    unserved = row[K.MODEL_UNSERVED]
    if same or unserved <= 0.0 or not plan.capacity_per_step[model, slot] > 0:
        return row[K.MODEL_SHORTFALL_GPUS]
    replicas = math.ceil(unserved / plan.capacity_per_step[model, slot] * (1.0 - 1e-12))
    return replicas * int(plan.gpus_per_replica[model, slot])
