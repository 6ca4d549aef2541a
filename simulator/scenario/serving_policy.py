"""Which replicas of a pool are up, and so at what load each one runs.

A model's load on a pool needs ``ceil(load / capacity)`` replicas at full SLO capacity; the
policy says how many are actually up, and the router spreads the load evenly (in proportion
to capacity) over the replicas that are up, so each runs below its capacity when there are
more of them:

- ``all`` (the default): every replica that fits in the pool's GPUs left after training and
  outages is up. The pool's spare GPUs are shared among the models that list it, in
  proportion to the load each brings there (in GPUs of that pool's replica shape). This is
  how an owned or reserved fleet is run: the GPUs are paid for whether loaded or not, so
  a router uses them all to lower latency.
- ``needed``: only the replicas the load needs at full SLO capacity (idle GPUs are powered
  down or kept free); each replica but the last runs at its capacity.
- ``{headroom: h}``: as many as keep each replica at or below ``1 − h`` of its SLO capacity,
  as far as the pool has room (never fewer than ``needed``).

The planner, the autoscaler, procurement and preemption by inference all size from the
replicas *needed*; the policy changes the latency read from the replicas and which GPUs are
counted as serving, not what the load needs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from simulator.scenario.types import Frozen

SPREAD_NEEDED, SPREAD_ALL, SPREAD_HEADROOM = 0, 1, 2


class Headroom(Frozen):
    """Keep each replica at or below ``1 − headroom`` of its SLO capacity."""

    headroom: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="Share of each replica's SLO capacity kept free, e.g. 0.3")


ServingPolicy = Literal["all", "needed"] | Headroom


def spread_code(policy: ServingPolicy) -> tuple[int, float]:
    """The policy as the step kernel takes it: a ``SPREAD_*`` code and the headroom (or 0)."""
    if isinstance(policy, Headroom):
        return SPREAD_HEADROOM, policy.headroom
    return (SPREAD_ALL if policy == "all" else SPREAD_NEEDED), 0.0


def describe(policy: ServingPolicy) -> str:
    """The policy in words, for the report."""
    if isinstance(policy, Headroom):
        return f"headroom {policy.headroom:.0%}"
    return "all replicas up" if policy == "all" else "replicas needed"


__all__ = ["Headroom", "ServingPolicy", "describe", "spread_code"]
