"""One Monte Carlo path: a SimPy environment, the fleet on it, and the step clock.

The engine only wires components onto one clock and runs it. Events (deliveries, orders,
retirements, failures and repairs, spot preemptions, autoscaling, power caps, reserved
terms, end of depreciation) are SimPy processes that change the :class:`FleetState`;
before each change the :class:`StepClock` integrates, in one numba call, every step from the
previous change up to this event with the fleet as it was. A fleet change at time ``t``
inside a step serves the part of the step after ``t`` (the step's figures mix the fleets by
time, :mod:`simulator.path.intra_step`); training's events take effect from the first step
that starts at or after them.

Where training runs in a ``preempt`` pool, inference comes first in every step, judged on
that step's drawn demand: the clock then integrates ahead to the next event before SimPy
moves (nothing can change the fleet in between), and a step where inference needs GPUs that
jobs hold ends the integration there; the jobs are preempted at that step's start and the
step is integrated after. So a job yields in the very step its GPUs are needed.

The engine knows no YAML and no files: it takes a :class:`CompiledScenario` and a seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from simulator.economics.assets import AssetLog
from simulator.path.compiled import CompiledScenario
from simulator.path.demand_draws import demand_factor, draw_demand
from simulator.path.fleet import FleetState
from simulator.path.fleet.autoscaler import autoscaler
from simulator.path.fleet.changes import scheduled_change, start_changes
from simulator.path.fleet.contracts import start_contracts
from simulator.path.fleet.outages import OutageChannels
from simulator.path.fleet.power import start_power
from simulator.path.fleet.procurement import dated_order, delivery_delay, procurement_policy
from simulator.path.fleet.replan import replan_policy
from simulator.path.intra_step import IntraStepMixer
from simulator.path.kernels import (
    MODEL_SERVED,
    N_MODEL_COLS,
    N_POOL_COLS,
    integrate_interval,
    step_scratch,
)
from simulator.path.markets import start_markets
from simulator.path.outage_kernel import CH_DOWN, CH_OUTAGES, CH_POOL, CH_REPAIRS
from simulator.path.streams import (
    STREAM_FAILURES,
    STREAM_ORDERS,
    STREAM_PREEMPTION,
    path_generator,
    stream_key,
)
from simulator.path.training.driver import CompiledTraining
from simulator.path.training.loop_layout import SEQ_BITS
from simulator.path.training.runtime import start_training


@dataclass
class PathResult:
    """Raw arrays of one path, turned into tables by :mod:`simulator.path.tables`."""

    path: int
    pool_out: np.ndarray  # (n_steps, n_pools, N_POOL_COLS)
    model_out: np.ndarray  # (n_steps, n_models, N_MODEL_COLS)
    other_out: np.ndarray  # (n_steps,)
    capex: np.ndarray  # (n_steps, n_pools): purchases paid at delivery, USD
    orders: list  # (order time s, pool, GPUs, delivery time s) of policy orders
    training_queued: np.ndarray | None = None  # (n_steps,) jobs waiting
    training_running: np.ndarray | None = None  # (n_steps,) jobs running
    jobs: list = field(default_factory=list)  # simulator.path.training.jobs.Job
    served_tokens: np.ndarray | None = None  # (n_steps,)
    subscribers: np.ndarray | None = None  # (n_steps, n_models)
    inputs: dict = field(default_factory=dict)  # uncertain inputs drawn for this path
    outages: int = 0  # failures and preemptions that took GPUs down
    repairs: int = 0
    kernel_calls: int = 0
    asset_log: AssetLog = field(default_factory=AssetLog)  # owned GPUs, sales and orders, for the books
    contracts: list = field(default_factory=list)  # each contract term run (economics.contracts.ContractTerm)
    market_rates: list = field(default_factory=list)  # (pool, rate per GPU-hour of each month) where markets move
    power_upgrades: list = field(default_factory=list)  # (name, energized s, USD, life s) of upgrades energized


class StepClock:
    """Integrates steps up to the current event with the fleet held fixed."""

    def __init__(self, env: simpy.Environment, plan: CompiledScenario, demand: np.ndarray,
                 outages: OutageChannels) -> None:
        self.env = env
        self.plan = plan
        self.demand = demand
        self.outages = outages
        self.fleet: FleetState | None = None
        # Per-path copies where a launch waiting on a training job changes them mid-run.
        launches = bool(plan.launches)
        self.fixed_revenue = plan.fixed_revenue.copy() if launches else plan.fixed_revenue
        self.subscribers = plan.subscribers.copy() if launches else plan.subscribers
        self.expected = plan.expected_demand.copy() if launches else plan.expected_demand
        # Per model, its day-to-day volatility factor per step (or 1.0); set where a forecast needs it.
        self.level: list | None = None
        self.next_step = 0
        # The step kernel's working arrays, made once for the path.
        self.scratch = step_scratch(len(plan.pool_names), plan.preferences.shape[0], plan.preferences.shape[1])
        # Rent per GPU-second now: the plan's, or this month's where a market moves it.
        self.cloud_usd_gpu_s = plan.cloud_usd_gpu_s.copy()
        self.api_cost_per_request = plan.api_cost_per_request.copy()  # where API prices move (markets.api)
        # Preemption by inference: a step from ``stop_from`` on where inference needs GPUs that jobs
        # hold in a preempt pool is left for ``on_stop(step)`` to preempt at its start, first.
        self.stop_from = 0
        self.on_stop: Callable[[int], bool] = lambda step: False
        self._stop_pending = False
        n_pools, n_models = len(plan.pool_names), len(plan.model_names)
        self.pool_out = _output_array((plan.n_steps, n_pools, N_POOL_COLS))
        self.model_out = _output_array((plan.n_steps, n_models, N_MODEL_COLS))
        self.other_out = _output_array((plan.n_steps,))
        self.kernel_calls = 0
        self.training = None  # a CompiledTraining, whose events run between the steps

    def advance(self, until_s: float | None = None, until_key: int = -1) -> None:
        """Integrate every step that starts before now (or before ``until_s``), unless one needs
        jobs preempted first: then stop there and preempt them at its start. With compiled
        training, its events before that instant run between the steps (and those at it whose
        SimPy key is below ``until_key``, see :mod:`simulator.path.training.loop`)."""
        now = self.env.now if until_s is None else until_s
        if self.training is not None:
            if self.fleet is not None:
                self.training.advance(self, now, until_key)
            return
        if now <= (self.next_step + 1e-9) * self.plan.step_s:  # no step starts before now that is not done
            return
        end = min(self.plan.step_at_or_after(now), self.plan.n_steps)
        if end <= self.next_step or self.fleet is None or self._stop_pending:
            return
        self.outages.prepare(self.next_step, end, self.fleet.installed)
        reached = integrate_interval(self.next_step, end, *self.kernel_args(self.stop_from), self.scratch, 0)
        self.kernel_calls += 1
        self.next_step = reached
        if reached < end:
            self._stop_pending = True
            self.env.process(self._preempt_at(reached))

    def kernel_args(self, stop_from: int) -> tuple:
        """The step kernel's arguments after its first and last step, with the fleet as it is."""
        fleet, plan, outages = self.fleet, self.plan, self.outages
        return (
            plan.step_s,
            self.demand,
            plan.capacity_per_step,
            plan.gpus_per_replica,
            plan.companion,
            plan.preferences,
            plan.revenue_per_request,
            self.fixed_revenue,
            plan.api_mode,
            plan.api_limit_per_step,
            self.api_cost_per_request,
            plan.burst,
            plan.slo_load,
            plan.slo_attainment,
            plan.spread,
            plan.headroom,
            fleet.installed,
            fleet.failed,
            fleet.out_of_service,
            fleet.is_spot,
            fleet.blocked,
            fleet.training,
            fleet.training_floor,
            fleet.contracted,
            fleet.contract_busy,
            plan.preempt,
            stop_from,
            plan.serves_model,
            fleet.depreciation_usd_s,
            self.cloud_usd_gpu_s,
            plan.facility_usd_gpu_s,
            plan.busy_kw,
            plan.idle_kw,
            plan.usd_per_kwh,
            plan.other_usd_s,
            outages.ints,
            outages.floats,
            outages.heap_time,
            outages.heap_count,
            outages.expo,
            outages.repair,
            self.pool_out,
            self.model_out,
            self.other_out,
        )

    def _preempt_at(self, step: int):
        yield self.env.timeout(max(0.0, step * self.plan.step_s - self.env.now))
        self._stop_pending = False
        if not self.on_stop(step):  # nothing to preempt after all: integrate the step as it is
            self.stop_from = step + 1

    def requests_at(self, step: int) -> np.ndarray:
        """The drawn requests of every model in ``step``."""
        return self.demand[min(step, self.plan.n_steps - 1)]

    def forecast_rows(self, first: int, last: int) -> np.ndarray:
        """Expected requests of every model in steps ``first..last``, one row per step, as known
        at ``first``: the scenario's pattern times the day-to-day level seen then (a
        persistence forecast)."""
        rows = self.expected[first:min(last, self.plan.n_steps - 1) + 1]
        if self.level is None:
            return rows.copy()
        seen = min(first, self.plan.n_steps - 1)
        return rows * np.array([lv if np.isscalar(lv) else lv[seen] for lv in self.level])


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


def _no_training(plan: CompiledScenario) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(plan.n_steps, dtype=np.int64), np.zeros(plan.n_steps, dtype=np.int64)


def _run_integrating_ahead(env: simpy.Environment, clock: StepClock, horizon: float) -> None:
    """Run to the horizon, integrating up to each event before SimPy processes it.

    Between two events nothing changes the fleet, so integrating early is integrating with
    the fleet as it was; what it gains is that a step where inference needs GPUs that jobs hold
    is found before SimPy passes its start, and the preemption lands at that very step.
    """
    while True:
        at = env.peek()
        if at < horizon:
            _, priority, eid, _ = env._queue[0]  # SimPy's order at one instant: priority, then event id
            clock.advance(at, priority * SEQ_BITS + eid)
        else:
            clock.advance(horizon)
        if env.peek() >= horizon:  # (the advance may have scheduled a preemption or a launch)
            return
        env.step()


def _outage_channels(plan: CompiledScenario, seed: int, path: int) -> OutageChannels:
    """Hardware failures and spot preemptions of every pool that has them."""
    channels = []
    for pool, info in enumerate(plan.pools):
        if info.failures is not None:
            failures = info.failures
            channels.append((pool, failures.rate_per_gpu_hour, failures.blast_radius, failures.repair,
                             path_generator(seed, path, STREAM_FAILURES, info.key)))
        if info.spot is not None:
            channels.append((pool, info.spot.preemption_rate_per_gpu_hour, 1, info.spot.replacement,
                             path_generator(seed, path, STREAM_PREEMPTION, info.key)))
    return OutageChannels(channels, plan.n_steps, plan.step_s)


def run_path(plan: CompiledScenario, seed: int, path: int, training_loop: str = "compiled") -> PathResult:
    """Simulate one path of a compiled scenario.

    ``training_loop``: ``"compiled"`` runs training's events in the compiled loop between the
    steps; ``"simpy"`` runs them as SimPy processes, the reference it must agree with.
    """
    if training_loop not in ("compiled", "simpy"):
        raise ValueError(f"training_loop must be 'compiled' or 'simpy', got {training_loop!r}")
    env = simpy.Environment()
    outages = _outage_channels(plan, seed, path)
    clock = StepClock(env, plan, draw_demand(plan, seed, path), outages)
    mixer = IntraStepMixer(clock)
    fleet = FleetState(env, plan, clock.advance, lambda: mixer.after_change(env.now))
    fleet.outage_down = outages.ints[:, CH_DOWN]
    fleet.outage_pool = outages.ints[:, CH_POOL]
    clock.fleet = fleet
    horizon = plan.horizon_s
    upgrades = start_power(env, fleet, plan, seed, path)
    for pool, count in enumerate(plan.initial_count):
        if count:
            fleet.deliver(pool, int(count), starting=plan.pools[pool].starting)
    start_changes(env, fleet, plan, seed, path)
    on_order = np.zeros(len(plan.pool_names), dtype=np.int64)
    orders_log: list = []
    for pool, info in enumerate(plan.pools):
        if info.reserved_start_s > 0 and info.reserved_start_s < horizon:
            env.process(scheduled_change(env, fleet, pool, info.reserved_start_s, int(plan.pools_count[pool])))
        if info.reserved_end_s < horizon:
            env.process(scheduled_change(env, fleet, pool, info.reserved_end_s, -int(plan.pools_count[pool])))
        order_rng = path_generator(seed, path, STREAM_ORDERS, info.key)
        for order in (o for o in plan.orders if o.pool == pool):
            delay = delivery_delay(order.lead_s, order.slip, order_rng)
            env.process(dated_order(env, fleet, pool, order.at_s, order.count, delay, on_order, lead_s=order.lead_s))
        if info.procurement is not None and info.procurement.policy == "replan":
            env.process(replan_policy(env, fleet, plan, pool, order_rng, on_order, orders_log, clock.demand))
        elif info.procurement is not None:
            env.process(procurement_policy(env, fleet, plan, pool, order_rng, on_order, orders_log))
        if info.autoscale is not None:
            fill_rng = (path_generator(seed, path, STREAM_ORDERS, stream_key("fill:" + info.name))
                        if info.availability is not None else None)
            env.process(autoscaler(env, fleet, plan, pool, clock, fill_rng))
    market_rates = start_markets(env, fleet, clock, plan, seed, path)
    contract_log = start_contracts(env, fleet, plan, seed, path, horizon)
    if any(info.autoscale is not None and info.autoscale.policy == "predictive" for info in plan.pools):
        clock.level = [demand_factor(plan, m, seed, path) for m in range(len(plan.model_names))]
    generator = lambda stream, key: path_generator(seed, path, stream, key)  # noqa: E731
    if training_loop == "compiled":
        compiled = CompiledTraining(env, clock, fleet, plan, generator)
        if compiled.jobs:
            clock.training = compiled
            _run_integrating_ahead(env, clock, horizon)
        else:
            env.run(until=horizon)
        clock.advance(horizon)
        queued, running, jobs = compiled.finish() if compiled.jobs else (*_no_training(plan), [])
    else:  # the SimPy processes of simulator.path.training.scheduler: the reference
        training = start_training(env, fleet, clock, plan, generator)
        if training.jobs:  # a job's decision sees failures up to the step it falls in
            _run_integrating_ahead(env, clock, horizon)
        else:
            env.run(until=horizon)
        clock.advance(horizon)
        queued, running = training.per_step(plan.n_steps, plan.step_s)
        jobs = training.jobs
        for job in jobs:  # plain records from here on: results cross process boundaries
            job.process = job.finished = None
    return PathResult(path, clock.pool_out, clock.model_out, clock.other_out, fleet.capex, orders_log,
                      training_queued=queued, training_running=running, jobs=jobs,
                      served_tokens=clock.model_out[:, :, MODEL_SERVED] @ plan.tokens_per_request,
                      subscribers=clock.subscribers,
                      outages=int(outages.ints[:, CH_OUTAGES].sum()), repairs=int(outages.ints[:, CH_REPAIRS].sum()),
                      kernel_calls=clock.kernel_calls, asset_log=fleet.log, contracts=contract_log,
                      market_rates=market_rates, power_upgrades=upgrades)
