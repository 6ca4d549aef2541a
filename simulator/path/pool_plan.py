"""One pool of a compiled scenario: its kind, its dated changes and orders, and what the
engine's processes need to know about it (:class:`PoolPlan`), with its prices in SI units."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.path.hourly import hourly_per_step
from simulator.path.streams import stream_key
from simulator.scenario import Scenario
from simulator.scenario.fleet import (
    Autoscale,
    Failures,
    OnDemand,
    Owned,
    Procurement,
    Reserved,
    Spot,
    StartingCohort,
)
from simulator.units import SECONDS_PER_YEAR

KIND_OWNED, KIND_ON_DEMAND, KIND_RESERVED, KIND_SPOT = 0, 1, 2, 3


@dataclass(frozen=True)
class PoolChange:
    """GPUs added (delta > 0) or removed (delta < 0) at ``at_s`` seconds from the start, or
    returned to service (service > 0) or taken out of it (service < 0, each GPU back after a
    draw from ``repair`` when given)."""

    pool: int
    at_s: float
    delta: int
    service: int = 0
    repair: object | None = None  # a DurationDistribution


@dataclass(frozen=True)
class PoolOrder:
    """GPUs ordered at ``at_s``; they arrive after ``lead_s`` plus a slip drawn from ``slip``."""

    pool: int
    at_s: float
    count: int
    lead_s: float
    slip: object | None  # a DurationDistribution


@dataclass(frozen=True)
class PoolPlan:
    """What the engine's processes need to know about one pool."""

    name: str
    kind: int
    key: int
    failures: Failures | None
    spot: Spot | None
    autoscale: Autoscale | None
    max_count: int
    min_count: int
    scheduled_gpus: np.ndarray | None  # (n_steps,) GPUs an autoscale schedule holds in each step
    provisioning_delay_s: float
    reserved_start_s: float
    reserved_end_s: float
    retire_s: float
    starting: StartingCohort | None  # owned pools: how the starting GPUs are paid and depreciated
    procurement: Procurement | None
    site_kw_per_gpu: float
    availability: object | None = None  # on-demand: the provider's Availability (None: always filled)


def pool_plan(scenario: Scenario, i: int) -> PoolPlan:
    """Pool ``i`` of the scenario in the engine's terms."""
    pool = scenario.fleet.pools[i]
    acquisition = pool.acquisition
    horizon = scenario.horizon
    kind = {Owned: KIND_OWNED, OnDemand: KIND_ON_DEMAND, Reserved: KIND_RESERVED, Spot: KIND_SPOT}[type(acquisition)]
    start = end = np.inf
    if isinstance(acquisition, Reserved):
        start, end = acquisition.bounds_s(horizon)
    autoscale = acquisition.autoscale if isinstance(acquisition, OnDemand) else None
    max_count = min_count = pool.count
    if isinstance(acquisition, OnDemand) and acquisition.max_count is not None:
        max_count = acquisition.max_count
    if isinstance(acquisition, OnDemand) and acquisition.min_count is not None:
        min_count = acquisition.min_count
    retire = acquisition.retire_years * (365.25 * 86400) if isinstance(acquisition, Owned) and acquisition.retire_years else np.inf
    return PoolPlan(
        name=pool.name,
        kind=kind,
        key=stream_key(pool.name),
        failures=scenario.failures_of(i),
        spot=acquisition if isinstance(acquisition, Spot) else None,
        autoscale=autoscale,
        max_count=max_count,
        min_count=min_count,
        scheduled_gpus=None if autoscale is None or autoscale.schedule is None
        else hourly_per_step(autoscale.schedule, horizon),
        provisioning_delay_s=acquisition.provisioning_delay if isinstance(acquisition, OnDemand) else 0.0,
        reserved_start_s=0.0 if start == np.inf else start,
        reserved_end_s=end,
        retire_s=retire,
        starting=acquisition.starting_terms(horizon, pool.count) if isinstance(acquisition, Owned) else None,
        procurement=pool.procurement,
        site_kw_per_gpu=scenario.site_kw_per_gpu(pool.gpu) if pool.owned else 0.0,
        availability=acquisition.availability if isinstance(acquisition, OnDemand) else None,
    )


def purchase_price(acquisition) -> float:
    return float(acquisition.price_usd or 0.0) if isinstance(acquisition, Owned) else 0.0


def depreciation_life_s(acquisition) -> float:
    if isinstance(acquisition, Owned):
        return acquisition.depreciation_years * SECONDS_PER_YEAR
    return np.inf


def rent_per_gpu_s(acquisition) -> float:
    if isinstance(acquisition, OnDemand | Reserved | Spot):
        return float(acquisition.usd_per_gpu_hour or 0.0) / 3600.0
    return 0.0


__all__ = ["KIND_ON_DEMAND", "KIND_OWNED", "KIND_RESERVED", "KIND_SPOT", "PoolChange", "PoolOrder", "PoolPlan",
           "depreciation_life_s", "pool_plan", "purchase_price", "rent_per_gpu_s"]
