"""The reference loop's inference in one step: placement, the serving policy, the router.

Part of the slow reference (:mod:`reference_loop`, whose docstring states the model); plain
Python, no numpy; it never imports ``simulator.path``. The loop owns the pools (``available``,
``training``, ``preempt``) and the models (dicts: ``prefs``, ``gpus``, ``per_replica``,
``policies``, ``curves``), and calls in here:

* :func:`place` places one step's replicas *needed* (also used by the autoscaler's sizing and
  by the training scheduler's inference need, :mod:`reference_operations`);
* :func:`serve` computes one step of inference with the fleet as it stands: the replicas
  needed, the replicas *up* under each (model, pool)'s serving policy, the requests served,
  the GPU-equivalents busy and the requests within the SLO.
"""

from __future__ import annotations

import math
from typing import Any

REPLICA_SLACK = 1e-12
SHARE_SLACK = 1e-9  # a share of spare GPUs within 1e-9 of a whole replica is that replica


def replicas_for(requests: float, per_replica: float) -> int:
    """Whole replicas that serve ``requests`` (a demand within 1e-12 of a whole number of
    replicas' capacity needs no extra one)."""
    return math.ceil(requests / per_replica * (1.0 - REPLICA_SLACK)) if requests > 0 else 0


def open_to_inference(pools: list[Any]) -> list[int]:
    """GPUs per pool inference may use now: available less what jobs hold, except in ``preempt``
    pools, where inference comes first and the jobs' GPUs are open to it."""
    return [max(pool.available - (0 if pool.preempt else pool.training), 0) for pool in pools]


def place(models: list[dict], requests: list[float], free: list[int]) -> list[list[tuple[int, int, float]]]:
    """Place one step's replicas; ``free`` (GPUs per pool open to inference) is used up.

    Models in listed order; each needs ``replicas_for(d, c)`` replicas and takes, on its pools in
    order of preference, ``min(still needed, free // gpus_per_replica)``. Replicas are filled in
    turn (all full but the last), so a pool's load is ``min(d, after·c) − min(d, before·c)``.
    Returns, per model, ``(pool, replicas, requests they serve)`` for every pool it got some on.
    """
    placements = []
    for m, model in enumerate(models):
        d, c, gpus = requests[m], model["per_replica"], model["gpus"]
        needed = replicas_for(d, c)
        placed = 0
        here = []
        for p in model["prefs"]:
            if placed >= needed:
                break
            take = min(needed - placed, free[p] // gpus)
            if take <= 0:
                continue
            load = min(d, (placed + take) * c) - min(d, placed * c)
            placed += take
            free[p] -= take * gpus
            here.append((p, take, load))
        placements.append(here)
    return placements


def inference_on(pools: list[Any], models: list[dict], requests: list[float]) -> list[int]:
    """GPUs per pool inference places for ``requests`` with the fleet as it is now."""
    gpus = [0] * len(pools)
    for m, here in enumerate(place(models, requests, open_to_inference(pools))):
        for p, replicas, _load in here:
            gpus[p] += replicas * models[m]["gpus"]
    return gpus


def policy_of(model: Any, pool_spec: Any) -> tuple[str, float]:
    """A model's serving policy on a pool: ``("all" | "needed" | "headroom", headroom)``; the
    model's own entry for the pool (``replicas.POOL.serving_policy``) over the pool's."""
    entry = model.replicas.get(pool_spec.name)
    policy = entry.serving_policy if entry is not None and entry.serving_policy is not None else pool_spec.serving_policy
    if policy in ("all", "needed"):
        return policy, 0.0
    return "headroom", float(policy.headroom)


def attainment(curve: Any, load: float) -> float:
    """Share of requests within the SLO at per-replica ``load`` (requests / capacity): the curve
    piecewise linear between its points, flat before the first and after the last; no curve, 1."""
    if curve is None:
        return 1.0
    xs, ys = list(curve.load), list(curve.attainment)
    if load <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if load <= xs[i]:
            return ys[i - 1] + (ys[i] - ys[i - 1]) * (load - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ys[-1]


def replicas_up(models: list[dict], requests: list[float], pools: list[Any], held: list[int],
                placements: list[list[tuple[int, int, float]]]) -> list[dict[int, int]]:
    """Replicas up per model and pool (``{pool: replicas}``, every pool the model lists).

    Spare GPUs of a pool: available − ``held`` (by jobs) − the replicas needed there.
    ``headroom`` slots first (models in order, each model's pools in order of preference):
    replicas up to ``ceil(L / (c·(1 − h)))`` for the load ``L`` placed there, as the spare GPUs
    allow. Then the
    spare GPUs of each pool as they stand (``spare0``) are shared by the models listing it with
    ``all``, weighted by their whole demand in GPUs of their replica there (``d / c · g``):
    ``floor(spare0 · share / g)`` replicas each as far as they fit, then one more each in turn
    while one fits.
    """
    spare = [pool.available - held[p] for p, pool in enumerate(pools)]
    taken: list[dict[int, int]] = []
    load: list[dict[int, float]] = []
    for m, here in enumerate(placements):
        taken.append({p: 0 for p in models[m]["prefs"]})
        load.append({p: 0.0 for p in models[m]["prefs"]})
        for p, replicas, served in here:
            taken[m][p] += replicas
            load[m][p] += served
            spare[p] -= replicas * models[m]["gpus"]
    spare = [max(s, 0) for s in spare]
    up = [dict(row) for row in taken]
    for m, model in enumerate(models):
        g = model["gpus"]
        for p in model["prefs"]:
            kind, headroom = model["policies"][p]
            if kind != "headroom" or load[m][p] <= 0:
                continue
            target = math.ceil(load[m][p] / (model["per_replica"] * (1.0 - headroom)) * (1.0 - REPLICA_SLACK))
            extra = min(max(target - taken[m][p], 0), spare[p] // g)
            up[m][p] += extra
            spare[p] -= extra * g

    def spreading(m: int) -> list[int]:
        """The pools model ``m`` spreads over with ``all`` (none when it has no demand)."""
        if requests[m] <= 0:
            return []
        return [p for p in models[m]["prefs"] if models[m]["policies"][p][0] == "all"]

    weight = [0.0] * len(pools)
    for m, model in enumerate(models):
        for p in spreading(m):
            weight[p] += requests[m] / model["per_replica"] * model["gpus"]
    spare0 = list(spare)
    for m, model in enumerate(models):  # round 1: each its share, rounded down
        g = model["gpus"]
        for p in spreading(m):
            share = requests[m] / model["per_replica"] * g / weight[p]
            extra = min(math.floor(spare0[p] * share / g + SHARE_SLACK), spare[p] // g)
            up[m][p] += extra
            spare[p] -= extra * g
    for m, model in enumerate(models):  # round 2: one more each while it fits
        g = model["gpus"]
        for p in spreading(m):
            if spare[p] >= g:
                up[m][p] += 1
                spare[p] -= g
    return up


def serve(models: list[dict], requests: list[float], pools: list[Any]) -> dict[str, list]:
    """One step of inference with the fleet as it stands.

    Returns per model ``needed``, ``placed``, ``served``, ``up`` (replicas up in all) and
    ``slo_met`` (requests within the SLO); per pool ``inference`` (GPUs of the replicas needed),
    ``training`` (GPUs jobs hold: what inference leaves them, at most all of theirs — less only
    in a ``preempt`` pool whose fleet shrank inside a step, or a pool whose fleet shrank from
    under its jobs), ``serving`` (GPUs of the replicas up) and ``busy`` (GPU-equivalents at work
    on inference).
    """
    n_pools = len(pools)
    placements = place(models, requests, open_to_inference(pools))
    out: dict[str, list] = {key: [] for key in ("needed", "placed", "served", "up", "slo_met")}
    out.update(inference=[0] * n_pools, serving=[0] * n_pools, busy=[0.0] * n_pools)
    for m, here in enumerate(placements):
        for p, replicas, _load in here:
            out["inference"][p] += replicas * models[m]["gpus"]
    out["training"] = [max(min(pool.training, pool.available - out["inference"][p]), 0)
                       for p, pool in enumerate(pools)]
    up = replicas_up(models, requests, pools, out["training"], placements)
    for m, model in enumerate(models):
        d, c, g = requests[m], model["per_replica"], model["gpus"]
        needed = replicas_for(d, c)
        taken = {p: 0 for p in model["prefs"]}
        for p, replicas, _load in placements[m]:
            taken[p] += replicas
        placed = sum(taken.values())
        served = d if placed >= needed else placed * c
        capacity_up = sum(up[m][p] * c for p in model["prefs"])
        # The router spreads what the model serves over every replica up, in proportion to
        # capacity: each runs at ``replica_load`` of its capacity.
        replica_load = served / capacity_up if capacity_up > 0 else 0.0
        spread = sum(up[m].values()) > placed  # more replicas up than needed, on some pool
        within = 0.0
        for p in model["prefs"]:
            out["serving"][p] += up[m][p] * g
            if capacity_up > 0:
                within += up[m][p] * c / capacity_up * attainment(model["curves"][p], replica_load)
            if spread:  # every replica up, on every pool, at the same share of its capacity
                out["busy"][p] += replica_load * up[m][p] * g
        for p, _replicas, load in placements[m]:
            if not spread:  # only the replicas needed: filled in turn
                out["busy"][p] += load / c * g
        out["needed"].append(needed)
        out["placed"].append(placed)
        out["served"].append(served)
        out["up"].append(sum(up[m].values()))
        out["slo_met"].append(served * within)
    return out
