"""Per-request SimPy model of Fleetcast's continuous-batching serving semantics.

A second, independent reference for ``simulator.serving`` (the first is the plain event loop in
``tests/serving_reference.py``; the semantics are stated there and in the engine's docs). It
is written the way one would model the system in SimPy without caring about speed:

* every request is a SimPy process: it sleeps until its arrival, is dispatched by the router to
  a replica's waiting queue, then waits for three events its replica triggers — admission,
  first token, last token — and records the times at which it resumes;
* every replica is a process that runs iterations: at a boundary it admits from its queue,
  sizes the iteration (prefill chunks + decodes), sleeps ``dt``, then hands out the tokens.

Decode tokens are counted by the replica (one per running request per iteration) instead of one
SimPy event per token, which would only add ~1 event per generated token to the cost.

Ordering of simultaneous events, as the semantics require: an iteration end is scheduled with
``URGENT`` priority (before the ``NORMAL`` arrival timeouts at the same time), and a replica
starts its next iteration with a zero-delay event of priority :data:`AFTER_ARRIVALS` (after
every ``NORMAL`` event at that time, so all same-time arrivals are routed and queued first).
Arrival timeouts are created at t=0 in index order with the absolute arrival as delay (so
``now`` equals ``arrival_s[i]`` exactly and equal times fire in index order); arrivals must be
``>= 0``.
"""

from __future__ import annotations

import math

import numpy as np
import simpy
from simpy.core import NORMAL, URGENT
from simpy.events import Event

#: priority of a replica's "start the next iteration" event: after all NORMAL events at a time
AFTER_ARRIVALS = NORMAL + 1


class _After(Event):
    """A timeout with a chosen scheduling priority (SimPy's Timeout always uses NORMAL)."""

    def __init__(self, env: simpy.Environment, delay: float, priority: int):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority, delay)


class _Request:
    __slots__ = ("index", "arrival", "prompt", "output", "kv", "prompt_left", "tokens",
                 "admitted", "first_token", "done")

    def __init__(self, env, index, arrival, prompt, output):
        self.index = index
        self.arrival = arrival
        self.prompt = prompt
        self.output = output
        self.kv = prompt + output
        self.prompt_left = prompt
        self.tokens = 0
        self.admitted = env.event()
        self.first_token = env.event()
        self.done = env.event()


class _ReplicaProcess:
    def __init__(self, env, base_s, per_token_s, max_batch, kv_capacity, chunk):
        self.env = env
        self.base_s = base_s
        self.per_token_s = per_token_s
        self.max_batch = max_batch
        self.kv_capacity = kv_capacity
        self.chunk = chunk
        self.waiting: list[_Request] = []  # FIFO; head at self.head
        self.head = 0
        self.running: list[_Request] = []
        self.kv_used = 0
        self.wake: Event | None = None
        env.process(self.run())

    def outstanding(self) -> int:
        return len(self.waiting) - self.head + len(self.running)

    def enqueue(self, req: _Request) -> None:
        self.waiting.append(req)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _admit(self) -> None:
        waiting, running = self.waiting, self.running
        while self.head < len(waiting) and len(running) < self.max_batch:
            req = waiting[self.head]
            if self.kv_capacity is not None and self.kv_used + req.kv > self.kv_capacity:
                break
            self.head += 1
            running.append(req)
            self.kv_used += req.kv
            req.admitted.succeed()
        if self.head > 4096 and self.head * 2 > len(waiting):
            del waiting[: self.head]
            self.head = 0

    def run(self):
        env = self.env
        while True:
            if not self.running and self.head == len(self.waiting):
                self.wake = env.event()  # idle until a request is routed here
                yield self.wake
                self.wake = None
            # The boundary: let every arrival at this instant be routed first.
            yield _After(env, 0, AFTER_ARRIVALS)
            self._admit()
            if not self.running:
                continue
            # Size the iteration.
            decoders = [r for r in self.running if r.prompt_left == 0]
            budget = math.inf if self.chunk is None else self.chunk - len(decoders)
            prefills = []
            prefill_tokens = 0
            for r in self.running:
                if budget <= 0:
                    break
                if r.prompt_left:
                    c = r.prompt_left if r.prompt_left <= budget else budget
                    prefills.append((r, c))
                    prefill_tokens += c
                    budget -= c
            dt = self.base_s + self.per_token_s * (prefill_tokens + len(decoders))
            yield _After(env, dt, URGENT)
            # Iteration end: hand out the tokens, let finished requests leave.
            for r in decoders:
                r.tokens += 1
            for r, c in prefills:
                r.prompt_left -= c
                if r.prompt_left == 0:
                    r.tokens = 1
                    r.first_token.succeed()
            left = []
            for r in self.running:
                if r.tokens == r.output:
                    self.kv_used -= r.kv
                    r.done.succeed()
                else:
                    left.append(r)
            self.running = left


def _request(env, req: _Request, route, out):
    yield env.timeout(req.arrival)
    route(req)
    yield req.admitted
    out[0][req.index] = env.now
    yield req.first_token
    out[1][req.index] = env.now
    yield req.done
    out[2][req.index] = env.now


def _simulate(arrival_s, prompt_tokens, output_tokens, base_s, per_token_s, max_batch,
              kv_capacity_tokens, prefill_chunk_tokens, replicas, policy):
    arrival = np.asarray(arrival_s, dtype=float)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    n = len(arrival)
    if len(prompt) != n or len(output) != n:
        raise ValueError("arrival_s, prompt and output must have the same length")
    if n and (arrival[0] < 0 or np.any(np.diff(arrival) < 0)):
        raise ValueError("arrival_s must be >= 0 and sorted non-decreasing")
    if n and (prompt.min() < 1 or output.min() < 1):
        raise ValueError("prompt and output tokens must be >= 1")
    if kv_capacity_tokens is not None and n and (prompt + output).max() > kv_capacity_tokens:
        raise ValueError("a request's prompt + output exceeds kv_capacity_tokens")
    if prefill_chunk_tokens is not None and prefill_chunk_tokens < max_batch:
        raise ValueError("prefill_chunk_tokens must be >= max_batch")
    if policy not in ("round_robin", "least_outstanding"):
        raise ValueError(f"unknown policy {policy!r}")

    env = simpy.Environment()
    reps = [
        _ReplicaProcess(env, float(base_s), float(per_token_s), int(max_batch),
                        kv_capacity_tokens, prefill_chunk_tokens)
        for _ in range(replicas)
    ]
    chosen = np.full(n, -1, dtype=np.int64)

    def route(req: _Request) -> None:
        if policy == "round_robin":
            r = req.index % replicas
        else:
            counts = [rep.outstanding() for rep in reps]
            r = counts.index(min(counts))
        chosen[req.index] = r
        reps[r].enqueue(req)

    out = (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
    for i, (a, p, o) in enumerate(zip(arrival.tolist(), prompt.tolist(), output.tolist(),
                                      strict=True)):
        env.process(_request(env, _Request(env, i, a, p, o), route, out))
    env.run()

    admit, first, finish = out
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(output > 1, (finish - first) / (output - 1), np.nan)
    return {
        "admit_s": admit,
        "first_token_s": first,
        "finish_s": finish,
        "ttft_s": first - arrival,
        "e2e_s": finish - arrival,
        "queue_s": admit - arrival,
        "tpot_s": tpot,
        "replica": chosen,
    }


def simpy_replica(arrival_s, prompt, output, base_s: float, per_token_s: float, max_batch: int,
                  kv_capacity_tokens: int | None = None,
                  prefill_chunk_tokens: int | None = None) -> dict[str, np.ndarray]:
    """One replica; same signature and outputs as ``tests.serving_reference.reference_replica``."""
    res = _simulate(arrival_s, prompt, output, base_s, per_token_s, max_batch,
                    kv_capacity_tokens, prefill_chunk_tokens, 1, "round_robin")
    del res["replica"]
    return res


def simpy_router(arrival_s, prompt, output, base_s: float, per_token_s: float, max_batch: int,
                 kv_capacity_tokens: int | None = None, prefill_chunk_tokens: int | None = None,
                 *, replicas: int, policy: str) -> dict[str, np.ndarray]:
    """R replicas behind a router; as ``tests.serving_reference.reference_router``."""
    if replicas < 1:
        raise ValueError("replicas must be >= 1")
    return _simulate(arrival_s, prompt, output, base_s, per_token_s, max_batch,
                     kv_capacity_tokens, prefill_chunk_tokens, replicas, policy)
