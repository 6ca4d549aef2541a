"""A scenario compiled to the flat arrays and SI numbers the engine and kernels take.

Compiling once per run (not per path) keeps the per-path work to drawing random numbers
and moving the clock. Money is USD, time seconds, power kW at the meter (PUE included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.demand import expected_counts
from simulator.scenario import Scenario
from simulator.scenario.fleet import OnDemand, Owned
from simulator.units import SECONDS_PER_MONTH, SECONDS_PER_YEAR


@dataclass(frozen=True)
class PoolChange:
    """GPUs added (delta > 0) or removed (delta < 0) at ``at_s`` seconds from the start."""

    pool: int
    at_s: float
    delta: int


@dataclass(frozen=True)
class CompiledScenario:
    """Everything one path needs, as arrays indexed by pool and by model."""

    n_steps: int
    step_s: float
    horizon_s: float
    pool_names: tuple[str, ...]
    model_names: tuple[str, ...]
    # Pools.
    initial_count: np.ndarray  # int64
    owned: np.ndarray  # bool
    price_usd: np.ndarray  # purchase price per owned GPU
    life_s: np.ndarray  # straight-line depreciation life of owned GPUs
    cloud_usd_gpu_s: np.ndarray
    facility_usd_gpu_s: np.ndarray
    busy_kw: np.ndarray
    idle_kw: np.ndarray
    changes: tuple[PoolChange, ...]
    # Models.
    capacity_per_step: np.ndarray
    gpus_per_replica: np.ndarray  # int64
    preferences: np.ndarray  # int64 (n_models, max pools), -1 padded
    revenue_per_request: np.ndarray
    slo_load: np.ndarray  # (n_models, points): per-replica load grid of the SLO curve
    slo_attainment: np.ndarray  # (n_models, points): share of requests within the SLO
    expected_demand: np.ndarray  # (n_steps, n_models) expected requests per step
    noise: tuple[str, ...]
    # Scalars.
    usd_per_kwh: float
    other_usd_s: float


def compile_scenario(scenario: Scenario) -> CompiledScenario:
    """Turn a validated scenario into engine inputs."""
    horizon = scenario.horizon
    pools = scenario.fleet.pools
    index = {pool.name: i for i, pool in enumerate(pools)}
    energy = scenario.energy
    tdp_kw = np.array([scenario.gpu(pool.gpu).tdp_w / 1000.0 for pool in pools], dtype=np.float64)
    owned = np.array([pool.owned for pool in pools], dtype=bool)
    meter = tdp_kw * energy.server_power_factor * energy.pue * owned
    changes = tuple(
        sorted(
            (
                PoolChange(i, horizon.offset_of(change.at), change.delta)
                for i, pool in enumerate(pools)
                for change in pool.changes
            ),
            key=lambda change: (change.at_s, change.pool),
        )
    )
    models = scenario.models
    width = max((len(model.pools) for model in models), default=1)
    preferences = np.full((len(models), width), -1, dtype=np.int64)
    for m, model in enumerate(models):
        preferences[m, : len(model.pools)] = [index[name] for name in model.pools]
    slo_load, slo_attainment = _slo_tables(models)
    demand = np.zeros((horizon.n_steps, len(models)), dtype=np.float64)
    for m, model in enumerate(models):
        demand[:, m] = expected_counts(model.demand, horizon)
    return CompiledScenario(
        n_steps=horizon.n_steps,
        step_s=horizon.step_s,
        horizon_s=horizon.n_steps * horizon.step_s,
        pool_names=tuple(pool.name for pool in pools),
        model_names=tuple(model.name for model in models),
        initial_count=np.array([pool.count for pool in pools], dtype=np.int64),
        owned=owned,
        price_usd=np.array([_price(pool.acquisition) for pool in pools], dtype=np.float64),
        life_s=np.array([_life_s(pool.acquisition) for pool in pools], dtype=np.float64),
        cloud_usd_gpu_s=np.array([_rent(pool.acquisition) for pool in pools], dtype=np.float64),
        facility_usd_gpu_s=tdp_kw * energy.server_power_factor * owned
        * scenario.facility.usd_per_kw_month / SECONDS_PER_MONTH,
        busy_kw=meter * energy.draw_fraction,
        idle_kw=meter * energy.idle_fraction,
        changes=changes,
        capacity_per_step=np.array(
            [float(model.capacity_rps or 0.0) * horizon.step_s for model in models], dtype=np.float64
        ),
        gpus_per_replica=np.array([model.gpus_per_replica for model in models], dtype=np.int64),
        preferences=preferences,
        revenue_per_request=np.array(
            [model.revenue_per_request(scenario.pricing) for model in models], dtype=np.float64
        ),
        slo_load=slo_load,
        slo_attainment=slo_attainment,
        expected_demand=demand,
        noise=tuple(model.demand.noise for model in models),
        usd_per_kwh=energy.usd_per_kwh,
        other_usd_s=scenario.other_costs.usd_per_month / SECONDS_PER_MONTH,
    )


def _slo_tables(models) -> tuple[np.ndarray, np.ndarray]:
    """SLO curves as equal-length rows, starting at load 0; no curve means all within the SLO."""
    curves = []
    for model in models:
        if model.slo_curve is None:
            curves.append(([0.0, 1.0], [1.0, 1.0]))
            continue
        load, attained = list(model.slo_curve.load), list(model.slo_curve.attainment)
        if load[0] > 0:
            load, attained = [0.0, *load], [attained[0], *attained]
        curves.append((load, attained))
    width = max((len(load) for load, _ in curves), default=2)
    grid = np.zeros((len(models), width))
    value = np.ones((len(models), width))
    for m, (load, attained) in enumerate(curves):
        pad = width - len(load)
        # Pad by repeating the last point at slightly larger loads (keeps the grid increasing).
        grid[m] = load + [load[-1] + 1e-9 * (k + 1) for k in range(pad)]
        value[m] = attained + [attained[-1]] * pad
    return grid, value


def _price(acquisition: Owned | OnDemand) -> float:
    return float(acquisition.price_usd or 0.0) if isinstance(acquisition, Owned) else 0.0


def _life_s(acquisition: Owned | OnDemand) -> float:
    if isinstance(acquisition, Owned):
        return acquisition.depreciation_years * SECONDS_PER_YEAR
    return np.inf


def _rent(acquisition: Owned | OnDemand) -> float:
    if isinstance(acquisition, OnDemand):
        return float(acquisition.usd_per_gpu_hour or 0.0) / 3600.0
    return 0.0
