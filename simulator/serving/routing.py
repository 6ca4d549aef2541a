"""Routing requests over the replicas behind one router: least loaded, or prefix affinity.

A prefix cache lives in each replica: a request reuses a shared prefix only on a replica that
computed it before. How the router spreads requests therefore decides the hit rate.

* ``least_outstanding`` (a scenario's ``least_loaded``): each arrival goes to the replica with
  the fewest waiting + running requests, ties to the lowest index; content is ignored, so every
  replica ends up computing (and holding) every prefix.
* ``round_robin``: request k (in arrival order) to replica k mod R.
* ``prefix_affinity``: consistent hashing with bounded loads (Mirrokni, Thorup and
  Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018; HAProxy's
  ``hash-balance-factor``, Envoy's ``hash_balance_factor``), remembering where each prefix went.
  A request's affinity key is its ``prompt_id`` when it has one, else its ``prefix_id`` (the
  finest label its content repeats); each key ranks the replicas by a rendezvous hash of (key,
  replica), its first being the key's home. The key's replicas are the first ``d`` of its
  ranking (``d`` = 0 before its first request). With ``T`` requests outstanding over the ``R``
  replicas when it arrives, the bound is ``ceil(c × (T + 1) / R)``, ``c`` the load factor
  (default 1.25, the default of liblb's and brpc's bounded-load balancers): the request goes to
  the least loaded of the key's replicas if that one holds fewer requests than the bound, else
  to the next replica in the ranking below the bound, which joins the key's replicas. So a
  prefix stays on its home while the home is within 25% of the mean load; its overflow goes to
  its second choice, not anywhere, and a prefix hot enough to need several replicas is spread
  evenly over the ones that hold it (a system prompt every request shares ends up on all of
  them, balanced about as least-outstanding would). A request without a key goes to the least-loaded
  replica, so on a workload without prefix labels ``prefix_affinity`` routes exactly as
  ``least_outstanding``.

The ranking depends only on the key's value and on R, so a prefix keeps its home whatever
else the workload holds; adding a replica moves about 1/(R + 1) of the keys (rendezvous
hashing's property).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.serving.batching import POLICY_LEAST_OUTSTANDING, POLICY_ROUND_ROBIN

POLICY_PREFIX_AFFINITY = 2
#: Routing names of the vLLM engine (``simulate_vllm``'s ``policy``); ``least_loaded`` is the
#: scenario's name of ``least_outstanding``.
ROUTINGS = {"round_robin": POLICY_ROUND_ROBIN, "least_outstanding": POLICY_LEAST_OUTSTANDING,
            "least_loaded": POLICY_LEAST_OUTSTANDING, "prefix_affinity": POLICY_PREFIX_AFFINITY}
AFFINITY_LOAD_FACTOR = 1.25

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on an array of uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        return z ^ (z >> np.uint64(31))


def route_keys(n: int, prefix_id=None, prompt_id=None) -> tuple[np.ndarray, np.ndarray]:
    """Affinity keys: ``(key per request, 0 … K − 1 or −1 for none; raw value of each key)``.

    A key's raw value is ``2·prompt_id + 1`` for a request with a ``prompt_id``, else
    ``2·prefix_id`` for one with a ``prefix_id``.
    """
    pid = np.full(n, -1, dtype=np.int64) if prefix_id is None else np.asarray(prefix_id, dtype=np.int64)
    qid = np.full(n, -1, dtype=np.int64) if prompt_id is None else np.asarray(prompt_id, dtype=np.int64)
    raw = np.where(qid >= 0, 2 * qid + 1, np.where(pid >= 0, 2 * pid, -1))
    keyed = raw >= 0
    values, dense = np.unique(raw[keyed], return_inverse=True)
    key = np.full(n, -1, dtype=np.int64)
    key[keyed] = dense.reshape(-1)
    return key, values.astype(np.int64)


def affinity_ranking(raw_keys: np.ndarray, replicas: int) -> np.ndarray:
    """Each key's replicas, most preferred first (rendezvous hashing): a ``(K, R)`` array."""
    raw = np.asarray(raw_keys, dtype=np.int64).astype(np.uint64)
    if replicas < 1:
        raise ValueError("replicas must be >= 1")
    salt = _mix(np.arange(1, replicas + 1, dtype=np.uint64))
    score = _mix(_mix(raw)[:, None] ^ salt[None, :])
    return np.argsort(score, axis=1, kind="stable")[:, ::-1].astype(np.int64).reshape(len(raw), replicas)


@njit(cache=True)
def pick_replica(i, policy, n_replicas, outstanding, route_key, ranking, load_factor, depth):
    """The replica request ``i`` (in arrival order) goes to (module docstring).

    ``depth[k]``: how many of key ``k``'s ranked replicas hold it so far (updated here).
    """
    if policy == POLICY_ROUND_ROBIN:
        return i % n_replicas
    if policy == POLICY_PREFIX_AFFINITY and route_key[i] >= 0:
        total = 0
        for q in range(n_replicas):
            total += outstanding[q]
        cap = np.ceil(load_factor * (total + 1) / n_replicas)
        k = route_key[i]
        best = -1
        for j in range(depth[k]):
            q = ranking[k, j]
            if best < 0 or outstanding[q] < outstanding[best]:
                best = q
        if best >= 0 and outstanding[best] < cap:
            return best
        for j in range(depth[k], n_replicas):
            q = ranking[k, j]
            if outstanding[q] < cap:
                depth[k] = j + 1
                return q
    r = 0
    for q in range(1, n_replicas):
        if outstanding[q] < outstanding[r]:
            r = q
    return r
