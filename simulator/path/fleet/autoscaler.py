"""An autoscaler for an on-demand pool, as a SimPy process.

It decides at the start of the horizon and every ``interval`` after, for the step about to
be integrated, how many GPUs the pool should hold (its policy, :class:`Autoscale`):

- ``reactive``: what this step's drawn demand needs here. Every model is placed on its pools
  as the fleet stands, with this pool unbounded; what lands here is sized, model by model in
  this pool's replica shape, at ``target_utilization``.
- ``predictive``: the same sizing for the forecast demand (the scenario's expected demand
  times the day-to-day level seen now, times ``1 + margin``), the most over every step that
  capacity asked now, or held now, serves: from this step until the capacity of the next
  decision can be in service (``interval + provisioning_delay`` ahead).
- ``scheduled``: the most its schedule holds over those same steps.

To what inference wants the reactive and predictive policies add the GPUs training jobs hold
on the pool (it never shrinks from under a running job; it does not grow for queued ones),
and every policy adds the pool's GPUs down for repair or out of service, so that the count
is of working GPUs. The count is rounded up to whole nodes (``node_gpus``) and kept within
``min_count`` and ``max_count`` (rounded to whole nodes). GPUs asked at ``t`` are in service from
``t + provisioning_delay``, so from the first step starting then; released GPUs go at once,
but only down to the most wanted over the last ``scale_down_cooldown``, and only when no
request is pending. No action follows another within the ``cooldown``.

Each autoscaled pool sizes itself with every other pool as it stands: two autoscaled pools
backing the same model may both grow for the same spill (list one of them, or give the
second a lower ``max_count``).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import simpy

from simulator.path.compiled import CompiledScenario
from simulator.path.fleet.state import FleetState
from simulator.path.placement import most_gpus_wanted_on


def autoscaler(env: simpy.Environment, fleet: FleetState, plan: CompiledScenario, pool: int, clock,
               fill_rng: np.random.Generator | None = None):
    """Hold the GPUs the pool's policy wants (see module docstring); a scale-up the provider
    does not fill (``availability``, drawn from ``fill_rng``) is asked again at the next decision."""
    info = plan.pools[pool]
    policy = info.autoscale
    interval = policy.interval or plan.step_s
    delay = info.provisioning_delay_s
    node = policy.node_gpus
    most = info.max_count // node * node
    least = min(math.ceil(info.min_count / node) * node, most)
    cooldown = policy.cooldown_s
    requests: deque[list] = deque()  # [arrival time, GPUs] asked and not yet in service
    last_action = -math.inf
    recent: deque[tuple[float, int]] = deque()  # (decision time, GPUs wanted), for scale-down

    def filled() -> bool:
        return info.availability is None or bool(fill_rng.random() < info.availability.fill_probability)

    def arrive_due() -> None:
        """Put in service every request due by now (a decision at an arrival's instant sees it)."""
        while requests and requests[0][0] <= env.now + 1e-9:
            _, count = requests.popleft()
            fleet.deliver(pool, count)

    def arrive(at_s: float):
        yield env.timeout(at_s - env.now)
        arrive_due()

    while True:
        clock.advance()
        arrive_due()
        now = env.now
        step = plan.step_at_or_after(now)
        if step >= plan.n_steps:
            return
        last = max(step, min(plan.step_at_or_after(now + interval + delay) - 1, plan.n_steps - 1))
        # What inference wants, plus the GPUs jobs hold and the ones down or out of service
        # here: the autoscaler never takes GPUs from under a running job, and counts working GPUs.
        wanted = (_wanted(plan, fleet, clock, pool, policy, step, last) + int(fleet.failed[pool])
                  + int(fleet.out_of_service[pool]))
        if policy.policy != "scheduled":
            wanted += max(int(fleet.training[pool]), int(fleet.training_floor[pool]))
        desired = min(max(math.ceil(wanted / node) * node, least), most)
        recent.append((now, desired))
        while recent[0][0] < now - policy.scale_down_cooldown - 1e-9:
            recent.popleft()
        keep = max(count for _, count in recent)
        if now - last_action >= cooldown - 1e-9:
            installed = int(fleet.installed[pool])
            pending = sum(count for _, count in requests)
            short = desired > installed + pending
            if short and filled():  # (not filled: the provider is out of stock; asked again next time)
                more = desired - installed - pending
                last_action = now
                if delay > 0:
                    requests.append([now + delay, more])
                    env.process(arrive(now + delay))
                else:
                    fleet.deliver(pool, more)
            elif not short and keep < installed and pending == 0:
                last_action = now
                fleet.remove(pool, installed - keep)
        yield env.timeout(interval)


def _wanted(plan: CompiledScenario, fleet: FleetState, clock, pool: int, policy, step: int, last: int) -> int:
    """GPUs the policy wants on ``pool`` for the steps ``step..last`` (see module docstring)."""
    if policy.policy == "scheduled":
        return int(plan.pools[pool].scheduled_gpus[step:last + 1].max())
    if policy.policy == "reactive":
        rows = clock.requests_at(step)[None, :]
    else:
        rows = clock.forecast_rows(step, last) * (1.0 + policy.margin)
    return int(most_gpus_wanted_on(pool, rows, policy.target_utilization, plan.capacity_per_step,
                                   plan.gpus_per_replica, plan.companion, plan.preferences, plan.api_mode, plan.burst,
                                   fleet.installed, fleet.failed, fleet.out_of_service, fleet.training,
                                   fleet.training_floor, plan.preempt))
