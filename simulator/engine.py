"""One Monte Carlo path: a SimPy environment, the fleet on it, and the step clock.

The engine only wires components onto one clock and runs it. Events (deliveries,
retirements, end of depreciation) are SimPy processes that change the :class:`FleetState`;
before each change the :class:`StepClock` integrates, in one numba call, every step from the
previous change up to this event with the fleet as it was. An event at time ``t`` takes
effect from the first step that starts at or after ``t``.

The engine knows no YAML and no files: it takes a :class:`CompiledScenario` and a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from simulator.compiled import CompiledScenario
from simulator.demand import sample_counts
from simulator.fleet import FleetState
from simulator.kernels import N_MODEL_COLS, N_POOL_COLS, integrate_interval

# Independent random streams of a path; a stream's draws never shift another's.
STREAM_DEMAND = 0


@dataclass
class PathResult:
    """Raw arrays of one path, turned into tables by :mod:`simulator.results`."""

    path: int
    pool_out: np.ndarray  # (n_steps, n_pools, N_POOL_COLS)
    model_out: np.ndarray  # (n_steps, n_models, N_MODEL_COLS)
    other_out: np.ndarray  # (n_steps,)


def path_generator(seed: int, path: int, stream: int, *extra: int) -> np.random.Generator:
    """The generator of one stream of one path: child ``(path, stream, ...)`` of ``seed``.

    ``SeedSequence(seed, spawn_key=(path,))`` is the ``path``-th child of
    ``SeedSequence(seed).spawn(...)``, so a path's draws depend only on the seed and its index,
    never on how many workers ran or in which order.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(path, stream, *extra)))


class StepClock:
    """Integrates steps up to the current event with the fleet held fixed."""

    def __init__(self, env: simpy.Environment, plan: CompiledScenario, demand: np.ndarray) -> None:
        self.env = env
        self.plan = plan
        self.demand = demand
        self.fleet: FleetState | None = None
        self.next_step = 0
        n_pools, n_models = len(plan.pool_names), len(plan.model_names)
        self.pool_out = _output_array((plan.n_steps, n_pools, N_POOL_COLS))
        self.model_out = _output_array((plan.n_steps, n_models, N_MODEL_COLS))
        self.other_out = _output_array((plan.n_steps,))
        self.kernel_calls = 0

    def advance(self) -> None:
        """Integrate every step that starts before now."""
        end = min(_first_step_at_or_after(self.env.now, self.plan.step_s), self.plan.n_steps)
        if end <= self.next_step or self.fleet is None:
            return
        fleet, plan = self.fleet, self.plan
        integrate_interval(
            self.next_step,
            end,
            plan.step_s,
            self.demand,
            plan.capacity_per_step,
            plan.gpus_per_replica,
            plan.preferences,
            plan.revenue_per_request,
            plan.slo_load,
            plan.slo_attainment,
            fleet.installed,
            fleet.available,
            fleet.training,
            fleet.depreciation_usd_s,
            plan.cloud_usd_gpu_s,
            plan.facility_usd_gpu_s,
            plan.busy_kw,
            plan.idle_kw,
            plan.usd_per_kwh,
            plan.other_usd_s,
            self.pool_out,
            self.model_out,
            self.other_out,
        )
        self.kernel_calls += 1
        self.next_step = end


def _output_array(shape: tuple[int, ...]) -> np.ndarray:
    """A zeroed array for kernel output, backed by ordinary (not transparent huge) pages.

    NumPy asks the kernel for transparent huge pages on large arrays; where the kernel then
    compacts memory on the first touch (``defrag=madvise``), filling a year of minute steps
    took 0.3 s instead of 0.05 s on the CI machine (benchmarks/bench_engine.py). The
    kernel fills these arrays once, sequentially, so small pages cost nothing here.
    """
    toggle = getattr(getattr(np, "_core", np).multiarray, "_set_madvise_hugepage", None)
    if toggle is None:
        return np.zeros(shape)
    previous = toggle(False)
    try:
        return np.zeros(shape)
    finally:
        toggle(previous)


def _first_step_at_or_after(seconds: float, step_s: float) -> int:
    return max(0, int(np.ceil(seconds / step_s - 1e-9)))


def draw_demand(plan: CompiledScenario, seed: int, path: int) -> np.ndarray:
    """Requests per step for every model, from the path's demand streams."""
    demand = np.empty_like(plan.expected_demand)
    for m, noise in enumerate(plan.noise):
        rng = path_generator(seed, path, STREAM_DEMAND, m)
        demand[:, m] = sample_counts(plan.expected_demand[:, m], noise, rng)
    return demand


def _scheduled_change(env: simpy.Environment, fleet: FleetState, pool: int, at_s: float, delta: int):
    yield env.timeout(at_s)
    if delta > 0:
        fleet.add(pool, delta)
    else:
        fleet.remove(pool, -delta)


def run_path(plan: CompiledScenario, seed: int, path: int) -> PathResult:
    """Simulate one path of a compiled scenario."""
    env = simpy.Environment()
    clock = StepClock(env, plan, draw_demand(plan, seed, path))
    fleet = FleetState(env, plan, clock.advance)
    clock.fleet = fleet
    for change in plan.changes:
        if change.at_s < plan.horizon_s:
            env.process(_scheduled_change(env, fleet, change.pool, change.at_s, change.delta))
    env.run(until=plan.horizon_s)
    clock.advance()
    return PathResult(path, clock.pool_out, clock.model_out, clock.other_out)
