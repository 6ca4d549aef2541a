"""The slow, obviously-correct reference of Fleetcast's step model: one SimPy tick per step.

This module is an *independent* check on the fast engine (``simulator.path.engine.run_path`` and
its numba kernel). It is written from the model's specification, not from the engine's code,
and it deliberately does everything the simplest possible way:

* a SimPy process wakes once per time step (``env.timeout(step_s)``) and computes that step
  in plain Python floats and ints — no numpy, no numba, no vectorisation;
* every pool change (add / remove N GPUs, take N out of service / back in service, GPUs an
  autoscaler asked for coming into service) and every end of a purchase's depreciation life
  is its own SimPy process that waits for its instant and then changes the fleet;
* autoscaling decisions and training jobs are plain-Python state machines (in
  ``reference_operations.py``) that act once per step, at fixed phases of the step (a
  decision's request without delay, or its release, changes the pool there and then).

It reads the validated :class:`simulator.scenario.Scenario` directly (it never imports
``simulator.path.kernels``, ``simulator.path.compiled`` or ``simulator.path.fleet``) and takes the demand
per step as an input array, so a caller can feed it the very same noisy draws the engine used
(``simulator.path.engine.draw_demand``).

Timing rule. Step ``k`` covers ``[k·step, (k+1)·step)``. An event at ``t`` seconds takes effect
from step ``ceil(t / step)`` (the first step starting at or after ``t``), computed exactly with
rationals. To make the order of events unambiguous, everything that belongs to step ``k``
happens at a fixed phase of it: at ``k·step`` each event process that takes effect in step
``k`` applies its change; at ``(k + ¼)·step`` the autoscalers take their decision for step
``k`` (pool order); at ``(k + ⅜)·step`` training acts (ends, submissions, queue examinations,
preemptions); at ``(k + ½)·step`` the tick computes step ``k``. So a change always precedes
a decision or a job start at the same instant, and GPUs arriving at a decision's instant are
in service (not pending) for it. Events that would take effect at or after the end of the
horizon are never scheduled.

Model (per step ``k``, each model ``m`` in listed order; one replica shape per model, as in the
scenarios it is compared on; per-pool shapes are checked by hand in tests/test_replica_shapes.py):
    needed   = ceil(d / c × (1 − 1e-12)) (0 if d = 0), with ``c = capacity_rps × step_s``
    replicas are placed on the model's pools in preference order, ``min(needed − placed,
    free_p // gpus_per_replica)`` on each, ``free_p`` starting at available − training
    (available in a ``preempt`` pool: its jobs' GPUs are open to inference) and shared by
    all models (the first listed takes first);
    served   = d if placed = needed else placed·c, unserved = d − served, shortfall = (needed − placed)·gpus,
    revenue  = served × revenue_per_request;
    busy_p  += (min(d, after_p·c) − min(d, before_p·c)) / c × gpus   (replicas filled in turn).
Per pool: inference = GPUs of replicas placed; idle = available − training − inference;
utilization = busy / available. Owned pools: each purchase (the initial ``count`` at t = 0,
or at ``in_service_since`` before the start; each addition at its time) is a cohort
depreciating ``price / life`` USD per GPU-second (the initial one: ``book_value_usd`` over
count × life left, if given) for ``life = depreciation_years × 365.25 d`` after purchase; removals retire the oldest cohorts'
GPUs first (whether or not their life is over) and stop their depreciation; energy
``(busy·kW_busy + (available − busy)·kW_idle) × hours`` at ``usd_per_kwh``; facility
``installed × TDP × server_power_factor × usd_per_kw_month / month``. GPUs out of service
(``out_of_service`` changes, back with ``back_in_service``; ``repair`` draws are not modelled
here) stay installed, so depreciation and facility go on, but they are not available:
``available = installed − out_of_service``, drawing no energy. On-demand pools:
``installed × usd_per_gpu_hour`` prorated, nothing else. Other costs are fleet-wide
``usd_per_month / month`` prorated; a month is a year of 365.25 days over 12.
R&D (training) cost: a pool no model lists exists for training, so all of its cost, idle
GPUs included, is R&D; in a pool some model lists, only the training GPUs' share is:
``training / installed`` of depreciation, rent and facility, and their energy at full draw
(``training × kW_busy × hours``); the rest is COGS.

Autoscaling (an ``on_demand`` pool with ``autoscale``; intervals in whole steps). Decisions at
``t = 0, interval, 2·interval, …`` (default: the step), each for step ``k = ceil(t / step)``
(none once ``k ≥ n_steps``); ``last = max(k, min(ceil((t + interval + delay) / step) − 1,
n_steps − 1))``. Wanted GPUs: ``reactive`` sized(drawn demand of step k); ``predictive`` the
most over ``s = k..last`` of sized(expected[s] × (1 + margin)), ``expected`` the noiseless
``simulator.demand.expected_counts`` (no volatility); ``scheduled`` the most over ``k..last``
of the schedule's value of step s, the most of its entries over the UTC hours the step
overlaps (24 entries: hour of day; 168: hour of week from Monday 00:00). sized(requests):
place every model as above with the fleet as it stands but this pool unbounded; for each
model with load ``L > 0`` on this pool, ``max(1, ceil(L / (c × target_utilization) ×
(1 − 1e-12)))`` replicas × gpus_per_replica. To wanted are added the pool's GPUs out of
service and, but for a schedule, the GPUs its running jobs hold. desired = ``min(max(ceil(wanted / node) · node,
least), most)``, ``most = floor(max_count / node) · node``, ``least = min(ceil(min_count /
node) · node, most)`` (min_count, max_count default to the count); keep = the most desired
over the decisions in ``[t − scale_down_cooldown, t]``. Only if ``t − last action ≥ cooldown``
(default 1 h reactive, 0 otherwise; the first decision may act): if desired > installed +
pending, ask for the difference — in service at once with no delay, else pending until
``t + delay`` and in service from the step starting at or after it; elif keep < installed and
nothing is pending, release ``installed − keep`` now. Either is an action at ``t``.

Training (explicit ``training.jobs`` in ``leftover`` / ``preempt`` pools, fifo, no failures,
checkpoint_time 0; submissions, durations, checkpoint intervals, restart times and
review_every in whole steps, so everything happens at step starts). A job runs on
``gpus`` GPUs of its pool at once. At step ``k``'s start, in this order: running jobs whose
work is done end; jobs submitted now join their pool's queue (submission order); the queue of
every pool where a job ended or was submitted, or of every pool when ``k`` is a multiple of
review_every, is examined: FIFO head of line (the first job that does not fit blocks the
rest) on ``free = available − held − need``, ``need`` = the GPUs inference places on the pool
for step ``k``'s drawn demand with the fleet as it is (every model on all its pools, as
above). Then, in ``preempt`` pools where ``need > available − held``, running jobs are
preempted (lowest priority, then latest (re)started, then latest submitted first) until it
is covered, and the queue is examined again. A preempted job keeps the work of the whole
checkpoint intervals it completed since it (re)started (nothing during its restart), goes
back to the queue in submission order, and spends ``restart_time`` before working when it
restarts. A job's GPUs are training in every step from its start until its end or
preemption; ``leftover`` pools never preempt, inference makes do with what jobs leave.
Each job's first start, end, preemptions and checkpointed work at the horizon are returned.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import simpy
from reference_operations import (
    REPLICA_SLACK,
    Autoscaler,
    Training,
    effect_step,
    expected_per_step,
    open_to_inference,
    place,
)

SECONDS_PER_DAY = 86_400.0
SECONDS_PER_YEAR = 365.25 * SECONDS_PER_DAY
SECONDS_PER_MONTH = SECONDS_PER_YEAR / 12.0

POOL_KEYS = (
    "installed",
    "available",
    "training",
    "inference",
    "idle",
    "busy",
    "utilization",
    "depreciation",
    "cloud",
    "energy",
    "energy_kwh",
    "facility",
    "cost",
    "rnd",
)
MODEL_KEYS = ("demand", "served", "unserved", "replicas", "shortfall_gpus", "revenue")


def revenue_per_request(scenario: Any, model: Any) -> float:
    """USD per served request of mean length: tokens × price per million tokens.

    The model's own ``pricing`` if it has one, else the scenario's.
    """
    price = model.pricing if model.pricing is not None else scenario.pricing
    demand = model.demand
    return (
        demand.input_tokens * price.input_usd_per_1m
        + demand.output_tokens * price.output_usd_per_1m
    ) / 1e6


class Cohort:
    """Owned GPUs bought at one instant; ``expired`` once their depreciation life is over."""

    def __init__(self, bought_s: float, count: int, usd_per_gpu_s: float) -> None:
        self.bought_s = bought_s
        self.count = count
        self.usd_per_gpu_s = usd_per_gpu_s
        self.expired = False


class Pool:
    """Plain-Python state of one pool."""

    def __init__(self, spec: Any, scenario: Any) -> None:
        acquisition = spec.acquisition
        self.name = spec.name
        self.serves_model = any(spec.name in model.pools for model in scenario.models)
        self.owned = acquisition.type == "owned"
        self.mode = spec.training.mode
        self.preempt = self.mode == "preempt"  # inference comes first: jobs' GPUs are open to it
        if self.mode == "dedicated" and spec.training.partition_gpus:
            raise ValueError(f"pool {spec.name!r}: the reference runs no dedicated partitions")
        if acquisition.type == "reserved":
            begins, ends = acquisition.bounds_s(scenario.horizon)
            if begins > 0 or ends < scenario.horizon.n_steps * scenario.horizon.step_s:
                raise ValueError(f"pool {spec.name!r}: the reference takes reserved terms covering the horizon")
        self.installed = 0
        self.out_of_service = 0
        self.training = 0  # GPUs running jobs hold
        self.cohorts: list[Cohort] = []  # oldest first
        tdp_kw = scenario.gpu(spec.gpu).tdp_w / 1000.0
        energy = scenario.energy
        if self.owned:
            self.price = float(acquisition.price_usd or 0.0)
            self.life_s = acquisition.depreciation_years * 365.25 * 86400.0
            self.usd_per_gpu_s = self.price / self.life_s
            self.cloud_usd_gpu_s = 0.0
            kw_at_meter = tdp_kw * energy.server_power_factor * energy.pue
            self.kw_busy = kw_at_meter * energy.draw_fraction
            self.kw_idle = kw_at_meter * energy.idle_fraction
            self.facility_usd_gpu_s = (
                tdp_kw
                * energy.server_power_factor
                * scenario.facility.usd_per_kw_month
                / SECONDS_PER_MONTH
            )
        else:
            self.price = 0.0
            self.life_s = math.inf
            self.usd_per_gpu_s = 0.0
            self.cloud_usd_gpu_s = float(acquisition.usd_per_gpu_hour or 0.0) / 3600.0
            self.kw_busy = self.kw_idle = 0.0
            self.facility_usd_gpu_s = 0.0

    @property
    def available(self) -> int:
        return self.installed - self.out_of_service  # no failures modelled yet

    def depreciation_usd_s(self) -> float:
        return sum(c.count * c.usd_per_gpu_s for c in self.cohorts if not c.expired)


class ReferenceLoop:
    """One SimPy environment: a tick per step, a process per pool change and per life end."""

    def __init__(self, scenario: Any, demand: Any, expected: Any = None) -> None:
        horizon = scenario.horizon
        self.env = simpy.Environment()
        self.step_s = float(horizon.step_s)
        self.n_steps = int(horizon.n_steps)
        self.horizon_s = self.n_steps * self.step_s
        self.pools = [Pool(spec, scenario) for spec in scenario.fleet.pools]
        index = {pool.name: i for i, pool in enumerate(self.pools)}
        self.models = []
        for model in scenario.models:
            shapes = {(s.gpus_per_replica, s.capacity_rps) for s in map(model.shape_on, model.pools)}
            if len(shapes) != 1:
                raise ValueError(f"the reference takes one replica shape per model; {model.name} has {len(shapes)}")
            gpus, capacity = shapes.pop()
            self.models.append({
                "prefs": [index[name] for name in model.pools],
                "gpus": int(gpus),
                "per_replica": capacity * self.step_s,
                "usd_per_request": revenue_per_request(scenario, model),
            })
        self.other_usd_step = scenario.other_costs.usd_per_month / SECONDS_PER_MONTH * self.step_s
        self.usd_per_kwh = scenario.energy.usd_per_kwh
        # Plain Python lists, one row per step.
        self.demand = [[float(x) for x in row] for row in np.asarray(demand, dtype=float).tolist()]
        if len(self.demand) != self.n_steps or any(len(r) != len(self.models) for r in self.demand):
            raise ValueError(
                f"demand must be (n_steps, n_models) = ({self.n_steps}, {len(self.models)})"
            )
        n_p, n_m = len(self.pools), len(self.models)
        self.autoscalers = [
            Autoscaler(self, p, spec, scenario, expected_per_step(scenario, expected))
            for p, spec in enumerate(scenario.fleet.pools)
            if spec.acquisition.type == "on_demand" and spec.acquisition.autoscale is not None
        ]
        self.training = Training(self, scenario)
        self.out_pool = {key: [[0.0] * n_p for _ in range(self.n_steps)] for key in POOL_KEYS}
        self.out_model = {key: [[0.0] * n_m for _ in range(self.n_steps)] for key in MODEL_KEYS}
        self.out_other = [0.0] * self.n_steps
        self.out_cost = [0.0] * self.n_steps
        self.out_revenue = [0.0] * self.n_steps

        # Initial GPUs are bought at t = 0, or were installed ``in_service_since`` (a negative
        # purchase time) and carry on depreciating the rest of their life, at the rate that
        # spreads ``book_value_usd`` over it if given; then every dated change, in time order
        # (list order breaks ties), so that same-instant changes apply in a well-defined order.
        for p, spec in enumerate(scenario.fleet.pools):
            if spec.count:
                bought_s, rate = self._starting_cohort(p, spec, horizon)
                self.install(p, int(spec.count), bought_s, rate)
        timed = sorted(
            (
                (horizon.offset_of(change.at), p, slot, change)
                for p, spec in enumerate(scenario.fleet.pools)
                for slot, change in enumerate(spec.changes)
            ),
            key=lambda item: (item[0], item[1], item[2]),
        )
        for at_s, p, _slot, change in timed:
            if change.repair is not None:
                raise ValueError("the reference does not model repair draws of GPUs out of service")
            if effect_step(at_s, self.step_s) < self.n_steps:
                self.env.process(self._change(p, at_s, change))
        if self.autoscalers:
            self.env.process(self._autoscale())
        if self.training.jobs:
            self.env.process(self._train())
        self.env.process(self._tick())

    # -- events --------------------------------------------------------------------------

    def sleep_until_effect(self, at_s: float):
        """Timeout to the start of the step where an event at ``at_s`` takes effect."""
        when = effect_step(at_s, self.step_s) * self.step_s
        return self.env.timeout(max(0.0, when - self.env.now))

    def _starting_cohort(self, p: int, spec: Any, horizon: Any) -> tuple[float, float | None]:
        """Purchase time (seconds from the start, ≤ 0) and USD per GPU-second of a pool's
        starting GPUs (None: ``price / life``)."""
        acquisition = spec.acquisition
        if not self.pools[p].owned or acquisition.in_service_since is None:
            bought_s = 0.0
        else:
            bought_s = (acquisition.in_service_since - horizon.start).total_seconds()
        if not self.pools[p].owned or acquisition.book_value_usd is None:
            return bought_s, None
        left_s = bought_s + self.pools[p].life_s  # life left after the start
        return bought_s, (acquisition.book_value_usd / (spec.count * left_s) if left_s > 0 else 0.0)

    def install(self, p: int, count: int, bought_s: float, usd_per_gpu_s: float | None = None) -> None:
        pool = self.pools[p]
        pool.installed += count
        if pool.owned:
            cohort = Cohort(bought_s, count, pool.usd_per_gpu_s if usd_per_gpu_s is None else usd_per_gpu_s)
            pool.cohorts.append(cohort)
            end_s = bought_s + pool.life_s
            if end_s <= 0:
                cohort.expired = True  # in service before the start, fully depreciated by then
            elif effect_step(end_s, self.step_s) < self.n_steps:
                self.env.process(self._end_of_life(cohort, end_s))

    def retire(self, p: int, count: int) -> None:
        pool = self.pools[p]
        if count > pool.available:
            raise ValueError(f"pool {pool.name!r}: cannot remove {count} of {pool.available} GPUs in service")
        pool.installed -= count
        left = count
        for cohort in pool.cohorts:  # oldest first, expired or not
            taken = min(left, cohort.count)
            cohort.count -= taken
            left -= taken
            if left == 0:
                break
        pool.cohorts = [c for c in pool.cohorts if c.count > 0]

    def _change(self, p: int, at_s: float, change: Any):
        yield self.sleep_until_effect(at_s)
        pool = self.pools[p]
        if change.add is not None:
            self.install(p, change.add, at_s)
        elif change.remove is not None:
            self.retire(p, change.remove)
        elif change.out_of_service is not None:
            if change.out_of_service > pool.available:
                raise ValueError(f"pool {pool.name!r}: cannot take {change.out_of_service} of {pool.available} out")
            pool.out_of_service += change.out_of_service  # cohorts untouched: still depreciating
        else:
            if change.back_in_service > pool.out_of_service:
                raise ValueError(f"pool {pool.name!r}: cannot return {change.back_in_service} of {pool.out_of_service}")
            pool.out_of_service -= change.back_in_service

    def _end_of_life(self, cohort: Cohort, end_s: float):
        yield self.sleep_until_effect(end_s)
        cohort.expired = True

    # -- the phases of a step ------------------------------------------------------------

    def _autoscale(self):
        """At ``(k + ¼)·step``: every autoscaler's decision for step ``k``, in pool order."""
        decisions = [dict((k, t) for t, k in scaler.decision_times()) for scaler in self.autoscalers]
        yield self.env.timeout(self.step_s / 4.0)
        for k in range(self.n_steps):
            for scaler, due in zip(self.autoscalers, decisions, strict=True):
                if k in due:
                    scaler.decide(due[k], k)
            yield self.env.timeout(self.step_s)

    def _train(self):
        """At ``(k + ⅜)·step``: training's ends, submissions, queue examinations, preemptions."""
        yield self.env.timeout(self.step_s * 3.0 / 8.0)
        for k in range(self.n_steps):
            self.training.phase(k)
            yield self.env.timeout(self.step_s)

    def _tick(self):
        step_s = self.step_s
        hours = step_s / 3600.0
        pools, models = self.pools, self.models
        n_pools = len(pools)
        yield self.env.timeout(step_s / 2.0)  # mid-step: this step's events are all applied
        for k in range(self.n_steps):
            inference = [0] * n_pools
            busy = [float(pool.training) for pool in pools]
            revenue_total = 0.0
            placements = place(models, self.demand[k], open_to_inference(pools))
            for m, model in enumerate(models):
                d = self.demand[k][m]
                c = model["per_replica"]
                gpus = model["gpus"]
                needed = math.ceil(d / c * (1.0 - REPLICA_SLACK)) if d > 0 else 0
                placed = 0
                for p, take, load in placements[m]:
                    placed += take
                    inference[p] += take * gpus
                    busy[p] += load / c * gpus
                served = d if placed >= needed else placed * c
                revenue = served * model["usd_per_request"]
                revenue_total += revenue
                row = self.out_model
                row["demand"][k][m] = d
                row["served"][k][m] = served
                row["unserved"][k][m] = d - served
                row["replicas"][k][m] = placed
                row["shortfall_gpus"][k][m] = (needed - placed) * gpus
                row["revenue"][k][m] = revenue
            other = self.other_usd_step
            cost_total = other
            out = self.out_pool
            for p, pool in enumerate(pools):
                avail = pool.available
                if avail - pool.training - inference[p] < 0:  # preemption must have made room
                    raise AssertionError(f"step {k}, pool {pool.name!r}: inference and training overlap")
                depreciation = pool.depreciation_usd_s() * step_s
                cloud = pool.installed * pool.cloud_usd_gpu_s * step_s
                kwh = (busy[p] * pool.kw_busy + (avail - busy[p]) * pool.kw_idle) * hours
                energy = kwh * self.usd_per_kwh
                facility = pool.installed * pool.facility_usd_gpu_s * step_s
                cost = depreciation + cloud + energy + facility
                cost_total += cost
                out["installed"][k][p] = pool.installed
                out["available"][k][p] = avail
                out["training"][k][p] = pool.training
                out["inference"][k][p] = inference[p]
                out["idle"][k][p] = avail - pool.training - inference[p]
                out["busy"][k][p] = busy[p]
                out["utilization"][k][p] = busy[p] / avail if avail > 0 else 0.0
                out["depreciation"][k][p] = depreciation
                out["cloud"][k][p] = cloud
                out["energy"][k][p] = energy
                out["energy_kwh"][k][p] = kwh
                out["facility"][k][p] = facility
                out["cost"][k][p] = cost
                if not pool.serves_model:
                    rnd = cost
                elif pool.installed > 0:  # the training GPUs' share, busy all the step
                    per_gpu = (depreciation + cloud + facility) / pool.installed
                    rnd = pool.training * (per_gpu + pool.kw_busy * hours * self.usd_per_kwh)
                else:
                    rnd = 0.0
                out["rnd"][k][p] = rnd
            self.out_other[k] = other
            self.out_cost[k] = cost_total
            self.out_revenue[k] = revenue_total
            yield self.env.timeout(step_s)

    def run(self) -> dict[str, Any]:
        self.env.run(until=self.horizon_s)
        result: dict[str, Any] = {}
        for key, rows in self.out_pool.items():
            result[f"pool_{key}"] = np.array(rows, dtype=float).reshape(
                self.n_steps, len(self.pools)
            )
        for key, rows in self.out_model.items():
            result[f"model_{key}"] = np.array(rows, dtype=float).reshape(
                self.n_steps, len(self.models)
            )
        result["other"] = np.array(self.out_other, dtype=float)
        result["cost"] = np.array(self.out_cost, dtype=float)
        result["revenue"] = np.array(self.out_revenue, dtype=float)
        result["pool_names"] = tuple(pool.name for pool in self.pools)
        result["jobs"] = self.training.finish()
        result["autoscale_decisions"] = {self.pools[s.p].name: s.log for s in self.autoscalers}
        return result


def reference_run(scenario: Any, demand: Any, expected: Any = None) -> dict[str, Any]:
    """Simulate ``scenario`` step by step with the given demand (requests per step and model).

    ``expected`` (n_steps, n_models), the noiseless requests a predictive autoscaler forecasts,
    defaults to ``simulator.demand.expected_counts`` of each model.

    Returns a dict of per-step arrays: ``pool_<key>`` of shape (n_steps, n_pools) for key in
    :data:`POOL_KEYS`, ``model_<key>`` of shape (n_steps, n_models) for key in
    :data:`MODEL_KEYS`, and ``other``, ``cost`` (fleet-wide, other costs included) and
    ``revenue`` of shape (n_steps,); also ``jobs`` (per training job, in submission order: name,
    start_s, end_s — None if not reached —, preemptions, done_s) and ``autoscale_decisions``
    (per autoscaled pool: (t, step, wanted, desired) of every decision).
    """
    return ReferenceLoop(scenario, demand, expected).run()
