"""Where replicas go: the placement of the replicas each model needs, and the replicas up.

Each step, models are served in their listed order, each on its pools in order of
preference: on each pool ``ceil(remaining requests / that pool's capacity per replica)``
replicas of that pool's shape, as many as fit in the GPUs open to inference there
(:func:`place_replicas`). Those are the replicas *needed*; the pools' serving policies then
say which replicas are *up* (:func:`spread_replicas`, :mod:`simulator.scenario.serving_policy`).
The step kernel (:mod:`simulator.path.kernels`), the training loop's decisions and the
autoscalers (:func:`inference_gpus`, :func:`most_gpus_wanted_on`) all place by these rules.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from simulator.scenario.serving_policy import SPREAD_ALL, SPREAD_HEADROOM

API_NONE, API_OVERFLOW, API_ALL = 0, 1, 2
# A model's slots when it preempts training last (``preempt_after``): 0 for every slot of a model
# that does not; else BURST_FIRST for the pools of its first walk, BURST_LATER for the others.
BURST_FIRST, BURST_LATER = 1, 2


# Demand within this relative margin of a whole number of replicas' capacity needs no extra
# replica (so that 3 replicas' worth computed as 3.0000000000000004 asks for 3, not 4).
REPLICA_SLACK = 1e-12


@njit(cache=True, inline="always")
def place_replicas(demand, k, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst, training,
                   training_floor, preempt, free, inference, taken, load, unplaced):
    """Place the replicas of every model for the requests ``demand[k]`` on its pools; fill the arrays.

    Models are served in their listed order, each on its pools in order of preference, each
    pool's replicas of that pool's shape, until its demand is covered or no pool has room.
    A model that preempts training last (``burst[m, j] > 0`` on its slots) walks its pools
    twice: first those marked ``BURST_FIRST`` (its ``preempt`` pools among them, there only on
    the GPUs no job holds), then every pool, jobs' GPUs in ``preempt`` pools open.
    ``free`` (GPUs per pool open to inference) and ``inference`` (GPUs per pool placed) are
    updated; ``taken[m, j]`` gets the replicas of model ``m`` on its ``j``-th pool and
    ``load[m, j]`` the requests they serve (all full but, when the demand is covered, the last);
    ``unplaced[m]`` is the demand no replica took (0 when covered; all of it for an API-only
    model, which places none). The replica slack is relative to the whole demand, as if the
    replicas were counted at once. A disaggregated unit with a companion pool (``companion[m, j]``:
    the pool and the unit's GPUs there) is placed only where both pools have room for it, and
    takes its GPUs from both.
    """
    n_models, n_prefs = taken.shape
    for m in range(n_models):
        total = demand[k, m]
        slack = total * REPLICA_SLACK
        remaining = total if api_mode[m] != API_ALL else 0.0
        for j in range(n_prefs):
            taken[m, j] = 0
            load[m, j] = 0.0
        two_pass = burst[m, 0] > 0
        for walk in range(2 if two_pass else 1):
            first = two_pass and walk == 0
            for j in range(n_prefs):
                p = preferences[m, j]
                if p < 0 or remaining <= 0.0 or (first and burst[m, j] != BURST_FIRST):
                    continue
                per_replica = capacity_per_step[m, j]
                gpus = gpus_per_replica[m, j]
                needed = int(math.ceil((remaining - slack) / per_replica))
                if needed <= 0:  # what is left is below the slack: covered
                    remaining = 0.0
                    break
                room = free[p]
                if first and preempt[p]:  # not yet the GPUs jobs hold (those a cap keeps are not in free)
                    room = max(free[p] - max(training[p] - training_floor[p], 0), 0)
                take = min(needed, room // gpus)
                c = companion[m, j, 0]
                if c >= 0:
                    room_c = free[c]
                    if first and preempt[c]:  # the companion pool's jobs likewise kept for the second walk
                        room_c = max(free[c] - max(training[c] - training_floor[c], 0), 0)
                    take = min(take, room_c // companion[m, j, 1])
                if take <= 0:
                    continue
                taken[m, j] += take
                free[p] -= take * gpus
                inference[p] += take * gpus
                if c >= 0:
                    free[c] -= take * companion[m, j, 1]
                    inference[c] += take * companion[m, j, 1]
                served_here = remaining if take >= needed else take * per_replica
                load[m, j] += served_here
                remaining = 0.0 if take >= needed else remaining - served_here
        unplaced[m] = remaining if api_mode[m] != API_ALL else total


@njit(cache=True, inline="always")
def open_to_inference(installed, failed, out_of_service, training, training_floor, preempt, free):
    """GPUs per pool inference may use: available, less a dedicated partition or the GPUs jobs
    hold, except in ``preempt`` pools, where inference comes first and jobs' GPUs are open to it."""
    for p in range(installed.shape[0]):
        available = installed[p] - failed[p] - out_of_service[p]
        held = training_floor[p] if preempt[p] else max(training[p], training_floor[p])
        free[p] = max(available - held, 0)


@njit(cache=True, inline="always")
def spread_replicas(demand, k, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, spread, headroom,
                    taken, load, available, training, training_floor, inference, up, spare, spare_all, weight):
    """The replicas up per (model, slot) in ``up``, from the replicas ``taken`` (needed) and each
    slot's serving policy (:mod:`simulator.scenario.serving_policy`).

    Spare GPUs are those of a pool left by training (the GPUs jobs hold or a partition keeps,
    in any training mode) and by the replicas needed. ``headroom`` slots first, in the models'
    order, add replicas until each is at most ``1 − h`` of its capacity; then each ``all``
    pool's spare GPUs go to the models that list it with ``all``, in proportion to their
    demand counted in GPUs of their replica shape there (whole replicas, rounded down), and
    what is left to one more replica each, in the models' order, while it fits. A unit with a
    companion pool adds replicas only while the companion pool's spare GPUs hold them too.
    """
    n_models, n_prefs = taken.shape
    for p in range(available.shape[0]):
        spare[p] = max(available[p] - max(training[p], training_floor[p]) - inference[p], 0)
        weight[p] = 0.0
    for m in range(n_models):
        for j in range(n_prefs):
            up[m, j] = taken[m, j]
            p = preferences[m, j]
            if p < 0 or spread[m, j] != SPREAD_HEADROOM or load[m, j] <= 0.0:
                continue
            per_replica = capacity_per_step[m, j] * (1.0 - headroom[m, j])
            target = int(math.ceil(load[m, j] / per_replica * (1.0 - REPLICA_SLACK)))
            extra = min(max(target - taken[m, j], 0), spare[p] // gpus_per_replica[m, j])
            c = companion[m, j, 0]
            if c >= 0:
                extra = min(extra, spare[c] // companion[m, j, 1])
                spare[c] -= extra * companion[m, j, 1]
            up[m, j] += extra
            spare[p] -= extra * gpus_per_replica[m, j]
    for m in range(n_models):
        if api_mode[m] == API_ALL or demand[k, m] <= 0.0:
            continue
        for j in range(n_prefs):
            p = preferences[m, j]
            if p >= 0 and spread[m, j] == SPREAD_ALL:
                weight[p] += demand[k, m] / capacity_per_step[m, j] * gpus_per_replica[m, j]
    for p in range(available.shape[0]):
        spare_all[p] = spare[p]
    for rounds in range(2):  # shares rounded down, then one more replica each while it fits
        for m in range(n_models):
            if api_mode[m] == API_ALL or demand[k, m] <= 0.0:
                continue
            for j in range(n_prefs):
                p = preferences[m, j]
                if p < 0 or spread[m, j] != SPREAD_ALL or weight[p] <= 0.0:
                    continue
                gpus = gpus_per_replica[m, j]
                if rounds == 0:
                    share = demand[k, m] / capacity_per_step[m, j] * gpus / weight[p]
                    extra = min(int(math.floor(spare_all[p] * share / gpus + 1e-9)), spare[p] // gpus)
                else:
                    extra = 1 if spare[p] >= gpus else 0
                c = companion[m, j, 0]
                if c >= 0:
                    extra = min(extra, spare[c] // companion[m, j, 1])
                    spare[c] -= extra * companion[m, j, 1]
                up[m, j] += extra
                spare[p] -= extra * gpus


@njit(cache=True)
def _placement(requests, row, unbounded, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst,
               installed, failed, out_of_service, training, training_floor, preempt):
    """Place ``requests[row]`` with the fleet as it is now (pool ``unbounded``, if ≥ 0, without
    limit); return the GPUs placed per pool and the replicas and load per (model, slot)."""
    free = np.empty(installed.shape[0], dtype=np.int64)
    inference = np.zeros(installed.shape[0], dtype=np.int64)
    taken = np.zeros(preferences.shape, dtype=np.int64)
    load = np.zeros(preferences.shape, dtype=np.float64)
    unplaced = np.zeros(preferences.shape[0], dtype=np.float64)
    open_to_inference(installed, failed, out_of_service, training, training_floor, preempt, free)
    if unbounded >= 0:
        free[unbounded] = 1 << 50
        # A unit across two pools is sized on either as if the other had room for it too (each
        # pool's own autoscaler sizes that one): else two empty pools would wait for each other.
        for m in range(preferences.shape[0]):
            for j in range(preferences.shape[1]):
                c = companion[m, j, 0]
                if c >= 0 and preferences[m, j] == unbounded:
                    free[c] = 1 << 50
                elif c == unbounded and preferences[m, j] >= 0:
                    free[preferences[m, j]] = 1 << 50
    place_replicas(requests, row, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst, training,
                   training_floor, preempt, free, inference, taken, load, unplaced)
    return inference, taken, load


@njit(cache=True)
def inference_gpus(requests, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst, installed,
                   failed, out_of_service, training, training_floor, preempt):
    """GPUs per pool inference places for one step's ``requests`` with the fleet as it is now.

    What training may start on (``available − held − this``) and what a ``preempt`` pool's
    jobs must yield (``this − (available − held)``, when positive) are read from it.
    """
    inference, _, _ = _placement(requests.reshape(1, -1), 0, -1, capacity_per_step, gpus_per_replica, companion,
                                 preferences, api_mode, burst, installed, failed, out_of_service, training,
                                 training_floor, preempt)
    return inference


@njit(cache=True)
def most_gpus_wanted_on(pool, requests, target_utilization, capacity_per_step, gpus_per_replica, companion,
                        preferences, api_mode, burst, installed, failed, out_of_service, training, training_floor,
                        preempt):
    """The most GPUs ``pool`` should hold for any row of ``requests`` (steps × models): for
    each, place every model as the fleet stands but with ``pool`` unbounded, then size each
    model's replicas there for the load they take at ``target_utilization`` (whole replicas,
    in this pool's shape for the model; a unit with its companion side here counts its GPUs here)."""
    most = 0
    for row in range(requests.shape[0]):
        _, taken, load = _placement(requests, row, pool, capacity_per_step, gpus_per_replica, companion, preferences,
                                    api_mode, burst, installed, failed, out_of_service, training, training_floor,
                                    preempt)
        wanted = 0
        for m in range(preferences.shape[0]):
            for j in range(preferences.shape[1]):
                here = preferences[m, j] == pool
                if (here or companion[m, j, 0] == pool) and taken[m, j] > 0:
                    per_replica = capacity_per_step[m, j] * target_utilization
                    replicas = max(int(math.ceil(load[m, j] / per_replica * (1.0 - REPLICA_SLACK))), 1)
                    wanted += replicas * (gpus_per_replica[m, j] if here else companion[m, j, 1])
        most = max(most, wanted)
    return most
