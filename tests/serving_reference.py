"""Plain-Python reference for Fleetcast's request-level continuous-batching semantics.

Written from the specification (not from ``simulator.serving``) so that the fast engine can be
checked against it request by request. Slow and simple on purpose.

Semantics (vLLM-style continuous batching), one replica
-------------------------------------------------------
Request ``i`` has ``arrival_s[i]`` (sorted non-decreasing), ``prompt[i] >= 1`` and
``output[i] >= 1`` tokens. Options: ``max_batch`` B, ``kv_capacity_tokens`` K (None: unlimited),
``prefill_chunk_tokens`` C (None: no chunking; otherwise C >= B). The linear iteration model
gives an iteration's duration ``dt = base_s + per_token_s * (prefill_tokens + decode_requests)``.

At each iteration boundary ``t``:

1. every request with ``arrival <= t`` joins the waiting queue (arrival order, ties by index);
2. admission, first come first served from the head of the queue, while fewer than B requests
   run and (if K is set) the tokens reserved by running requests plus this request's
   ``prompt + output`` are ``<= K``; the first request that does not fit stops admission (no
   skipping). A running request reserves ``prompt + output`` tokens until it leaves;
3. if nothing runs, the replica is idle and the next boundary is the next arrival time (a
   request arriving exactly at a boundary is admitted at it).

Otherwise an iteration ``[t, t + dt)`` runs:

* without chunking, each request admitted at this boundary prefills its whole prompt, every
  request admitted earlier decodes one token;
* with chunking, every request whose prompt is already fully prefilled decodes one token, then
  the running requests with prompt left get chunks in admission order, each
  ``min(prompt left, budget left)``, from the budget ``C - decode_requests``; admitted requests
  that get no chunk still hold their slot.

(Without chunking is the same rule with an unlimited budget: a request admitted earlier has
always finished its prefill in its admission iteration.) ``prefill_tokens`` is the sum of the
chunks, ``decode_requests`` the number of decoding requests. At the iteration's end: a request
whose last prompt chunk was in this iteration emits its first token (first_token_s = end), a
decoding request emits one more token, and a request that has now emitted ``output`` tokens
leaves (finish_s = end). The next boundary is the end time.

Outputs per request (input order): ``admit_s`` (start of the admission iteration),
``first_token_s``, ``finish_s``, ``ttft_s = first_token_s - arrival_s``,
``e2e_s = finish_s - arrival_s``, ``queue_s = admit_s - arrival_s`` and
``tpot_s = (finish_s - first_token_s) / (output - 1)`` (NaN when output == 1).

Router over R replicas
----------------------
Each request is dispatched at its arrival: ``round_robin`` sends request ``i`` to replica
``i mod R``; ``least_outstanding`` to the replica with the fewest outstanding (waiting +
running) requests at that moment, ties to the lowest index. Simultaneous events are ordered:
iteration ends (requests leave) first, then arrivals in index order (each routed seeing the
counts updated by earlier ones), then replicas start their next iterations. Each replica then
follows the single-replica rules on its own requests; the output also has ``replica[i]``.

The module also holds :func:`make_workload`, the seeded synthetic workload shared by the
exactness tests and ``benchmarks/bench_serving.py``.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

POLICIES = ("round_robin", "least_outstanding")
OUTPUT_KEYS = ("admit_s", "first_token_s", "finish_s", "ttft_s", "e2e_s", "queue_s", "tpot_s")


def _validate(arrival_s, prompt, output, base_s, per_token_s, max_batch, kv, chunk):
    arrival = [float(a) for a in np.asarray(arrival_s, dtype=float)]
    prompt = [int(p) for p in np.asarray(prompt)]
    output = [int(o) for o in np.asarray(output)]
    if not len(arrival) == len(prompt) == len(output):
        raise ValueError("arrival_s, prompt and output must have the same length")
    if any(b < a for a, b in zip(arrival, arrival[1:], strict=False)):
        raise ValueError("arrival_s must be sorted non-decreasing")
    if any(not math.isfinite(a) for a in arrival):
        raise ValueError("arrival_s must be finite")
    if any(p < 1 for p in prompt) or any(o < 1 for o in output):
        raise ValueError("prompt and output tokens must be >= 1")
    if max_batch < 1:
        raise ValueError("max_batch must be >= 1")
    if not (base_s >= 0 and per_token_s >= 0 and base_s + per_token_s > 0):
        raise ValueError("iteration time must be positive")
    if kv is not None and any(p + o > kv for p, o in zip(prompt, output, strict=True)):
        raise ValueError("a request's prompt + output exceeds kv_capacity_tokens: never admitted")
    if chunk is not None and chunk < max_batch:
        raise ValueError("prefill_chunk_tokens must be >= max_batch")
    return arrival, prompt, output


class _Replica:
    """One replica's state; ``begin`` starts an iteration at a boundary, ``end`` finishes it."""

    def __init__(self, prompt, output, base_s, per_token_s, max_batch, kv, chunk, out):
        self.prompt, self.output = prompt, output
        self.base_s, self.per_token_s = base_s, per_token_s
        self.max_batch, self.kv = max_batch, kv
        self.budget = math.inf if chunk is None else chunk
        self.admit, self.first, self.finish = out
        self.waiting: deque[int] = deque()  # request indices, arrival order
        self.running: list[int] = []  # admission order
        self.prompt_left: dict[int, int] = {}
        self.emitted: dict[int, int] = {}
        self.reserved = 0
        self.current = None  # (end time, decoding requests, [(request, chunk)])

    def outstanding(self) -> int:
        return len(self.waiting) + len(self.running)

    def begin(self, t: float) -> float | None:
        """Admit at boundary ``t`` and start an iteration; return its end (None: idle)."""
        while self.waiting and len(self.running) < self.max_batch:
            i = self.waiting[0]
            need = self.prompt[i] + self.output[i]
            if self.kv is not None and self.reserved + need > self.kv:
                break  # head of line blocks: no skipping
            self.waiting.popleft()
            self.running.append(i)
            self.reserved += need
            self.admit[i] = t
            self.prompt_left[i] = self.prompt[i]
            self.emitted[i] = 0
        if not self.running:
            return None
        decoding = [i for i in self.running if self.prompt_left[i] == 0]
        budget = self.budget - len(decoding)
        chunks = []
        for i in self.running:
            if budget <= 0:
                break
            if self.prompt_left[i] > 0:
                c = min(self.prompt_left[i], budget)
                chunks.append((i, c))
                budget -= c
        prefill_tokens = sum(c for _, c in chunks)
        dt = self.base_s + self.per_token_s * (prefill_tokens + len(decoding))
        end = t + dt
        self.current = (end, decoding, chunks)
        return end

    def end(self) -> None:
        """Apply the current iteration at its end time: tokens, first tokens, departures."""
        end, decoding, chunks = self.current
        self.current = None
        for i in decoding:
            self.emitted[i] += 1
        for i, c in chunks:
            self.prompt_left[i] -= c
            if self.prompt_left[i] == 0:
                self.emitted[i] = 1
                self.first[i] = end
        still = []
        for i in self.running:
            if self.emitted[i] == self.output[i]:
                self.finish[i] = end
                self.reserved -= self.prompt[i] + self.output[i]
                del self.prompt_left[i], self.emitted[i]
            else:
                still.append(i)
        self.running = still


def _results(arrival, output, admit, first, finish) -> dict[str, np.ndarray]:
    arrival = np.asarray(arrival, dtype=float)
    output = np.asarray(output, dtype=float)
    admit, first, finish = (np.asarray(x, dtype=float) for x in (admit, first, finish))
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
    }


def reference_replica(
    arrival_s,
    prompt,
    output,
    base_s: float,
    per_token_s: float,
    max_batch: int,
    kv_capacity_tokens: int | None = None,
    prefill_chunk_tokens: int | None = None,
) -> dict[str, np.ndarray]:
    """One replica under the module's semantics; a dict of per-request arrays (input order)."""
    arrival, prompt, output = _validate(
        arrival_s, prompt, output, base_s, per_token_s, max_batch,
        kv_capacity_tokens, prefill_chunk_tokens,
    )
    n = len(arrival)
    out = ([math.nan] * n, [math.nan] * n, [math.nan] * n)
    rep = _Replica(prompt, output, base_s, per_token_s, max_batch,
                   kv_capacity_tokens, prefill_chunk_tokens, out)
    j = 0  # next request not yet in the waiting queue
    t = arrival[0] if n else 0.0
    while True:
        while j < n and arrival[j] <= t:
            rep.waiting.append(j)
            j += 1
        end = rep.begin(t)
        if end is None:  # idle until the next arrival
            if j == n:
                break
            t = arrival[j]
            continue
        rep.end()
        t = end
    return _results(arrival, output, *out)


# Event kinds, in the order they are processed at equal times.
_END, _ARRIVE, _START = 0, 1, 2


def reference_router(
    arrival_s,
    prompt,
    output,
    base_s: float,
    per_token_s: float,
    max_batch: int,
    kv_capacity_tokens: int | None = None,
    prefill_chunk_tokens: int | None = None,
    *,
    replicas: int,
    policy: str,
) -> dict[str, np.ndarray]:
    """R replicas behind a router; as :func:`reference_replica` plus ``replica`` (int array).

    A global event heap of ``(time, kind, key)``: iteration ends, then arrivals (key: request
    index), then iteration starts (key: replica index) at equal times.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}")
    if replicas < 1:
        raise ValueError("replicas must be >= 1")
    arrival, prompt, output = _validate(
        arrival_s, prompt, output, base_s, per_token_s, max_batch,
        kv_capacity_tokens, prefill_chunk_tokens,
    )
    n = len(arrival)
    out = ([math.nan] * n, [math.nan] * n, [math.nan] * n)
    reps = [
        _Replica(prompt, output, base_s, per_token_s, max_batch,
                 kv_capacity_tokens, prefill_chunk_tokens, out)
        for _ in range(replicas)
    ]
    busy = [False] * replicas  # an iteration runs or a start is scheduled
    replica_of = [-1] * n
    events = [(arrival[i], _ARRIVE, i) for i in range(n)]
    heapq.heapify(events)
    while events:
        t, kind, key = heapq.heappop(events)
        if kind == _END:
            reps[key].end()
            heapq.heappush(events, (t, _START, key))
        elif kind == _ARRIVE:
            if policy == "round_robin":
                r = key % replicas
            else:
                counts = [rep.outstanding() for rep in reps]
                r = counts.index(min(counts))
            replica_of[key] = r
            reps[r].waiting.append(key)
            if not busy[r]:
                busy[r] = True
                heapq.heappush(events, (t, _START, r))
        else:  # _START
            end = reps[key].begin(t)
            if end is None:
                busy[key] = False
            else:
                heapq.heappush(events, (end, _END, key))
    res = _results(arrival, output, *out)
    res["replica"] = np.asarray(replica_of, dtype=np.int64)
    return res


# --------------------------------------------------------------------------- workload


def make_workload(
    n: int,
    seed: int,
    utilisation: float,
    max_batch: int,
    base_s: float = 0.01,
    per_token_s: float = 2e-5,
    replicas: int = 1,
):
    """A seeded synthetic workload: Poisson arrivals, prompts in 1..4000, outputs in 1..1000.

    Prompts: 60% lognormal (median 300) and 40% geometric (mean 60); outputs: 50% geometric
    (mean 40) and 50% lognormal (median 150); both clipped. The arrival rate is
    ``utilisation`` times a rough capacity estimate for ``replicas`` replicas running full
    batches of ``max_batch`` (token work ``per_token_s * (prompt + output)`` plus the shared
    ``base_s`` of each of the ``output`` iterations split ``max_batch`` ways), so the queues
    build up at utilisations near 1. Returns ``(arrival_s, prompt, output)``.
    """
    rng = np.random.default_rng(seed)
    prompt = np.where(
        rng.random(n) < 0.6,
        np.round(rng.lognormal(np.log(300.0), 1.0, n)),
        rng.geometric(1 / 60, n),
    )
    prompt = np.clip(prompt, 1, 4000).astype(np.int64)
    output = np.where(
        rng.random(n) < 0.5,
        rng.geometric(1 / 40, n),
        np.round(rng.lognormal(np.log(150.0), 0.8, n)),
    )
    output = np.clip(output, 1, 1000).astype(np.int64)
    per_request_s = per_token_s * (prompt.mean() + output.mean()) + base_s * output.mean() / max_batch
    rate = utilisation * replicas / per_request_s
    arrival = np.cumsum(rng.exponential(1.0 / rate, n))
    return arrival, prompt, output
