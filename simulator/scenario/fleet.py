"""Pools of GPUs: what a scenario owns or rents, how more arrives, and how GPUs fail.

A pool is a set of identical GPUs acquired one way:

- ``owned``: bought, depreciated straight-line over a useful life, optionally retired at
  end of life; energy and facility are paid; subject to the site's power cap. Its starting
  GPUs may already be in service (``in_service_since``, ``book_value_usd``): they are not
  paid again, and depreciate what is left of their life.
- ``on_demand``: rented by the GPU-hour while held; elastic between ``min_count`` and
  ``max_count`` when an ``autoscale`` policy is given, in whole replicas and nodes, with a
  provisioning delay (a request made at ``t`` is in service from ``t + delay``).
- ``reserved``: a committed count for a term, paid whether used or not.
- ``spot``: cheap, billed only while running, preempted at a rate and replaced after a delay.

Dated ``changes`` add or remove GPUs on a date, or take installed GPUs out of service
(RMA) and back; ``orders`` arrive after a lead time that
can slip; a ``procurement`` policy orders more when projected utilization is high.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from simulator.scenario.distributions import (
    DurationDistribution,
    ExponentialDuration,
    FixedDuration,
    duration_distribution,
)
from simulator.scenario.horizon import Horizon
from simulator.scenario.power import Power, PowerCap, PowerUpgrade
from simulator.scenario.procurement import MAX_GPUS, GpuCount, Order, Procurement
from simulator.scenario.purchase_terms import PurchaseTerms
from simulator.scenario.serving_policy import ServingPolicy
from simulator.scenario.training import PoolTraining
from simulator.scenario.types import (
    Duration,
    Frozen,
    Instant,
    NonNegative,
    PositiveDuration,
    PositiveTerm,
    When,
)
from simulator.units import SECONDS_PER_YEAR


class Owned(Frozen):
    """Bought GPUs: capex depreciated straight-line; energy and facility paid by us."""

    type: Literal["owned"] = Field(
        default="owned", description="owned: bought, depreciated straight-line; energy and facility paid")
    price_usd: NonNegative | None = Field(
        default=None, description="Purchase price per GPU (default: the GPU catalog's)"
    )
    depreciation_years: Annotated[float, Field(gt=0, le=30)] = Field(
        default=5.0, description="Straight-line useful life in years of 365.25 days"
    )
    retire_years: Annotated[float, Field(gt=0, le=30)] | None = Field(
        default=None, description="Retire each purchase this many years after it is installed"
    )
    in_service_since: Instant | None = Field(
        default=None,
        description="When the pool's starting GPUs were installed (default: the horizon start, bought then)",
    )
    book_value_usd: NonNegative | None = Field(
        default=None,
        description="Remaining book value of the starting GPUs (default: price × count × share of life left)",
    )
    purchase_terms: PurchaseTerms | None = Field(
        default=None, description="Deposits and late-delivery credits of the pool's orders (default: paid on delivery)")

    def starting_terms(self, horizon: Horizon, count: int) -> StartingCohort:
        """How the pool's ``count`` starting GPUs are paid, depreciated and retired."""
        life = self.depreciation_years * SECONDS_PER_YEAR
        age = 0.0 if self.in_service_since is None else max(0.0, -horizon.offset_of(self.in_service_since))
        left = max(0.0, life - age)
        price = float(self.price_usd or 0.0)
        if self.book_value_usd is None:
            per_gpu_s = price / life if left > 0 else 0.0
        else:
            per_gpu_s = self.book_value_usd / (count * left) if count and left > 0 else 0.0
        retire = np.inf if self.retire_years is None else self.retire_years * SECONDS_PER_YEAR - age
        bought_now = age == 0 and self.book_value_usd is None
        return StartingCohort(paid=bought_now, usd_per_gpu_s=per_gpu_s, depreciation_end_s=left,
                              retire_at_s=retire, age_s=age)


@dataclass(frozen=True)
class StartingCohort:
    """The pool's starting GPUs: paid at the start or not, depreciated until ``depreciation_end_s``
    (seconds from the horizon start) at ``usd_per_gpu_s``, retired at ``retire_at_s``."""

    paid: bool
    usd_per_gpu_s: float
    depreciation_end_s: float
    retire_at_s: float
    age_s: float = 0.0  # time in service at the horizon's start (a resale value's age)


class Autoscale(Frozen):
    """Scale an on-demand pool in whole replicas (and whole nodes), by one of three policies.

    - ``reactive``: size the pool for the demand of the step being decided (what spills to it
      from the models' other pools as they stand), at ``target_utilization``.
    - ``scheduled``: hold the GPUs a daily or weekly ``schedule`` gives for each hour.
    - ``predictive``: size the pool for the highest forecast demand (times ``1 + margin``)
      over the steps that capacity asked now will serve: from now until the next decision's
      capacity can arrive, provisioning delay included. So capacity is there for a peak.
    """

    policy: Literal["reactive", "scheduled", "predictive"] = Field(
        default="reactive", description="reactive (size for the step's demand), scheduled (GPUs by hour of day or week) or predictive (size for the expected peak until new capacity can arrive)")
    target_utilization: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.7, description="Load per replica the pool is sized for (reactive, predictive)")
    cooldown: Duration | None = Field(
        default=None, description="Least time between two scaling actions (default: 1h reactive, 0 otherwise)")
    scale_down_cooldown: Duration = Field(
        default=0.0, description="GPUs are released only down to the most wanted over this window")
    interval: PositiveDuration | None = Field(default=None, description="How often to decide (default: the step)")
    node_gpus: Annotated[int, Field(ge=1)] = Field(
        default=1, description="GPUs rented together: the pool grows and shrinks in whole nodes")
    margin: Annotated[float, Field(ge=0, le=10)] = Field(
        default=0.1, description="Predictive: headroom over the forecast demand")
    schedule: list[Annotated[int, Field(ge=0)]] | None = Field(
        default=None, description="Scheduled: GPUs per hour of the day (24) or of the week from Monday 00:00 (168)")

    @model_validator(mode="after")
    def _policy_fields(self) -> Autoscale:
        if self.policy == "scheduled":
            if self.schedule is None:
                raise ValueError("schedule is required with policy scheduled (24 or 168 GPU counts)")
            if len(self.schedule) not in (24, 168):
                raise ValueError(f"schedule has {len(self.schedule)} entries; give 24 (per hour of the day) "
                                 "or 168 (per hour of the week)")
        elif self.schedule is not None:
            raise ValueError("schedule applies to policy scheduled")
        return self

    @property
    def cooldown_s(self) -> float:
        if self.cooldown is not None:
            return self.cooldown
        return 3600.0 if self.policy == "reactive" else 0.0


class Availability(Frozen):
    """Whether the provider has the GPUs when asked: each request (an autoscaler's scale-up, a
    dated ``add``) is filled with ``fill_probability``, else not at all; an autoscaler asks again
    at its next decision, a dated ``add`` every ``retry`` until filled (or the horizon ends)."""

    fill_probability: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        description="Share of requests for rental GPUs the provider fills")
    retry: PositiveDuration = Field(default=86400.0, description="A dated add not filled is asked again this later")


class OnDemand(Frozen):
    """Rented GPUs: paid per GPU-hour while held; energy and facility are in the price."""

    type: Literal["on_demand"] = Field(
        default="on_demand", description="on_demand: rented by the GPU-hour while installed; energy and facility are in the price")
    usd_per_gpu_hour: NonNegative | None = Field(
        default=None, description="Rental price per GPU-hour (default: the GPU catalog's)"
    )
    max_count: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Most GPUs the autoscaler may hold (default: the pool's count)"
    )
    min_count: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Fewest GPUs the autoscaler keeps (default: the pool's count, where it starts)"
    )
    provisioning_delay: Duration = Field(default=0.0, description="From request to GPUs in service")
    autoscale: Autoscale | None = Field(
        default=None, description="Resize the pool as demand moves (needs max_count); none: a fixed count")
    availability: Availability | None = Field(
        default=None, description="Stock-outs: requests the provider does not fill (default: always filled)")


class Reserved(Frozen):
    """GPUs committed for a term: paid every hour of the term, used or not.

    A term in whole months or years is calendar time (``1y`` from 2027-01-01 ends on
    2028-01-01), so consecutive terms meet exactly. A term may run past the horizon: the hours
    inside are billed, the rest is reported as the commitment left after the horizon.
    """

    type: Literal["reserved"] = Field(
        default="reserved", description="reserved: committed for `term`, paid every hour of it, used or not")
    usd_per_gpu_hour: NonNegative = Field(description="Reserved price, $/GPU-hour")
    term: PositiveTerm = Field(description="Length of the commitment, e.g. 1y (calendar) or 90d")
    start: When | None = Field(default=None, description="Start of the term (default: the horizon's)")

    def bounds_s(self, horizon: Horizon) -> tuple[float, float]:
        """Start and end of the term in seconds from the start of the horizon."""
        start = 0.0 if self.start is None else horizon.offset_of(self.start)
        begins = horizon.start + pd.Timedelta(seconds=start)
        return start, (self.term.end_from(begins) - horizon.start).total_seconds()


class Spot(Frozen):
    """Spot GPUs: billed only while running; preempted and replaced after a delay."""

    type: Literal["spot"] = Field(
        default="spot", description="spot: billed only while running; running GPUs are preempted at random")
    usd_per_gpu_hour: NonNegative = Field(description="Spot price, $/GPU-hour")
    preemption_rate_per_gpu_hour: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = Field(
        default=0.01, description="Preemptions per running GPU per hour")
    replacement: DurationDistribution = Field(
        default_factory=lambda: FixedDuration(value="1h"), description="Time until a preempted GPU is replaced: a duration or a duration distribution")

    _shorthand = field_validator("replacement", mode="before")(lambda cls, v: duration_distribution(v))


Acquisition = Annotated[Owned | OnDemand | Reserved | Spot, Field(discriminator="type")]


class Failures(Frozen):
    """Hardware failures: each failure takes ``blast_radius`` GPUs down until repaired.

    The default rate, 2·10⁻⁵ per GPU-hour, is the Llama 3 pre-training figure (419
    unexpected interruptions in 54 days on 16,384 H100s). A blast radius of 8 models a
    failing GPU taking its 8-GPU node down; failures then strike nodes at 8× the GPU rate.
    """

    rate_per_gpu_hour: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        default=2e-5, description="Failures per working GPU per hour (2e-5: Llama 3 pre-training on H100s)")
    blast_radius: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1, description="GPUs each failure takes down (8: a whole 8-GPU node)")
    repair: DurationDistribution = Field(
        default_factory=lambda: ExponentialDuration(mean="12h"), description="Time until the failed GPUs are back: a duration or a duration distribution (default exponential, mean 12h)")

    _shorthand = field_validator("repair", mode="before")(lambda cls, v: duration_distribution(v))

    @property
    def mttr_s(self) -> float:
        return float(self.repair.mean)


class CapacityChange(Frozen):
    """GPUs added to or removed from a pool, or taken out of and back into service, at a date.

    ``out_of_service`` GPUs (in RMA, say) stay installed: they keep depreciating and keep
    their facility cost, site power reservation and (reserved pools) rental, but serve
    nothing, run no training, fail no further and draw no energy. They come back with a
    later ``back_in_service``, or each after its own draw from ``repair``.
    """

    at: When = Field(
        description="Date (ISO, UTC) or offset from the horizon's start (a duration) of the change")
    add: GpuCount | None = Field(default=None, description="GPUs added (owned: a purchase, paid on delivery)")
    remove: GpuCount | None = Field(
        default=None, description="GPUs removed, oldest first (owned GPUs are sold at their market value)")
    out_of_service: GpuCount | None = Field(
        default=None, description="GPUs taken out of service (still installed and paid for)")
    back_in_service: GpuCount | None = Field(
        default=None, description="GPUs out of service returned to service")
    repair: DurationDistribution | None = Field(
        default=None, description="With out_of_service: each GPU returns after a draw from this")

    _shorthand = field_validator("repair", mode="before")(
        lambda cls, v: None if v is None else duration_distribution(v))

    @model_validator(mode="after")
    def _one_of(self) -> CapacityChange:
        given = [v for v in (self.add, self.remove, self.out_of_service, self.back_in_service) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'add', 'remove', 'out_of_service' and 'back_in_service'")
        if self.repair is not None and self.out_of_service is None:
            raise ValueError("'repair' goes with 'out_of_service' only")
        return self

    @property
    def delta(self) -> int:
        """GPUs installed by the change (0 for a change of service)."""
        return self.add if self.add is not None else -(self.remove or 0)

    @property
    def service_delta(self) -> int:
        """GPUs returned to service (> 0) or taken out of it (< 0)."""
        return (self.back_in_service or 0) - (self.out_of_service or 0)


class Pool(Frozen):
    """Identical GPUs acquired one way."""

    name: Annotated[str, Field(min_length=1, max_length=80)] = Field(
        description="Unique name of the pool; models list it in their `pools`")
    gpu: str = Field(description="GPU type: a catalog name or one defined under 'gpus'")
    acquisition: Acquisition = Field(
        default_factory=Owned, description="How the GPUs are had: owned, on_demand, reserved or spot (by `type`)")
    count: Annotated[int, Field(ge=0, le=MAX_GPUS)] = Field(description="GPUs at the start")
    changes: list[CapacityChange] = Field(
        default_factory=list, description="Dated changes: add, remove, out_of_service, back_in_service")
    orders: list[Order] = Field(
        default_factory=list, description="Owned GPUs ordered on dates, arriving lead_time plus a random slip later")
    procurement: Procurement | None = Field(
        default=None, description="A policy that orders more GPUs as the path unfolds (owned pools)")
    failures: Failures | None = Field(default=None, description="Default: the scenario's 'failures'")
    training: PoolTraining = Field(
        default_factory=PoolTraining, description="How training jobs share the pool with inference: leftover, preempt or dedicated")
    serving_policy: ServingPolicy = Field(
        default="all", description="Which replicas are up: 'all' (every one that fits; the router spreads the "
        "load), 'needed' (only those the load needs), or {headroom: h}")

    @field_validator("acquisition", mode="before")
    @classmethod
    def _owned_by_default(cls, value: object) -> object:
        return {"type": "owned", **value} if isinstance(value, dict) and "type" not in value else value

    @property
    def owned(self) -> bool:
        return isinstance(self.acquisition, Owned)


class Fleet(Frozen):
    """All pools of the scenario."""

    pools: list[Pool] = Field(
        default_factory=list, description="The GPU pools, each with its own GPU type, acquisition and count")


__all__ = [
    "Acquisition", "Autoscale", "Availability", "CapacityChange", "Failures", "Fleet", "OnDemand", "Order", "Owned",
    "Pool", "Power", "PowerCap", "PowerUpgrade", "Procurement", "Reserved", "Spot", "StartingCohort",
]
