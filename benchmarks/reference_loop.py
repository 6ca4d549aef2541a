"""The slow, obviously-correct reference of Fleetcast's step model: one SimPy tick per step.

This module is an *independent* check on the fast engine (``simulator.path.engine.run_path`` and
its numba kernel). It is written from the model's specification, not from the engine's code,
and it deliberately does everything the simplest possible way:

* a SimPy process wakes once per time step (``env.timeout(step_s)``) and computes that step
  in plain Python floats and ints — no numpy, no numba, no vectorisation;
* every pool change (add / remove N GPUs, take N out of service / back in service, GPUs an
  autoscaler asked for coming into service) and every end of a purchase's depreciation life
  is its own SimPy process that waits for its step and then changes the fleet (or hands the
  change to the step's tick, when it falls inside the step);
* inference in a step (placement, serving policy, router) is in ``reference_serving.py``;
  autoscaling decisions and training jobs are plain-Python state machines (in
  ``reference_operations.py``) that act once per step, at fixed phases of the step (a
  decision's request without delay, or its release, changes the pool there and then).

It reads the validated :class:`simulator.scenario.Scenario` directly (it never imports
``simulator.path.kernels``, ``simulator.path.compiled`` or ``simulator.path.fleet``) and takes the demand
per step as an input array, so a caller can feed it the very same noisy draws the engine used
(``simulator.path.engine.draw_demand``).

Timing rule. Step ``k`` covers ``[k·step, (k+1)·step)``; instants are exact rationals. A fleet
change (a dated add / remove / out_of_service / back_in_service, GPUs an autoscaler asked for
coming into service, the end of a cohort's depreciation life) at a step's start ``k·step``
(or before the horizon's start: at step 0) takes effect from step ``k``. A change strictly
inside step ``k``, at ``t = (k + f)·step`` with ``0 < f < 1``, serves the part of the step
after it: each figure of step ``k`` — amounts (requests served and unserved, GPU-hours,
energy, cost, revenue) and levels (GPUs installed, available, inference, idle, serving,
replicas) alike — is ``f × (its value with the fleet before t) + (1 − f) × (its value with
the fleet after t)``; with several changes in one step, ``f₁·A + (f₂ − f₁)·B + (1 − f₂)·C``;
the GPUs short are the most of any part of the step. Demand is one rate over the step. Utilization is the mixed busy over the mixed
available. From step ``k + 1`` on, the fleet is the one after. Training's events and the
autoscalers' decisions stay at step starts. To make the order unambiguous, everything that
belongs to step ``k`` happens at a fixed phase of it: at ``k·step`` each change at that
instant applies, and each change inside step ``k`` is queued for it; at ``(k + ¼)·step`` the
autoscalers take their decision for step ``k`` (pool order); at ``(k + ⅜)·step`` training
acts (ends, submissions, queue examinations, preemptions) — both with the fleet as it is at
the step's start; at ``(k + ½)·step`` the tick computes step ``k`` with the fleet as it
stands (``V₀``), then applies the queued changes in time order, computing ``Vᵢ`` after each,
and writes their weighted sum; the fleet keeps its last state. So a change always precedes a
decision or a job start at the same instant, GPUs arriving at a decision's instant are in
service (not pending) for it, and a change inside step ``k`` is first seen by the decisions
and training of step ``k + 1``. Changes at or after the end of the horizon never happen.

Model (per step ``k`` and fleet, each model ``m`` in listed order; one replica shape per
model, as in the scenarios it is compared on; per-pool shapes are checked by hand in
tests/test_replica_shapes.py):
    needed   = ceil(d / c × (1 − 1e-12)) (0 if d = 0), with ``c = capacity_rps × step_s``
    replicas are placed on the model's pools in preference order, ``min(needed − placed,
    free_p // gpus_per_replica)`` on each, ``free_p`` starting at available − training
    (available in a ``preempt`` pool: its jobs' GPUs are open to inference) and shared by
    all models (the first listed takes first);
    served   = d if placed = needed else placed·c, unserved = d − served, shortfall = (needed − placed)·gpus,
    revenue  = served × revenue_per_request.
Serving policy, per (model, pool): the model's ``replicas.POOL.serving_policy`` if given, else
the pool's ``serving_policy``: ``all`` (default), ``needed`` or ``{headroom: h}``. The
replicas *up* ``up_{m,p}`` start at the replicas placed, ``taken_{m,p}``; ``spare_p = max(available
− training − GPUs of the replicas placed, 0)``. Headroom first (models in order, each model's
pools in preference order): where the load ``L`` the placed replicas serve is > 0, ``extra =
min(max(ceil(L / (c·(1 − h)) × (1 − 1e-12)) − taken, 0), spare_p // g)``, taken off
``spare_p``. Then ``all``: ``weight_p = Σ d_m / c_m · g_m`` over the models with ``d_m > 0``
listing ``p`` with ``all``; ``spare0_p`` = spare_p now; round 1 (same order, every ``all``
pair with ``weight_p > 0``): ``extra = min(floor(spare0_p · (d/c·g / weight_p) / g + 1e-9),
spare_p // g)``; round 2: one more replica where ``spare_p ≥ g``. A model may so have
replicas up on a pool where it needed none; ``needed`` pairs get no extras.
Router: ``replica_load = served / Σ_p up_{m,p}·c``. If the model has more replicas up than
placed (on any pool), every replica up runs at ``replica_load``: busy_p += ``replica_load ·
up_{m,p} · g`` on each of its pools; else the replicas placed are filled in turn: ``busy_p +=
(min(d, after_p·c) − min(d, before_p·c)) / c × g``. Either way its busy GPU-equivalents add up
to ``served / c · g``. Requests within the SLO: ``served · Σ_p (up_{m,p}·c / Σ up·c) ·
curve_{m,p}(replica_load)``, the pool's ``slo_curve`` piecewise linear in load, flat beyond
its ends (no curve: 1). Replicas up = ``Σ_p up``; per pool ``serving = Σ_m up·g``.
Per pool: inference = GPUs of replicas placed; training = what jobs hold, as far as inference
leaves it: ``max(min(jobs' GPUs, available − inference), 0)`` (less than the jobs' GPUs only
with a fleet that shrank under them inside a step: preemption acts at step starts); idle =
available − training − inference (spare GPUs count as idle even when replicas are spread over
them); utilization = busy / available.
Owned pools: each purchase (the initial ``count`` at t = 0, or at ``in_service_since`` before
the start; each addition at its instant, inside a step or not) is a cohort depreciating
``price / life`` USD per GPU-second (the initial one: ``book_value_usd`` over count × life
left, if given) for ``life = depreciation_years × 365.25 d`` after purchase; removals retire the oldest cohorts'
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
(1 − 1e-12)))`` replicas × gpus_per_replica (the replicas needed: the serving policy does not
size anything). To wanted are added the pool's GPUs out of
service and, but for a schedule, the GPUs its running jobs hold. desired = ``min(max(ceil(wanted / node) · node,
least), most)``, ``most = floor(max_count / node) · node``, ``least = min(ceil(min_count /
node) · node, most)`` (min_count, max_count default to the count); keep = the most desired
over the decisions in ``[t − scale_down_cooldown, t]``. Only if ``t − last action ≥ cooldown``
(default 1 h reactive, 0 otherwise; the first decision may act): if desired > installed +
pending, ask for the difference — in service at once with no delay, else pending until
``t + delay``, when they come into service (a fleet change, inside a step or at its start); elif keep < installed and
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

import itertools
from fractions import Fraction
from typing import Any

import numpy as np
import simpy
from reference_operations import Autoscaler, Training, expected_per_step, step_and_fraction
from reference_serving import policy_of, serve

SECONDS_PER_DAY = 86_400.0
SECONDS_PER_YEAR = 365.25 * SECONDS_PER_DAY
SECONDS_PER_MONTH = SECONDS_PER_YEAR / 12.0

POOL_KEYS = ("installed", "available", "training", "inference", "idle", "serving", "busy", "utilization",
             "depreciation", "cloud", "energy", "energy_kwh", "facility", "cost", "rnd")
MODEL_KEYS = ("demand", "served", "unserved", "replicas", "replicas_up", "shortfall_gpus", "slo_met", "revenue")


def revenue_per_request(scenario: Any, model: Any) -> float:
    """USD per served request of mean length: tokens × price per million tokens.

    The model's own ``pricing`` if it has one, else the scenario's.
    """
    price = model.pricing if model.pricing is not None else scenario.pricing
    demand = model.demand
    return (demand.input_tokens * price.input_usd_per_1m + demand.output_tokens * price.output_usd_per_1m) / 1e6


class Cohort:
    """Owned GPUs bought at one instant; ``expired`` once their depreciation life is over."""

    def __init__(self, bought_s: Fraction, count: int, usd_per_gpu_s: float) -> None:
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
            self.life_s = Fraction(acquisition.depreciation_years * 365.25 * 86400.0)
            self.usd_per_gpu_s = self.price / float(self.life_s)
            self.cloud_usd_gpu_s = 0.0
            kw_at_meter = tdp_kw * energy.server_power_factor * energy.pue
            self.kw_busy = kw_at_meter * energy.draw_fraction
            self.kw_idle = kw_at_meter * energy.idle_fraction
            self.facility_usd_gpu_s = (
                tdp_kw * energy.server_power_factor * scenario.facility.usd_per_kw_month / SECONDS_PER_MONTH)
        else:
            self.price = 0.0
            self.life_s = None  # never depreciates
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
            if model.api is not None:
                raise ValueError(f"model {model.name!r}: the reference has no external API tiers")
            gpus, capacity = shapes.pop()
            specs = {index[name]: scenario.fleet.pools[index[name]] for name in model.pools}
            self.models.append({
                "prefs": [index[name] for name in model.pools],
                "gpus": int(gpus),
                "per_replica": capacity * self.step_s,
                "usd_per_request": revenue_per_request(scenario, model),
                "policies": {p: policy_of(model, spec) for p, spec in specs.items()},
                "curves": {p: model.shape_on(spec.name).slo_curve for p, spec in specs.items()},
            })
        self.other_usd_step = scenario.other_costs.usd_per_month / SECONDS_PER_MONTH * self.step_s
        self.usd_per_kwh = scenario.energy.usd_per_kwh
        # Plain Python lists, one row per step.
        self.demand = [[float(x) for x in row] for row in np.asarray(demand, dtype=float).tolist()]
        if len(self.demand) != self.n_steps or any(len(r) != len(self.models) for r in self.demand):
            raise ValueError(f"demand must be (n_steps, n_models) = ({self.n_steps}, {len(self.models)})")
        n_p, n_m = len(self.pools), len(self.models)
        self.inside: dict[int, list[tuple[Fraction, int, Any]]] = {}  # step -> changes inside it
        self.order = itertools.count()  # ties between changes at one instant: scheduling order
        self.autoscalers = [
            Autoscaler(self, p, spec, scenario, expected_per_step(scenario, expected))
            for p, spec in enumerate(scenario.fleet.pools)
            if spec.acquisition.type == "on_demand" and spec.acquisition.autoscale is not None
        ]
        self.training = Training(self, scenario)
        self.out_pool = {key: [[0.0] * n_p for _ in range(self.n_steps)] for key in POOL_KEYS}
        self.out_model = {key: [[0.0] * n_m for _ in range(self.n_steps)] for key in MODEL_KEYS}
        self.out_other, self.out_cost, self.out_revenue = ([0.0] * self.n_steps for _ in range(3))

        # Initial GPUs are bought at t = 0, or were installed ``in_service_since`` (a negative
        # purchase time) and carry on depreciating the rest of their life, at the rate that
        # spreads ``book_value_usd`` over it if given; then every dated change, in time order
        # (list order breaks ties), so that same-instant changes apply in a well-defined order.
        for p, spec in enumerate(scenario.fleet.pools):
            if spec.count:
                bought_s, rate = self._starting_cohort(p, spec, horizon)
                self.install(p, int(spec.count), bought_s, rate)
        timed = sorted(((Fraction(horizon.offset_of(change.at)), p, slot, change)
                        for p, spec in enumerate(scenario.fleet.pools) for slot, change in enumerate(spec.changes)),
                       key=lambda item: item[:3])
        for at_s, p, _slot, change in timed:
            if change.repair is not None:
                raise ValueError("the reference does not model repair draws of GPUs out of service")
            self.schedule_change(at_s, lambda p=p, at_s=at_s, change=change: self._change(p, at_s, change))
        if self.autoscalers:
            self.env.process(self._autoscale())
        if self.training.jobs:
            self.env.process(self._train())
        self.env.process(self._tick())

    # -- fleet changes -------------------------------------------------------------------

    def schedule_change(self, at_s: Fraction, apply: Any) -> None:
        """Have ``apply()`` change the fleet at ``at_s``: a process that wakes at the start of the
        step ``at_s`` falls in and applies it there (``at_s`` on that start) or hands it to the
        step's tick (``at_s`` inside the step). Never at or after the end of the horizon."""
        k, into = step_and_fraction(at_s, self.step_s)
        if k < self.n_steps:
            self.env.process(self._at_step(k, into, next(self.order), apply))

    def _at_step(self, k: int, into: Fraction, order: int, apply: Any):
        yield self.env.timeout(max(0.0, k * self.step_s - self.env.now))
        if into == 0:
            apply()
        else:
            self.inside.setdefault(k, []).append((into, order, apply))

    def _starting_cohort(self, p: int, spec: Any, horizon: Any) -> tuple[Fraction, float | None]:
        """Purchase time (seconds from the start, ≤ 0) and USD per GPU-second of a pool's
        starting GPUs (None: ``price / life``)."""
        acquisition = spec.acquisition
        if not self.pools[p].owned or acquisition.in_service_since is None:
            bought_s = Fraction(0)
        else:
            bought_s = Fraction((acquisition.in_service_since - horizon.start).total_seconds())
        if not self.pools[p].owned or acquisition.book_value_usd is None:
            return bought_s, None
        left_s = float(bought_s + self.pools[p].life_s)  # life left after the start
        return bought_s, (acquisition.book_value_usd / (spec.count * left_s) if left_s > 0 else 0.0)

    def install(self, p: int, count: int, bought_s: Fraction, usd_per_gpu_s: float | None = None) -> None:
        pool = self.pools[p]
        pool.installed += count
        if pool.owned:
            cohort = Cohort(bought_s, count, pool.usd_per_gpu_s if usd_per_gpu_s is None else usd_per_gpu_s)
            pool.cohorts.append(cohort)
            end_s = bought_s + pool.life_s  # depreciation runs from the purchase instant
            if end_s <= 0:
                cohort.expired = True  # in service before the start, fully depreciated by then
            else:
                self.schedule_change(end_s, lambda: setattr(cohort, "expired", True))

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

    def _change(self, p: int, at_s: Fraction, change: Any) -> None:
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
        """At ``(k + ½)·step``: step ``k`` with the fleet as it stands, then after each change
        queued inside the step; the figures weighted by the part of the step each fleet serves."""
        yield self.env.timeout(self.step_s / 2.0)  # mid-step: the changes at its start are applied
        for k in range(self.n_steps):
            fleets = [(Fraction(0), self._figures(k, at_start=True))]
            for into, _order, apply in sorted(self.inside.pop(k, []), key=lambda item: item[:2]):
                apply()
                fleets.append((into, self._figures(k, at_start=False)))
            mixed = fleets[0][1] if len(fleets) == 1 else self._mix(fleets)
            mixed["pool_utilization"] = [busy / avail if avail > 0 else 0.0 for busy, avail
                                         in zip(mixed["pool_busy"], mixed["pool_available"], strict=True)]
            for key in POOL_KEYS:
                self.out_pool[key][k] = mixed[f"pool_{key}"]
            for key in MODEL_KEYS:
                self.out_model[key][k] = mixed[f"model_{key}"]
            self.out_other[k], self.out_cost[k], self.out_revenue[k] = mixed["other"], mixed["cost"], mixed["revenue"]
            yield self.env.timeout(self.step_s)

    @staticmethod
    def _mix(fleets: list[tuple[Fraction, dict[str, Any]]]) -> dict[str, Any]:
        """The figures of fleets that each held the step from their instant to the next one's
        (fractions of the step): ``f₁·A + (f₂ − f₁)·B + … + (1 − fₙ)·Z``."""
        ends = [into for into, _ in fleets[1:]] + [Fraction(1)]
        mixed: dict[str, Any] = {}
        for (begins, figures), end in zip(fleets, ends, strict=True):
            weight = float(end - begins)
            for key, value in figures.items():
                if isinstance(value, list):
                    row = mixed.setdefault(key, [0.0] * len(value))
                    for i, x in enumerate(value):
                        row[i] += weight * x
                else:
                    mixed[key] = mixed.get(key, 0.0) + weight * value
        # GPUs short: the most any part of the step lacked, not a mean.
        mixed["model_shortfall_gpus"] = [max(column) for column in zip(*(f["model_shortfall_gpus"] for _, f in fleets),
                                                                         strict=True)]
        return mixed

    def _figures(self, k: int, at_start: bool) -> dict[str, Any]:
        """Every figure of step ``k`` as if the fleet as it stands now held all the step:
        ``pool_<key>`` and ``model_<key>`` lists, ``other``, ``cost`` and ``revenue``. With the
        fleet of the step's start (``at_start``), preemption has made room for inference."""
        step_s = self.step_s
        hours = step_s / 3600.0
        pools, models = self.pools, self.models
        d = self.demand[k]
        inference = serve(models, d, pools)
        out: dict[str, Any] = {f"pool_{key}": [] for key in POOL_KEYS if key != "utilization"}
        out["model_demand"] = list(d)
        out["model_served"] = inference["served"]
        out["model_unserved"] = [d[m] - inference["served"][m] for m in range(len(models))]
        out["model_replicas"] = inference["placed"]
        out["model_replicas_up"] = inference["up"]
        out["model_shortfall_gpus"] = [
            (inference["needed"][m] - inference["placed"][m]) * model["gpus"] for m, model in enumerate(models)]
        out["model_slo_met"] = inference["slo_met"]
        out["model_revenue"] = [inference["served"][m] * model["usd_per_request"] for m, model in enumerate(models)]
        out["other"] = self.other_usd_step
        out["revenue"] = sum(out["model_revenue"])
        cost_total = self.other_usd_step
        for p, pool in enumerate(pools):
            avail, training = pool.available, inference["training"][p]
            if at_start and pool.preempt and training < min(pool.training, avail):
                raise AssertionError(f"step {k}, pool {pool.name!r}: inference and training overlap")
            busy = training + inference["busy"][p]
            depreciation = pool.depreciation_usd_s() * step_s
            cloud = pool.installed * pool.cloud_usd_gpu_s * step_s
            kwh = (busy * pool.kw_busy + (avail - busy) * pool.kw_idle) * hours
            energy = kwh * self.usd_per_kwh
            facility = pool.installed * pool.facility_usd_gpu_s * step_s
            cost = depreciation + cloud + energy + facility
            cost_total += cost
            if not pool.serves_model:
                rnd = cost
            elif pool.installed > 0:  # the training GPUs' share, busy all the step
                per_gpu = (depreciation + cloud + facility) / pool.installed
                rnd = training * (per_gpu + pool.kw_busy * hours * self.usd_per_kwh)
            else:
                rnd = 0.0
            figures = {
                "installed": pool.installed, "available": avail, "training": training,
                "inference": inference["inference"][p], "idle": avail - training - inference["inference"][p],
                "serving": inference["serving"][p], "busy": busy, "depreciation": depreciation, "cloud": cloud,
                "energy": energy, "energy_kwh": kwh, "facility": facility, "cost": cost, "rnd": rnd,
            }
            for key, value in figures.items():
                out[f"pool_{key}"].append(value)
        out["cost"] = cost_total
        return out

    def run(self) -> dict[str, Any]:
        self.env.run(until=self.horizon_s)
        result: dict[str, Any] = {}
        for key, rows in self.out_pool.items():
            result[f"pool_{key}"] = np.array(rows, dtype=float).reshape(self.n_steps, len(self.pools))
        for key, rows in self.out_model.items():
            result[f"model_{key}"] = np.array(rows, dtype=float).reshape(self.n_steps, len(self.models))
        for key, values in (("other", self.out_other), ("cost", self.out_cost), ("revenue", self.out_revenue)):
            result[key] = np.array(values, dtype=float)
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
    (per autoscaled pool: (t, step, wanted, desired) of every decision). In a step a fleet
    change falls inside, every array holds the time-weighted mix of the fleets it saw.
    """
    return ReferenceLoop(scenario, demand, expected).run()
