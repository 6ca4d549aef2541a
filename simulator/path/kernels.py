"""Numba step kernels: integrate the fleet's load, use and money between two events.

Between two consecutive events the fleet is fixed, so one compiled call integrates every
step of the interval ``[k0, k1)``: for each step it places the replicas each model needs on
its pools (in the models' order, each model's pools in its order of preference), serves
``min(demand, capacity)``, and books GPUs by use, energy, cost and revenue into
preallocated arrays. In a ``preempt`` pool inference comes first: a step where it needs GPUs
that training jobs hold ends the call, so that the engine preempts the jobs at that step's
start and integrates it afterwards. Random draws never happen here: demand arrives as an array drawn
from the path's NumPy generator.

Column layouts of the output arrays are named by the ``POOL_*`` and ``MODEL_*`` constants.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
from numba import njit

from simulator.path.jit_options import NO_REFCOUNT
from simulator.path.outage_kernel import advance_outages
from simulator.path.placement import (
    API_ALL,
    API_NONE,
    REPLICA_SLACK,
    place_replicas,
    spread_replicas,
)

# Per (step, pool) columns.

POOL_INSTALLED = 0
POOL_AVAILABLE = 1
POOL_INFERENCE = 2
POOL_TRAINING = 3
POOL_IDLE = 4
POOL_BUSY = 5  # GPU-equivalents doing work: served load of inference replicas + training
POOL_DEPRECIATION = 6
POOL_CLOUD = 7
POOL_ENERGY = 8
POOL_FACILITY = 9
POOL_ENERGY_KWH = 10
POOL_POWER_BLOCKED = 11  # delivered GPUs waiting for site power
# The parts of this pool's cost components that are training (R&D) compute.
POOL_RND_DEPRECIATION = 12
POOL_RND_CLOUD = 13
POOL_RND_ENERGY = 14
POOL_RND_FACILITY = 15
POOL_OUT_OF_SERVICE = 16  # installed GPUs taken out of service (RMA): paid for, not available
POOL_SERVING = 17  # GPUs in replicas that are up: those needed and those the serving policy spreads the load over
POOL_CONTRACTED = 18  # GPUs held for contracts (the customers'), at most those contracted
N_POOL_COLS = 19

# Per (step, model) columns.
MODEL_DEMAND = 0
MODEL_SERVED = 1
MODEL_UNSERVED = 2
MODEL_REPLICAS = 3
MODEL_SHORTFALL_GPUS = 4
MODEL_SLO_MET = 5  # requests served within the SLO
MODEL_REVENUE = 6
MODEL_API_REQUESTS = 7  # requests served by the external API
MODEL_API_COST = 8
MODEL_GPUS = 9  # GPUs its replicas hold
MODEL_COGS = 10  # COGS attributed to it: its share of its pools' and of other costs, and its API spend
MODEL_REPLICAS_UP = 11  # replicas up, the load spread over them (≥ MODEL_REPLICAS, the replicas needed)
N_MODEL_COLS = 12

@njit(cache=True, **NO_REFCOUNT)
def _interpolate(xs, ys, x):
    """Piecewise-linear ``y(x)``, flat beyond the ends."""
    if x <= xs[0]:
        return ys[0]
    last = xs.shape[0] - 1
    if x >= xs[last]:
        return ys[last]
    j = 1
    while xs[j] < x:
        j += 1
    w = (x - xs[j - 1]) / (xs[j] - xs[j - 1])
    return ys[j - 1] + w * (ys[j] - ys[j - 1])



@njit(cache=True)
def step_scratch(n_pools, n_models, n_prefs):
    """The working arrays of :func:`integrate_interval` (one set serves any number of calls:
    every step writes each entry before reading it)."""
    return (np.zeros(n_pools, dtype=np.int64), np.zeros(n_pools, dtype=np.int64), np.zeros(n_pools, dtype=np.int64),
            np.zeros(n_pools, dtype=np.int64), np.zeros(n_pools, dtype=np.int64), np.zeros(n_pools, dtype=np.float64),
            np.zeros((n_models, n_prefs), dtype=np.int64), np.zeros((n_models, n_prefs), dtype=np.float64),
            np.zeros(n_models, dtype=np.float64), np.zeros(n_pools, dtype=np.float64),
            np.zeros((n_models, n_prefs), dtype=np.int64), np.zeros(n_pools, dtype=np.int64),
            np.zeros(n_pools, dtype=np.int64), np.zeros(n_pools, dtype=np.float64), np.zeros(n_pools, dtype=np.int64),
            np.zeros(n_pools, dtype=np.int64), np.zeros(n_pools, dtype=np.int64))


@njit(cache=True, **NO_REFCOUNT)
def integrate_interval(
    k0,
    k1,
    step_s,
    demand,
    capacity_per_step,
    gpus_per_replica,
    companion,
    preferences,
    revenue_per_request,
    fixed_revenue,
    api_mode,
    api_limit_per_step,
    api_cost_per_request,
    burst,
    slo_load,
    slo_attainment,
    spread,
    headroom,
    installed,
    failed,
    out_of_service,
    is_spot,
    power_blocked,
    training,
    training_floor,
    contracted,
    contract_busy,
    preempt,
    stop_from,
    serves_model,
    depreciation_usd_s,
    cloud_usd_gpu_s,
    facility_usd_gpu_s,
    busy_kw,
    idle_kw,
    usd_per_kwh,
    other_usd_s,
    outage_ints,
    outage_floats,
    heap_time,
    heap_count,
    outage_expo,
    outage_repair,
    pool_out,
    model_out,
    other_out,
    scratch,
    step_offset,
):
    """Integrate steps ``k0 <= k < k1`` with the fleet held fixed; return the step it stopped
    before (``k1`` when it integrated them all).

    Args:
        k0, k1: first step and one past the last step of the interval.
        step_s: step length in seconds.
        demand: requests per step, shape (n_steps, n_models).
        capacity_per_step: requests one replica serves in one step, per (model, preference slot):
            a model's replicas on the pool ``preferences[m, j]`` have that pool's shape.
        gpus_per_replica: GPUs of one replica, per (model, preference slot).
        companion: per (model, slot), a disaggregated unit's companion pool (−1: none) and its
            GPUs there: the unit holds, serves from and is busy on both pools.
        preferences: pool indices per model in order of preference, -1 padded.
        revenue_per_request: USD per served request, shape (n_steps, n_models).
        fixed_revenue: USD per step independent of service (subscriptions), (n_steps, n_models).
        api_mode, api_limit_per_step, api_cost_per_request: the external API tier per model
            (API_NONE, API_OVERFLOW: unserved demand goes to it, API_ALL: all demand does).
        burst: per (model, preference slot), ``BURST_*`` for a model that preempts training last.
        slo_load, slo_attainment: per (model, preference slot), the share of requests served
            within the SLO at each per-replica load (served / capacity of the placed replicas),
            increasing load.
        spread, headroom: per (model, preference slot), the serving policy (``SPREAD_*``) and its
            headroom: which replicas are up, the load spread over them (:func:`spread_replicas`).
        installed, training: GPUs per pool.
        failed: GPUs per pool down now (failures, preemptions); advanced here step by step.
        out_of_service: GPUs per pool taken out of service (still installed: depreciation,
            facility and rent go on; no energy, no work, no failures).
        is_spot: per pool, billed only for GPUs running (else for GPUs installed).
        power_blocked: delivered GPUs per pool waiting for site power.
        training_floor: GPUs per pool kept from inference for training (a dedicated partition).
        contracted: GPUs per pool sold on contracts: held for the customers before anything
            else, out of the GPUs available (fewer when GPUs are down); COGS, not R&D.
        contract_busy: GPU-equivalents per pool the customers keep busy when every contracted
            GPU is held (contracted GPUs × each contract's usage); scaled by the share held.
        preempt: per pool, inference comes first: it may take GPUs training jobs hold.
        stop_from: from this step on, a step where inference needs GPUs that jobs hold in a
            ``preempt`` pool is not integrated: the kernel returns its index so that the jobs
            can be preempted at its start. Before it (or when the caller cannot preempt), the
            step is integrated with the jobs squeezed: inference takes the GPUs it needs.
        serves_model: per pool, some model lists it; a pool that serves none is all R&D.
        outage_*, heap_*: the outage channels' state (:mod:`simulator.path.fleet.outages`).
        depreciation_usd_s: depreciation of each pool's owned GPUs, USD per second.
        cloud_usd_gpu_s: rental price per installed GPU, USD per second.
        facility_usd_gpu_s: facility charge per installed GPU, USD per second.
        busy_kw, idle_kw: facility power (PUE included) of a busy and an idle GPU, per pool.
        usd_per_kwh: energy price.
        other_usd_s: fixed other costs, USD per second.
        pool_out, model_out, other_out: output arrays written for steps k0..k1-1.
        scratch: the working arrays (:func:`step_scratch`, made once for any number of calls):
            the kernel allocates nothing and counts no references, so that callers that
            integrate many short intervals (the training loop) pay nothing per call.
        step_offset: the arrays' row ``k`` is step ``k + step_offset`` of the horizon (0 but
            for a single step integrated into one-row buffers, :mod:`simulator.path.intra_step`).
    """
    n_models = demand.shape[1]
    n_pools = installed.shape[0]
    n_prefs = preferences.shape[1]
    hours = step_s / 3600.0
    free, available, billed, inference, train, busy, taken, load, unplaced, pool_cogs, up, spare, spare_all, weight, \
        serving, available_all, contract_held = scratch
    for k in range(k0, k1):
        advance_outages((k + step_offset) * step_s, installed, failed, out_of_service, outage_ints, outage_floats,
                        heap_time, heap_count, outage_expo, outage_repair)
        for p in range(n_pools):
            available_all[p] = installed[p] - failed[p] - out_of_service[p]
            contract_held[p] = min(contracted[p], max(available_all[p], 0))
            available[p] = available_all[p] - contract_held[p]  # what is left for serving and training
            billed[p] = available_all[p] if is_spot[p] else installed[p]
            inference[p] = 0
            # The rule of open_to_inference, written out: calling it here cost 20% of the kernel.
            held = training_floor[p] if preempt[p] else max(training[p], training_floor[p])
            free[p] = max(available[p] - held, 0)
        place_replicas(demand, k, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst,
                       training, training_floor, preempt, free, inference, taken, load, unplaced)
        for p in range(n_pools):
            # Jobs keep what inference left them; in a preempt pool that may be less than they hold.
            train[p] = max(min(training[p], available[p] - inference[p]), 0)
            if preempt[p] and k >= stop_from and train[p] < min(training[p], available[p]):
                return k
            busy[p] = float(train[p])
            if contracted[p] > 0:
                busy[p] += contract_busy[p] * contract_held[p] / contracted[p]
            serving[p] = 0
        spread_replicas(demand, k, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, spread,
                        headroom, taken, load, available, train, training_floor, inference, up, spare, spare_all,
                        weight)
        for m in range(n_models):
            requests = demand[k, m]
            slack = requests * REPLICA_SLACK
            placed = 0
            replicas_up = 0
            capacity_up = 0.0
            for j in range(n_prefs):
                if up[m, j] > 0:
                    placed += taken[m, j]
                    replicas_up += up[m, j]
                    capacity_up += up[m, j] * capacity_per_step[m, j]
                    serving[preferences[m, j]] += up[m, j] * gpus_per_replica[m, j]
                    if companion[m, j, 0] >= 0:
                        serving[companion[m, j, 0]] += up[m, j] * companion[m, j, 1]
            self_served = requests - unplaced[m]
            # The router spreads the load in proportion to capacity: every replica up runs at the
            # same share of its capacity, judged against its own pool's SLO curve.
            replica_load = self_served / capacity_up if replicas_up > 0 else 0.0
            for j in range(n_prefs):
                busy_replicas = 0.0
                if replicas_up > placed:  # spread: each pool busy with its replicas' share of the load
                    busy_replicas = replica_load * up[m, j]
                elif taken[m, j] > 0:  # only the replicas needed: full, but the last
                    busy_replicas = load[m, j] / capacity_per_step[m, j]
                if busy_replicas > 0.0:
                    busy[preferences[m, j]] += busy_replicas * gpus_per_replica[m, j]
                    if companion[m, j, 0] >= 0:
                        busy[companion[m, j, 0]] += busy_replicas * companion[m, j, 1]
            left = requests - self_served
            api = 0.0
            if api_mode[m] != API_NONE and left > 0.0:
                api = min(left, api_limit_per_step[m])
            unserved = left - api
            served = requests - unserved
            short = 0
            if unserved > 0.0 and api_mode[m] != API_ALL and preferences[m, 0] >= 0:
                # Missing replicas are counted in the shape of the model's first-choice pool.
                first = capacity_per_step[m, 0]
                if api > 0.0:  # the GPUs missing for what the API could not take either
                    missing = math.ceil(unserved / first * (1.0 - REPLICA_SLACK))
                else:
                    missing = math.ceil((unserved - slack) / first)
                unit = gpus_per_replica[m, 0]  # a unit's GPUs on its companion pool are missing too
                if companion[m, 0, 0] >= 0:
                    unit += companion[m, 0, 1]
                short = int(missing) * unit
            within = 0.0
            if replicas_up > 0:
                for j in range(n_prefs):
                    if up[m, j] > 0:
                        share = up[m, j] * capacity_per_step[m, j] / capacity_up
                        within += share * _interpolate(slo_load[m, j], slo_attainment[m, j], replica_load)
            model_out[k, m, MODEL_DEMAND] = requests
            model_out[k, m, MODEL_SERVED] = served
            model_out[k, m, MODEL_UNSERVED] = unserved
            model_out[k, m, MODEL_REPLICAS] = placed
            model_out[k, m, MODEL_REPLICAS_UP] = replicas_up
            model_out[k, m, MODEL_SHORTFALL_GPUS] = short
            model_out[k, m, MODEL_SLO_MET] = self_served * within + api
            model_out[k, m, MODEL_REVENUE] = served * revenue_per_request[k, m] + fixed_revenue[k, m]
            model_out[k, m, MODEL_API_REQUESTS] = api
            model_out[k, m, MODEL_API_COST] = api * api_cost_per_request[m]
        for p in range(n_pools):
            avail = available[p]
            cloud = cloud_usd_gpu_s[p] * billed[p] * step_s
            facility = facility_usd_gpu_s[p] * installed[p] * step_s
            depreciation = depreciation_usd_s[p] * step_s
            kwh = (busy[p] * busy_kw[p] + (available_all[p] - busy[p]) * idle_kw[p]) * hours
            energy = kwh * usd_per_kwh
            if serves_model[p]:
                # GPUs held for training: those running jobs, and idle ones of a dedicated
                # partition; the rest (idle, failed) is capacity held for inference.
                held = min(max(train[p], training_floor[p]), avail)
                share = held / installed[p] if installed[p] > 0 else 0.0
                pool_out[k, p, POOL_RND_DEPRECIATION] = depreciation * share
                pool_out[k, p, POOL_RND_CLOUD] = cloud * (held / billed[p] if billed[p] > 0 else 0.0)
                pool_out[k, p, POOL_RND_ENERGY] = (train[p] * busy_kw[p] + (held - train[p]) * idle_kw[p]) * hours * usd_per_kwh
                pool_out[k, p, POOL_RND_FACILITY] = facility * share
            else:  # a pool no model uses exists for training: all of it, idle and failed GPUs too
                pool_out[k, p, POOL_RND_DEPRECIATION] = depreciation
                pool_out[k, p, POOL_RND_CLOUD] = cloud
                pool_out[k, p, POOL_RND_ENERGY] = energy
                pool_out[k, p, POOL_RND_FACILITY] = facility
            pool_out[k, p, POOL_INSTALLED] = installed[p]
            pool_out[k, p, POOL_AVAILABLE] = available_all[p]
            pool_out[k, p, POOL_INFERENCE] = inference[p]
            pool_out[k, p, POOL_TRAINING] = train[p]
            pool_out[k, p, POOL_IDLE] = avail - train[p] - inference[p]
            pool_out[k, p, POOL_BUSY] = busy[p]
            pool_out[k, p, POOL_DEPRECIATION] = depreciation
            pool_out[k, p, POOL_CLOUD] = cloud
            pool_out[k, p, POOL_ENERGY] = energy
            pool_out[k, p, POOL_FACILITY] = facility
            pool_out[k, p, POOL_ENERGY_KWH] = kwh
            pool_out[k, p, POOL_POWER_BLOCKED] = power_blocked[p]
            pool_out[k, p, POOL_OUT_OF_SERVICE] = out_of_service[p]
            pool_out[k, p, POOL_SERVING] = serving[p]
            pool_out[k, p, POOL_CONTRACTED] = contract_held[p]
            pool_cogs[p] = (depreciation + cloud + energy + facility - pool_out[k, p, POOL_RND_DEPRECIATION]
                            - pool_out[k, p, POOL_RND_CLOUD] - pool_out[k, p, POOL_RND_ENERGY]
                            - pool_out[k, p, POOL_RND_FACILITY])
            if contract_held[p] > 0:  # the contracts' share is theirs, not the models'
                pool_cogs[p] *= 1.0 - contract_held[p] / installed[p]
        other_out[k] = other_usd_s * step_s
        # Unit economics: each pool's COGS goes to the models by the GPUs their replicas hold
        # there (its idle GPUs too, so each model carries the capacity it is served from), the
        # other costs by the GPUs held fleet-wide; a pool with no replica keeps its cost.
        held_total = 0
        for p in range(n_pools):
            held_total += inference[p]
        for m in range(n_models):
            gpus_held = 0
            cogs = model_out[k, m, MODEL_API_COST]
            for j in range(n_prefs):
                if taken[m, j] > 0:
                    p = preferences[m, j]
                    share = taken[m, j] * gpus_per_replica[m, j]
                    gpus_held += share
                    cogs += pool_cogs[p] * share / inference[p]
                    c = companion[m, j, 0]
                    if c >= 0:
                        share = taken[m, j] * companion[m, j, 1]
                        gpus_held += share
                        cogs += pool_cogs[c] * share / inference[c]
            if held_total > 0:
                cogs += other_out[k] * gpus_held / held_total
            model_out[k, m, MODEL_GPUS] = gpus_held
            model_out[k, m, MODEL_COGS] = cogs
    return k1


#: Where ``stop_from`` stands among :func:`integrate_interval`'s arguments after ``k0, k1``.
KERNEL_STOP_FROM = list(inspect.signature(integrate_interval.py_func).parameters).index("stop_from") - 2
