"""A scenario compiled to the flat arrays and SI numbers the engine and kernels take.

Compiling once per run (not per path) keeps the per-path work to drawing random numbers
and moving the clock. Money is USD, time seconds, power kW at the meter (PUE included).
Random streams are keyed by the *names* of pools and models (a CRC32), so two variants of a
scenario draw the same numbers for the same pool or model: common random numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.demand import expected_counts, expected_level_counts
from simulator.path.placement import BURST_FIRST, BURST_LATER
from simulator.path.pool_plan import (
    KIND_RESERVED,
    PoolChange,
    PoolOrder,
    PoolPlan,
    depreciation_life_s,
    pool_plan,
    purchase_price,
    rent_per_gpu_s,
)
from simulator.path.streams import stream_key
from simulator.path.training.plan import training_jobs, training_streams
from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.serving_policy import spread_code
from simulator.scenario.training import LaunchAfter
from simulator.units import SECONDS_PER_MONTH, SECONDS_PER_YEAR

#: Largest expected request count in one step (Poisson draws and float sums stay exact-ish).
MAX_REQUESTS_PER_STEP = 1e15
API_NONE, API_OVERFLOW, API_ALL = 0, 1, 2


@dataclass(frozen=True)
class CompiledScenario:
    """Everything one path needs, as arrays indexed by pool and by model."""

    n_steps: int
    step_s: float
    horizon_s: float
    pool_names: tuple[str, ...]
    model_names: tuple[str, ...]
    pools: tuple[PoolPlan, ...]
    # Pools.
    initial_count: np.ndarray  # int64: GPUs in service at the start
    pools_count: np.ndarray  # int64: each pool's `count` (a reserved pool's commitment)
    owned: np.ndarray  # bool
    kind: np.ndarray  # int64, KIND_*
    price_usd: np.ndarray  # purchase price per owned GPU
    life_s: np.ndarray  # straight-line depreciation life of owned GPUs
    cloud_usd_gpu_s: np.ndarray
    facility_usd_gpu_s: np.ndarray
    busy_kw: np.ndarray
    idle_kw: np.ndarray
    changes: tuple[PoolChange, ...]
    orders: tuple[PoolOrder, ...]
    power_caps: tuple[tuple[float, float], ...]  # (at_s, kW), sorted
    serves_model: np.ndarray  # bool: some model lists the pool (else its cost is all R&D)
    # Models.
    model_keys: tuple[int, ...]
    # Replicas per (model, preference slot j): the shape of model m's replicas on pool preferences[m, j].
    capacity_per_step: np.ndarray  # (n_models, max pools): requests one replica serves in a step
    gpus_per_replica: np.ndarray  # int64 (n_models, max pools)
    companion: np.ndarray  # int64 (n_models, max pools, 2): a unit's other pool (−1: none) and its GPUs there
    preferences: np.ndarray  # int64 (n_models, max pools), -1 padded
    revenue_per_request: np.ndarray  # (n_steps, n_models), USD, price decline applied
    fixed_revenue: np.ndarray  # (n_steps, n_models), USD per step (subscriptions)
    subscribers: np.ndarray  # (n_steps, n_models), mean subscribers during the step
    api_mode: np.ndarray  # int64, API_*
    api_limit_per_step: np.ndarray
    api_cost_per_request: np.ndarray
    burst: np.ndarray  # int64 (n_models, max pools): BURST_* of a model that preempts training last, else 0
    slo_load: np.ndarray  # (n_models, max pools, points): per-replica load grid of the SLO curve
    slo_attainment: np.ndarray  # (n_models, max pools, points): share of requests within the SLO
    spread: np.ndarray  # int64 (n_models, max pools): the serving policy's SPREAD_* code
    headroom: np.ndarray  # (n_models, max pools): the headroom of a SPREAD_HEADROOM policy
    expected_demand: np.ndarray  # (n_steps, n_models) expected requests per step
    noise: tuple[str, ...]
    tokens_per_request: np.ndarray  # input + output tokens, per model
    # Training.
    inference_need: np.ndarray  # (n_steps, n_pools): expected GPUs the models preferring a pool need (procurement)
    training_mode: tuple[str, ...]
    preempt: np.ndarray  # bool per pool: training mode `preempt` (inference may take jobs' GPUs)
    training_partition: np.ndarray  # int64: dedicated training GPUs per pool
    training_policy: str
    training_review_s: float
    jobs: tuple  # JobSpec
    job_streams: tuple  # StreamSpec
    launches: tuple[tuple[int, str, float], ...]  # (model, job name, delay s)
    demands: tuple  # the models' Demand, to recompute a launch that waits on a job
    subscriptions: tuple  # per model: (requests per day, USD per month) or None
    horizon: object
    # Scalars.
    usd_per_kwh: float
    other_usd_s: float
    day_offset_s: float = 0.0  # the horizon's start, in seconds after its UTC midnight (calendar days)
    contracts: tuple = ()  # (pool, scenario Contract)
    contract_pipelines: tuple = ()  # (pool, scenario ContractPipeline)
    rent_markets: tuple = ()  # (pool, scenario RentMarket)
    purchase_markets: tuple = ()  # (pool, scenario PurchaseMarket)
    api_markets: tuple = ()  # (model, scenario ApiMarket)
    month_starts_s: np.ndarray = field(default_factory=lambda: np.zeros(1))  # each calendar month's start (the first: 0)
    min_unserved_share: float = 0.0  # the shortfall rule's tolerated unserved share (re-planning's need)
    #: The scenario's own expected demand (at the medians of uncertain inputs) where this path's
    #: differs: the prior a re-planning policy corrects with what the path shows (None: expected_demand).
    prior_demand: np.ndarray | None = None
    #: Power upgrades ordered (``power.upgrades`` with ``at``): (name, ordered at s, lead s, slip, kW, USD, life s).
    power_upgrades: tuple = ()

    def step_at_or_after(self, seconds: float) -> int:
        """The first step that starts at or after ``seconds``: where an event then takes effect."""
        return max(0, math.ceil(seconds / self.step_s - 1e-9))

    def reserved_after_horizon_usd(self) -> float:
        """What the reserved pools still owe after the horizon's end: count × price per
        GPU-second × the seconds of each term past the end (not billed in the outputs)."""
        total = 0.0
        for i, info in enumerate(self.pools):
            if self.kind[i] == KIND_RESERVED and info.reserved_end_s > self.horizon_s:
                after_s = info.reserved_end_s - max(info.reserved_start_s, self.horizon_s)
                total += float(self.pools_count[i]) * float(self.cloud_usd_gpu_s[i]) * after_s
        return total


def compile_scenario(scenario: Scenario) -> CompiledScenario:
    """Turn a validated scenario into engine inputs."""
    horizon = scenario.horizon
    pools = scenario.fleet.pools
    index = {pool.name: i for i, pool in enumerate(pools)}
    energy = scenario.energy
    tdp_kw = np.array([scenario.gpu(pool.gpu).tdp_w / 1000.0 for pool in pools], dtype=np.float64)
    owned = np.array([pool.owned for pool in pools], dtype=bool)
    meter = tdp_kw * energy.server_power_factor * energy.pue * owned
    plans = tuple(pool_plan(scenario, i) for i in range(len(pools)))
    changes = tuple(sorted(
        (PoolChange(i, horizon.offset_of(c.at), c.delta, c.service_delta, c.repair)
         for i, pool in enumerate(pools) for c in pool.changes),
        key=lambda change: (change.at_s, change.pool),
    ))
    orders = tuple(
        PoolOrder(i, horizon.offset_of(o.at), o.count, o.lead_time, o.slip)
        for i, pool in enumerate(pools) for o in pool.orders
    )
    caps = tuple(sorted((horizon.offset_of(cap.at), cap.mw * 1000.0) for cap in scenario.power.caps))
    models = scenario.models
    width = max((len(model.pools) for model in models), default=1) or 1
    preferences = np.full((len(models), width), -1, dtype=np.int64)
    for m, model in enumerate(models):
        preferences[m, : len(model.pools)] = [index[name] for name in model.pools]
    n_steps = horizon.n_steps
    demand = np.zeros((n_steps, len(models)), dtype=np.float64)
    revenue = np.zeros((n_steps, len(models)), dtype=np.float64)
    fixed_revenue = np.zeros((n_steps, len(models)), dtype=np.float64)
    subscribers = np.zeros((n_steps, len(models)), dtype=np.float64)
    mid_years = (np.arange(n_steps) + 0.5) * horizon.step_s / SECONDS_PER_YEAR
    for m, model in enumerate(models):
        demand[:, m] = expected_counts(model.demand, horizon)
        peak = float(demand[:, m].max(initial=0.0))
        if not peak <= MAX_REQUESTS_PER_STEP:
            raise ScenarioError(("models", m, "demand"), f"grows to {peak:.3g} requests in a step, beyond the "
                                f"{MAX_REQUESTS_PER_STEP:.0e} Fleetcast can count; check base_rps and growth")
        pricing = scenario.pricing_of(model)
        revenue[:, m] = model.revenue_per_request(scenario.pricing) * (1 - pricing.decline_per_year) ** mid_years
        if model.subscription is not None:
            per_subscriber_step = model.subscription.requests_per_day * horizon.step_s / 86_400.0
            subscribers[:, m] = expected_level_counts(model.demand, horizon) / per_subscriber_step
            fixed_revenue[:, m] = subscribers[:, m] * model.subscription.usd_per_month * horizon.step_s / SECONDS_PER_MONTH
    shapes = [[model.shape_on(name) for name in model.pools] for model in models]
    capacity = np.zeros((len(models), width), dtype=np.float64)
    gpus_per_replica = np.ones((len(models), width), dtype=np.int64)
    companion = np.zeros((len(models), width, 2), dtype=np.int64)
    companion[:, :, 0] = -1
    for m, row in enumerate(shapes):
        for j, shape in enumerate(row):
            capacity[m, j] = float(shape.capacity_rps or 0.0) * horizon.step_s
            gpus_per_replica[m, j] = shape.gpus_per_replica
            if shape.companion_pool is not None:
                companion[m, j] = index[shape.companion_pool], shape.companion_gpus
    spread = np.zeros((len(models), width), dtype=np.int64)
    headroom = np.zeros((len(models), width), dtype=np.float64)
    for m, model in enumerate(models):
        for j, name in enumerate(model.pools):
            spread[m, j], headroom[m, j] = spread_code(shapes[m][j].serving_policy or pools[index[name]].serving_policy)
    slo_load, slo_attainment = _slo_tables([[shape.slo_curve for shape in row] for row in shapes], width)
    api_mode = np.array([_api_mode(model) for model in models], dtype=np.int64)
    api_limit = np.array(
        [np.inf if model.api is None or model.api.rate_limit_rps is None else model.api.rate_limit_rps * horizon.step_s
         for model in models], dtype=np.float64)
    return CompiledScenario(
        n_steps=n_steps,
        step_s=horizon.step_s,
        horizon_s=n_steps * horizon.step_s,
        pool_names=tuple(pool.name for pool in pools),
        model_names=tuple(model.name for model in models),
        pools=plans,
        initial_count=np.array(
            [0 if plans[i].reserved_start_s > 0 else pool.count for i, pool in enumerate(pools)], dtype=np.int64
        ),
        pools_count=np.array([pool.count for pool in pools], dtype=np.int64),
        owned=owned,
        kind=np.array([plan.kind for plan in plans], dtype=np.int64),
        price_usd=np.array([purchase_price(pool.acquisition) for pool in pools], dtype=np.float64),
        life_s=np.array([depreciation_life_s(pool.acquisition) for pool in pools], dtype=np.float64),
        cloud_usd_gpu_s=np.array([rent_per_gpu_s(pool.acquisition) for pool in pools], dtype=np.float64),
        facility_usd_gpu_s=tdp_kw * energy.server_power_factor * owned
        * scenario.facility.usd_per_kw_month / SECONDS_PER_MONTH,
        busy_kw=meter * energy.draw_fraction,
        idle_kw=meter * energy.idle_fraction,
        changes=changes,
        orders=orders,
        power_caps=caps,
        contracts=tuple((index[c.pool], c) for c in scenario.contracts),
        contract_pipelines=tuple((index[c.pool], c) for c in scenario.contract_pipeline),
        rent_markets=tuple((index[m.pool], m) for m in scenario.markets.rent),
        purchase_markets=tuple((index[m.pool], m) for m in scenario.markets.purchase),
        api_markets=tuple(([model.name for model in models].index(m.model), m) for m in scenario.markets.api),
        month_starts_s=_month_starts_s(horizon),
        # A pool that serves a model or holds contracts is COGS; one that does neither exists for training.
        serves_model=np.isin(np.arange(len(pools)), preferences) | np.isin(np.arange(len(pools)), companion[:, :, 0]) | np.isin(
            np.arange(len(pools)), [index[c.pool] for c in (*scenario.contracts, *scenario.contract_pipeline)]),
        model_keys=tuple(stream_key(model.name) for model in models),
        capacity_per_step=capacity,
        gpus_per_replica=gpus_per_replica,
        companion=companion,
        preferences=preferences,
        revenue_per_request=revenue,
        fixed_revenue=fixed_revenue,
        subscribers=subscribers,
        api_mode=api_mode,
        api_limit_per_step=api_limit,
        api_cost_per_request=np.array([model.api_cost_per_request for model in models], dtype=np.float64),
        burst=_burst_codes(scenario, width),
        slo_load=slo_load,
        slo_attainment=slo_attainment,
        spread=spread,
        headroom=headroom,
        expected_demand=demand,
        noise=tuple(model.demand.noise for model in models),
        tokens_per_request=np.array(
            [model.demand.input_tokens + model.demand.output_tokens for model in models], dtype=np.float64
        ),
        inference_need=_inference_need(demand, preferences, capacity, gpus_per_replica, companion, len(pools)),
        training_mode=tuple(pool.training.mode for pool in pools),
        preempt=np.array([pool.training.mode == "preempt" for pool in pools], dtype=bool),
        training_partition=np.array(
            [pool.training.partition_gpus if pool.training.mode == "dedicated" else 0 for pool in pools], dtype=np.int64
        ),
        training_policy=scenario.training.policy,
        training_review_s=max(scenario.training.review_every, horizon.step_s),
        jobs=training_jobs(scenario, index),
        job_streams=training_streams(scenario, index),
        launches=tuple(
            (m, model.demand.start.after_job, model.demand.start.delay)
            for m, model in enumerate(models) if isinstance(model.demand.start, LaunchAfter)
        ),
        demands=tuple(model.demand for model in models),
        subscriptions=tuple(
            None if model.subscription is None else (model.subscription.requests_per_day, model.subscription.usd_per_month)
            for model in models
        ),
        horizon=horizon,
        usd_per_kwh=energy.usd_per_kwh,
        other_usd_s=scenario.other_costs.usd_per_month / SECONDS_PER_MONTH,
        day_offset_s=float((horizon.start - horizon.start.normalize()).total_seconds()),
        min_unserved_share=scenario.shortfall.min_unserved_share,
        power_upgrades=tuple((u.name, horizon.offset_of(u.at), u.lead_time, u.slip, u.mw * 1000.0, u.cost_usd,
                              u.depreciation_years * SECONDS_PER_YEAR)
                             for u in scenario.power.upgrades if u.at is not None),
    )


def launch_arrays(plan: CompiledScenario, model: int, launch_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A model's expected requests, subscribers and subscription revenue per step for a launch
    at ``launch_s`` (a launch that waited on a training job)."""
    demand, horizon = plan.demands[model], plan.horizon
    expected = expected_counts(demand, horizon, launch_s=launch_s)
    subscribers = np.zeros(plan.n_steps)
    revenue = np.zeros(plan.n_steps)
    if plan.subscriptions[model] is not None:
        per_day, usd_per_month = plan.subscriptions[model]
        subscribers = expected_level_counts(demand, horizon, launch_s=launch_s) / (per_day * plan.step_s / 86_400.0)
        revenue = subscribers * usd_per_month * plan.step_s / SECONDS_PER_MONTH
    return expected, subscribers, revenue


def _inference_need(demand: np.ndarray, preferences: np.ndarray, capacity: np.ndarray, gpus: np.ndarray,
                    companion: np.ndarray, n_pools: int) -> np.ndarray:
    """GPUs per step the models need on their first-choice pools (and a unit's companion pool there),
    from expected demand."""
    need = np.zeros((demand.shape[0], n_pools))
    for m in range(demand.shape[1]):
        if preferences[m, 0] < 0 or not capacity[m, 0] > 0:
            continue
        replicas = np.ceil(demand[:, m] / capacity[m, 0] * (1 - 1e-12))
        need[:, preferences[m, 0]] += replicas * gpus[m, 0]
        if companion[m, 0, 0] >= 0:
            need[:, companion[m, 0, 0]] += replicas * companion[m, 0, 1]
    return need


def _burst_codes(scenario: Scenario, width: int) -> np.ndarray:
    """Per (model, slot), the walks of a model that preempts training last (``preempt_after``):
    its first walk takes its ``preempt`` pools (on GPUs no job holds), the pools it names (or
    every rented pool, for ``rented``) and the pools it prefers to its first ``preempt`` pool."""
    pools = {pool.name: pool for pool in scenario.fleet.pools}
    codes = np.zeros((len(scenario.models), width), dtype=np.int64)
    for m, model in enumerate(scenario.models):
        preempting = [j for j, name in enumerate(model.pools) if pools[name].training.mode == "preempt"]
        if model.preempt_after is None or not preempting:
            continue
        for j, name in enumerate(model.pools):
            named = (not pools[name].owned if model.preempt_after == "rented" else name in model.preempt_after)
            first = j in preempting or named or j < preempting[0]
            codes[m, j] = BURST_FIRST if first else BURST_LATER
    return codes


def _api_mode(model) -> int:
    if model.api is None:
        return API_NONE
    return API_ALL if model.api.mode == "all" else API_OVERFLOW


def _slo_tables(curves: list[list], width: int) -> tuple[np.ndarray, np.ndarray]:
    """SLO curves per (model, preference slot) as equal-length rows starting at load 0; no
    curve means every request within the SLO."""
    rows = {}
    for m, row in enumerate(curves):
        for j, curve in enumerate(row):
            if curve is None:
                rows[m, j] = ([0.0, 1.0], [1.0, 1.0])
                continue
            load, attained = list(curve.load), list(curve.attainment)
            if load[0] > 0:
                load, attained = [0.0, *load], [attained[0], *attained]
            rows[m, j] = (load, attained)
    points = max((len(load) for load, _ in rows.values()), default=2)
    grid = np.tile(np.linspace(0.0, 1.0, points), (len(curves), width, 1))
    value = np.ones((len(curves), width, points))
    for (m, j), (load, attained) in rows.items():
        pad = points - len(load)
        # Pad by repeating the last point at slightly larger loads (keeps the grid increasing).
        grid[m, j] = load + [load[-1] + 1e-9 * (k + 1) for k in range(pad)]
        value[m, j] = attained + [attained[-1]] * pad
    return grid, value


__all__ = ["CompiledScenario", "compile_scenario"]


def _month_starts_s(horizon) -> np.ndarray:
    """Each calendar month's start inside the horizon, in seconds from its start (the first: 0)."""
    first = horizon.start.to_period("M").start_time
    starts = pd.date_range(first, horizon.end_time, freq="MS", inclusive="left")
    offsets = np.maximum((starts - horizon.start).total_seconds().to_numpy(), 0.0)
    return np.unique(offsets) if len(offsets) else np.zeros(1)
